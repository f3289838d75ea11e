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
  std::deque<window> windows;
  for (std::uint64_t n = 0; n < o.events; ++n) {
    // Only the fields read here, as weir's generator evaluates only the
    // fields its pipeline reads (projection push-down).
    const auto seq = static_cast<std::int64_t>(n);
    if (ysb_event_type(mseed, seq) != 0)
      continue; // not a view
    const std::int64_t ad_id = ysb_ad_id(mseed, seq);
    const std::int64_t event_time = ysb_event_time(seq);
    const std::int64_t campaign = ad_id / 10;
    const std::int64_t s = event_time - ((event_time % size_ms) + size_ms) % size_ms;
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
