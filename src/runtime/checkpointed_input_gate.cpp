// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/checkpointed_input_gate.hpp"

#include <algorithm>
#include <stdexcept>

namespace weir::runtime {

namespace {

std::vector<input_gate> make_valves(const std::vector<std::size_t>& input_of,
                                    std::size_t inputs) {
  std::vector<std::size_t> count(inputs, 0);
  for (auto i : input_of) {
    if (i >= inputs)
      throw std::invalid_argument("input gate: channel of input " + std::to_string(i)
                                  + " of " + std::to_string(inputs));
    ++count[i];
  }
  std::vector<input_gate> valves;
  for (auto n : count)
    valves.emplace_back(n);
  return valves;
}

} // namespace

checkpointed_input_gate::checkpointed_input_gate(std::vector<std::size_t> input_of_channel,
                                                 std::size_t inputs, bool exactly_once)
  : input_of_(std::move(input_of_channel)),
    valves_(make_valves(input_of_, inputs)),
    exactly_once_(exactly_once),
    aligner_(input_of_.size()),
    tracker_(input_of_.size()),
    held_(input_of_.size()) {
  std::vector<std::size_t> next(inputs, 0);
  for (auto i : input_of_)
    local_.push_back(next[i]++);
}

std::optional<input_element> checkpointed_input_gate::take_released(std::size_t channel) {
  auto& q = held_[channel];
  if (q.empty() || aligner_.is_blocked(channel))
    return std::nullopt;
  auto e = std::move(q.front());
  q.pop_front();
  return e;
}

checkpointed_input_gate::end_of_input_result
checkpointed_input_gate::on_end_of_input(std::size_t channel, bool drain) {
  end_of_input_result r;
  // An ended channel counts as aligned for a pending checkpoint.
  r.decision = exactly_once_ ? aligner_.on_end_of_input(channel)
                             : tracker_.on_end_of_input(channel);
  r.watermark = valves_[input_of_[channel]].on_end_of_input(local_[channel], drain);
  return r;
}

bool checkpointed_input_gate::all_idle() const noexcept {
  // As one gate over all channels: some channel is live, and every live one
  // is idle.
  bool any = false;
  for (const auto& v : valves_) {
    if (v.all_ended())
      continue;
    if (!v.all_idle())
      return false;
    any = true;
  }
  return any;
}

bool checkpointed_input_gate::all_ended() const noexcept {
  for (const auto& v : valves_)
    if (!v.all_ended())
      return false;
  return true;
}

event_time checkpointed_input_gate::combined_watermark() const noexcept {
  auto wm = max_watermark;
  for (const auto& v : valves_)
    wm = std::min(wm, v.current());
  return wm;
}

} // namespace weir::runtime
