// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/output_channels.hpp"

namespace weir::runtime {

output_channels::output_channels(subtask_environment& env, std::size_t count,
                                 std::uint32_t credits)
  : env_(&env), channels_(count) {
  for (auto& c : channels_)
    c.credits = credits;
}

void output_channels::on_credit(std::uint32_t ch, std::uint32_t batches) {
  auto& c = channels_[ch];
  c.credits += batches;
  if (c.backlog.empty())
    return;
  while (!c.backlog.empty()) {
    auto& front = c.backlog.front();
    if (front.kind == element_kind::batch) {
      if (c.credits == 0)
        break;
      --c.credits;
    }
    env_->send(ch, front);
    c.backlog.pop_front();
  }
  if (c.backlog.empty())
    --backlogged_;
}

void output_channels::note_blocked() {
  if (!blocked_since_ && blocked())
    blocked_since_ = std::chrono::steady_clock::now();
}

std::uint64_t output_channels::take_backpressured_ns() {
  if (!blocked_since_ || blocked())
    return 0;
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
              std::chrono::steady_clock::now() - *blocked_since_)
              .count();
  blocked_since_.reset();
  return static_cast<std::uint64_t>(ns);
}

} // namespace weir::runtime
