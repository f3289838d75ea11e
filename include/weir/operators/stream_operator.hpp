// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::state {
class keyed_state_snapshot; // include/weir/state/keyed_state_backend.hpp
} // namespace weir::state

namespace weir {

struct bad_record; // weir/connectors/source_reader.hpp

/// Where an operator sends what it produces. Port 0 is the main output;
/// ports 1.. are side outputs (for example a window's late records).
///
/// The task that runs an operator chain implements this: a chained successor
/// is called directly, a network edge partitions the batch onto channels.
class output_collector {
public:
  virtual ~output_collector() = default;

  /// Emits a batch on the main output. The batch must not change afterwards.
  virtual void collect(record_batch_ptr batch) = 0;

  /// Emits a batch on side output `port` (1-based; 0 is the main output).
  virtual void collect_side(std::size_t port, record_batch_ptr batch) = 0;

  /// Forwards an event-time watermark (ms) to every output.
  virtual void emit_watermark(event_time wm) = 0;
  /// Counts `n` late records the operator dropped without a batch to route
  /// (a window's global phase merging a late partial of n records); rows
  /// emitted on a late side output are counted by `collect_side` already.
  virtual void count_late(std::uint64_t n) { (void) n; }
  /// Counts `n` partial matches a pattern operator dropped at its
  /// `max_partial_matches` cap (shown in the job summary).
  virtual void count_dropped_partial_matches(std::uint64_t n) { (void) n; }
};

/// The job's processing-time clock as one subtask sees it (ms since the
/// epoch). Under the wall clock it is the system clock; under the replay
/// clock it is the processing time carried in-band from the source (taken
/// from a field of the input), so runs are reproducible. Never decreases.
class processing_clock {
public:
  virtual ~processing_clock() = default;
  virtual event_time now() const = 0;
};

/// Per-subtask facts an operator may need when it opens.
struct operator_context {
  std::string operator_name;
  std::size_t subtask_index = 0;
  std::size_t parallelism = 1;
  std::size_t max_parallelism = 128;
  /// The subtask's processing-time clock; never null while the job runs
  /// (tests driving an operator directly may pass their own).
  const processing_clock* clock = nullptr;
  /// Reports a record the operator cannot handle (a sink's document that the
  /// server rejects) under the job's `on_bad_record`: counts it as a bad
  /// record of this operator, then dead-letters it, drops it, or throws
  /// std::runtime_error ("fail"). Empty when the runtime has none (tests
  /// driving an operator directly): the operator then fails itself.
  std::function<void(const bad_record&)> on_bad_record = {};
};

/// What an operator subtask hands to checkpoint n (docs/concepts/checkpoints.md).
struct operator_snapshot {
  /// Frozen keyed state: taken in O(1) or O(buckets) at the barrier, then
  /// serialized key group by key group off the processing path (by the state
  /// writer) while the operator keeps changing its live state. Null when the
  /// operator has no keyed state.
  std::shared_ptr<const state::keyed_state_snapshot> keyed_state;
  /// Operator (non-keyed) state, serialized synchronously at the barrier: a
  /// source's position, a sink's pending commits. Empty when none.
  std::string operator_state;
};

/// What a restored operator subtask receives.
struct operator_restore {
  std::uint64_t checkpoint_id = 0;
  /// Serialized keyed state of every key group in this subtask's key-group
  /// range that has state (as written by keyed_state_snapshot). After a
  /// change of parallelism the range differs from the one that wrote them.
  std::vector<std::pair<std::uint16_t, std::string>> key_groups;
  /// Operator state of the previous run's subtasks that this subtask takes
  /// over (one for an unchanged parallelism; possibly several or none after
  /// rescaling; sources and sinks keep parallelism 1 for files).
  std::vector<std::string> operator_states;
  /// After scaling up, a subtask that takes over no previous subtask's
  /// operator state gets every previous subtask's here instead, to read
  /// (not to own): Flink's union list state. Empty otherwise. The window
  /// operator restores its watermark from it.
  std::vector<std::string> union_operator_states;
  /// The operator's parallelism when the checkpoint was taken (0 = unknown).
  std::uint32_t previous_parallelism = 0;
};

/// A synchronous, single-threaded operator: the unit a task chains and a unit
/// test drives without an actor system (Flink's `StreamOperator`).
///
/// Calls arrive in order: `open`, any mix of `process_batch` and
/// `process_watermark`, then `finish` once every input has ended (after the
/// final `max_watermark`), or `stop` instead when the job was stopped. An operator may
/// throw to fail its subtask; the task turns the exception into a job failure naming the
/// operator and subtask.
class stream_operator {
public:
  virtual ~stream_operator() = default;

  virtual void open(const operator_context& ctx) { (void) ctx; }

  /// Processes one batch; rows of one batch share the watermark that was
  /// current before the batch arrived.
  virtual void process_batch(const record_batch_ptr& batch,
                             output_collector& out) = 0;

  /// Handles a watermark that advanced the subtask's combined input watermark;
  /// the default forwards it.
  virtual void process_watermark(event_time wm, output_collector& out) {
    out.emit_watermark(wm);
  }

  /// Called once after the end of every input. A two-phase-commit sink
  /// (`is_two_phase_commit`) commits nothing here: its subtask calls
  /// `snapshot_state` once more after `finish` (the final snapshot, which
  /// pre-commits the last rows) and `notify_checkpoint_complete` once a
  /// checkpoint holding that snapshot has completed: the job's final
  /// checkpoint (Flink's checkpoints after tasks finished, FLIP-147).
  virtual void finish(output_collector& out) { (void) out; }

  /// Called once, instead of `finish`, when the job is stopped gracefully
  /// (SIGINT/SIGTERM or `job::stop`; Flink's stop-with-savepoint without
  /// `--drain`): no final watermark came and no more input will. Hand on
  /// what was already emitted (a sink flushes and closes its output), but
  /// emit nothing that only the end of the input would (an unfinished window
  /// does not fire). With checkpoints, the final checkpoint was taken before
  /// this call and restores what is dropped here. The default does nothing.
  virtual void stop(output_collector& out) { (void) out; }

  /// Processing time (ms) of the job's clock has advanced to `now`: fire
  /// processing-time timers due at or before it. With the wall clock the
  /// task calls this when `next_processing_timer()` is due; with the replay
  /// clock (processing time taken from the input) it arrives in-band, in
  /// order with the records, so runs are reproducible.
  virtual void on_processing_time(event_time now, output_collector& out) {
    (void) now;
    (void) out;
  }

  /// The earliest pending processing-time timer, if any; the task schedules
  /// a wake-up for it under the wall clock.
  virtual std::optional<event_time> next_processing_timer() const { return std::nullopt; }

  /// Every input of this subtask went idle, and an idle marker (which takes
  /// the subtask out of downstream watermarks) is about to go out: emit
  /// what is held back waiting for a watermark, or downstream may fire
  /// without it. Called for every chain member, first to last.
  virtual void prepare_idle(output_collector& out) { (void) out; }
  /// Checkpoint barrier n has been aligned at this subtask and is about to
  /// be snapshotted: emit what must not wait in the operator across the
  /// barrier (a local pre-aggregation flushes its partial results), so it
  /// belongs to checkpoint n downstream and need not be state here. Called
  /// for every chain member, first to last, before any `snapshot_state`
  /// (Flink's `StreamOperator.prepareSnapshotPreBarrier`).
  virtual void prepare_snapshot_pre_barrier(std::uint64_t checkpoint_id,
                                            output_collector& out) {
    (void) checkpoint_id;
    (void) out;
  }
  /// Checkpoint barrier n has been aligned at this subtask: capture state
  /// into `out` (Carbone et al. 2015, asynchronous barrier snapshotting).
  /// Must be cheap: freeze, don't serialize keyed state here.
  virtual void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) {
    (void) checkpoint_id;
    (void) out;
  }

  /// Restores state before any element arrives (after `open`).
  virtual void restore_state(const operator_restore& in) { (void) in; }

  /// Queryable state (`job::query_state`): the live state of the key whose
  /// `weir::encode_key` bytes are `encoded_key` (its key group is this
  /// subtask's), as one JSON value: `null` when the key has no state. Called
  /// between two calls of the others (so consistent for the key), on the
  /// subtask's thread; it must not change what the operator will emit.
  /// nullopt (the default): the operator has no queryable state.
  virtual std::optional<std::string> query_state(std::string_view encoded_key) {
    (void) encoded_key;
    return std::nullopt;
  }
  /// Checkpoint n is complete (its manifest is durable): sinks commit what
  /// they pre-committed for n (two-phase commit, Flink's
  /// `CheckpointListener.notifyCheckpointComplete`).
  virtual void notify_checkpoint_complete(std::uint64_t checkpoint_id) {
    (void) checkpoint_id;
  }

  /// True for a sink that pre-commits in `snapshot_state` and commits in
  /// `notify_checkpoint_complete` (Flink's `TwoPhaseCommitSinkFunction`).
  /// At the end of the input its subtask waits until its last barrier
  /// snapshot is complete or aborted, then takes the final snapshot (a
  /// `snapshot_state` after `finish`, with an id above every earlier one)
  /// and ends only once a checkpoint holding it has completed and
  /// `notify_checkpoint_complete` committed it.
  virtual bool is_two_phase_commit() const { return false; }

  /// The job failed, was canceled or restarts: no checkpoint newer than
  /// `keep_up_to` completes in this run. Roll back the open transaction and
  /// every one pre-committed for a checkpoint newer than `keep_up_to`; leave
  /// those up to `keep_up_to` (their checkpoint completed, or may have: the
  /// restore commits them). The last call before the operator is destroyed;
  /// nothing else follows. Flink's `notifyCheckpointAborted` and
  /// `TwoPhaseCommitSinkFunction.close` at a failover.
  virtual void abort_transactions(std::uint64_t keep_up_to) { (void) keep_up_to; }
};

using stream_operator_ptr = std::unique_ptr<stream_operator>;

} // namespace weir
