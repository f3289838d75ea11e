// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"

#include <doctest/doctest.h>

#include <limits>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using weir::window::time_window;
using weir::window::tumbling_event_time_windows;
using weir::window::window_start;
using weir::window::window_start_cache;

namespace {

time_window assign_one(const tumbling_event_time_windows& a, weir::event_time ts) {
  std::vector<time_window> out;
  a.assign(ts, out);
  REQUIRE(out.size() == 1);
  return out[0];
}

} // namespace

TEST_SUITE("window") {

TEST_CASE("a record at a window's end belongs to the next window") {
  auto a = tumbling_event_time_windows::make(10s).value();
  CHECK(assign_one(a, 0) == time_window{0, 10000});
  CHECK(assign_one(a, 9999) == time_window{0, 10000});
  CHECK(assign_one(a, 10000) == time_window{10000, 20000});
  CHECK(assign_one(a, 19999) == time_window{10000, 20000});
}

TEST_CASE("assign appends to the output vector rather than replacing it") {
  auto a = tumbling_event_time_windows::make(10s).value();
  std::vector<time_window> out{time_window{1, 2}};
  a.assign(15000, out);
  REQUIRE(out.size() == 2);
  CHECK(out[0] == time_window{1, 2});
  CHECK(out[1] == time_window{10000, 20000});
}

TEST_CASE("a window's max timestamp is its end minus one millisecond") {
  CHECK(time_window{0, 10000}.max_timestamp() == 9999);
  CHECK(time_window{-10000, 0}.max_timestamp() == -1);
}

TEST_CASE("negative timestamps land in pre-epoch windows by floored division") {
  auto a = tumbling_event_time_windows::make(10s).value();
  CHECK(assign_one(a, -1) == time_window{-10000, 0});
  CHECK(assign_one(a, -10000) == time_window{-10000, 0});
  CHECK(assign_one(a, -10001) == time_window{-20000, -10000});
  CHECK(window_start(-1, 0, 10000) == -10000);
  CHECK(window_start(-9999, 0, 10000) == -10000);
}

TEST_CASE("a positive offset shifts every window boundary forward") {
  auto a = tumbling_event_time_windows::make(10s, 3s).value();
  CHECK(a.offset() == 3s);
  CHECK(assign_one(a, 2999) == time_window{-7000, 3000});
  CHECK(assign_one(a, 3000) == time_window{3000, 13000});
  CHECK(assign_one(a, 12999) == time_window{3000, 13000});
  CHECK(assign_one(a, -7001) == time_window{-17000, -7000});
}

TEST_CASE("a negative offset shifts every window boundary backward") {
  auto a = tumbling_event_time_windows::make(10s, -3s).value();
  CHECK(assign_one(a, 6999) == time_window{-3000, 7000});
  CHECK(assign_one(a, 7000) == time_window{7000, 17000});
  CHECK(assign_one(a, -3000) == time_window{-3000, 7000});
  CHECK(assign_one(a, -3001) == time_window{-13000, -3000});
}

TEST_CASE("daily windows with a -8h offset start at midnight UTC+8 as in Flink's docs") {
  constexpr std::int64_t day = 86'400'000;
  constexpr std::int64_t hour = 3'600'000;
  // 2015-05-17T10:05:03Z is 18:05:03 in UTC+8: its day began at
  // 2015-05-16T16:00:00Z (1431792000000).
  const std::int64_t ts = 1431857103000;
  const std::int64_t start = window_start(ts, -8 * hour, day);
  CHECK(start == 1431792000000);
  CHECK(start % day == 16 * hour);
  // 15:59:59.999 UTC still belongs to the previous (UTC+8) day.
  CHECK(window_start(start - 1, -8 * hour, day) == start - day);
  CHECK(window_start(start + day - 1, -8 * hour, day) == start);
}

TEST_CASE("window_start matches Flink's getWindowStartWithOffset on a grid of values") {
  // Flink: remainder = (ts - offset) % size; start = ts - remainder (+ size if < 0).
  for (std::int64_t size : {1, 7, 1000, 10000}) {
    for (std::int64_t offset : {-size + 1, std::int64_t{-1}, std::int64_t{0},
                                std::int64_t{1}, size - 1}) {
      if (offset <= -size || offset >= size)
        continue;
      for (std::int64_t ts = -3 * size - 2; ts <= 3 * size + 2; ++ts) {
        std::int64_t rem = (ts - offset) % size;
        std::int64_t flink = rem < 0 ? ts - (rem + size) : ts - rem;
        REQUIRE(window_start(ts, offset, size) == flink);
      }
    }
  }
}

TEST_CASE("make rejects a size that is not positive") {
  for (auto size : {0ms, -1ms, -10000ms}) {
    auto a = tumbling_event_time_windows::make(size);
    REQUIRE_FALSE(a);
    CHECK(a.error().code == weir::errc::invalid_argument);
    CHECK(a.error().message.find("size must be positive") != std::string::npos);
  }
}

TEST_CASE("make rejects an offset whose magnitude is not smaller than the size") {
  for (auto offset : {10000ms, -10000ms, 25000ms, -25000ms}) {
    auto a = tumbling_event_time_windows::make(10s, offset);
    REQUIRE_FALSE(a);
    CHECK(a.error().code == weir::errc::invalid_argument);
    CHECK(a.error().message.find("|offset| < size") != std::string::npos);
  }
  CHECK(tumbling_event_time_windows::make(10s, 9999ms));
  CHECK(tumbling_event_time_windows::make(10s, -9999ms));
}

TEST_CASE("window_start_cache gives window_start for runs, jumps and both ends of the range") {
  for (const auto& [offset, size] : std::vector<std::pair<std::int64_t, std::int64_t>>{
         {0, 10000}, {3, 10}, {-7, 10}, {0, 1}, {-8 * 3600000LL, 86400000LL}}) {
    CAPTURE(offset);
    CAPTURE(size);
    // (window_start's precondition: at least `size` from the range's ends.)
    const std::int64_t lo = std::numeric_limits<std::int64_t>::min() + 2 * size;
    const std::int64_t hi = std::numeric_limits<std::int64_t>::max() - 2 * size;
    window_start_cache cached{offset, size};
    // Ascending runs across window ends, back in time, negative, far apart.
    std::vector<std::int64_t> ts;
    for (std::int64_t t = -25; t <= 25; ++t)
      ts.push_back(t);
    for (std::int64_t t : std::vector<std::int64_t>{
           9999, 10000, 10001, 5, -1, -10000, -10001, lo, lo + 1, hi, hi - 1, lo, 0, hi,
           86399999, 86400000, -28800000, -28800001})
      ts.push_back(t);
    std::uint64_t x = 0x9E3779B97F4A7C15ULL;
    for (int i = 0; i < 2000; ++i) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      ts.push_back(static_cast<std::int64_t>(x >> 20) - (std::int64_t{1} << 43));
    }
    for (const std::int64_t t : ts) {
      CAPTURE(t);
      CHECK(cached(t) == window_start(t, offset, size));
    }
  }
}

} // TEST_SUITE
