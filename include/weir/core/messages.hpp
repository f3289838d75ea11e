// SPDX-License-Identifier: Apache-2.0
#pragma once

// Every message type that crosses a mailbox (DESIGN.md §4). Local only: a
// batch travels by shared pointer, so nothing here is ever serialized.
// Only actors/ includes this header: CAF headers are slow to compile.

#include "weir/core/record_batch.hpp"

#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace weir {

/// A batch on input channel `channel` of the receiver. `credit_channel` is
/// the sender's output channel id, returned in a `credit` once the batch has
/// been processed (credit-based flow control, DESIGN.md §5).
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

/// No more elements will arrive on input channel `channel`.
struct end_of_input {
  std::uint32_t channel = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, end_of_input& x) {
  return f(caf::meta::type_name("end_of_input"), x.channel);
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
/// The job manager prints its status line.
using tick_atom = caf::atom_constant<caf::atom("tick")>;

} // namespace weir

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::batch_message)
