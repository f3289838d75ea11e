// SPDX-License-Identifier: Apache-2.0
// Nexmark q5, hot items: bids per auction in sliding windows of 10 s every
// 2 s; per window the auction with the most bids (ties: the largest auction
// id), i.e. max(num * 2^36 + auction) (bench/nexmark/q5.toml).
#include "baseline.hpp"

#include <deque>
#include <unordered_map>

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;
constexpr std::int64_t slide_ms = 2'000;
constexpr std::int64_t rank_shift = 68'719'476'736; // 2^36

struct window {
  std::int64_t start = 0;
  std::unordered_map<std::int64_t, std::int64_t> counts; // auction -> bids
};

void emit(const window& w, const options& o, result& r) {
  std::int64_t top = -1;
  for (const auto& [auction, num] : w.counts)
    top = std::max(top, num * rank_shift + auction);
  if (top < 0)
    return;
  ++r.rows;
  if (o.digest) {
    row_hasher h;
    h.add_int(w.start);
    h.add_int(w.start + size_ms);
    h.add_int(top % rank_shift);
    h.add_int(top / rank_shift);
    r.digest += h.finish();
  } else {
    r.checksum += static_cast<std::uint64_t>(top);
  }
}

} // namespace

result run_q5(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // The paddings only where read below (with_extra), as weir's source
  // generates only the columns its pipeline reads (projection push-down).
  result r;
  std::deque<window> windows; // ascending start; the generator's time never goes back
  for_each_bid(gen, o.events, false, [&](const bid_view& b) {
    const std::int64_t ts = b.date_time;
    while (!windows.empty() && windows.front().start + size_ms <= ts) {
      emit(windows.front(), o, r);
      windows.pop_front();
    }
    // Windows [s, s + 10 s) with s a multiple of 2 s and s <= ts < s + 10 s.
    const std::int64_t last = ts - ((ts % slide_ms) + slide_ms) % slide_ms;
    const std::int64_t first = last - size_ms + slide_ms;
    while (windows.empty() || windows.back().start < last) {
      const std::int64_t s = windows.empty() ? first : windows.back().start + slide_ms;
      windows.push_back(window{s, {}});
    }
    for (auto& w : windows)
      if (w.start >= first && w.start <= last)
        ++w.counts[b.auction];
  });
  for (const auto& w : windows)
    emit(w, o, r);
  return r;
}

} // namespace weir::bench
