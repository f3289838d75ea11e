// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using namespace std::chrono_literals;
using weir::window::time_window;
using weir::window::tumbling_event_time_windows;
using weir::window::window_start;

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

} // TEST_SUITE
