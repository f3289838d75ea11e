// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/connectors/source_reader.hpp"
#include "weir/runtime/operator_chain.hpp"
#include "weir/runtime/subtask_clock.hpp"
#include "weir/runtime/subtask_snapshot.hpp"
#include "weir/time/source_watermarks.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace weir::runtime {

/// Runs the source at the head of a chain (Flink's `SourceOperator` with its
/// `WatermarkOutputMultiplexer`): polls the `source_reader` for batches of at
/// most `batch_size` rows, generates watermarks per partition (bounded out of
/// orderness: max - bound - 1, minimum over active partitions, emitted after
/// each batch), marks the output idle once every partition is idle, and
/// drives the replay clock from the input's processing-time field. Its
/// snapshot is the reader's position, the replay clock and the watermark
/// generator, so a restored source emits what an uninterrupted one would.
class source_driver {
public:
  /// `node` (the source's logical node) must outlive the driver.
  source_driver(const stream_node& node, source_reader_ptr reader, std::size_t batch_size);

  /// Opens the reader.
  void open(const operator_context& ctx) { reader_->open(ctx); }

  /// Reads and emits one batch through `chain` (member 0), then the
  /// watermark and idleness that follow from it; returns false once the input
  /// is exhausted. Throws what the reader throws.
  bool poll_once(operator_chain& chain, subtask_clock& clock);

  /// How long to wait before the next poll (a rate-limited source).
  std::chrono::nanoseconds next_poll_delay() const { return reader_->next_poll_delay(); }

  /// Fills `e.snapshot.operator_state` and `e.source_position`.
  void snapshot(const subtask_clock& clock, operator_snapshot_entry& e) const;

  /// Resumes from what `snapshot` wrote (after `open`, before the first
  /// poll). Throws std::runtime_error naming the problem when `state` cannot
  /// be read or the reader cannot resume.
  void restore(const std::string& state, subtask_clock& clock);

  source_reader& reader() noexcept { return *reader_; }

private:
  const stream_node* node_;
  source_reader_ptr reader_;
  std::size_t batch_size_;
  time::source_watermarks watermarks_;
  std::optional<std::size_t> partition_field_;
  std::optional<std::size_t> processing_time_field_;
  std::string partition_name_;
};

} // namespace weir::runtime
