// SPDX-License-Identifier: Apache-2.0
#include "baseline.hpp"

#include "weir/expr/random.hpp"

namespace weir::bench {

void make_ysb_event(std::uint64_t mixed_seed, std::int64_t seq, ysb_event& out) {
  using expr::random_int;
  using expr::random_word;
  out.user_id = random_int(random_word(mixed_seed, seq, 1), 0, 999'999);
  out.page_id = random_int(random_word(mixed_seed, seq, 2), 0, 999'999);
  out.ad_id = ysb_ad_id(mixed_seed, seq);
  out.ad_type = random_int(random_word(mixed_seed, seq, 4), 0, 4);
  out.event_type = ysb_event_type(mixed_seed, seq);
  out.event_time = ysb_event_time(seq);
  out.ip_address = random_int(random_word(mixed_seed, seq, 6), 0, 4'294'967'295);
}

nexmark::generator_config nexmark_config(const options& o) {
  nexmark::generator_config c;
  c.seed = o.seed;
  return c;
}

} // namespace weir::bench
