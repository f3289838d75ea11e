// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/barrier_aligner.hpp"

namespace weir::checkpoint {

barrier_aligner::barrier_aligner(std::size_t channels)
  : blocked_(channels, false), ended_(channels, false), live_count_(channels) {
}

barrier_decision barrier_aligner::on_barrier(std::size_t channel,
                                             std::uint64_t checkpoint_id) {
  barrier_decision d;
  if (ended_[channel])
    return d; // nothing can follow an end of input; ignore a confused sender
  if (checkpoint_id < current_ || (checkpoint_id == current_ && !pending_))
    return d; // stale: older, or already snapshotted or aborted
  if (checkpoint_id > current_) {
    if (pending_) {
      // A newer barrier overtook the pending checkpoint (Flink aborts it as
      // "subsumed"): release what it held, then start the new one.
      d.aborted.push_back(current_);
      release_all(d);
    }
    current_ = checkpoint_id;
    pending_ = true;
    d.started = checkpoint_id;
  }
  if (!blocked_[channel]) {
    blocked_[channel] = true;
    ++blocked_count_;
  }
  if (pending_ && blocked_count_ == live_count_) {
    // Nothing can be held behind the barrier just processed: only the other
    // channels need releasing.
    blocked_[channel] = false;
    --blocked_count_;
    d.snapshot = current_;
    pending_ = false;
    release_all(d);
  }
  return d;
}

barrier_decision barrier_aligner::on_end_of_input(std::size_t channel) {
  barrier_decision d;
  if (ended_[channel])
    return d;
  ended_[channel] = true;
  --live_count_;
  if (blocked_[channel]) {
    blocked_[channel] = false;
    --blocked_count_;
  }
  complete_if_aligned(d);
  return d;
}

barrier_decision barrier_aligner::on_cancel(std::uint64_t checkpoint_id) {
  barrier_decision d;
  if (checkpoint_id < current_ || (checkpoint_id == current_ && !pending_))
    return d;
  if (pending_) {
    // Either the pending one is cancelled, or a newer one is, which subsumes
    // the pending one as a newer barrier would.
    d.aborted.push_back(current_);
    release_all(d);
  }
  current_ = checkpoint_id;
  pending_ = false;
  return d;
}

void barrier_aligner::complete_if_aligned(barrier_decision& d) {
  if (!pending_ || blocked_count_ < live_count_)
    return;
  d.snapshot = current_;
  pending_ = false;
  release_all(d);
}

void barrier_aligner::release_all(barrier_decision& d) {
  if (blocked_count_ == 0)
    return;
  blocked_.assign(blocked_.size(), false);
  blocked_count_ = 0;
  d.released = true;
}

} // namespace weir::checkpoint
