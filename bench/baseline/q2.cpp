// SPDX-License-Identifier: Apache-2.0
// Nexmark q2, selection: auction and price of the bids whose auction id is
// divisible by 123 (bench/nexmark/q2.toml).
#include "baseline.hpp"

namespace weir::bench {

result run_q2(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  // Only the fields read below, as weir's source generates only the columns
  // its pipeline reads (projection push-down, nexmark::field_mask).
  using namespace nexmark;
  constexpr field_mask fields = fields_of({bid_field::auction, bid_field::price});
  nexmark::bid b;
  result r;
  for (std::uint64_t n = 0; n < o.events; ++n) {
    if (gen.kind_of(n) != nexmark::event_kind::bid)
      continue;
    gen.make_bid(n, b, fields);
    if (b.auction % 123 != 0)
      continue;
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(b.auction);
      h.add_int(b.price);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(b.price);
    }
  }
  return r;
}

} // namespace weir::bench
