// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/barrier_tracker.hpp"

#include <algorithm>

namespace weir::checkpoint {

barrier_tracker::barrier_tracker(std::size_t channels) : ended_(channels, false) {
}

barrier_decision barrier_tracker::on_barrier(std::size_t channel,
                                             std::uint64_t checkpoint_id) {
  barrier_decision d;
  if (checkpoint_id <= done_ || ended_[channel])
    return d;
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const auto& c) {
    return c.id >= checkpoint_id;
  });
  if (it == pending_.end() || it->id != checkpoint_id) {
    it = pending_.insert(it, in_flight_checkpoint{checkpoint_id,
                                                  std::vector<bool>(ended_.size(), false)});
    d.started = checkpoint_id;
  }
  if (it->seen[channel])
    return d; // a duplicate barrier on one channel counts once
  it->seen[channel] = true;
  if (is_complete(*it))
    complete_newest(d);
  return d;
}

barrier_decision barrier_tracker::on_end_of_input(std::size_t channel) {
  barrier_decision d;
  if (ended_[channel])
    return d;
  ended_[channel] = true;
  complete_newest(d);
  return d;
}

barrier_decision barrier_tracker::on_cancel(std::uint64_t checkpoint_id) {
  barrier_decision d;
  if (checkpoint_id <= done_)
    return d;
  while (!pending_.empty() && pending_.front().id <= checkpoint_id) {
    d.aborted.push_back(pending_.front().id);
    pending_.pop_front();
  }
  done_ = checkpoint_id;
  return d;
}

bool barrier_tracker::is_complete(const in_flight_checkpoint& c) const {
  for (std::size_t ch = 0; ch < ended_.size(); ++ch)
    if (!ended_[ch] && !c.seen[ch])
      return false;
  return true;
}

void barrier_tracker::complete_newest(barrier_decision& d) {
  // The newest complete checkpoint subsumes every older one still in flight:
  // an older one could only complete later if a channel skipped its barrier.
  auto newest = pending_.end();
  for (auto it = pending_.begin(); it != pending_.end(); ++it)
    if (is_complete(*it))
      newest = it;
  if (newest == pending_.end())
    return;
  for (auto it = pending_.begin(); it != newest; ++it)
    d.aborted.push_back(it->id);
  d.snapshot = newest->id;
  done_ = newest->id;
  pending_.erase(pending_.begin(), newest + 1);
}

} // namespace weir::checkpoint
