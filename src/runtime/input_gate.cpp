// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/input_gate.hpp"

#include <algorithm>

namespace weir::runtime {

input_gate::input_gate(std::size_t channels)
  : watermarks_(channels, min_watermark), ended_(channels, false), idle_(channels, false) {
}

std::optional<event_time> input_gate::on_watermark(std::size_t channel, event_time wm) {
  if (ended_[channel])
    return std::nullopt;
  bool was_idle = idle_[channel];
  idle_[channel] = false;
  if (wm <= watermarks_[channel])
    return was_idle ? recompute() : std::nullopt;
  watermarks_[channel] = wm;
  return recompute();
}

std::optional<event_time> input_gate::on_end_of_input(std::size_t channel) {
  if (ended_[channel])
    return std::nullopt;
  ended_[channel] = true;
  ++ended_count_;
  watermarks_[channel] = max_watermark;
  return recompute();
}

std::optional<event_time> input_gate::on_idle(std::size_t channel, bool idle) {
  if (ended_[channel] || idle_[channel] == idle)
    return std::nullopt;
  idle_[channel] = idle;
  return recompute();
}

bool input_gate::all_idle() const noexcept {
  bool any = false;
  for (std::size_t c = 0; c < watermarks_.size(); ++c) {
    if (ended_[c])
      continue;
    any = true;
    if (!idle_[c])
      return false;
  }
  return any;
}

std::optional<event_time> input_gate::recompute() {
  if (watermarks_.empty())
    return std::nullopt;
  // Minimum over active channels; ended channels count as +inf.
  event_time m = max_watermark;
  bool any_active = false;
  for (std::size_t c = 0; c < watermarks_.size(); ++c) {
    if (idle_[c] && !ended_[c])
      continue;
    any_active = true;
    m = std::min(m, watermarks_[c]);
  }
  if (!any_active) {
    // Every live channel is idle: advance to the largest watermark among
    // them, as Flink's StatusWatermarkValve does when the last active channel
    // goes idle. Otherwise a channel that went idle while another (not yet
    // idle) still held the minimum back would never count: its watermark
    // would be lost.
    m = min_watermark;
    for (std::size_t c = 0; c < watermarks_.size(); ++c)
      if (!ended_[c])
        m = std::max(m, watermarks_[c]);
  }
  if (m <= combined_)
    return std::nullopt;
  combined_ = m;
  return m;
}

} // namespace weir::runtime
