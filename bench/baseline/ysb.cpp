// SPDX-License-Identifier: Apache-2.0
// Yahoo Streaming Benchmark: keep view events, look up the ad's campaign
// (100 campaigns x 10 ads: campaign = ad_id / 10), count views per campaign
// in tumbling 10 s windows (bench/ysb/ysb.toml).
#include "baseline.hpp"

#include "weir/expr/random.hpp"

#include <array>
#include <deque>

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;
constexpr std::int64_t campaigns = 100;

struct window {
  std::int64_t start = 0;
  std::array<std::int64_t, campaigns> views{};
};

void emit(const window& w, const options& o, result& r) {
  for (std::int64_t c = 0; c < campaigns; ++c) {
    const auto v = w.views[static_cast<std::size_t>(c)];
    if (v == 0)
      continue;
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(c);
      h.add_int(w.start);
      h.add_int(w.start + size_ms);
      h.add_int(v);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(v);
    }
  }
}

} // namespace

result run_ysb(const options& o) {
  const std::uint64_t mseed = expr::mixed_seed(o.seed);
  result r;
  ysb_event e;
  std::deque<window> windows;
  for (std::uint64_t n = 0; n < o.events; ++n) {
    make_ysb_event(mseed, static_cast<std::int64_t>(n), e);
    if (e.event_type != 0)
      continue;
    const std::int64_t campaign = e.ad_id / 10;
    const std::int64_t s = e.event_time - ((e.event_time % size_ms) + size_ms) % size_ms;
    if (windows.empty() || windows.back().start != s) {
      while (!windows.empty()) {
        emit(windows.front(), o, r);
        windows.pop_front();
      }
      windows.push_back(window{s, {}});
    }
    ++windows.back().views[static_cast<std::size_t>(campaign)];
  }
  for (const auto& w : windows)
    emit(w, o, r);
  return r;
}

} // namespace weir::bench
