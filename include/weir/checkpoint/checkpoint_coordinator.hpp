// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/snapshot_manifest.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace weir::checkpoint {

/// Limits of the checkpoint coordinator (`[checkpoint]` in TOML).
struct coordinator_options {
  /// A checkpoint not fully acknowledged this long after its trigger is
  /// aborted (Flink's `checkpointTimeout`, default 10 min).
  std::chrono::milliseconds timeout{600'000};
  /// Least time from the completion of one checkpoint to the trigger of the
  /// next (Flink's `minPauseBetweenCheckpoints`).
  std::chrono::milliseconds min_pause{0};
  /// Most checkpoints in flight at once, >= 1 (Flink's
  /// `maxConcurrentCheckpoints`). A checkpoint is in flight from its trigger
  /// until its manifest is committed or it is aborted.
  std::size_t max_concurrent = 1;
};

/// What one subtask reports once its snapshot for a checkpoint is durable
/// (Flink's `AcknowledgeCheckpoint`).
struct task_ack {
  /// One handle per operator of the subtask's chain that stored state.
  std::vector<operator_state_handle> operators;
  /// From the first barrier to the snapshot at this subtask (0 for sources
  /// and single-input subtasks).
  std::chrono::milliseconds alignment{0};
};

/// Why `trigger` did not start a checkpoint.
enum class trigger_refusal : std::uint8_t {
  none,            ///< it did
  too_many,        ///< `max_concurrent` checkpoints are in flight
  min_pause,       ///< the last completion is less than `min_pause` ago
  task_finished,   ///< a subtask ended without a final state: no more checkpoints
};

struct trigger_result {
  /// The id of the new checkpoint, 0 when refused.
  std::uint64_t checkpoint_id = 0;
  trigger_refusal refusal = trigger_refusal::none;
  std::string reason; ///< readable refusal, empty when triggered

  bool triggered() const noexcept { return checkpoint_id != 0; }
};

enum class ack_status : std::uint8_t {
  accepted,  ///< recorded; other subtasks have yet to acknowledge
  all_acked, ///< the last one: commit `manifest`, then `manifest_committed`
  ignored,   ///< unknown, aborted or already acknowledged: see `reason`
};

struct ack_result {
  ack_status status = ack_status::ignored;
  /// With `all_acked`: the manifest to commit, status `completed`.
  std::optional<snapshot_manifest> manifest;
  std::string reason; ///< with `ignored`
};

/// A checkpoint that will not complete, and why. The caller tells the
/// subtasks (so aligners release and sinks drop the pre-commit) and the
/// state writer (to discard the checkpoint's state).
struct aborted_checkpoint {
  std::uint64_t checkpoint_id = 0;
  std::string reason;
};

/// Figures of one completed checkpoint, for the status line and summary.
struct checkpoint_stats {
  std::uint64_t checkpoint_id = 0;
  std::int64_t trigger_ms = 0;   ///< wall clock, ms since the Unix epoch
  std::int64_t duration_ms = 0;  ///< from trigger to committed manifest
  std::int64_t alignment_ms = 0; ///< longest alignment of any subtask
  std::uint64_t size_bytes = 0;  ///< state stored by all subtasks
};

struct completion_result {
  checkpoint_stats stats;
  /// Older checkpoints still in flight, now subsumed by this one.
  std::vector<aborted_checkpoint> subsumed;
};

/// One checkpoint between trigger and completion (Flink's
/// `PendingCheckpoint`).
struct pending_checkpoint {
  std::uint64_t checkpoint_id = 0;
  std::int64_t trigger_ms = 0;
  std::vector<bool> acked;      ///< per task
  std::size_t remaining = 0;    ///< tasks yet to acknowledge
  std::int64_t alignment_ms = 0;
  std::vector<operator_state_handle> handles;
  bool finalizing = false;      ///< all acked; manifest being committed
};

/// The bookkeeping of checkpoints for one job (Flink's
/// `CheckpointCoordinator` without the timers and RPC): trigger, acks,
/// declines, timeouts, completion and figures. The caller (the job manager
/// actor) owns the clock and the messages; this class only decides. Time
/// arguments are wall-clock ms since the Unix epoch. Not thread-safe.
///
/// Protocol: `trigger` gives id n (ids only grow and are never reused, also
/// across restarts via `resume_after`); the caller injects barrier n at the
/// sources. Every task acknowledges (`acknowledge`) or declines
/// (`decline`); the last ack yields the manifest; the caller commits it to
/// storage and calls `manifest_committed` (or `manifest_failed`). Only then
/// is n complete and the caller sends `notify_checkpoint_complete(n)`.
class checkpoint_coordinator {
public:
  /// A coordinator expecting acknowledgements from `tasks` subtasks, numbered
  /// 0..tasks-1 by the caller. Precondition: `opts.max_concurrent >= 1`.
  checkpoint_coordinator(coordinator_options opts, std::uint32_t tasks);

  /// Makes the next id `latest_id + 1` (if that is higher): call with the
  /// highest checkpoint id found in storage before the first trigger.
  void resume_after(std::uint64_t latest_id) noexcept;

  /// Starts checkpoint n (the next id) at `now`, or says why not. A stop's
  /// final checkpoint (`final_checkpoint`) is not held back by `min_pause`.
  trigger_result trigger(std::chrono::milliseconds now, bool final_checkpoint = false);

  /// Task `task` stored its snapshot for checkpoint `checkpoint_id`.
  ack_result acknowledge(std::uint64_t checkpoint_id, std::uint32_t task,
                         task_ack ack, std::chrono::milliseconds now);

  /// Task `task` cannot take checkpoint `checkpoint_id` (alignment aborted,
  /// snapshot or write failed): the checkpoint is aborted; the next trigger
  /// proceeds as usual. Nullopt when it was not in flight or every task had
  /// already acknowledged it (its manifest is being committed).
  std::optional<aborted_checkpoint> decline(std::uint64_t checkpoint_id,
                                            std::uint32_t task, std::string reason);

  /// Aborts every checkpoint still waiting for acknowledgements
  /// `timeout` or longer after its trigger (`now - trigger >= timeout`).
  std::vector<aborted_checkpoint> expire(std::chrono::milliseconds now);

  /// Aborts every checkpoint still waiting for acknowledgements, `reason`
  /// for each: the job ended or is restarting, so none of them can
  /// complete. Those whose manifest is being committed stay in flight.
  std::vector<aborted_checkpoint> abort_waiting(const std::string& reason);

  /// When the earliest in-flight checkpoint times out (ms since the epoch),
  /// if any is waiting for acknowledgements.
  std::optional<std::chrono::milliseconds> next_timeout() const;

  /// The manifest of `checkpoint_id` is committed: it is complete. Older
  /// checkpoints in flight are subsumed (aborted). Nullopt when it was not
  /// waiting for its manifest.
  std::optional<completion_result> manifest_committed(std::uint64_t checkpoint_id,
                                                      std::chrono::milliseconds now);

  /// Committing the manifest failed (disk or map full): aborted.
  std::optional<aborted_checkpoint> manifest_failed(std::uint64_t checkpoint_id,
                                                    std::string reason);

  /// Task `task` has ended without leaving a final state: no checkpoint is
  /// triggered from now on (Flink before FLIP-147), and in-flight ones still
  /// waiting for its acknowledgement are aborted. A no-op for a task already
  /// finished with its final state (`task_finished_with_state`).
  std::vector<aborted_checkpoint> task_finished(std::uint32_t task);

  /// Task `task` has ended (bounded input) and left its final state, which
  /// the caller stores on its behalf for every checkpoint from now on
  /// (Flink's checkpoints after tasks finished, FLIP-147): checkpoints go on.
  /// Returns the in-flight checkpoints still waiting for its acknowledgement,
  /// which the caller acknowledges with that final state.
  std::vector<std::uint64_t> task_finished_with_state(std::uint32_t task);

  /// Whether `task` ended with its final state (the caller acknowledges
  /// each new checkpoint for it).
  bool finished_with_state(std::uint32_t task) const noexcept {
    return task < tasks_ && finished_[task] && !lost_[task];
  }

  std::size_t in_flight() const noexcept { return pending_.size(); }
  bool is_in_flight(std::uint64_t checkpoint_id) const noexcept {
    return pending_.count(checkpoint_id) != 0;
  }
  /// The last id handed out by `trigger` (or `resume_after`), 0 if none.
  std::uint64_t latest_id() const noexcept { return next_id_ - 1; }
  const std::optional<checkpoint_stats>& last_completed() const noexcept {
    return last_completed_;
  }
  std::uint64_t completed_count() const noexcept { return completed_; }
  std::uint64_t aborted_count() const noexcept { return aborted_; }

private:
  aborted_checkpoint abort(std::map<std::uint64_t, pending_checkpoint>::iterator it,
                           std::string reason);

  coordinator_options opts_;
  std::uint32_t tasks_;
  std::vector<bool> finished_;
  std::vector<bool> lost_; ///< finished without a final state
  bool any_finished_ = false; ///< any task in `lost_`
  std::uint64_t next_id_ = 1;
  std::map<std::uint64_t, pending_checkpoint> pending_;
  std::optional<std::chrono::milliseconds> last_completion_;
  std::optional<checkpoint_stats> last_completed_;
  std::uint64_t completed_ = 0;
  std::uint64_t aborted_ = 0;
};

} // namespace weir::checkpoint
