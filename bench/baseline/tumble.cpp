// SPDX-License-Identifier: Apache-2.0
// The keyed tumbling window of the ingest benchmark: per auction and tumbling
// 10 s window, the number of bids and the highest price (bench/ingest/tumble.toml;
// rows auction, window_start, window_end, num, max_price).
#include "baseline.hpp"

#include <algorithm>
#include <unordered_map>

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;

struct cell {
  std::int64_t num = 0;
  std::int64_t max_price = 0;
};

void emit(std::int64_t start, const std::unordered_map<std::int64_t, cell>& w,
          const options& o, result& r) {
  for (const auto& [auction, c] : w) {
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(auction);
      h.add_int(start);
      h.add_int(start + size_ms);
      h.add_int(c.num);
      h.add_int(c.max_price);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(c.num + c.max_price);
    }
  }
}

} // namespace

result run_tumble(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  result r;
  bool open = false;
  std::int64_t start = 0;
  std::unordered_map<std::int64_t, cell> window; // auction -> its cell
  // The generator's time never goes back, so one window is open at a time.
  for_each_bid(gen, o.events, false, [&](const bid_view& b) {
    const std::int64_t s = b.date_time - ((b.date_time % size_ms) + size_ms) % size_ms;
    if (open && s != start) {
      emit(start, window, o, r);
      window.clear();
    }
    open = true;
    start = s;
    auto [it, fresh] = window.try_emplace(b.auction);
    ++it->second.num;
    it->second.max_price = fresh ? b.price : std::max(it->second.max_price, b.price);
  });
  if (open)
    emit(start, window, o, r);
  return r;
}

} // namespace weir::bench
