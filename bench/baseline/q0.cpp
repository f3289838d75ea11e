// SPDX-License-Identifier: Apache-2.0
// Nexmark q0, pass-through: every bid's auction, bidder, price, date_time and
// extra (bench/nexmark/q0.toml).
#include "baseline.hpp"

namespace weir::bench {

result run_q0(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // The paddings only where read below (with_extra), as weir's source
  // generates only the columns its pipeline reads (projection push-down).
  result r;
  for_each_bid(gen, o.events, true, [&](const bid_view& b) {
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(b.auction);
      h.add_int(b.bidder);
      h.add_int(b.price);
      h.add_int(b.date_time);
      h.add_string(b.extra);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(b.price) + b.extra.size();
    }
  });
  return r;
}

} // namespace weir::bench
