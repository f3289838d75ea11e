// SPDX-License-Identifier: Apache-2.0
#include "interval_join_operator.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace weir::internal {

namespace {

// Namespaces of the cleanup timers (the buffers live in the global one).
constexpr std::string_view left_cleanup = "L";
constexpr std::string_view right_cleanup = "R";

std::int64_t saturating_add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    return b > 0 ? std::numeric_limits<std::int64_t>::max()
                 : std::numeric_limits<std::int64_t>::min();
  return r;
}

} // namespace

void interval_join_operator::register_states() {
  for (std::size_t side = 0; side < 2; ++side) {
    auto h = backend_->get_value_state<buffer>(side == 0 ? "left" : "right");
    if (!h)
      throw std::logic_error(h.error().message);
    buffers_[side] = *h;
  }
}

bool interval_join_operator::process_row(std::size_t side, join_row row, event_time ts) {
  // Flink's IntervalJoinOperator.isLate: below the watermark, a row could
  // only match rows already cleaned up.
  if (ts < backend_->current_watermark())
    return false;
  // The other side's event times that match: for a left row
  // [ts + lower, ts + upper], for a right row [ts - upper, ts - lower].
  const auto lo = side == 0 ? saturating_add(ts, lower_) : saturating_add(ts, -upper_);
  const auto hi = side == 0 ? saturating_add(ts, upper_) : saturating_add(ts, -lower_);
  if (const auto* other = buffers_[1 - side].get()) {
    for (auto it = other->lower_bound(lo); it != other->end() && it->first <= hi; ++it)
      for (const auto& o : it->second) {
        if (side == 0)
          rows_.append(row, o, std::max(ts, it->first));
        else
          rows_.append(o, row, std::max(ts, it->first));
      }
  }
  auto& ours = buffers_[side];
  if (auto* b = ours.get_mut())
    (*b)[ts].push_back(std::move(row));
  else
    ours.update(buffer{{ts, {std::move(row)}}});
  // The last watermark at which an on-time row of the other side could
  // still match this one, plus one.
  const auto until = side == 0 ? saturating_add(ts, std::max<std::int64_t>(upper_, 0))
                               : saturating_add(ts, -std::min<std::int64_t>(lower_, 0));
  backend_->set_current_namespace(side == 0 ? left_cleanup : right_cleanup);
  backend_->register_event_time_timer(saturating_add(until, 1));
  backend_->set_current_namespace({});
  return true;
}

void interval_join_operator::on_timer(event_time ts) {
  const bool left = backend_->current_namespace() == left_cleanup;
  const auto until = ts - 1;
  const auto row_ts = left ? until - std::max<std::int64_t>(upper_, 0)
                           : until + std::min<std::int64_t>(lower_, 0);
  backend_->set_current_namespace({});
  auto& state = buffers_[left ? 0 : 1];
  if (auto* b = state.get_mut()) {
    b->erase(row_ts);
    if (b->empty())
      state.clear();
  }
}

std::size_t interval_join_operator::buffered(std::size_t side) const {
  std::size_t n = 0;
  auto& be = const_cast<state::keyed_state_backend&>(*backend_);
  std::vector<std::string> keys;
  be.for_each_key(side == 0 ? "left" : "right",
                  [&](std::string_view k, std::string_view) { keys.emplace_back(k); });
  auto handle = buffers_[side];
  for (const auto& k : keys) {
    be.set_current_key(k);
    be.set_current_namespace({});
    if (const auto* b = handle.get())
      for (const auto& [t, rows] : *b)
        n += rows.size();
  }
  return n;
}

} // namespace weir::internal
