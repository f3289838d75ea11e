// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/barrier_decision.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace weir::checkpoint {

/// Aligns checkpoint barriers over the input channels of one subtask for
/// exactly-once checkpoints (Carbone et al. 2015, "Lightweight Asynchronous
/// Snapshots for Distributed Dataflows", §3; Flink's
/// `SingleCheckpointBarrierHandler` in aligned mode).
///
/// A channel that delivered barrier n is *blocked*: the caller must hold back
/// every later element of that channel (batches, watermarks, end of input)
/// until the aligner releases it, so nothing after barrier n enters snapshot
/// n. Once barrier n has arrived on every channel that has not ended, the
/// decision says `snapshot = n` and every channel is released. A channel
/// that ended counts as aligned. At most one checkpoint aligns at a time: a
/// barrier of a newer checkpoint m > n aborts n and starts m; barriers of a
/// checkpoint older than the newest one seen, or of one already aborted or
/// snapshotted, are ignored. A pure state machine: no clock, no I/O, O(1)
/// per event except releases (O(channels)).
///
/// Precondition everywhere: `channel < channels()`.
class barrier_aligner {
public:
  /// An aligner for `channels` input channels, none blocked, none ended.
  explicit barrier_aligner(std::size_t channels);

  std::size_t channels() const noexcept { return blocked_.size(); }

  /// Barrier of checkpoint `checkpoint_id` arrived on `channel`.
  barrier_decision on_barrier(std::size_t channel, std::uint64_t checkpoint_id);

  /// `channel` delivered its end of input. If a checkpoint is aligning and
  /// every other live channel is blocked, the checkpoint is now aligned.
  /// Ending a blocked channel (which the caller should have held back) also
  /// counts as aligned for that channel.
  barrier_decision on_end_of_input(std::size_t channel);

  /// Checkpoint `checkpoint_id` was cancelled or declined (Flink's
  /// `CancelCheckpointMarker`): if it is aligning, it is aborted and every
  /// channel released; its later barriers (and those of older checkpoints)
  /// are ignored.
  barrier_decision on_cancel(std::uint64_t checkpoint_id);

  /// True while elements arriving on `channel` must be held back.
  bool is_blocked(std::size_t channel) const noexcept { return blocked_[channel]; }

  /// True once `channel` delivered its end of input.
  bool has_ended(std::size_t channel) const noexcept { return ended_[channel]; }

  /// The checkpoint being aligned, if any.
  std::optional<std::uint64_t> pending() const noexcept {
    return pending_ ? std::optional<std::uint64_t>{current_} : std::nullopt;
  }

  /// The newest checkpoint id seen in a barrier or cancellation (0 = none).
  std::uint64_t latest_checkpoint() const noexcept { return current_; }

private:
  /// Finishes the pending checkpoint if every live channel is blocked.
  void complete_if_aligned(barrier_decision& d);
  void release_all(barrier_decision& d);

  std::vector<bool> blocked_;
  std::vector<bool> ended_;
  std::size_t blocked_count_ = 0;
  std::size_t live_count_ = 0;
  std::uint64_t current_ = 0;
  bool pending_ = false;
};

} // namespace weir::checkpoint
