// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/stream_operator.hpp"

#include <algorithm>
#include <cstddef>

namespace weir {

/// An operator with two inputs, for joins and co-processing (Flink's
/// `TwoInputStreamOperator`). Input 1 and input 2 each keep their own
/// watermark (the minimum over their channels); the operator's watermark is
/// the minimum of the two, over the inputs that are not idle. Checkpoint
/// barriers align across the channels of both inputs, so a snapshot holds
/// exactly the rows of both inputs before the barrier. Each input may be
/// keyed by its own fields: both are hashed into the same key groups, so a
/// key's rows from either side reach the same subtask.
///
/// Calls arrive as for a `stream_operator`, with `process_batch1/2` and
/// `process_watermark1/2` in place of `process_batch` and the input
/// watermark; `process_watermark(wm, out)` receives the combined watermark
/// each time it advances (its default forwards it).
class two_input_stream_operator : public stream_operator {
public:
  /// A batch of input 1.
  virtual void process_batch1(const record_batch_ptr& batch, output_collector& out) = 0;
  /// A batch of input 2.
  virtual void process_batch2(const record_batch_ptr& batch, output_collector& out) = 0;

  /// The one-input entry point is input 1.
  void process_batch(const record_batch_ptr& batch, output_collector& out) final {
    process_batch1(batch, out);
  }

  /// Input 1's watermark advanced to `wm` (ms); the default records it and
  /// calls `process_watermark` with the combined watermark if that advanced.
  virtual void process_watermark1(event_time wm, output_collector& out) {
    on_input_watermark(0, wm, out);
  }
  /// Input 2's watermark advanced to `wm` (ms); as `process_watermark1`.
  virtual void process_watermark2(event_time wm, output_collector& out) {
    on_input_watermark(1, wm, out);
  }

  /// Every channel of input `input` (0 = input 1, 1 = input 2) went idle, or
  /// one became active again (Flink's `processWatermarkStatus1/2`): an idle
  /// input does not hold back the combined watermark.
  virtual void process_watermark_status(std::size_t input, bool idle, output_collector& out) {
    idle_[input] = idle;
    advance(out);
  }

  /// The last watermark of input `input` (0 or 1), ms.
  event_time input_watermark(std::size_t input) const noexcept { return wm_[input]; }
  /// The combined watermark handed to `process_watermark` last, ms.
  event_time combined_watermark() const noexcept { return combined_; }

protected:
  /// Records `wm` for `input` and advances the combined watermark.
  void on_input_watermark(std::size_t input, event_time wm, output_collector& out) {
    wm_[input] = std::max(wm_[input], wm);
    advance(out);
  }

private:
  void advance(output_collector& out) {
    if (idle_[0] && idle_[1])
      return;
    auto m = idle_[0] ? wm_[1] : idle_[1] ? wm_[0] : std::min(wm_[0], wm_[1]);
    if (m <= combined_)
      return;
    combined_ = m;
    process_watermark(m, out);
  }

  event_time wm_[2] = {min_watermark, min_watermark};
  bool idle_[2] = {false, false};
  event_time combined_ = min_watermark;
};

} // namespace weir
