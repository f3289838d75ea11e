// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/source_driver.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <string_view>

namespace weir::runtime {

namespace {

time::source_watermarks::options watermark_options_of(const stream_node& node) {
  time::source_watermarks::options wo;
  wo.max_out_of_orderness = node.watermark.max_out_of_orderness;
  wo.idle_timeout = node.watermark.idle_timeout;
  wo.declared_partitions = node.partitions;
  return wo;
}

} // namespace

source_driver::source_driver(const stream_node& node, source_reader_ptr reader,
                             std::size_t batch_size)
  : reader_(std::move(reader)),
    batch_size_(batch_size),
    watermarks_(watermark_options_of(node)),
    partition_field_(node.partition_field),
    processing_time_field_(node.processing_time_field) {
}

bool source_driver::poll_once(operator_chain& chain, subtask_clock& clock) {
  chain.set_current(0);
  auto& gen = watermarks_;
  gen.on_processing_time(clock.now());
  auto batch = reader_->poll_next(batch_size_);
  if (!batch)
    return false;
  const auto* declared = reader_->partitions();
  if (declared && (!partitions_synced_ || *declared != synced_partitions_)) {
    gen.set_partitions(*declared, clock.now());
    synced_partitions_ = *declared;
    partitions_synced_ = true;
  }
  if (batch->num_rows > 0) {
    if (processing_time_field_) {
      // Replay clock: the batch arrives at its first row's processing time.
      const auto& col = batch->columns[*processing_time_field_];
      if (col.is_valid(0) && clock.advance(col.ints[0]))
        chain.fire_processing_time(clock.now());
    }
    if (batch->has_timestamps()) {
      const auto now = clock.now();
      const column* part = partition_field_ ? &batch->columns[*partition_field_] : nullptr;
      const auto* runs = declared ? reader_->partition_runs() : nullptr;
      if (runs != nullptr) {
        // Partitions the reader names (Kafka): each run's largest timestamp.
        std::size_t begin = 0;
        for (const auto& run : *runs) {
          auto m = min_watermark;
          for (auto r = begin; r < run.end; ++r)
            m = std::max(m, batch->timestamps[r]);
          if (run.end > begin)
            gen.on_record(*run.partition, m, now);
          begin = run.end;
        }
      } else if (part == nullptr) {
        // One partition: only the batch's largest timestamp matters.
        partition_name_.clear();
        gen.on_record(partition_name_, batch->max_timestamp(), now);
      }
      for (std::size_t r = 0; part != nullptr && r < batch->num_rows; ++r) {
        partition_name_.clear();
        if (part->is_valid(r))
          partition_name_ = to_display_string(part->get(r));
        gen.on_record(partition_name_, batch->timestamps[r], now);
      }
    }
    chain.set_output_idle(false);
    chain.emit(0, 0, std::move(batch)); // (sole owner: see operator_chain::emit)
  }
  if (auto t = reader_->take_processing_time_advance(); t && clock.advance(*t)) {
    gen.on_processing_time(clock.now());
    chain.fire_processing_time(clock.now());
  }
  // Flink's BoundedOutOfOrdernessWatermarks: max - bound - 1 per partition,
  // minimum over active partitions, emitted after each batch.
  if (auto wm = gen.poll())
    chain.emit_watermark(0, *wm);
  // A reader without partitions (more subtasks than Kafka partitions) holds
  // nothing back, as Flink marks a reader without splits idle.
  if (gen.all_idle() || (declared && declared->empty()))
    chain.set_output_idle(true);
  return true;
}

std::string source_driver::encode_state(const std::vector<source_position>& positions,
                                        event_time clock, const std::string& watermarks) {
  std::string out = std::string{state_magic} + " " + std::to_string(state_version) + "\n";
  for (const auto& p : positions)
    out += "position " + std::string{to_string(p.unit)} + " " + std::to_string(p.value) + " "
           + p.split + "\n";
  out += "clock " + std::to_string(clock) + "\n";
  return out + watermarks;
}

source_driver::decoded_state source_driver::decode_state(std::string_view state) {
  decoded_state d;
  auto line_of = [&](std::string_view& rest) {
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    return line;
  };
  auto number = [](std::string_view s, auto& v) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc{} && ptr == s.data() + s.size();
  };
  std::string_view rest = state;
  if (rest.substr(0, state_magic.size() + 1) != std::string{state_magic} + " ") {
    // Version 1 (unversioned): "<position>\nclock <ms>\n" then the watermark
    // generator's lines; a bare position is accepted too.
    d.version = 1;
    auto first = line_of(rest);
    std::uint64_t v = 0;
    if (!number(first, v))
      throw std::runtime_error("cannot read the source state (format version 1): '"
                               + std::string{first.substr(0, 40)} + "' is not a position");
    d.positions.push_back(source_position{"", position_unit::byte_offset, v});
  } else {
    auto header = line_of(rest);
    header.remove_prefix(state_magic.size() + 1);
    if (!number(header, d.version) || d.version != state_version)
      throw std::runtime_error("cannot restore source state of format version "
                               + std::string{header} + ": this weir reads versions 1 and "
                               + std::to_string(state_version));
    while (rest.substr(0, 9) == "position ") {
      auto line = line_of(rest);
      line.remove_prefix(9);
      auto sp1 = line.find(' ');
      auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      source_position p;
      auto unit = parse_position_unit(line.substr(0, sp1));
      if (!unit || sp2 == std::string_view::npos
          || !number(line.substr(sp1 + 1, sp2 - sp1 - 1), p.value))
        throw std::runtime_error("cannot read the source state (format version "
                                 + std::to_string(state_version) + "): bad position line '"
                                 + std::string{line} + "'");
      p.unit = *unit;
      p.split = std::string{line.substr(sp2 + 1)};
      d.positions.push_back(std::move(p));
    }
  }
  if (rest.substr(0, 6) == "clock ") {
    auto line = line_of(rest);
    if (!number(line.substr(6), d.clock))
      throw std::runtime_error("cannot read the source state (format version "
                               + std::to_string(d.version) + "): bad clock line");
  }
  d.watermarks = std::string{rest};
  return d;
}

void source_driver::snapshot(const subtask_clock& clock, operator_snapshot_entry& e) const {
  // Positions, replay clock and watermark generator: a resumed source
  // re-reads from the positions and emits what an uninterrupted one would.
  auto positions = reader_->positions();
  e.snapshot.operator_state = encode_state(positions, clock.is_replay() ? clock.now() : 0,
                                           watermarks_.snapshot());
  // One line per split: "byte 1234 of a.log", "event 5000".
  e.source_position.clear();
  for (const auto& p : positions)
    e.source_position += (e.source_position.empty() ? "" : "\n") + describe(p);
}

void source_driver::restore(const std::string& state, subtask_clock& clock) {
  auto d = decode_state(state);
  reader_->seek(d.positions);
  if (clock.is_replay())
    clock.advance(d.clock);
  watermarks_.restore(d.watermarks);
  partitions_synced_ = false; // forget restored partitions the reader no longer reads
}

} // namespace weir::runtime
