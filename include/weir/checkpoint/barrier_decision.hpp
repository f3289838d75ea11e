// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace weir::checkpoint {

/// What one input event (a barrier, an end of input or a cancellation) means
/// for the subtask that fed it to a `barrier_aligner` or `barrier_tracker`.
///
/// The caller acts on the fields in this order: decline every checkpoint in
/// `aborted` (to the coordinator), then, if `snapshot` is set, snapshot its
/// operators for that checkpoint and forward the barrier on every output,
/// then, if `released`, process the elements it held back on blocked channels
/// (each channel's in arrival order) before any newer input of theirs.
struct barrier_decision {
  /// Set when this event was the first barrier of a checkpoint at this
  /// subtask: the caller notes the time to measure the alignment (ms).
  std::optional<std::uint64_t> started;
  /// Checkpoints given up by this event, oldest first: a barrier of a newer
  /// checkpoint overtook them, they were cancelled, or (tracker) a newer one
  /// completed first. Usually empty.
  std::vector<std::uint64_t> aborted;
  /// Set when the barrier of this checkpoint has now arrived on every input
  /// channel that has not ended: snapshot now.
  std::optional<std::uint64_t> snapshot;
  /// True when channels that were blocked became unblocked.
  bool released = false;

  /// True when the event needs no action at all.
  bool is_noop() const noexcept {
    return !started && aborted.empty() && !snapshot && !released;
  }
};

} // namespace weir::checkpoint
