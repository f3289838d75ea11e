// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "job_context.hpp"
#include "job_messages.hpp"
#include "weir/checkpoint/checkpoint_coordinator.hpp"
#include "weir/checkpoint/checkpoint_failure_manager.hpp"
#include "weir/checkpoint/snapshot_manifest.hpp"
#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_control.hpp"
#include "weir/runtime/job_metrics.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace weir::runtime {

/// One subtask of one attempt, as the job master deploys it.
struct subtask_deployment {
  /// The job master's number for the subtask, 0 .. subtasks-1 in deployment
  /// order (downstream first): what its checkpoint acknowledgements carry.
  std::uint32_t task = 0;
  std::size_t vertex = 0;  ///< index into the execution plan's vertices
  std::size_t subtask = 0; ///< 0 .. the vertex's parallelism-1
  std::size_t attempt = 0; ///< 0 for the first run, then one per restart
  /// Restoring: one entry per chain member (in chain order); empty = fresh.
  std::vector<std::shared_ptr<const operator_restore>> restores;
  /// The network edges leaving the chain (`plan_subtask_outputs`).
  std::vector<writer_spec> writers;
  /// One output channel of the subtask: a subtask deployed before it (its
  /// `task` number, smaller than this one's) and the input channel it has
  /// there.
  struct channel {
    std::uint32_t target_task = 0;
    std::uint32_t target_channel = 0;
  };
  std::vector<channel> out_channels; ///< in the subtask's channel numbering
};

/// The job master's timers (`job_master_environment::schedule`); each calls
/// back the entry point named.
enum class job_master_timer {
  status_tick, ///< `job_master::on_status_tick`
  checkpoint,  ///< `job_master::on_checkpoint_timer`
  stop_retry,  ///< `job_master::on_stop`
  redeploy,    ///< `job_master::on_redeploy_timer`
};

/// Why the job master waits for the state writer's mailbox to drain
/// (`job_master_environment::drain_state_writer`).
enum class drain_purpose {
  finish,   ///< every subtask has ended: the job ends after the drain
  redeploy, ///< a restart: redeploys after the drain
};

/// Everything the job master asks of the world around it: the CAF shell
/// (`actors/job_manager_actor.cpp`) implements it with messages to the
/// subtask actors and the state writer, and a unit test with queues. Every
/// call is made from inside a call on the `job_master`, on its thread; none
/// may call back into it (the answers come later, as calls on its entry
/// points). Tasks are numbered as in `subtask_deployment::task`.
class job_master_environment {
public:
  virtual ~job_master_environment() = default;

  /// Wall clock, ms since the Unix epoch: checkpoint trigger times and
  /// timeouts, and the journal's times.
  virtual std::chrono::milliseconds now() = 0;

  // -- subtasks -----------------------------------------------------------------

  /// Starts one attempt's subtasks, in order (each one's output channels
  /// name subtasks earlier in `tasks`). The previous attempt's subtasks have
  /// all ended. Each ending is reported by `job_master::on_subtask_ended`.
  virtual void deploy(std::vector<subtask_deployment> tasks) = 0;
  /// Source subtask `task`: take checkpoint `checkpoint_id` (trigger time
  /// `timestamp_ms`, wall clock ms) and send its barrier downstream.
  virtual void trigger_checkpoint(std::uint32_t task, std::uint64_t checkpoint_id,
                                  std::int64_t timestamp_ms) = 0;
  /// Source subtask `task`: stop reading, after taking checkpoint
  /// `checkpoint_id` when it is not 0 (`subtask::on_stop`).
  virtual void stop_source(std::uint32_t task, std::uint64_t checkpoint_id,
                           std::int64_t timestamp_ms) = 0;
  /// Subtask `task`: checkpoint `checkpoint_id` is complete (sinks commit).
  virtual void notify_checkpoint_complete(std::uint32_t task, std::uint64_t checkpoint_id) = 0;
  /// Subtask `task`: checkpoint `checkpoint_id` was aborted.
  virtual void cancel_checkpoint(std::uint32_t task, std::uint64_t checkpoint_id) = 0;
  /// Subtask `task`: roll back every transaction newer than checkpoint
  /// `keep_up_to` (`abort_transactions`), then exit where it is. May name a
  /// subtask that has ended already (then nothing happens).
  virtual void stop_subtask(std::uint32_t task, std::uint64_t keep_up_to) = 0;
  /// Subtask `task` answers a host's state query itself (`q.reply`).
  virtual void query_state(std::uint32_t task, subtask_state_query q) = 0;

  // -- state writer (only with checkpoints on) ----------------------------------------

  /// Deletes the state of aborted checkpoint `checkpoint_id`; the answer, if
  /// any, goes to `job_master::on_discard_result`.
  virtual void discard_checkpoint(std::uint64_t checkpoint_id) = 0;
  /// Stores the final state of an ended subtask under `req.checkpoint_id`;
  /// the answer goes to `job_master::on_final_state_written(attempt, ...)`
  /// (with `ok` false and the error when the writer does not answer).
  virtual void write_final_state(std::size_t attempt, write_snapshot_request req) = 0;
  /// Commits manifest `m` (its checkpoint becomes complete); the answer goes
  /// to `job_master::on_checkpoint_committed(attempt, ...)`, no answer to
  /// `on_commit_unanswered(attempt, ...)`.
  virtual void commit_checkpoint(std::size_t attempt, checkpoint::snapshot_manifest m) = 0;
  /// Copies committed checkpoint `m` (sent right after its commit) into
  /// `req.path`; the answer goes to `job_master::on_savepoint_written`, a
  /// writer that does not answer sets `req.reply` to `errc::io_error`.
  virtual void write_savepoint(savepoint_request req, checkpoint::snapshot_manifest m) = 0;
  /// Calls `job_master::on_state_writer_drained(p)` once every request sent
  /// to the writer before has been handled (its mailbox is in order).
  virtual void drain_state_writer(drain_purpose p) = 0;

  // -- timers and the end -------------------------------------------------------------

  /// Calls the entry point of `t` after `delay`.
  virtual void schedule(job_master_timer t, std::chrono::milliseconds delay) = 0;
  /// Calls `job_master::on_savepoint_request(r)` again after `delay`.
  virtual void retry_savepoint(savepoint_request r, std::chrono::milliseconds delay) = 0;
  /// The job has ended (its outcome is in the context): stop the state
  /// writer and the job manager. No call on the job master follows.
  virtual void finished() = 0;
};

/// The job's master (Flink's `JobMaster` with its `CheckpointCoordinator`
/// driver, `DefaultScheduler` and fixed-delay restart strategy), without
/// actors: deploys every subtask of an attempt (restoring the latest
/// completed checkpoint, or a savepoint), triggers checkpoints every
/// `checkpoint_options::interval`, collects the acknowledgements and has
/// the manifest committed (Carbone et al. 2015), aborts declined and timed
/// out checkpoints and fails the job past `tolerable_failures`, restarts
/// the job after a subtask failure (at most `restart_options::attempts`
/// times, `delay` apart, each from the latest completed checkpoint), keeps
/// checkpointing after subtasks end (FLIP-147) and triggers the final
/// checkpoint that commits their two-phase-commit sinks, takes savepoints,
/// and stops (gracefully, optionally with a savepoint) or cancels the job.
/// It records what observers see in `job_context::journal` and the outcome
/// in `job_context::result`.
///
/// The actor around it (`spawn_job_manager`) turns each message into one
/// entry-point call; what the master wants done goes to its
/// `job_master_environment`. Not thread-safe: one caller at a time. No entry
/// point throws (a dead-letter queue's failure fails the job).
class job_master {
public:
  /// `ctx` holds the graph, the plan and (checkpoints on) the store; `env`
  /// must outlive the master. Nothing happens before `start`.
  job_master(std::shared_ptr<job_context> ctx, job_master_environment& env);

  job_master(const job_master&) = delete;
  job_master& operator=(const job_master&) = delete;

  /// Deploys the first attempt and sets the first timers. A restore that is
  /// refused (unreadable checkpoint, savepoint of another job) fails the job
  /// at once: `failed()`, and `finished` has been called.
  void start();

  // -- entry points, one per message -----------------------------------------------

  /// Status line (`job_options::status_interval`, on stderr) and loss limits
  /// (`max_bad_ratio`, `max_late_ratio`): a limit passed fails the job.
  void on_status_tick();
  /// Periodic trigger: expires timed-out checkpoints, triggers the next one
  /// (unless refused: in flight, `min_pause`, a subtask ended without a
  /// final state) and re-arms the timer.
  void on_checkpoint_timer();
  /// A subtask's snapshot for a checkpoint was stored (`r.ok`) or could not
  /// be (the checkpoint is declined and counted as failed). The last
  /// acknowledgement has the manifest committed
  /// (`job_master_environment::commit_checkpoint`).
  void on_acknowledge(write_snapshot_result r);
  /// Subtask `f.request.task` ended its input and left its final state
  /// (`task_final_state`; the caller checked that it comes from that
  /// subtask of this attempt).
  void on_final_state(task_final_state f);
  /// The state writer deleted an aborted checkpoint's state, or could not
  /// (a warning).
  void on_discard_result(const discard_result& r);
  /// Subtask `task` cannot take part in checkpoint `checkpoint_id`: it is
  /// aborted (not counted as a failed checkpoint).
  void on_decline(std::uint64_t checkpoint_id, std::uint32_t task, const std::string& reason);
  /// `job::stop` (Flink's stop-with-savepoint without drain, without the
  /// savepoint): the sources stop after a final checkpoint, retried every
  /// 10 ms while another checkpoint is in flight.
  void on_stop();
  /// `running_job::cancel`: every subtask exits where it is, nothing is
  /// flushed, nothing restarts; the job fails with "canceled".
  void on_cancel();
  /// A host's state query: routed to the subtask owning the key's key
  /// group, or answered at once with `errc::not_found` (no such operator),
  /// `errc::invalid_argument` (not keyed, wrong key count or type) or
  /// `errc::runtime_error` (that subtask is not running).
  void on_state_query(state_query q);
  /// `job::trigger_savepoint` / `job::stop_with_savepoint`: the reply gets
  /// the savepoint once its checkpoint completes and is copied to `r.path`,
  /// or `errc::invalid_argument` (no checkpoints, bad path),
  /// `errc::runtime_error` (restarting or stopping, refused or aborted
  /// checkpoint) or `errc::io_error` (the copy failed).
  void on_savepoint_request(savepoint_request r);
  /// A restart's delay is over: redeploys once the state writer is drained.
  void on_redeploy_timer();
  void on_state_writer_drained(drain_purpose p);
  /// Answer to `write_final_state` made in attempt `attempt` (ignored when
  /// another attempt runs now).
  void on_final_state_written(std::size_t attempt, write_snapshot_result r);
  /// Answer to `commit_checkpoint(attempt, m)`, `id` = `m.checkpoint_id`:
  /// the checkpoint completes (every subtask is notified) or fails.
  void on_checkpoint_committed(std::size_t attempt, std::uint64_t id,
                               const commit_manifest_result& c);
  /// `commit_checkpoint(attempt, m)` got no answer (`why`): the commit stays
  /// in doubt (the writer may have made it), the checkpoint fails.
  void on_commit_unanswered(std::size_t attempt, std::uint64_t id, const std::string& why);
  /// Answer to `write_savepoint(req, m)` for checkpoint `id`: sets `req.reply`.
  void on_savepoint_written(const savepoint_request& req, std::uint64_t id,
                            const savepoint_write_result& r);
  /// Subtask `task` of this attempt ended: normally (`error` empty: its input
  /// ended or it was stopped), or with `error` (the failure recorded in the
  /// context, if any, names it better). A failure restarts the job
  /// (checkpoints on, attempts left, not stopping, not unrecoverable) or
  /// fails it. Once the last subtask has ended the job restarts or ends.
  void on_subtask_ended(std::uint32_t task, std::optional<std::string> error);
  /// The state writer ended (`normal_exit` false: with error `reason`).
  /// While subtasks run, or when it exited normally, the job fails; with no
  /// subtask running the job ends.
  void on_state_writer_down(bool normal_exit, const std::string& reason);

  // -- observers ------------------------------------------------------------------

  std::size_t attempt() const noexcept { return attempt_; }
  bool failed() const noexcept { return failed_; }
  bool restarting() const noexcept { return restarting_; }
  bool stopping() const noexcept { return stopping_; }
  /// Subtasks of this attempt that have not ended.
  std::size_t running() const noexcept { return running_; }
  /// Subtasks of this attempt (ended or not).
  std::size_t subtasks() const noexcept { return tasks_.size(); }
  bool is_source(std::uint32_t task) const { return tasks_.at(task).is_source; }
  /// (vertex, subtask) of task `task`.
  std::pair<std::size_t, std::size_t> vertex_subtask(std::uint32_t task) const {
    return {tasks_.at(task).vertex, tasks_.at(task).subtask};
  }
  /// Null when checkpoints are off.
  const checkpoint::checkpoint_coordinator* coordinator() const noexcept {
    return coordinator_ ? &*coordinator_ : nullptr;
  }
  /// The newest checkpoint known complete, in this attempt or an earlier one
  /// (or restored from); 0 if none.
  std::uint64_t last_completed_id() const;
  /// "#id (ms, size, align ms)" of the last completed checkpoint, "none
  /// yet", or "off": the status line's checkpoint part.
  std::string checkpoint_summary() const;

private:
  struct task_info {
    std::size_t vertex = 0;
    std::size_t subtask = 0;
    bool is_source = false;
    bool running = false;
  };

  std::string who(std::uint32_t task) const;
  void record_outcome();
  void abort_checkpoints(const std::vector<checkpoint::aborted_checkpoint>& aborted);
  bool read_restore_points(
    std::vector<std::vector<std::vector<std::shared_ptr<const operator_restore>>>>& out);
  void deploy();
  void fail_job(std::string why);
  void stop_subtasks();
  void checkpoint_failed(std::uint64_t id, const std::string& reason);
  void acknowledge_with_final_state(std::uint64_t id, std::uint32_t task);
  void acknowledge_finished_tasks(std::uint64_t id);
  void trigger_final_checkpoint();
  void trigger_checkpoint_now();
  void trigger_sources(std::uint64_t id, std::int64_t now_ms);
  void stop_sources();
  void write_savepoint(checkpoint::snapshot_manifest m);
  std::optional<error> check_savepoint_path(const std::string& path) const;
  void after_writer_drained(drain_purpose p);
  void redeploy();
  void finish();

  std::shared_ptr<job_context> ctx_;
  job_master_environment& env_;
  std::vector<task_info> tasks_;
  std::size_t running_ = 0;
  job_totals last_;
  std::chrono::steady_clock::time_point last_tick_;
  bool failed_ = false;     ///< the job failed for good
  bool restarting_ = false; ///< waiting for subtasks to stop before a restart
  std::size_t attempt_ = 0;
  bool stopping_ = false;        ///< a graceful stop was asked for
  bool sources_stopped_ = false; ///< ... and the sources were told
  std::optional<checkpoint::checkpoint_coordinator> coordinator_;
  /// Counts failed checkpoints against [checkpoint] tolerable_failures.
  std::optional<checkpoint::checkpoint_failure_manager> failures_;
  /// Savepoints waiting for their checkpoint, by checkpoint id.
  std::map<std::uint64_t, savepoint_request> savepoints_;
  /// A stop-with-savepoint waiting for the stop's final checkpoint.
  std::optional<savepoint_request> stop_savepoint_;
  /// Tasks of this attempt that ended their input, and what each leaves in
  /// every later checkpoint (FLIP-147; `task_final_state`).
  std::map<std::uint32_t, write_snapshot_request> final_states_;
  /// Tasks of this attempt whose final state holds a two-phase-commit
  /// sink's final snapshot: each ends once a checkpoint holding it
  /// completes (the job's final checkpoint).
  std::set<std::uint32_t> awaiting_final_;
  /// The latest checkpoint id when every task of this attempt had ended
  /// its input (none until then): a checkpoint with a higher id holds every
  /// task's final state.
  std::optional<std::uint64_t> all_ended_at_;
  /// Checkpoints whose manifest commit went to the state writer and has
  /// not been answered (any attempt): each may complete even after the job
  /// failed.
  std::set<std::uint64_t> commits_in_doubt_;
};

/// One status line: elapsed time, records/s in and out since the last call,
/// sink watermark, bad and late records, and the last checkpoint.
std::string format_status(const job_context& ctx, const job_totals& now,
                          const job_totals& before, double seconds,
                          const std::string& checkpoint);

/// Renders a watermark as ISO-8601 UTC ("-inf" / "+inf" at the extremes).
std::string format_event_time(event_time ts);

} // namespace weir::runtime
