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
  // Idleness first (Flink's periodic emitter): a partition silent past the
  // timeout stops holding back the watermark before the next batch is read,
  // even if that batch brings it back.
  gen.on_processing_time(clock.now());
  emit_progress(chain);
  auto batch = reader_->poll_next(batch_size_);
  if (auto lines = reader_->lines_read()) {
    auto& m = chain.metrics(0);
    m.lines_read.store(*lines, std::memory_order_relaxed);
    m.counts_lines.store(true, std::memory_order_relaxed);
  }
  if (auto now = std::chrono::steady_clock::now();
      now - lag_polled_ >= std::chrono::milliseconds{100}) {
    lag_polled_ = now;
    if (auto lag = reader_->lag())
      chain.metrics(0).source_lag.store(*lag, std::memory_order_relaxed);
  }
  if (!batch)
    return false;
  // Splits as partitions, unless partition_by names them.
  auto changes = reader_->take_split_changes();
  if (partition_field_)
    changes = {};
  for (const auto& s : changes.begun)
    gen.declare(s);
  const auto* declared = reader_->partitions();
  if (declared && (!partitions_synced_ || *declared != synced_partitions_)) {
    gen.set_partitions(*declared, clock.now());
    synced_partitions_ = *declared;
    partitions_synced_ = true;
  }
  if (batch->num_rows > 0) {
    if (processing_time_field_) {
      // Replay clock: the batch arrives at its first row's processing time;
      // partitions silent past the timeout at that time go idle before its
      // rows are counted.
      const auto& col = batch->columns[*processing_time_field_];
      if (col.is_valid(0) && clock.advance(col.ints[0])) {
        chain.fire_processing_time(clock.now());
        gen.on_processing_time(clock.now());
        emit_progress(chain);
      }
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
        // One partition (or one split): only the batch's largest timestamp matters.
        partition_name_.clear();
        if (auto split = reader_->batch_split())
          partition_name_ = std::move(*split);
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
  for (const auto& s : changes.finished)
    gen.finish(s);
  if (auto t = reader_->take_processing_time_advance(); t && clock.advance(*t)) {
    gen.on_processing_time(clock.now());
    chain.fire_processing_time(clock.now());
  }
  // Flink's BoundedOutOfOrdernessWatermarks: max - bound - 1 per partition,
  // minimum over active partitions, emitted after each batch.
  emit_progress(chain);
  return true;
}

void source_driver::emit_progress(operator_chain& chain) {
  if (auto wm = watermarks_.poll())
    chain.emit_watermark(0, *wm);
  // Every partition idle, or no split being read (a subtask of a partitioned
  // directory source waiting for files): nothing is held back.
  // A reader that declares its partitions and owns none (more subtasks than
  // Kafka partitions) holds nothing back either, as Flink marks a reader
  // without splits idle.
  // Only the partitions already handed to the watermark generator count:
  // before the first batch a reader may not know its partitions yet.
  if (watermarks_.all_idle()
      || (!partition_field_ && reader_->has_split_partitions() && watermarks_.empty())
      || (partitions_synced_ && synced_partitions_.empty()))
    chain.set_output_idle(true);
}

std::string source_driver::encode_state(const std::vector<source_position>& positions,
                                        event_time clock, const std::string& watermarks,
                                        const std::string& reader_state) {
  // Version 3 only when it says more than version 2 could (finished splits),
  // version 4 only for a reader with a state of its own.
  const bool any_finished =
    std::any_of(positions.begin(), positions.end(), [](const auto& p) { return p.finished; });
  const char* version = !reader_state.empty() ? "4" : any_finished ? "3" : "2";
  std::string out = std::string{state_magic} + " " + version + "\n";
  for (const auto& p : positions)
    out += (p.finished ? "finished " : "position ") + std::string{to_string(p.unit)} + " "
           + std::to_string(p.value) + " " + p.split + "\n";
  if (!reader_state.empty())
    out += "reader " + std::to_string(reader_state.size()) + "\n" + reader_state + "\n";
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
    if (!number(header, d.version) || d.version < 2 || d.version > state_version)
      throw std::runtime_error("cannot restore source state of format version "
                               + std::string{header} + ": this weir reads versions 1 to "
                               + std::to_string(state_version));
    while (rest.substr(0, 9) == "position "
           || (d.version >= 3 && rest.substr(0, 9) == "finished ")) {
      auto line = line_of(rest);
      const bool finished = line.front() == 'f';
      line.remove_prefix(9);
      auto sp1 = line.find(' ');
      auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
      source_position p;
      auto unit = parse_position_unit(line.substr(0, sp1));
      if (!unit || sp2 == std::string_view::npos
          || !number(line.substr(sp1 + 1, sp2 - sp1 - 1), p.value))
        throw std::runtime_error("cannot read the source state (format version "
                                 + std::to_string(d.version) + "): bad position line '"
                                 + std::string{line} + "'");
      p.unit = *unit;
      p.finished = finished;
      p.split = std::string{line.substr(sp2 + 1)};
      d.positions.push_back(std::move(p));
    }
  }
  if (d.version >= 4 && rest.substr(0, 7) == "reader ") {
    auto line = line_of(rest);
    std::size_t n = 0;
    if (!number(line.substr(7), n) || rest.size() < n + 1 || rest[n] != '\n')
      throw std::runtime_error("cannot read the source state (format version "
                               + std::to_string(d.version) + "): bad reader state");
    d.reader_state = std::string{rest.substr(0, n)};
    rest.remove_prefix(n + 1);
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
  auto own = reader_->snapshot_state();
  auto positions = reader_->positions();
  e.snapshot.operator_state = encode_state(positions, clock.is_replay() ? clock.now() : 0,
                                           watermarks_.snapshot(), own);
  // One line per split: "byte 1234 of a.log", "event 5000".
  e.source_position.clear();
  for (const auto& p : positions)
    e.source_position += (e.source_position.empty() ? "" : "\n") + describe(p);
}

void source_driver::restore(const std::string& state, subtask_clock& clock) {
  auto d = decode_state(state);
  reader_->restore_state(d.reader_state);
  reader_->seek(d.positions);
  if (clock.is_replay())
    clock.advance(d.clock);
  watermarks_.restore(d.watermarks);
  partitions_synced_ = false; // forget restored partitions the reader no longer reads
}

} // namespace weir::runtime
