// SPDX-License-Identifier: Apache-2.0
#pragma once
// The interval_join kind's runtime operator (interval_join_operator.cpp).

#include "join_rows.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace weir::internal {

/// Joins two keyed inputs over an event-time interval (Flink's
/// `IntervalJoinOperator`): a left row at `l` and a right row of the same
/// key at `r` join when `l + lower <= r <= l + upper` (ms; exclusive bounds
/// already shifted by one: `lower + 1`, `upper - 1`). Each row arriving on
/// time is joined with the other side's buffered rows in range (emitted at
/// once, event time `max(l, r)`), then buffered itself in keyed state
/// (`left` / `right`: event time -> rows, in arrival order). A buffered row
/// is dropped by an event-time timer once no row still on time can match it:
/// a left row when the watermark passes `l + max(upper, 0)`, a right row when
/// it passes `r - min(lower, 0)` (one ms after Flink's cleanup time, so that
/// a row exactly at the watermark, which Flink counts as on time, still finds
/// its partners). A row below the watermark on arrival is late (port 1 / 2).
class interval_join_operator final : public keyed_join_operator {
public:
  using buffer = std::map<std::int64_t, std::vector<join_row>>;

  interval_join_operator(join_rows rows, std::vector<std::size_t> left_keys,
                         std::vector<std::size_t> right_keys, std::int64_t lower,
                         std::int64_t upper)
    : keyed_join_operator(std::move(rows), std::move(left_keys), std::move(right_keys)),
      lower_(lower), upper_(upper) {}

  /// Rows buffered per side (0 left, 1 right) over all keys (tests).
  std::size_t buffered(std::size_t side) const;

private:
  void register_states() override;
  bool process_row(std::size_t side, join_row row, event_time ts) override;
  void on_timer(event_time ts) override;

  std::int64_t lower_;
  std::int64_t upper_;
  state::value_state<buffer> buffers_[2];
};

} // namespace weir::internal
