// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/runtime/checkpointed_input_gate.hpp"
#include "weir/runtime/dead_letter_queue.hpp"
#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/job_metrics.hpp"
#include "weir/runtime/operator_chain.hpp"
#include "weir/runtime/output_channels.hpp"
#include "weir/runtime/source_driver.hpp"
#include "weir/runtime/subtask_clock.hpp"
#include "weir/runtime/subtask_environment.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir::runtime {

/// Everything one subtask needs to run, without the actors around it.
struct subtask_config {
  const job_graph* graph = nullptr;
  const execution_plan* plan = nullptr;
  job_metrics* metrics = nullptr;
  dead_letter_queue* dead_letters = nullptr; ///< may be null
  std::size_t vertex = 0;
  std::size_t subtask = 0;
  /// The job manager's number for this subtask (checkpoint acks).
  std::uint32_t task_index = 0;
  /// Batches a receiver grants each input channel (docs/internals/architecture.md).
  std::uint32_t credits_per_channel = 8;
  bool replay_clock = false;
  std::size_t attempt = 0; ///< 0 for the first run, then one per restart
  /// The network edges leaving the chain, and how many output channels.
  std::vector<writer_spec> writers;
  std::size_t out_channels = 0;
  /// Restoring: one entry per chain member (in chain order); empty = fresh.
  std::vector<std::shared_ptr<const operator_restore>> restores;
};

/// One subtask: its operator chain, input gate, source driver, output
/// channels and clock (Flink's `StreamTask`, with its mailbox's
/// backpressure). A source subtask polls its reader when asked and stops
/// while an output channel has a backlog; a task subtask keeps input that
/// arrives while it is blocked in an inbox and processes it, in order, once
/// credit returns. Checkpoints: a source snapshots when triggered, a task
/// once the barrier is aligned over all its input channels; the frozen state
/// goes to `subtask_environment::write_snapshot` and barrier n goes out on
/// every output behind the data before it.
///
/// Every entry point may throw (an operator, a reader or a restore failed):
/// the caller ends the subtask with `failure_message(what)`.
class subtask {
public:
  /// `config.graph`, `plan` and `metrics` and `env` must outlive it.
  subtask(subtask_config config, subtask_environment& env);

  subtask(const subtask&) = delete;
  subtask& operator=(const subtask&) = delete;

  /// Opens the chain (and source), restores state if restoring, and asks a
  /// source's first poll.
  void open();

  bool is_source() const noexcept { return source_.has_value(); }

  // -- entry points, one per message -----------------------------------------------

  /// An element arrived on an input channel (task subtasks).
  void on_input(input_element e);
  /// A source's poll is due.
  void on_poll();
  /// Wall clock: a processing-time timer may be due.
  void on_wake();
  /// Source: the job manager triggers checkpoint `checkpoint_id`.
  void on_trigger(std::uint64_t checkpoint_id, event_time timestamp);
  /// Source: the job is being stopped gracefully (Flink's stop-with-savepoint
  /// without drain). With `checkpoint_id` != 0 the source first takes that
  /// final checkpoint (as `on_trigger`); then it reads no more, calls `stop`
  /// on its chain and ends its outputs without the final +inf watermark, so
  /// downstream windows do not fire early. Downstream subtasks stop in turn
  /// when all their inputs have stopped or ended. With checkpoints on, a
  /// stopped subtask finishes only once its last snapshot is complete or
  /// aborted (`on_notify_complete` / `on_cancel`), so its sink commits the
  /// final checkpoint first. A source that has finished already ignores it
  /// (and declines the checkpoint).
  void on_stop(std::uint64_t checkpoint_id, event_time timestamp);
  /// Checkpoint n is complete: the chain commits (sinks), the source's
  /// reader is told. A subtask that waits for its final checkpoint ends
  /// once n is at least the id of its final snapshot.
  void on_notify_complete(std::uint64_t checkpoint_id);
  /// The job is failing or restarting (`abort_transactions`): the chain's
  /// two-phase-commit sinks roll back what no completed checkpoint holds.
  void on_abort_transactions(std::uint64_t keep_up_to);
  /// The last checkpoint this subtask was told complete (0 = none).
  std::uint64_t last_completed_checkpoint() const noexcept { return last_completed_; }
  void on_cancel(std::uint64_t checkpoint_id);
  /// The receiver of output channel `channel` returned `batches` credits.
  void on_credit(std::uint32_t channel, std::uint32_t batches);
  /// A snapshot handed to `write_snapshot` was written (or failed).
  void on_snapshot_written();

  /// After every entry point: re-arms the wall-clock timer wake-up.
  void schedule_wakeup();

  /// "operator 'name' (kind) subtask i/p failed: what", naming the chain
  /// member that was running.
  std::string failure_message(const std::string& what) const;

  bool finishing() const noexcept { return finishing_; }
  operator_chain& chain() noexcept { return chain_; }
  output_channels& outputs() noexcept { return out_; }
  checkpointed_input_gate& gate() noexcept { return gate_; }

private:
  void process(input_element& e);
  void act_on(const checkpoint::barrier_decision& d, event_time ts);
  void release_held();
  void take_snapshot(std::uint64_t n, event_time trigger_ts, std::chrono::milliseconds align);
  /// The watermark of logical input `input` advanced to `wm`.
  void advance_watermark(std::size_t input, event_time wm);
  /// Two-input head: tells it when input `input` went idle or active.
  void sync_input_idle(std::size_t input);
  void schedule_poll();
  void resume();
  void end_of_chain(bool drain = true);
  /// Stopped with checkpoints on: the last snapshot taken is neither
  /// complete nor aborted yet.
  bool awaiting_checkpoint() const noexcept;
  void maybe_finish();
  /// What this subtask leaves for the checkpoints after it ends
  /// (`task_final_state`): a source's final positions, and after a drained
  /// input the final snapshot of every two-phase-commit sink, which then
  /// waits for a checkpoint holding it (`final_checkpoint_`, also in the
  /// request's `checkpoint_id`; 0 when nothing waits).
  write_snapshot_request final_snapshot();
  void note_blocked() { out_.note_blocked(); }

  subtask_config config_;
  subtask_environment* env_;
  const chain_vertex& vertex_;
  subtask_clock clock_;
  output_channels out_;
  operator_chain chain_;
  checkpointed_input_gate gate_;
  std::optional<source_driver> source_;
  std::vector<bool> input_idle_; ///< per logical input, as last told the head
  std::deque<input_element> inbox_;
  bool poll_scheduled_ = false;
  bool finishing_ = false;
  bool finished_ = false;
  std::optional<event_time> wakeup_at_;
  std::chrono::steady_clock::time_point align_started_;
  std::size_t outstanding_writes_ = 0;
  bool stopped_input_ = false; ///< some input channel was stopped, not drained
  bool stopping_ = false;      ///< finishing without draining (a graceful stop)
  std::uint64_t last_snapshot_ = 0;       ///< id of the last snapshot taken
  bool last_snapshot_resolved_ = true;    ///< ... is complete or aborted
  std::uint64_t last_completed_ = 0;
  bool final_state_sent_ = false;
  /// Id of the final snapshot of the chain's two-phase-commit sinks until a
  /// checkpoint at least as new completes (0: nothing to wait for). Flink's
  /// final checkpoint after `finish` (FLIP-147): the subtask ends only then.
  std::uint64_t final_checkpoint_ = 0;
};

} // namespace weir::runtime
