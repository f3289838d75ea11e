// SPDX-License-Identifier: Apache-2.0
// Nexmark q1, currency conversion: every bid with price * 0.908 (a float64)
// (bench/nexmark/q1.toml).
#include "baseline.hpp"

#include <bit>

namespace weir::bench {

result run_q1(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // The paddings only where read below (with_extra), as weir's source
  // generates only the columns its pipeline reads (projection push-down).
  result r;
  for_each_bid(gen, o.events, true, [&](const bid_view& b) {
    const double euros = static_cast<double>(b.price) * 0.908;
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(b.auction);
      h.add_int(b.bidder);
      h.add_float(euros);
      h.add_int(b.date_time);
      h.add_string(b.extra);
      r.digest += h.finish();
    } else {
      r.checksum += std::bit_cast<std::uint64_t>(euros) + b.extra.size();
    }
  });
  return r;
}

} // namespace weir::bench
