// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "per_window_operator.hpp"

#include <map>
#include <memory>
#include <vector>

namespace weir::window {

/// Per-window aggregation for assigners whose windows merge (session
/// windows): Flink's `WindowOperator` with its `MergingWindowSet`.
///
/// Each key keeps a merging window set, "window-merging-set" (namespace
/// empty): every window it has, mapped to the window whose namespace holds
/// its state. A record's new window is merged with those it overlaps as the
/// assigner says (`merging_window_assigner::merge_windows`); a merge merges
/// the trigger's state (`trigger::on_merge`), the contents or buffered
/// records of the merged windows into one (the state window, which keeps
/// its namespace so no state moves when a session grows), and deletes the
/// merged windows' cleanup timers. Everything else (the trigger, allowed
/// lateness, evictors, cleanup, the other states and their costs) is
/// `per_window_operator`'s; a timer of a window merged away is ignored.
///
/// Cost per record: `per_window_operator`'s, plus loading and writing back
/// the key's merging set (O(windows of the key)) and one `merge_windows`.
class merging_window_operator final : public per_window_operator {
public:
  explicit merging_window_operator(std::shared_ptr<const window_plan::impl> plan);

protected:
  void register_states() override;
  bool process_row(const record_batch& in, const std::vector<column>& args,
                   std::uint32_t row, std::uint64_t seq, event_time at,
                   event_time ts) override;
  void on_timer(event_time t, bool event_time_timer) override;

private:
  using window_mapping = std::map<time_window, time_window>;

  void register_merging_set();
  window_mapping load_mapping();
  void persist_mapping(const window_mapping& m);
  time_window add_window(window_mapping& mapping, const time_window& w);
  void on_merge(const time_window& result, const std::vector<time_window>& merged,
                const time_window& state_window,
                const std::vector<time_window>& merged_states);

  state::map_state<internal::window_pair, internal::window_pair> merging_set_;
  std::vector<merging_window_assigner::merge_group> merges_; ///< add_window's scratch
};

} // namespace weir::window
