// SPDX-License-Identifier: Apache-2.0
// Nexmark q2, selection: auction and price of the bids whose auction id is
// divisible by 123 (bench/nexmark/q2.toml).
#include "baseline.hpp"

namespace weir::bench {

result run_q2(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // The paddings only where read below (with_extra), as weir's source
  // generates only the columns its pipeline reads (projection push-down).
  result r;
  for_each_bid(gen, o.events, false, [&](const bid_view& b) {
    if (b.auction % 123 != 0)
      return;
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(b.auction);
      h.add_int(b.price);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(b.price);
    }
  });
  return r;
}

} // namespace weir::bench
