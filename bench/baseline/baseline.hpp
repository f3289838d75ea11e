// SPDX-License-Identifier: Apache-2.0
// The hand-written baselines: for each benchmark query a plain
// single-threaded loop over the same generated events (the same generator
// code weir's sources run), no framework. What weir's overhead is measured
// against.
#pragma once

#include "weir/connectors/blackhole_sink.hpp"
#include "weir/connectors/nexmark.hpp"
#include "weir/expr/random.hpp"

#include <cstdint>
#include <string>

namespace weir::bench {

struct options {
  std::uint64_t events = 1'000'000;
  std::uint64_t seed = 0;
  bool digest = false; ///< hash every result row (as weir's blackhole sink does)
};

/// What a query produced: rows and, with `options::digest`, the sum of
/// their `weir::row_hash`es; `checksum` keeps the compiler from dropping work.
struct result {
  std::uint64_t rows = 0;
  std::uint64_t digest = 0;
  std::uint64_t checksum = 0;
};

/// One YSB ad event (bench/ysb/ysb.toml computes the same fields).
struct ysb_event {
  std::int64_t user_id = 0;
  std::int64_t page_id = 0;
  std::int64_t ad_id = 0;
  std::int64_t ad_type = 0;
  std::int64_t event_type = 0; ///< 0 view, 1 click, 2 purchase
  std::int64_t event_time = 0; ///< ms
  std::int64_t ip_address = 0;
};

/// The rules of the YSB fields the query reads (bench/ysb/ysb.toml): each
/// field is its own random word of (seed, seq, salt), so a loop can compute
/// only the ones it reads, as weir's generator does (projection push-down).
inline std::int64_t ysb_ad_id(std::uint64_t mixed_seed, std::int64_t seq) noexcept {
  return expr::random_int(expr::random_word(mixed_seed, seq, 3), 0, 999);
}
inline std::int64_t ysb_event_type(std::uint64_t mixed_seed, std::int64_t seq) noexcept {
  return expr::random_int(expr::random_word(mixed_seed, seq, 5), 0, 2);
}
inline std::int64_t ysb_event_time(std::int64_t seq) noexcept {
  return 1'600'000'000'000 + seq / 100;
}

/// YSB event `seq` for `seed`, every field (the shared test vectors).
void make_ysb_event(std::uint64_t mixed_seed, std::int64_t seq, ysb_event& out);

/// The Nexmark generator configuration of the benchmark queries.
nexmark::generator_config nexmark_config(const options& o);

result run_q0(const options& o);
result run_q1(const options& o);
result run_q2(const options& o);
result run_q5(const options& o);
result run_q7(const options& o);
result run_ysb(const options& o);

} // namespace weir::bench
