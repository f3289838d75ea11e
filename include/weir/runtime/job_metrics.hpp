// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/runtime/job_graph.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
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
  /// Bytes of the rows received and emitted: their columnar payload
  /// (`batch_bytes`), Flink's numBytesIn / numBytesOut.
  std::atomic<std::uint64_t> bytes_in{0};
  std::atomic<std::uint64_t> bytes_out{0};
  /// Bytes this subtask stored for the last checkpoint it acknowledged
  /// (keyed plus operator state; Flink's checkpointed state size).
  std::atomic<std::uint64_t> state_bytes{0};
  /// Sources: records not yet read (`source_reader::lag`); -1 = unknown.
  std::atomic<std::int64_t> source_lag{-1};
};

/// The columnar payload of `batch` in bytes: 8 per int64, float64 and
/// timestamp value, 1 per bool, a string's bytes plus its 4-byte offset,
/// and 8 per row's event time. An estimate of what the rows weigh, not of
/// the memory the batch holds (capacity, validity bytes).
std::uint64_t batch_bytes(const record_batch& batch) noexcept;

/// A live view of the rows one sink receives, for observers outside the
/// job (the server's Server-Sent Events): each subscriber is called on the
/// sink's thread with every batch the sink receives, before the sink
/// handles it. A subscriber must return at once (copy the pointer into a
/// bounded queue, never block): it runs inside the job. Batches are
/// immutable once shared, so the pointer may be kept. Thread-safe; costs a
/// relaxed load per batch while nobody subscribes.
class batch_tap {
public:
  /// (batch, sink subtask, index of its first row among the rows that
  /// subtask received: consecutive batches of a subtask continue the count).
  using subscriber =
    std::function<void(const record_batch_ptr&, std::size_t, std::uint64_t)>;

  /// Adds `s`; returns its id for `unsubscribe`.
  std::uint64_t subscribe(subscriber s) {
    std::lock_guard lock{mutex_};
    auto id = ++next_;
    subscribers_.emplace(id, std::move(s));
    active_.store(true, std::memory_order_relaxed);
    return id;
  }

  /// Removes subscriber `id`; once this returns it is not called again.
  void unsubscribe(std::uint64_t id) {
    std::lock_guard lock{mutex_};
    subscribers_.erase(id);
    active_.store(!subscribers_.empty(), std::memory_order_relaxed);
  }

  bool active() const noexcept { return active_.load(std::memory_order_relaxed); }

  /// Hands `batch` to every subscriber: rows `first_row ..` of what
  /// subtask `subtask` received since the job (or its last restart) began.
  void publish(const record_batch_ptr& batch, std::size_t subtask, std::uint64_t first_row) {
    std::lock_guard lock{mutex_};
    for (auto& [id, s] : subscribers_)
      s(batch, subtask, first_row);
  }

private:
  std::mutex mutex_;
  std::map<std::uint64_t, subscriber> subscribers_;
  std::uint64_t next_ = 0;
  std::atomic<bool> active_{false};
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
  const subtask_metrics& at(std::size_t node, std::size_t subtask) const {
    return *metrics_[node][subtask];
  }

  /// The tap on the rows node `node` receives (meaningful for sinks).
  batch_tap& tap(std::size_t node) { return *taps_[node]; }

  job_totals totals() const;

  /// Per logical node: each source, and each operator that counted late or
  /// bad records (sinks are left out), summed over its subtasks.
  std::vector<node_counts> counts() const;

  /// Zeroes every counter (a restarted job counts from its restore point).
  void reset();

private:
  const job_graph* graph_;
  std::vector<std::vector<std::unique_ptr<subtask_metrics>>> metrics_;
  std::vector<std::unique_ptr<batch_tap>> taps_;
};

} // namespace weir::runtime
