// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/barrier_decision.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <vector>

namespace weir::checkpoint {

/// Tracks checkpoint barriers over the input channels of one subtask for
/// at-least-once checkpoints (Flink's `CheckpointBarrierTracker`): it never
/// blocks a channel, so records after barrier n on a fast channel may enter
/// snapshot n and be replayed after a restore (at least once, not exactly).
///
/// Several checkpoints may be in flight; checkpoint n is reported
/// (`snapshot = n`) once its barrier has been seen on every channel that has
/// not ended. Completing n gives up every older checkpoint still in flight
/// (reported in `aborted`), and barriers of n or older are ignored from then
/// on. `released` is never set. Precondition everywhere:
/// `channel < channels()`.
class barrier_tracker {
public:
  /// A tracker for `channels` input channels.
  explicit barrier_tracker(std::size_t channels);

  std::size_t channels() const noexcept { return ended_.size(); }

  /// Barrier of checkpoint `checkpoint_id` arrived on `channel`.
  barrier_decision on_barrier(std::size_t channel, std::uint64_t checkpoint_id);

  /// `channel` ended; checkpoints waiting only for it complete (the newest
  /// such one is reported as `snapshot`, older ones as `aborted`).
  barrier_decision on_end_of_input(std::size_t channel);

  /// Checkpoint `checkpoint_id` was cancelled: it and every older checkpoint
  /// in flight are aborted; their later barriers are ignored.
  barrier_decision on_cancel(std::uint64_t checkpoint_id);

  /// Always false: the tracker never holds input back.
  static constexpr bool is_blocked(std::size_t) noexcept { return false; }

  /// Number of checkpoints whose barriers have been seen on some channels.
  std::size_t in_flight() const noexcept { return pending_.size(); }

private:
  struct in_flight_checkpoint {
    std::uint64_t id = 0;
    std::vector<bool> seen;
  };

  bool is_complete(const in_flight_checkpoint& c) const;
  /// Reports the newest complete checkpoint, aborting older ones.
  void complete_newest(barrier_decision& d);

  std::vector<bool> ended_;
  std::deque<in_flight_checkpoint> pending_; // ascending ids
  std::uint64_t done_ = 0; // barriers of ids <= done_ are ignored
};

} // namespace weir::checkpoint
