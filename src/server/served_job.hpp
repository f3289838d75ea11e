// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"
#include "weir/server/http_server.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace weir::server::internal {

/// Totals of one operator over its subtasks, from a status snapshot.
struct operator_totals {
  std::uint64_t records_in = 0, records_out = 0, bytes_in = 0, bytes_out = 0;
  std::uint64_t late = 0, bad = 0, backpressured_ms = 0, state_bytes = 0;
  std::optional<std::int64_t> watermark; ///< min over subtasks, once all have one
};

/// Sums `op`'s subtasks.
operator_totals sum(const operator_status& op);

/// A job the server runs, and the rates it samples of it (`sample`, once a
/// second from the server's sampler thread). The rates and `history` are
/// guarded by `mutex`; `id`, `owner`, `run` and `source` are set before the
/// job is served and never change.
struct served_job {
  std::string id; ///< 32 hex digits
  std::unique_ptr<job> owner;
  std::unique_ptr<running_job> run;
  /// The TOML it was made from; nullopt for a job a host program built.
  std::optional<pipeline_source> source;

  /// One point of the throughput chart.
  struct sample_point {
    std::int64_t t_ms = 0;
    double records_in_per_s = 0;  ///< into the sinks
    double records_out_per_s = 0; ///< out of the sources
  };
  /// One subtask's rates over the last interval.
  struct subtask_rates {
    double in = 0, out = 0;        ///< records per second
    double backpressure_ratio = 0; ///< share of the interval backpressured, 0..1
  };

  std::mutex mutex;
  /// Per operator (graph order): last totals, and rates over the last interval.
  std::vector<operator_totals> last;
  std::int64_t last_ms = 0;
  std::vector<double> in_rate, out_rate, backpressure_ratio;
  /// Per operator and subtask: last counters, and rates over the last interval.
  std::vector<std::vector<subtask_status>> last_subtasks;
  std::vector<std::vector<subtask_rates>> subtask_rate;
  std::deque<sample_point> history; ///< oldest first

  /// Reads the job's counters and updates the rates from the previous
  /// sample; a running job's point joins `history`, which keeps at most
  /// `max_history` points.
  void sample(std::size_t max_history);
};

} // namespace weir::server::internal
