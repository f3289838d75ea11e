// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/stream_operator.hpp"

#include <chrono>

namespace weir::runtime {

/// The subtask's processing-time clock (ms since the epoch): the system
/// clock, or the replay clock driven by in-band processing_time elements
/// (and, at a source, by the input's processing-time field).
class subtask_clock final : public processing_clock {
public:
  explicit subtask_clock(bool replay) : replay_(replay) {}

  event_time now() const override { return replay_ ? replay_now_ : system_now(); }
  bool is_replay() const noexcept { return replay_; }

  /// Replay only: advances the clock to `t`; false if `t` is not ahead of it.
  bool advance(event_time t) {
    if (t <= replay_now_)
      return false;
    replay_now_ = t;
    return true;
  }

  /// The system clock, ms since the epoch.
  static event_time system_now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
  }

private:
  bool replay_;
  event_time replay_now_ = 0;
};

} // namespace weir::runtime
