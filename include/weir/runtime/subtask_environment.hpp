// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/runtime/subtask_snapshot.hpp"

#include <chrono>
#include <cstdint>
#include <string>

namespace weir::runtime {

/// What travels on a channel: a batch, or a control element that keeps its
/// order relative to the batches (docs/internals/architecture.md).
enum class element_kind {
  batch,
  watermark,
  end_of_input,
  idle,
  active,
  processing_time,
  barrier
};

/// One element a subtask sends on one of its output channels, or keeps in
/// that channel's backlog while the channel has no credit.
struct output_element {
  element_kind kind = element_kind::batch;
  record_batch_ptr data; ///< batches only
  /// Watermark, processing time or barrier trigger time (ms); unused else.
  event_time ts = min_watermark;
  std::uint64_t checkpoint_id = 0; ///< barriers only
  /// End of input only: false when the input was stopped (a graceful stop,
  /// Flink's `StopMode.NO_DRAIN`) rather than exhausted: downstream neither
  /// advances its watermark to +inf nor drains its operators.
  bool drain = true;
};

/// One element that arrived on input channel `channel` of a subtask.
struct input_element {
  element_kind kind = element_kind::batch;
  std::uint32_t channel = 0;
  record_batch_ptr data;
  event_time ts = min_watermark;
  std::uint64_t checkpoint_id = 0;
  bool drain = true; ///< end of input only, as in `output_element`
};

/// Everything a subtask asks of the world around it: the CAF shell
/// (`actors/task_actor.cpp`) implements it with messages, the chain harness
/// (`tests/support/chain_harness.hpp`) with queues. Every call is made from
/// inside a call on the `subtask`, on its thread; none may call back into it.
class subtask_environment {
public:
  virtual ~subtask_environment() = default;

  /// Sends `e` on output channel `channel` (the subtask's numbering,
  /// 0 .. out channels-1). Flow control is done already: a batch is sent only
  /// with a credit in hand.
  virtual void send(std::uint32_t channel, const output_element& e) = 0;

  /// One batch that arrived on input channel `channel` has been processed:
  /// return its credit to the sender.
  virtual void return_credit(std::uint32_t channel) = 0;

  /// Hands a checkpoint's frozen state to the state writer. Once written (or
  /// failed) the environment acknowledges (or declines) it to the job
  /// manager and calls `subtask::on_snapshot_written`.
  virtual void write_snapshot(write_snapshot_request req) = 0;

  /// Tells the job manager that this subtask cannot take part in checkpoint
  /// `checkpoint_id`.
  virtual void decline_checkpoint(std::uint64_t checkpoint_id, std::string reason) = 0;

  /// A source asks to be polled (`subtask::on_poll`) after `delay` (0 = as
  /// soon as its mailbox allows).
  virtual void request_poll(std::chrono::nanoseconds delay) = 0;

  /// Wall clock: asks for `subtask::on_wake` after `delay` (a processing-time
  /// timer of the chain is due then).
  virtual void request_wakeup(std::chrono::milliseconds delay) = 0;

  /// Checkpointing on, right before `finished`: the state to store for this
  /// subtask in every later checkpoint (its source's final positions; see
  /// `subtask::maybe_finish`), so checkpoints go on after it ends (FLIP-147).
  virtual void final_state(write_snapshot_request req) { (void) req; }

  /// The subtask has finished: its input ended, its outputs are drained and
  /// its snapshots written. Nothing more will be sent.
  virtual void finished() = 0;
};

} // namespace weir::runtime
