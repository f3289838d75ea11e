// SPDX-License-Identifier: Apache-2.0
#include "merging_window_operator.hpp"

#include <algorithm>
#include <string>
#include <utility>

namespace weir::window {

using internal::buffered_row;
using internal::encode_window;
using internal::window_pair;

// A merged window's timers are deleted when it merges (`on_merge`), so a
// record must always reach the trigger: never skip it.
merging_window_operator::merging_window_operator(
    std::shared_ptr<const window_plan::impl> plan)
  : per_window_operator(std::move(plan), false) {
  register_merging_set(); // the base registered the rest
}

void merging_window_operator::register_states() {
  per_window_operator::register_states();
  register_merging_set();
}

void merging_window_operator::register_merging_set() {
  merging_set_ = internal::must(
    backend_->get_map_state<window_pair, window_pair>(internal::merging_state));
}

// -- merging window set (Flink's MergingWindowSet) ----------------------------

merging_window_operator::window_mapping merging_window_operator::load_mapping() {
  backend_->set_current_namespace({});
  window_mapping m;
  for (const auto& [w, s] : merging_set_.entries())
    m.emplace(time_window{w.first, w.second}, time_window{s.first, s.second});
  return m;
}

void merging_window_operator::persist_mapping(const window_mapping& m) {
  backend_->set_current_namespace({});
  merging_set_.clear();
  for (const auto& [w, s] : m)
    merging_set_.put(window_pair{w.start, w.end}, window_pair{s.start, s.end});
}

// Adds `w` to the key's windows, merging as the assigner says; returns the
// window `w` ended up in (Flink's MergingWindowSet.addWindow).
time_window merging_window_operator::add_window(
    window_mapping& mapping, const time_window& w) {
  std::vector<time_window> all;
  all.reserve(mapping.size() + 1);
  for (const auto& [k, v] : mapping)
    all.push_back(k);
  all.push_back(w);
  merges_.clear();
  plan_->assigner->as_merging()->merge_windows(std::move(all), merges_);

  time_window result = w;
  bool merged_new = false;
  for (auto& g : merges_) {
    auto& merged = g.merged;
    if (auto it = std::find(merged.begin(), merged.end(), w); it != merged.end()) {
      merged.erase(it);
      merged_new = true;
      result = g.result;
    }
    const time_window target_state = mapping.at(merged.front());
    std::vector<time_window> merged_states;
    for (const auto& m : merged) {
      auto it = mapping.find(m);
      if (it != mapping.end()) {
        merged_states.push_back(it->second);
        mapping.erase(it);
      }
    }
    mapping[g.result] = target_state;
    std::erase(merged_states, target_state);
    if (!(merged.size() == 1 && merged.front() == g.result))
      on_merge(g.result, merged, target_state, merged_states);
  }
  if (merges_.empty() || (result == w && !merged_new))
    mapping[result] = result;
  return result;
}

void merging_window_operator::on_merge(const time_window& result,
                                       const std::vector<time_window>& merged,
                                       const time_window& state_window,
                                       const std::vector<time_window>& merged_states) {
  const auto& p = *plan_;
  {
    context ctx{*this, result, &merged};
    p.trigger->on_merge(result, ctx);
  }
  for (const auto& m : merged) {
    context ctx{*this, m};
    p.trigger->clear(m, ctx);
    delete_cleanup_timer(m);
  }
  if (merged_states.empty())
    return;
  std::vector<std::string> sources;
  for (const auto& s : merged_states)
    sources.push_back(encode_window(s));
  const auto target = encode_window(state_window);
  if (p.buffered) {
    rows_.merge_namespaces(target, sources);
    backend_->set_current_namespace(target);
    std::vector<buffered_row> rows{rows_.get().begin(), rows_.get().end()};
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
      return std::get<0>(a) < std::get<0>(b);
    });
    rows_.update(std::move(rows));
  } else {
    contents_.merge_namespaces(target, sources);
  }
}

// -- elements and timers ------------------------------------------------------

bool merging_window_operator::process_row(const record_batch& in,
                                          const std::vector<column>& args,
                                          std::uint32_t row, std::uint64_t seq,
                                          event_time at, event_time ts) {
  const auto& p = *plan_;
  assigned_.clear();
  p.assigner->assign(at, assigned_);
  bool skipped = true;
  auto mapping = load_mapping();
  for (const auto& w : assigned_) {
    const time_window actual = add_window(mapping, w);
    if (is_window_late(actual)) {
      mapping.erase(actual);
      continue;
    }
    skipped = false;
    add_to_window(in, args, row, seq, ts, mapping.at(actual), actual);
  }
  persist_mapping(mapping);
  if (!skipped)
    return true;
  // Skipped elements of event-time windows are late (ts + lateness <=
  // watermark); other windows never skip.
  return !p.assigner->is_event_time();
}

void merging_window_operator::on_timer(event_time t, bool event_time_timer) {
  const time_window w = internal::decode_window(backend_->current_namespace());
  window_mapping mapping = load_mapping();
  auto it = mapping.find(w);
  if (it == mapping.end())
    return; // a timer of a window merged away (its trigger did not delete it)
  const time_window state_window = it->second;
  if (fire_timer(t, event_time_timer, w, state_window)) {
    mapping.erase(w);
    persist_mapping(mapping);
  }
}

} // namespace weir::window
