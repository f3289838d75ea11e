// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <cstddef>
#include <optional>
#include <vector>

namespace weir::runtime {

/// Tracks the watermark and end-of-input of every input channel of a subtask
/// and derives the subtask's combined watermark: the minimum over channels
/// that have not ended, never decreasing (Flink's `StatusWatermarkValve`).
/// A channel that ended counts as `max_watermark`; one that was stopped
/// (a graceful stop: end of input without draining) keeps its last watermark
/// and idleness, so its stop makes no window fire early.
class input_gate {
public:
  explicit input_gate(std::size_t channels);

  std::size_t channels() const noexcept { return watermarks_.size(); }

  /// Records `wm` for `channel`; returns the new combined watermark if it
  /// advanced, else nullopt. A watermark lower than the channel's last one is
  /// ignored (per-channel watermarks never go backwards).
  std::optional<event_time> on_watermark(std::size_t channel, event_time wm);

  /// Marks `channel` ended; returns the combined watermark if that advanced
  /// it. With `drain` false (the channel was stopped, Flink's
  /// `StopMode.NO_DRAIN`) its watermark stays where it was: nothing advances.
  std::optional<event_time> on_end_of_input(std::size_t channel, bool drain = true);

  /// Marks `channel` idle or active again (Flink's WatermarkStatus). An idle
  /// channel does not hold back the minimum; returns the combined watermark
  /// if that advanced it. A channel becomes active with its next watermark.
  std::optional<event_time> on_idle(std::size_t channel, bool idle);

  /// True when every channel that has not ended is idle.
  bool all_idle() const noexcept;

  bool all_ended() const noexcept { return ended_count_ == watermarks_.size(); }
  bool has_ended(std::size_t channel) const noexcept { return ended_[channel]; }
  event_time current() const noexcept { return combined_; }

private:
  std::optional<event_time> recompute();

  std::vector<event_time> watermarks_;
  std::vector<bool> ended_;
  std::vector<bool> idle_;
  std::vector<bool> stopped_; ///< ended without draining
  std::size_t ended_count_ = 0;
  event_time combined_ = min_watermark;
};

} // namespace weir::runtime
