// SPDX-License-Identifier: Apache-2.0
// The hand-written baselines: for each benchmark query a plain
// single-threaded loop over the same generated events (the same generator
// code weir's sources run, for_each_bid), no framework. What weir's overhead is measured
// against.
#pragma once

#include "weir/blackhole/sink.hpp"
#include "kinds/sources/nexmark/nexmark_generator.hpp"
#include "weir/expr/random.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

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

/// One generated bid as the loops read it; `extra` is empty unless asked for.
struct bid_view {
  std::int64_t auction = 0;
  std::int64_t bidder = 0;
  std::int64_t price = 0;
  std::int64_t date_time = 0;
  std::string_view extra;
};

/// Calls `f(const bid_view&)` for every bid among events [0, events), in
/// order, generated the fastest way this code base has, which is the way
/// weir's Nexmark source generates them: 64 at a time, the numbers by
/// `generator::bid_numbers_of`, then the paddings back to back by
/// `event_random::write_letters`. (Channel and URL are never generated: no
/// benchmark query reads them.)
template <class F>
void for_each_bid(const nexmark::generator& gen, std::uint64_t events, bool with_extra, F&& f) {
  constexpr std::size_t chunk = nexmark::generator::max_bid_numbers;
  std::array<std::uint64_t, chunk> ns{};
  std::size_t held = 0;
  nexmark::generator::bid_numbers numbers;
  std::string chars;
  std::array<std::size_t, chunk + 1> offsets{};
  const auto flush = [&] {
    gen.bid_numbers_of(ns.data(), held, with_extra, numbers);
    if (with_extra) {
      std::size_t total = 0;
      for (std::size_t i = 0; i < held; ++i) {
        offsets[i] = total;
        total += static_cast<std::size_t>(numbers.pad_size[i]);
      }
      offsets[held] = total;
      chars.resize(total + nexmark::event_random::letters_slack);
      for (std::size_t i = 0; i < held; ++i) {
        nexmark::event_random r{numbers.pad_state[i]};
        r.write_letters(chars.data() + offsets[i], numbers.pad_size[i]);
      }
    }
    for (std::size_t i = 0; i < held; ++i) {
      bid_view b{numbers.auction[i], numbers.bidder[i], numbers.price[i], numbers.date_time[i],
                 {}};
      if (with_extra)
        b.extra = std::string_view{chars}.substr(offsets[i], offsets[i + 1] - offsets[i]);
      f(b);
    }
    held = 0;
  };
  // The kind of event n is decided by n % total: carried along, not divided.
  const auto total = static_cast<std::uint64_t>(gen.config().total_proportion());
  const auto [first, last] = gen.block_offsets(nexmark::event_kind::bid);
  std::uint64_t rem = 0;
  for (std::uint64_t n = 0; n < events; ++n) {
    const bool bid = rem >= first && rem < last;
    if (++rem == total)
      rem = 0;
    if (!bid)
      continue;
    ns[held++] = n;
    if (held == chunk)
      flush();
  }
  if (held > 0)
    flush();
}

result run_q0(const options& o);
result run_q1(const options& o);
result run_q2(const options& o);
result run_q3(const options& o);
result run_q5(const options& o);
result run_q7(const options& o);
result run_q8(const options& o);
result run_tumble(const options& o);
result run_ysb(const options& o);

} // namespace weir::bench
