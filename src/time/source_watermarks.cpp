// SPDX-License-Identifier: Apache-2.0
#include "weir/time/source_watermarks.hpp"

#include <algorithm>
#include <charconv>
#include <stdexcept>

namespace weir::time {

source_watermarks::source_watermarks(options opts) : opts_(std::move(opts)) {
  for (const auto& p : opts_.declared_partitions)
    partitions_.emplace(p, partition_state{});
}

void source_watermarks::on_record(const std::string& partition, event_time ts,
                                  event_time now) {
  if (started_ == min_watermark)
    started_ = now;
  auto& p = partitions_[partition];
  p.max_ts = std::max(p.max_ts, ts);
  p.last_seen = now;
  p.seen = true;
  p.idle = false;
}

void source_watermarks::on_processing_time(event_time now) {
  if (opts_.idle_timeout.count() <= 0)
    return;
  if (started_ == min_watermark)
    started_ = now;
  const auto timeout = opts_.idle_timeout.count();
  for (auto& [name, p] : partitions_) {
    // A partition without a record since the start (or the restore) counts
    // from the start, or from its declaration if later.
    auto since = p.last_seen != min_watermark ? p.last_seen : std::max(started_, p.declared_at);
    if (!p.idle && now - since > timeout)
      p.idle = true;
  }
}

void source_watermarks::set_partitions(const std::vector<std::string>& names, event_time now) {
  for (auto it = partitions_.begin(); it != partitions_.end();) {
    if (std::find(names.begin(), names.end(), it->first) == names.end())
      it = partitions_.erase(it);
    else
      ++it;
  }
  for (const auto& n : names) {
    auto [it, added] = partitions_.try_emplace(n);
    if (added)
      it->second.declared_at = now;
  }
}

event_time source_watermarks::combined() const {
  bool any_active = false;
  event_time m = max_watermark;
  for (const auto& [name, p] : partitions_) {
    if (p.idle)
      continue;
    any_active = true;
    if (!p.seen)
      return min_watermark; // a declared partition holds the watermark back
    // max_ts - bound - 1, saturating at the bottom.
    auto bound = opts_.max_out_of_orderness.count();
    auto wm = p.max_ts < min_watermark + bound + 1 ? min_watermark
                                                   : p.max_ts - bound - 1;
    m = std::min(m, wm);
  }
  return any_active ? m : min_watermark;
}

std::optional<event_time> source_watermarks::poll() {
  auto wm = combined();
  if (wm <= emitted_)
    return std::nullopt;
  emitted_ = wm;
  return wm;
}

std::string source_watermarks::snapshot() const {
  std::string out = "wm " + std::to_string(emitted_) + "\n";
  for (const auto& [name, p] : partitions_)
    out += "p " + std::to_string(p.max_ts) + " " + (p.seen ? "1 " : "0 ") + name + "\n";
  return out;
}

void source_watermarks::restore(std::string_view text) {
  auto fail = [] { throw std::runtime_error("malformed source watermark state"); };
  auto number = [&](std::string_view s) {
    std::int64_t v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || ptr != s.data() + s.size())
      fail();
    return v;
  };
  while (!text.empty()) {
    auto nl = text.find('\n');
    if (nl == std::string_view::npos)
      fail();
    auto line = text.substr(0, nl);
    text.remove_prefix(nl + 1);
    if (line.substr(0, 3) == "wm ") {
      emitted_ = number(line.substr(3));
    } else if (line.substr(0, 2) == "p ") {
      line.remove_prefix(2);
      auto sp = line.find(' ');
      if (sp == std::string_view::npos || line.size() < sp + 3)
        fail();
      auto& p = partitions_[std::string{line.substr(sp + 3)}];
      p.max_ts = number(line.substr(0, sp));
      p.seen = line[sp + 1] == '1';
    } else {
      fail();
    }
  }
}

bool source_watermarks::all_idle() const noexcept {
  if (partitions_.empty())
    return false;
  for (const auto& [name, p] : partitions_)
    if (!p.idle)
      return false;
  return true;
}

} // namespace weir::time
