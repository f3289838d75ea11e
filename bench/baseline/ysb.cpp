// SPDX-License-Identifier: Apache-2.0
// Yahoo Streaming Benchmark: keep view events, look up the ad's campaign
// (100 campaigns x 10 ads: campaign = ad_id / 10), count views per campaign
// in tumbling 10 s windows (bench/ysb/ysb.toml).
#include "baseline.hpp"

#include "weir/expr/random.hpp"

#include <algorithm>
#include <array>
#include <deque>

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;
constexpr std::int64_t campaigns = 100;

struct window {
  std::int64_t start = 0;
  std::array<std::int64_t, campaigns> views{};
};

void emit(const window& w, const options& o, result& r) {
  for (std::int64_t c = 0; c < campaigns; ++c) {
    const auto v = w.views[static_cast<std::size_t>(c)];
    if (v == 0)
      continue;
    ++r.rows;
    if (o.digest) {
      row_hasher h;
      h.add_int(c);
      h.add_int(w.start);
      h.add_int(w.start + size_ms);
      h.add_int(v);
      r.digest += h.finish();
    } else {
      r.checksum += static_cast<std::uint64_t>(v);
    }
  }
}

} // namespace

namespace {

constexpr std::size_t block = 1024;

// mul_high(w, k) for k < 2^32 from two 32x32-bit products, which compilers
// vectorize (a 128-bit product they do not): exact, as the sum stays below
// 2^64.
inline std::uint64_t mul_high_small(std::uint64_t w, std::uint64_t k) noexcept {
  return ((w >> 32) * k + ((w & 0xFFFFFFFFULL) * k >> 32)) >> 32;
}

// The two fields the query reads for events first .. first + count, in a
// loop the compiler vectorizes: ysb_ad_id and ysb_event_type.
#define WEIR_YSB_FIELDS_BODY                                                              \
  for (std::size_t i = 0; i < count; ++i) {                                               \
    const std::uint64_t seq = first + i;                                                  \
    ad[i] = static_cast<std::int64_t>(                                                    \
      mul_high_small(expr::mix64(mseed ^ seq * expr::seq_multiplier                      \
                                 ^ std::uint64_t{3} * expr::salt_multiplier),            \
                     1000));                                                              \
    type[i] = static_cast<std::int64_t>(                                                  \
      mul_high_small(expr::mix64(mseed ^ seq * expr::seq_multiplier                      \
                                 ^ std::uint64_t{5} * expr::salt_multiplier),            \
                     3));                                                                 \
  }

void fields(std::uint64_t mseed, std::uint64_t first, std::size_t count, std::int64_t* ad,
            std::int64_t* type) {
  WEIR_YSB_FIELDS_BODY
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The same loop with AVX-512 (F, DQ: 64-bit lane multiplies), as weir's
// rand_int kernel has it where the processor does.
__attribute__((target("avx512f,avx512dq"))) void
fields_avx512(std::uint64_t mseed, std::uint64_t first, std::size_t count, std::int64_t* ad,
              std::int64_t* type) {
  WEIR_YSB_FIELDS_BODY
}
#endif
#undef WEIR_YSB_FIELDS_BODY

} // namespace

result run_ysb(const options& o) {
  const std::uint64_t mseed = expr::mixed_seed(o.seed);
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
#endif
  result r;
  std::deque<window> windows;
  std::array<std::int64_t, block> ad{};
  std::array<std::int64_t, block> type{};
  // Blocks of events: the fields the query reads (only those, as weir's
  // generator evaluates only the fields its pipeline reads), then the views
  // counted, by a loop without branches while the block stays in one window.
  for (std::uint64_t first = 0; first < o.events; first += block) {
    const auto count = static_cast<std::size_t>(std::min<std::uint64_t>(block, o.events - first));
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    if (avx512)
      fields_avx512(mseed, first, count, ad.data(), type.data());
    else
#endif
      fields(mseed, first, count, ad.data(), type.data());
    const auto window_of = [](std::uint64_t seq) {
      const std::int64_t event_time = ysb_event_time(static_cast<std::int64_t>(seq));
      return event_time - ((event_time % size_ms) + size_ms) % size_ms;
    };
    // The window of start w: the newest, or a new one after the others are
    // emitted (time never goes back).
    const auto views_of = [&](std::int64_t w) -> std::array<std::int64_t, campaigns>& {
      if (windows.empty() || windows.back().start != w) {
        while (!windows.empty()) {
          emit(windows.front(), o, r);
          windows.pop_front();
        }
        windows.push_back(window{w, {}});
      }
      return windows.back().views;
    };
    const std::int64_t s = window_of(first);
    if (window_of(first + count - 1) == s) {
      auto& views = views_of(s); // (a window without views emits no rows)
      for (std::size_t i = 0; i < count; ++i) // a view counts one, the others zero
        views[static_cast<std::size_t>(ad[i] / 10)] += type[i] == 0;
    } else {
      for (std::size_t i = 0; i < count; ++i)
        if (type[i] == 0)
          ++views_of(window_of(first + i))[static_cast<std::size_t>(ad[i] / 10)];
    }
  }
  for (const auto& w : windows)
    emit(w, o, r);
  return r;
}

} // namespace weir::bench
