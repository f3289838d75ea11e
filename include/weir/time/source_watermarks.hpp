// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace weir::time {

/// Watermark generation of one source subtask, one generator per source
/// partition (docs/concepts/event-time.md; Flink's `BoundedOutOfOrdernessWatermarks` per
/// split, combined like its `WatermarkOutputMultiplexer`).
///
/// Each partition's watermark is `max_ts_seen - bound - 1` (ms). The source's
/// watermark is the minimum over partitions that are not idle, and never
/// decreases. A partition is idle once it has produced no record for
/// `idle_timeout` of processing time; it stops holding back the minimum and
/// becomes active again with its next record. Partitions are either declared
/// up front (like Kafka partitions: an undeclared-yet-silent partition holds
/// the watermark at -inf until it produces or goes idle) or discovered from
/// the data (a partition first seen after the watermark advanced cannot pull
/// it back, so its early records may be late).
class source_watermarks {
public:
  struct options {
    std::chrono::milliseconds max_out_of_orderness{0};
    std::chrono::milliseconds idle_timeout{0}; ///< 0 = partitions never go idle
    std::vector<std::string> declared_partitions; ///< empty = discover from data
  };

  explicit source_watermarks(options opts);

  /// Accounts for one record of `partition` (the partition_by value rendered
  /// as text; "" when the source is not partitioned) with event time `ts`, at
  /// processing time `now` (ms).
  void on_record(const std::string& partition, event_time ts, event_time now);

  /// A partition known before its first record (a file begun): it holds the
  /// watermark back until it produces or goes idle. No-op if known.
  void declare(const std::string& partition);

  /// A partition that ended (a file read to its end): it no longer holds the
  /// watermark back, and is forgotten.
  void finish(const std::string& partition);

  /// True when no partition is known (every split finished).
  bool empty() const noexcept { return partitions_.empty(); }

  /// Makes the partitions exactly `names` (a reader that declares its
  /// partitions, like Kafka's): a new one is declared at processing time
  /// `now` (it holds the watermark back until it produces, or until it goes
  /// idle `idle_timeout` after `now`); one not in `names` is forgotten (it
  /// ended: it no longer holds the watermark back).
  void set_partitions(const std::vector<std::string>& names, event_time now);

  /// Marks partitions idle whose last record is older than `now - idle_timeout`.
  void on_processing_time(event_time now);

  /// The watermark to emit if it advanced since the last call, else nullopt.
  std::optional<event_time> poll();

  /// The current combined watermark (min_watermark before any).
  event_time current() const noexcept { return emitted_; }

  /// True when every known partition is idle (the source holds nothing back).
  bool all_idle() const noexcept;

  /// The generator's state for a checkpoint, as text: the emitted watermark
  /// and each partition's maximum timestamp (idleness is not kept: it is a
  /// matter of processing time).
  std::string snapshot() const;

  /// Restores what `snapshot` wrote, so a resumed source emits the same
  /// watermarks an uninterrupted one would. Throws std::runtime_error for
  /// malformed text.
  void restore(std::string_view text);

private:
  struct partition_state {
    event_time max_ts = min_watermark;
    /// Processing time of the last record; min_watermark = none since the
    /// generator started (or was restored).
    event_time last_seen = min_watermark;
    event_time declared_at = min_watermark; ///< set_partitions' `now`
    bool seen = false;
    bool idle = false;
  };

  event_time combined() const;

  options opts_;
  std::unordered_map<std::string, partition_state> partitions_;
  event_time emitted_ = min_watermark;
  event_time started_ = min_watermark; ///< processing time of the first call
};

} // namespace weir::time
