// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/input_gate.hpp"

#include <algorithm>

namespace weir::runtime {

input_gate::input_gate(std::size_t channels)
  : watermarks_(channels, min_watermark), ended_(channels, false) {
}

std::optional<event_time> input_gate::on_watermark(std::size_t channel, event_time wm) {
  if (ended_[channel] || wm <= watermarks_[channel])
    return std::nullopt;
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

std::optional<event_time> input_gate::recompute() {
  if (watermarks_.empty())
    return std::nullopt;
  auto m = *std::min_element(watermarks_.begin(), watermarks_.end());
  if (m <= combined_)
    return std::nullopt;
  combined_ = m;
  return m;
}

} // namespace weir::runtime
