// SPDX-License-Identifier: Apache-2.0
#include "window_join_operator.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace weir::internal {

namespace {

// A window as a state namespace: start and end, 8 bytes each.
void encode_window(const window::time_window& w, std::string& out) {
  out.resize(16);
  std::memcpy(out.data(), &w.start, 8);
  std::memcpy(out.data() + 8, &w.end, 8);
}

window::time_window decode_window(std::string_view ns) {
  window::time_window w;
  if (ns.size() != 16)
    throw std::runtime_error("window join: a timer without a window");
  std::memcpy(&w.start, ns.data(), 8);
  std::memcpy(&w.end, ns.data() + 8, 8);
  return w;
}

} // namespace

void window_join_operator::register_states() {
  auto p = backend_->get_value_state<pane>("pane");
  auto s = backend_->get_value_state<session_list>("sessions");
  if (!p || !s)
    throw std::logic_error(p ? s.error().message : p.error().message);
  panes_ = *p;
  sessions_ = *s;
}

bool window_join_operator::process_row(std::size_t side, join_row row, event_time ts) {
  if (assigner_->as_merging())
    return add_to_session(side, std::move(row), ts);
  const event_time wm = backend_->current_watermark();
  windows_.clear();
  assigner_->assign(ts, windows_);
  // Windows in start order, so that a row's copies go in a fixed order.
  std::sort(windows_.begin(), windows_.end());
  std::size_t placed = 0;
  for (std::size_t i = 0; i < windows_.size(); ++i) {
    const auto& w = windows_[i];
    if (w.max_timestamp() <= wm)
      continue; // fired already (Flink's isWindowLate, no allowed lateness)
    encode_window(w, ns_);
    backend_->set_current_namespace(ns_);
    auto* p = panes_.get_mut();
    if (!p) {
      panes_.update(pane{});
      p = panes_.get_mut();
    }
    auto& rows = side == 0 ? p->first : p->second;
    ++placed;
    if (i + 1 == windows_.size())
      rows.push_back(std::move(row));
    else
      rows.push_back(row);
    backend_->register_event_time_timer(w.max_timestamp());
  }
  backend_->set_current_namespace({});
  return placed > 0;
}

bool window_join_operator::add_to_session(std::size_t side, join_row row, event_time ts) {
  const event_time wm = backend_->current_watermark();
  windows_.clear();
  assigner_->assign(ts, windows_);
  auto merged = windows_.at(0);
  session_list sessions = sessions_.value_or({});
  // Covering may reach further sessions: repeat until nothing more joins.
  std::vector<window::time_window> absorbed;
  for (bool grew = true; grew;) {
    grew = false;
    for (auto it = sessions.begin(); it != sessions.end();) {
      window::time_window s{it->first, it->second};
      if (s.intersects(merged)) {
        merged = merged.cover(s);
        absorbed.push_back(s);
        it = sessions.erase(it);
        grew = true;
      } else {
        ++it;
      }
    }
  }
  if (merged.max_timestamp() <= wm)
    return false; // only windows not yet fired merge, so absorbed is empty
  std::sort(absorbed.begin(), absorbed.end());
  pane combined;
  for (const auto& w : absorbed) {
    encode_window(w, ns_);
    backend_->set_current_namespace(ns_);
    if (auto* p = panes_.get_mut()) {
      std::move(p->first.begin(), p->first.end(), std::back_inserter(combined.first));
      std::move(p->second.begin(), p->second.end(), std::back_inserter(combined.second));
    }
    panes_.clear();
    backend_->delete_event_time_timer(w.max_timestamp());
  }
  (side == 0 ? combined.first : combined.second).push_back(std::move(row));
  encode_window(merged, ns_);
  backend_->set_current_namespace(ns_);
  if (auto* p = panes_.get_mut()) { // the new row's window was itself a session
    std::move(combined.first.begin(), combined.first.end(), std::back_inserter(p->first));
    std::move(combined.second.begin(), combined.second.end(), std::back_inserter(p->second));
  } else {
    panes_.update(std::move(combined));
  }
  backend_->register_event_time_timer(merged.max_timestamp());
  backend_->set_current_namespace({});
  sessions.emplace_back(merged.start, merged.end);
  std::sort(sessions.begin(), sessions.end());
  sessions_.update(std::move(sessions));
  return true;
}

void window_join_operator::on_timer(event_time) {
  const auto w = decode_window(backend_->current_namespace());
  if (const auto* p = panes_.get()) {
    for (const auto& l : p->first)
      for (const auto& r : p->second)
        rows_.append(l, r, w.max_timestamp(), w.start, w.end);
  }
  panes_.clear();
  if (assigner_->as_merging()) {
    backend_->set_current_namespace({});
    if (auto* s = sessions_.get_mut()) {
      std::erase(*s, std::pair{w.start, w.end});
      if (s->empty())
        sessions_.clear();
    }
  }
}

} // namespace weir::internal
