// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir {

namespace runtime {
struct background_run; // actors/background_run.hpp
} // namespace runtime

/// Where a job is in its life (Flink's `JobStatus`).
enum class job_state {
  created,    ///< started, not yet deployed
  running,    ///< subtasks deployed
  restarting, ///< a subtask failed; waiting to redeploy from the last checkpoint
  finished,   ///< its bounded input ended
  stopped,    ///< stopped gracefully (`running_job::stop`)
  failed,     ///< failed for good
  canceled,   ///< canceled (`running_job::cancel`)
};

/// "CREATED", "RUNNING", "RESTARTING", "FINISHED", "STOPPED", "FAILED",
/// "CANCELED" (Flink's spelling, FINISHED/STOPPED aside).
const char* to_string(job_state s) noexcept;

/// True for finished, stopped, failed and canceled.
bool is_terminal(job_state s) noexcept;

/// One subtask's counters at the time of the snapshot (Flink's per-subtask
/// task metrics). Counters count since the job's start or its last restart.
struct subtask_status {
  std::size_t subtask = 0;          ///< 0-based
  std::uint64_t records_in = 0;     ///< numRecordsIn (late ones included)
  std::uint64_t records_out = 0;    ///< numRecordsOut (sources: records decoded)
  std::uint64_t bytes_in = 0;       ///< numBytesIn (columnar payload, `runtime::batch_bytes`)
  std::uint64_t bytes_out = 0;      ///< numBytesOut
  std::uint64_t late_records = 0;   ///< numLateRecordsDropped
  std::uint64_t bad_records = 0;    ///< undecodable input (sources)
  std::uint64_t backpressured_ms = 0; ///< total time blocked on output credit
  /// Current input watermark, ms since the epoch; nullopt before the first
  /// watermark (Flink's Long.MIN_VALUE).
  std::optional<std::int64_t> watermark;
  std::uint64_t state_bytes = 0;    ///< stored at its last acknowledged checkpoint
  /// Sources that know it (Kafka): records not yet read, summed over the
  /// subtask's partitions (Flink's pendingRecords); nullopt elsewhere.
  std::optional<std::int64_t> source_lag;
};

/// One logical operator (a node of the job graph) and its subtasks.
struct operator_status {
  std::string name;
  std::string kind; ///< "file_source", "window", "file_sink", ...
  std::size_t parallelism = 1;
  bool is_source = false;
  bool is_sink = false;
  std::vector<std::string> inputs; ///< names of the operators feeding it
  std::vector<subtask_status> subtasks;
};

/// One checkpoint of the job's history (Flink's checkpoint statistics).
struct checkpoint_record {
  enum class status_kind { in_progress, completed, failed };
  std::uint64_t checkpoint_id = 0;
  std::int64_t trigger_ms = 0;   ///< wall clock, ms since the epoch
  std::int64_t duration_ms = 0;  ///< trigger to completion or failure
  std::uint64_t size_bytes = 0;  ///< state stored (completed only)
  std::int64_t alignment_ms = 0; ///< longest barrier alignment of any subtask
  status_kind status = status_kind::in_progress;
  std::string failure_reason;    ///< failed only
};

/// "IN_PROGRESS", "COMPLETED", "FAILED".
const char* to_string(checkpoint_record::status_kind s) noexcept;

/// Minimum, average and maximum of one statistic over completed
/// checkpoints (Flink's `StatsSummary`); all 0 before the first one.
struct checkpoint_stat_summary {
  std::int64_t min = 0;
  std::int64_t avg = 0; ///< sum / count, rounded down
  std::int64_t max = 0;
};

/// Statistics over every completed checkpoint of the run, not only those
/// still in `job_status::checkpoints` (Flink's `CompletedCheckpointStatsSummary`).
struct checkpoint_summary {
  checkpoint_stat_summary end_to_end_duration; ///< ms, trigger to completion
  checkpoint_stat_summary state_size;          ///< bytes stored
  checkpoint_stat_summary alignment_duration;  ///< ms, longest barrier alignment
};

/// The checkpoint or savepoint the job last restored from (Flink's
/// `RestoredCheckpointStats`).
struct restored_checkpoint {
  std::uint64_t checkpoint_id = 0;
  std::int64_t restore_ms = 0; ///< wall clock of the restore, ms since the epoch
  bool is_savepoint = false;   ///< from `checkpoint_options::from_savepoint`
  std::string path;            ///< the savepoint's or the checkpoint store's directory
};

/// A failure of the job or a subtask (Flink's exception history).
struct job_exception {
  std::int64_t timestamp_ms = 0; ///< wall clock, ms since the epoch
  std::string message;           ///< names the operator and subtask when known
  bool restarted = false;        ///< the job restarted from its last checkpoint
};

/// Everything known about a job at one moment: a copy, safe to keep.
struct job_status {
  std::string name;
  job_state state = job_state::created;
  std::int64_t start_ms = 0;        ///< wall clock at `job::start`
  std::int64_t duration_ms = 0;     ///< since `start_ms` (to the end once over)
  std::size_t restarts = 0;
  std::vector<operator_status> operators; ///< graph order
  /// The most recent checkpoints (at most 100), oldest first.
  std::vector<checkpoint_record> checkpoints;
  std::uint64_t checkpoints_completed = 0; ///< over the whole run
  std::uint64_t checkpoints_failed = 0;    ///< aborted (declined, timed out, storage)
  bool checkpointing = false;              ///< [checkpoint] is on
  checkpoint_summary checkpoint_stats;     ///< over every completed checkpoint
  /// Restores from a checkpoint or savepoint (start and restarts).
  std::uint64_t checkpoints_restored = 0;
  /// The latest restore; nullopt while the job has restored nothing.
  std::optional<restored_checkpoint> restored;
  /// The most recent failures (at most 100), oldest first.
  std::vector<job_exception> exceptions;
  /// Once terminal: the result `wait()` returns.
  std::optional<job_result> result;
};

/// A job running on threads of its own (`job::start`): the handle a host
/// program keeps to watch and end it. Every member is thread-safe. Moving
/// the handle moves the job; the destructor cancels a job still running and
/// waits for it to end (call `wait()` or `stop()` first to end it otherwise).
class running_job {
public:
  running_job(running_job&&) noexcept;
  running_job& operator=(running_job&&) noexcept;
  ~running_job();

  /// A snapshot of the job's state, counters, checkpoints and exceptions,
  /// read while it runs without stopping it (counters are relaxed atomics:
  /// each is exact, the set is not one instant).
  job_status status() const;

  /// The current state alone (cheaper than `status()`).
  job_state state() const;

  /// Graceful stop, as `job::stop`: sources stop, sinks flush; with
  /// checkpoints a final checkpoint is taken first. Returns at once.
  void stop();

  /// Ends the job at once: every subtask is stopped where it is, nothing is
  /// flushed or committed (a file sink's output keeps its in-progress name).
  /// The result is failed with error "canceled". Returns at once.
  void cancel();

  /// Blocks until the job ends; returns its result (again on later calls).
  job_result wait();

  /// As `wait`, at most `timeout`; nullopt if it is still running.
  std::optional<job_result> wait_for(std::chrono::milliseconds timeout);

  /// The rows sink `sink` receives, handed to `on_batch(batch, subtask,
  /// first_row)` on the sink's thread while subscribed (see
  /// `runtime::batch_tap`: `on_batch` must return at once; `first_row`
  /// numbers the batch's first row among those the sink subtask received).
  /// Subscribing after the job ended is allowed (nothing arrives). Returns
  /// the subscription's id, or nullopt when no sink is called `sink`.
  std::optional<std::uint64_t>
  subscribe_sink(const std::string& sink,
                 std::function<void(const record_batch_ptr&, std::size_t, std::uint64_t)> on_batch);
  /// Ends a subscription; `on_batch` is not called once this returns.
  void unsubscribe_sink(const std::string& sink, std::uint64_t id);

  /// The schema of the rows sink `sink` receives; null if there is none.
  schema_ptr sink_schema(const std::string& sink) const;

private:
  friend class job;
  explicit running_job(std::shared_ptr<runtime::background_run> c);
  std::shared_ptr<runtime::background_run> control_;
};

} // namespace weir
