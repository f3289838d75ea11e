// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"
#include "weir/server/http_server.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <limits>
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

/// The last `capacity` values pushed, oldest first: a ring over one
/// allocation that never grows past `capacity` elements.
template <class T>
class bounded_ring {
public:
  explicit bounded_ring(std::size_t capacity = 0) : capacity_(capacity) {}

  void push(T v) {
    if (capacity_ == 0)
      return;
    if (items_.size() < capacity_) {
      items_.push_back(std::move(v));
      return;
    }
    items_[head_] = std::move(v);
    head_ = (head_ + 1) % capacity_;
  }
  std::size_t size() const noexcept { return items_.size(); }
  /// The `i`th oldest value; `i < size()`.
  const T& operator[](std::size_t i) const { return items_[(head_ + i) % items_.size()]; }
  const T& back() const { return (*this)[items_.size() - 1]; }

private:
  std::size_t capacity_;
  std::size_t head_ = 0; ///< index of the oldest value once full
  std::vector<T> items_;
};

/// One subtask's metrics at one sample of the metric history: 64 bytes.
struct subtask_point {
  double in_rate = 0, out_rate = 0; ///< records per second over the interval
  double backpressure_ratio = 0;    ///< 0..1
  /// Input watermark, ms since the epoch; `no_value` before the first.
  std::int64_t watermark = no_value;
  std::uint64_t state_bytes = 0, records_in = 0, records_out = 0;
  std::int64_t source_lag = no_value; ///< records; `no_value` for other sources
  static constexpr std::int64_t no_value = std::numeric_limits<std::int64_t>::min();
};
static_assert(sizeof(subtask_point) == 64);

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
  /// The metric history: sample times (ms since the epoch) and, per
  /// operator and subtask, the point sampled at each; all rings of a job
  /// have the same size and hold at most `max_history` points.
  bounded_ring<std::int64_t> metric_times;
  std::vector<std::vector<bounded_ring<subtask_point>>> metric_history;
  /// The point with zero rates that closes the histories of a job that is
  /// over has been added.
  bool ended_ = false;

  /// Reads the job's counters and updates the rates from the previous
  /// sample; a running job's point joins `history` and the metric history,
  /// which keep at most `max_history` points. Once the job is over its
  /// rates are 0 and one last point with zero rates closes the histories
  /// (a chart then ends at 0, not at the job's last rate).
  void sample(std::size_t max_history);

private:
  /// Adds the point of `st` at `now` to the metric history. Caller holds
  /// `mutex`, the rates of this sample are set.
  void record_metrics(const job_status& st, std::int64_t now, std::size_t max_history);
};

} // namespace weir::server::internal
