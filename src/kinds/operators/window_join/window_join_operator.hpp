// SPDX-License-Identifier: Apache-2.0
#pragma once
// The window_join kind's runtime operator (window_join_operator.cpp).

#include "../interval_join/join_rows.hpp"

#include "weir/window/window_assigner.hpp"

#include <memory>
#include <utility>
#include <vector>

namespace weir::internal {

/// Joins two keyed inputs within event-time windows (Flink's window join,
/// `DataStream.join(..).where(..).equalTo(..).window(..)`, which Flink runs
/// as a coGroup: a window operator over the tagged union of both inputs).
/// Each on-time row goes into every window of `assigner` that contains it
/// and has not fired (`max_timestamp() > watermark`), into that window's
/// pane of its key (keyed state `pane`, namespace = the window: left rows,
/// right rows, in arrival order); a row with no such window is late (port
/// 1 / 2). When the watermark reaches a window's `end - 1` its event-time
/// timer emits every (left, right) pair of the pane, left rows in order and
/// for each the right rows in order, with event time `end - 1`, and clears
/// the pane. Session windows merge as in Flink's `MergingWindowSet`: the
/// key's sessions (keyed state `sessions`) that intersect a new row's
/// `[ts, ts + gap)` (touching counts) become one window, their panes
/// concatenated in start order and their timers replaced by the merged
/// window's.
class window_join_operator final : public keyed_join_operator {
public:
  using pane = std::pair<std::vector<join_row>, std::vector<join_row>>;
  using session_list = std::vector<std::pair<std::int64_t, std::int64_t>>;

  window_join_operator(join_rows rows, std::vector<std::size_t> left_keys,
                       std::vector<std::size_t> right_keys,
                       std::shared_ptr<const window::window_assigner> assigner)
    : keyed_join_operator(std::move(rows), std::move(left_keys), std::move(right_keys)),
      assigner_(std::move(assigner)) {}

private:
  void register_states() override;
  bool process_row(std::size_t side, join_row row, event_time ts) override;
  void on_timer(event_time ts) override;
  bool add_to_session(std::size_t side, join_row row, event_time ts);

  std::shared_ptr<const window::window_assigner> assigner_;
  state::value_state<pane> panes_;
  state::value_state<session_list> sessions_;
  std::vector<window::time_window> windows_;
  std::string ns_;
};

} // namespace weir::internal
