// SPDX-License-Identifier: Apache-2.0
#pragma once

// Every message type that crosses a mailbox (docs/internals/architecture.md). Local only:
// a batch travels by shared pointer, so nothing here is ever serialized.
// Only actors/ includes this header: CAF headers are slow to compile.

#include "weir/core/record_batch.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

namespace weir {

/// A batch on input channel `channel` of the receiver. `credit_channel` is
/// the sender's output channel id, returned in a `credit` once the batch has
/// been processed (credit-based flow control, docs/internals/architecture.md).
struct batch_message {
  std::uint32_t channel = 0;
  std::uint32_t credit_channel = 0;
  record_batch_ptr batch;
};

/// An event-time watermark (ms) on input channel `channel`.
struct watermark {
  std::uint32_t channel = 0;
  event_time ts = min_watermark;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, watermark& x) {
  return f(caf::meta::type_name("watermark"), x.channel, x.ts);
}

/// No more elements will arrive on input channel `channel`. `drain` is
/// false when the input was stopped (a graceful stop) rather than exhausted:
/// no +inf watermark, no draining (Flink's `EndOfData` with `StopMode`).
struct end_of_input {
  std::uint32_t channel = 0;
  bool drain = true;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, end_of_input& x) {
  return f(caf::meta::type_name("end_of_input"), x.channel, x.drain);
}

/// The input on `channel` is idle (or active again): it stops holding back
/// the minimum watermark (Flink's WatermarkStatus).
struct watermark_status {
  std::uint32_t channel = 0;
  bool idle = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, watermark_status& x) {
  return f(caf::meta::type_name("watermark_status"), x.channel, x.idle);
}

/// Replay clock: processing time (ms) has advanced to `ts`; carried in-band
/// from the source so processing-time behaviour is reproducible.
struct processing_time {
  std::uint32_t channel = 0;
  event_time ts = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, processing_time& x) {
  return f(caf::meta::type_name("processing_time"), x.channel, x.ts);
}

/// Checkpoint barrier n on input channel `channel` (Carbone et al. 2015):
/// everything before it on this channel belongs to checkpoint n.
struct checkpoint_barrier {
  std::uint32_t channel = 0;
  std::uint64_t checkpoint_id = 0;
  std::int64_t timestamp = 0; ///< trigger time, ms since the epoch
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, checkpoint_barrier& x) {
  return f(caf::meta::type_name("checkpoint_barrier"), x.channel, x.checkpoint_id,
           x.timestamp);
}

/// Job manager -> source subtask: take checkpoint n now and emit barrier n.
struct trigger_checkpoint {
  std::uint64_t checkpoint_id = 0;
  std::int64_t timestamp = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, trigger_checkpoint& x) {
  return f(caf::meta::type_name("trigger_checkpoint"), x.checkpoint_id, x.timestamp);
}

/// Job manager -> source subtask: stop reading (a graceful stop), after
/// taking final checkpoint n first unless n is 0 (Flink's
/// stop-with-savepoint). See `runtime::subtask::on_stop`.
struct stop_source {
  std::uint64_t checkpoint_id = 0;
  std::int64_t timestamp = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stop_source& x) {
  return f(caf::meta::type_name("stop_source"), x.checkpoint_id, x.timestamp);
}

/// Job manager -> every subtask: checkpoint n is complete (its manifest is
/// durable); sinks commit what they pre-committed for it.
struct notify_checkpoint_complete {
  std::uint64_t checkpoint_id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, notify_checkpoint_complete& x) {
  return f(caf::meta::type_name("notify_checkpoint_complete"), x.checkpoint_id);
}

/// Job manager -> every subtask: checkpoint n was aborted; stop aligning it.
struct cancel_checkpoint {
  std::uint64_t checkpoint_id = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_checkpoint& x) {
  return f(caf::meta::type_name("cancel_checkpoint"), x.checkpoint_id);
}

/// Job manager -> every subtask, before it stops them for a failure, a
/// cancel or a restart: no checkpoint newer than `keep_up_to` completes in
/// this run (it is the newest one completed or whose manifest commit was
/// sent). Two-phase-commit sinks roll back their open transaction and those
/// pre-committed for newer checkpoints (`stream_operator::abort_transactions`).
/// Flink's `CheckpointListener.notifyCheckpointAborted` for every checkpoint
/// after `keep_up_to`, at the failover.
struct abort_transactions {
  std::uint64_t keep_up_to = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, abort_transactions& x) {
  return f(caf::meta::type_name("abort_transactions"), x.keep_up_to);
}

/// Subtask -> job manager: it cannot take part in checkpoint n.
struct decline_checkpoint {
  std::uint64_t checkpoint_id = 0;
  std::uint32_t task = 0;
  std::string reason;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, decline_checkpoint& x) {
  return f(caf::meta::type_name("decline_checkpoint"), x.checkpoint_id, x.task, x.reason);
}

/// Returns `batches` credits to the sender's output channel `channel`.
struct credit {
  std::uint32_t channel = 0;
  std::uint32_t batches = 1;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit& x) {
  return f(caf::meta::type_name("credit"), x.channel, x.batches);
}

/// A source subtask reads its next batch.
using poll_atom = caf::atom_constant<caf::atom("poll")>;
/// Wall clock: a processing-time timer of this subtask is due.
using wake_atom = caf::atom_constant<caf::atom("wake")>;
/// The job manager triggers its next periodic checkpoint.
using checkpoint_atom = caf::atom_constant<caf::atom("ckpt")>;
/// The job manager redeploys the job after a restart delay.
using redeploy_atom = caf::atom_constant<caf::atom("redeploy")>;
/// Anyone -> job manager: stop the job gracefully (`job::stop`).
using stop_atom = caf::atom_constant<caf::atom("stop")>;
/// The job manager prints its status line.
using tick_atom = caf::atom_constant<caf::atom("tick")>;

} // namespace weir

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::batch_message)
