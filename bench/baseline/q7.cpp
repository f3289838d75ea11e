// SPDX-License-Identifier: Apache-2.0
// Nexmark q7, highest bid: per tumbling 10 s window the highest price and
// its auction (ties: the largest auction id), i.e. max(price * 2^36 +
// auction) (bench/nexmark/q7.toml).
#include "baseline.hpp"

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;
constexpr std::int64_t rank_shift = 68'719'476'736; // 2^36

void emit(std::int64_t start, std::int64_t top, const options& o, result& r) {
  ++r.rows;
  if (o.digest) {
    row_hasher h;
    h.add_int(start);
    h.add_int(start + size_ms);
    h.add_int(top % rank_shift);
    h.add_int(top / rank_shift);
    r.digest += h.finish();
  } else {
    r.checksum += static_cast<std::uint64_t>(top);
  }
}

} // namespace

result run_q7(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // The paddings only where read below (with_extra), as weir's source
  // generates only the columns its pipeline reads (projection push-down).
  result r;
  bool open = false;
  std::int64_t start = 0;
  std::int64_t top = 0;
  for_each_bid(gen, o.events, false, [&](const bid_view& b) {
    const std::int64_t s = b.date_time - ((b.date_time % size_ms) + size_ms) % size_ms;
    if (open && s != start) {
      emit(start, top, o, r);
      open = false;
    }
    const std::int64_t rank = b.price * rank_shift + b.auction;
    if (!open) {
      open = true;
      start = s;
      top = rank;
    } else if (rank > top) {
      top = rank;
    }
  });
  if (open)
    emit(start, top, o, r);
  return r;
}

} // namespace weir::bench
