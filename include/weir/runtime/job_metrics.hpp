// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/runtime/job_graph.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace weir::runtime {

/// Counters of one subtask of one logical node, written by the subtask's
/// actor and read by anyone (status line, summary, later the HTTP server)
/// without stopping the job. Relaxed atomics: figures, not synchronisation.
struct subtask_metrics {
  std::atomic<std::uint64_t> records_in{0};
  std::atomic<std::uint64_t> records_out{0};
  std::atomic<std::uint64_t> late_records{0};
  std::atomic<std::uint64_t> bad_records{0};
  /// Pattern operators: partial matches dropped at max_partial_matches.
  std::atomic<std::uint64_t> partial_matches_dropped{0};
  /// Sources reading text: lines read (headers, blank and bad lines too).
  std::atomic<std::uint64_t> lines_read{0};
  std::atomic<bool> counts_lines{false};
  std::atomic<std::uint64_t> backpressured_ns{0};
  std::atomic<event_time> watermark{min_watermark};
};

/// Totals over the job, as shown in the status line and the final summary.
struct job_totals {
  std::uint64_t records_read = 0;    ///< rows emitted by sources
  std::uint64_t records_written = 0; ///< rows received by sinks
  std::uint64_t bad_records = 0;
  std::uint64_t late_records = 0;
  event_time sink_watermark = min_watermark; ///< min over sink subtasks
};

/// Every subtask's counters, indexed by node and subtask.
class job_metrics {
public:
  explicit job_metrics(const job_graph& g);

  subtask_metrics& at(std::size_t node, std::size_t subtask) {
    return *metrics_[node][subtask];
  }

  job_totals totals() const;

  /// Per logical node: each source, and each operator that counted late or
  /// bad records (sinks are left out), summed over its subtasks.
  std::vector<node_counts> counts() const;

  /// Zeroes every counter (a restarted job counts from its restore point).
  void reset();

private:
  const job_graph* graph_;
  std::vector<std::vector<std::unique_ptr<subtask_metrics>>> metrics_;
};

} // namespace weir::runtime
