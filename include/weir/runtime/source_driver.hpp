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
#include <string_view>
#include <vector>

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
  /// `node` is the source's logical node (its watermark options, partition
  /// and processing-time fields are copied).
  source_driver(const stream_node& node, source_reader_ptr reader, std::size_t batch_size);

  /// Opens the reader.
  void open(const operator_context& ctx) { reader_->open(ctx); }

  /// Reads and emits one batch through `chain` (member 0), then the
  /// watermark and idleness that follow from it; returns false once the input
  /// is exhausted. Throws what the reader throws.
  bool poll_once(operator_chain& chain, subtask_clock& clock);

  /// How long to wait before the next poll (a rate-limited source).
  std::chrono::nanoseconds next_poll_delay() const { return reader_->next_poll_delay(); }

  /// Fills `e.snapshot.operator_state` (format version 2 or 3, see
  /// `encode_state`) and `e.source_position` (one line per split).
  void snapshot(const subtask_clock& clock, operator_snapshot_entry& e) const;

  /// Resumes from what `snapshot` wrote, in format version 3, 2 or 1 (after
  /// `open`, before the first poll). Throws std::runtime_error naming the
  /// format version when `state` cannot be read, or the reader's reason
  /// when it cannot resume.
  void restore(const std::string& state, subtask_clock& clock);

  source_reader& reader() noexcept { return *reader_; }

  /// The operator state of a source, format version 2:
  ///
  ///     weir-source-state 2
  ///     position <byte|event|offset> <value> <split>     (one per split)
  ///     clock <replay clock, ms; 0 under the wall clock>
  ///     <the watermark generator's lines>
  ///
  /// Version 3 adds `finished <unit> <value> <split>` lines among the
  /// position lines, for splits read to their end (the files of a directory
  /// source); a state without finished splits is still written as version 2.
  ///
  /// Version 4 adds, after the position lines, `reader <n>` and on the next
  /// line the reader's own state (`source_reader::snapshot_state`, n bytes,
  /// then a newline), for a reader that has one (the http source); a state
  /// without it is written as version 2 or 3.
  ///
  /// Version 1 (unversioned, before split positions) was
  /// "<value>\nclock <ms>\n<watermark lines>": it restores as one position
  /// with an empty split.
  static constexpr std::string_view state_magic = "weir-source-state";
  static constexpr std::uint32_t state_version = 4;
  static std::string encode_state(const std::vector<source_position>& positions,
                                  event_time clock, const std::string& watermarks,
                                  const std::string& reader_state = {});
  struct decoded_state {
    std::uint32_t version = 0;
    std::vector<source_position> positions;
    event_time clock = 0;
    std::string watermarks;
    std::string reader_state; ///< version 4; empty before
  };
  /// Reads either version; throws std::runtime_error naming the version.
  static decoded_state decode_state(std::string_view state);

private:
  // The watermark (and idleness) that follows from what the generator knows.
  void emit_progress(operator_chain& chain);

  source_reader_ptr reader_;
  std::size_t batch_size_;
  /// When the reader's lag was last asked for (at most every 100 ms).
  std::chrono::steady_clock::time_point lag_polled_{};
  time::source_watermarks watermarks_;
  std::optional<std::size_t> partition_field_;
  std::optional<std::size_t> processing_time_field_;
  std::string partition_name_;
  /// The reader's `partitions()` as last given to the watermark generator.
  std::vector<std::string> synced_partitions_;
  bool partitions_synced_ = false;
};

} // namespace weir::runtime
