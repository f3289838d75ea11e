// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/source_driver.hpp"

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
  : node_(&node),
    reader_(std::move(reader)),
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
      if (part == nullptr) {
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
  if (gen.all_idle())
    chain.set_output_idle(true);
  return true;
}

void source_driver::snapshot(const subtask_clock& clock, operator_snapshot_entry& e) const {
  // Position, replay clock and watermark generator: a resumed source
  // re-reads from the position and emits what an uninterrupted one would.
  auto pos = reader_->position();
  e.snapshot.operator_state = std::to_string(pos) + "\nclock "
                              + std::to_string(clock.is_replay() ? clock.now() : 0) + "\n"
                              + watermarks_.snapshot();
  // Files resume at a byte offset, generated sources at an event number.
  e.source_position = (node_->kind == "file_source" ? "byte " : "event ") + std::to_string(pos);
}

void source_driver::restore(const std::string& state, subtask_clock& clock) {
  // "<position>\nclock <ms>\n" then the watermark generator's lines (a bare
  // position is accepted too).
  std::string_view rest = state;
  auto nl = rest.find('\n');
  reader_->seek(std::stoull(std::string{rest.substr(0, nl)}));
  if (nl == std::string_view::npos)
    return;
  rest.remove_prefix(nl + 1);
  if (rest.substr(0, 6) == "clock ") {
    auto end = rest.find('\n');
    auto t = std::stoll(std::string{rest.substr(6, end - 6)});
    if (clock.is_replay())
      clock.advance(t);
    rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
  }
  watermarks_.restore(rest);
}

} // namespace weir::runtime
