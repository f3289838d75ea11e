// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/barrier_aligner.hpp"
#include "weir/checkpoint/barrier_decision.hpp"
#include "weir/checkpoint/barrier_tracker.hpp"
#include "weir/runtime/input_gate.hpp"
#include "weir/runtime/subtask_environment.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace weir::runtime {

/// The input side of a task subtask (Flink's `CheckpointedInputGate` with a
/// `StatusWatermarkValve` per logical input):
/// - channels are grouped into logical inputs (1 for a one-input operator,
///   2 for a two-input one); each input has its own watermark, the minimum
///   over its channels that are neither idle nor ended (`input_gate`);
/// - checkpoint barriers align over all channels of all inputs (exactly
///   once: `barrier_aligner`, elements behind a barrier are held back per
///   channel until the checkpoint is aligned; at least once:
///   `barrier_tracker`, nothing is held). A channel that ended counts as
///   aligned.
/// The caller feeds elements in arrival order and acts on the returned
/// decisions (`barrier_decision` says in which order).
class checkpointed_input_gate {
public:
  /// `input_of_channel[c]` is the logical input (0 .. inputs-1) of channel c;
  /// every input must have at least one channel.
  checkpointed_input_gate(std::vector<std::size_t> input_of_channel, std::size_t inputs,
                          bool exactly_once);

  /// One logical input over `channels` channels.
  checkpointed_input_gate(std::size_t channels, bool exactly_once)
    : checkpointed_input_gate(std::vector<std::size_t>(channels, 0), 1, exactly_once) {}

  std::size_t channels() const noexcept { return input_of_.size(); }
  std::size_t inputs() const noexcept { return valves_.size(); }
  std::size_t input_of(std::size_t channel) const noexcept { return input_of_[channel]; }

  // -- alignment ---------------------------------------------------------------

  /// Exactly once: if `e.channel` is blocked by an aligning checkpoint, keeps
  /// `e` (nothing after barrier n on a channel may enter snapshot n) and
  /// returns true; the element comes back through `take_released`.
  bool hold_if_blocked(input_element& e) {
    if (!exactly_once_ || !aligner_.is_blocked(e.channel))
      return false;
    held_[e.channel].push_back(std::move(e));
    return true;
  }

  /// Barrier of checkpoint `checkpoint_id` arrived on `channel`.
  checkpoint::barrier_decision on_barrier(std::size_t channel, std::uint64_t checkpoint_id) {
    return exactly_once_ ? aligner_.on_barrier(channel, checkpoint_id)
                         : tracker_.on_barrier(channel, checkpoint_id);
  }

  /// Checkpoint `checkpoint_id` was cancelled (exactly once only; at least
  /// once has nothing to release).
  checkpoint::barrier_decision on_cancel(std::uint64_t checkpoint_id) {
    return exactly_once_ ? aligner_.on_cancel(checkpoint_id) : checkpoint::barrier_decision{};
  }

  /// The next held element of `channel` if it is no longer blocked.
  std::optional<input_element> take_released(std::size_t channel);

  // -- watermarks and end of input -----------------------------------------------

  /// Records watermark `wm` on `channel`; returns the new watermark of the
  /// channel's logical input if that advanced.
  std::optional<event_time> on_watermark(std::size_t channel, event_time wm) {
    return valves_[input_of_[channel]].on_watermark(local_[channel], wm);
  }

  /// `channel` went idle (or active again); returns its input's watermark if
  /// that advanced.
  std::optional<event_time> on_idle(std::size_t channel, bool idle) {
    return valves_[input_of_[channel]].on_idle(local_[channel], idle);
  }

  /// What an end of input on a channel means: the decision for a pending
  /// checkpoint (the channel counts as aligned) and its input's watermark if
  /// that advanced (never when `drain` is false: a stopped channel keeps its
  /// watermark, see `input_gate::on_end_of_input`).
  struct end_of_input_result {
    checkpoint::barrier_decision decision;
    std::optional<event_time> watermark;
  };
  end_of_input_result on_end_of_input(std::size_t channel, bool drain = true);

  /// True when every live channel of input `input` is idle (false when all
  /// its channels ended: an ended input holds nothing back anyway).
  bool input_idle(std::size_t input) const noexcept { return valves_[input].all_idle(); }
  /// True when every channel that has not ended is idle.
  bool all_idle() const noexcept;
  /// True when every channel of every input has ended.
  bool all_ended() const noexcept;
  /// The watermark of logical input `input`.
  event_time watermark(std::size_t input) const noexcept { return valves_[input].current(); }
  /// The minimum over the inputs' watermarks (the operator's watermark).
  event_time combined_watermark() const noexcept;

private:
  std::vector<std::size_t> input_of_;
  std::vector<std::size_t> local_; ///< channel index within its input
  std::vector<input_gate> valves_;
  bool exactly_once_;
  checkpoint::barrier_aligner aligner_;
  checkpoint::barrier_tracker tracker_;
  std::vector<std::deque<input_element>> held_;
};

} // namespace weir::runtime
