// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/runtime/subtask_environment.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <vector>

namespace weir::runtime {

/// The output channels of one subtask with credit-based flow control
/// (docs/internals/architecture.md; Flink's `ResultPartition` with credit-based network
/// buffers). Each channel starts with `credits` batch credits from its
/// receiver; a batch spends one and the receiver returns it once processed.
/// With no credit a batch waits in the channel's ordered backlog, and so does
/// every element behind it (control elements need no credit but never
/// overtake a batch). While any backlog is non-empty the subtask is
/// `blocked()`: a source stops polling and a task stops taking input.
class output_channels {
public:
  /// `count` channels, each with `credits` initial batch credits; elements
  /// leave through `env.send`.
  output_channels(subtask_environment& env, std::size_t count, std::uint32_t credits);

  std::size_t size() const noexcept { return channels_.size(); }

  /// Sends `e` on channel `ch` now, or appends it to the channel's backlog
  /// (no credit for a batch, or something is waiting before it).
  void push(std::uint32_t ch, output_element e) {
    auto& c = channels_[ch];
    if (c.backlog.empty() && (e.kind != element_kind::batch || c.credits > 0)) {
      if (e.kind == element_kind::batch)
        --c.credits;
      env_->send(ch, e);
    } else {
      if (c.backlog.empty())
        ++backlogged_;
      c.backlog.push_back(std::move(e));
    }
  }

  /// The receiver of channel `ch` returned `batches` credits: sends what the
  /// backlog holds, in order, as far as the credits reach.
  void on_credit(std::uint32_t ch, std::uint32_t batches);

  /// True while some channel has a backlog.
  bool blocked() const noexcept { return backlogged_ > 0; }

  /// Starts timing backpressure if blocked and not timed already.
  void note_blocked();
  /// Once unblocked: the time (ns) spent blocked since `note_blocked`, and
  /// stops timing; 0 when not timing.
  std::uint64_t take_backpressured_ns();

  std::uint32_t credits(std::uint32_t ch) const { return channels_[ch].credits; }
  std::size_t backlog_size(std::uint32_t ch) const { return channels_[ch].backlog.size(); }

private:
  struct channel {
    std::uint32_t credits = 0;
    std::deque<output_element> backlog;
  };

  subtask_environment* env_;
  std::vector<channel> channels_;
  std::size_t backlogged_ = 0; ///< channels with a non-empty backlog
  std::optional<std::chrono::steady_clock::time_point> blocked_since_;
};

} // namespace weir::runtime
