// SPDX-License-Identifier: Apache-2.0
#include "weir/window/global_windows.hpp"
#include "weir/window/session_windows.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/triggers.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using weir::event_time;
using weir::window::event_time_session_windows;
using weir::window::global_window;
using weir::window::global_windows;
using weir::window::merging_window_assigner;
using weir::window::processing_time_session_windows;
using weir::window::sliding_event_time_windows;
using weir::window::sliding_processing_time_windows;
using weir::window::time_window;
using weir::window::tumbling_processing_time_windows;

namespace {

template <class A>
std::vector<time_window> assign(const A& a, event_time ts) {
  std::vector<time_window> out;
  a.assign(ts, out);
  return out;
}

std::vector<merging_window_assigner::merge_group>
merge(const merging_window_assigner& a, std::vector<time_window> ws) {
  std::vector<merging_window_assigner::merge_group> out;
  a.merge_windows(std::move(ws), out);
  return out;
}

} // namespace

TEST_SUITE("window") {

// -- sliding ---------------------------------------------------------------------

TEST_CASE("a sliding window assigns size/slide windows, newest first, end exclusive") {
  auto a = sliding_event_time_windows::make(10s, 5s).value();
  CHECK(assign(a, 3000) == std::vector<time_window>{{0, 10000}, {-5000, 5000}});
  // 5000 is the end of [-5000, 5000): not in it (case 02).
  CHECK(assign(a, 5000) == std::vector<time_window>{{5000, 15000}, {0, 10000}});
  CHECK(assign(a, 4999) == std::vector<time_window>{{0, 10000}, {-5000, 5000}});
  CHECK(assign(a, 12000) == std::vector<time_window>{{10000, 20000}, {5000, 15000}});
}

TEST_CASE("sliding windows of negative timestamps start before the epoch") {
  auto a = sliding_event_time_windows::make(10s, 5s).value();
  CHECK(assign(a, -1) == std::vector<time_window>{{-5000, 5000}, {-10000, 0}});
  CHECK(assign(a, -5000) == std::vector<time_window>{{-5000, 5000}, {-10000, 0}});
  CHECK(assign(a, -5001) == std::vector<time_window>{{-10000, 0}, {-15000, -5000}});
}

TEST_CASE("a slide that does not divide the size gives a varying number of windows") {
  auto a = sliding_event_time_windows::make(10s, 3s).value();
  // Starts 9000, 6000, 3000, 0 hold 9500; -3000 ends at 7000 and does not.
  CHECK(assign(a, 9500) ==
        std::vector<time_window>{{9000, 19000}, {6000, 16000}, {3000, 13000}, {0, 10000}});
  // [-9000, 1000) ends at 1000: only 0, -3000 and -6000 hold it.
  CHECK(assign(a, 1000) ==
        std::vector<time_window>{{0, 10000}, {-3000, 7000}, {-6000, 4000}});
  CHECK(assign(a, 999).size() == 4);
}

TEST_CASE("a slide larger than the size leaves gaps that hold no window") {
  auto a = sliding_event_time_windows::make(2s, 5s).value();
  CHECK(assign(a, 1999) == std::vector<time_window>{{0, 2000}});
  CHECK(assign(a, 2000).empty());
  CHECK(assign(a, 4999).empty());
  CHECK(assign(a, 5000) == std::vector<time_window>{{5000, 7000}});
}

TEST_CASE("a sliding offset shifts every window, and may be negative") {
  auto a = sliding_event_time_windows::make(10s, 5s, 1s).value();
  CHECK(assign(a, 1000) == std::vector<time_window>{{1000, 11000}, {-4000, 6000}});
  CHECK(assign(a, 999) == std::vector<time_window>{{-4000, 6000}, {-9000, 1000}});
  auto n = sliding_event_time_windows::make(10s, 5s, -1s).value();
  CHECK(assign(n, 4000) == std::vector<time_window>{{4000, 14000}, {-1000, 9000}});
  // An offset in [slide, size) aligns as offset % slide.
  auto big = sliding_event_time_windows::make(10s, 5s, 6s).value();
  CHECK(assign(big, 1000) == assign(a, 1000));
}

TEST_CASE("sliding make rejects a bad size, slide or offset") {
  for (auto [size, slide, offset] :
       std::vector<std::tuple<std::chrono::milliseconds, std::chrono::milliseconds,
                              std::chrono::milliseconds>>{
         {0s, 1s, 0s}, {-1s, 1s, 0s}, {10s, 0s, 0s}, {10s, -5s, 0s}, {10s, 5s, 10s},
         {10s, 5s, -10s}}) {
    CAPTURE(size.count());
    CAPTURE(slide.count());
    CAPTURE(offset.count());
    auto a = sliding_event_time_windows::make(size, slide, offset);
    REQUIRE_FALSE(a);
    CHECK(a.error().code == weir::errc::invalid_argument);
  }
  CHECK(sliding_event_time_windows::make(10s, 5s, 9999ms));
  CHECK(sliding_event_time_windows::make(10s, 5s, -9999ms));
  CHECK(sliding_processing_time_windows::make(10s, 0s).error().message
        == "sliding window slide must be positive, got 0ms");
}

// -- processing time ---------------------------------------------------------------

TEST_CASE("processing-time assigners align like event-time ones and say so") {
  auto t = tumbling_processing_time_windows::make(10s, -3s).value();
  CHECK_FALSE(t.is_event_time());
  CHECK(assign(t, 6999) == std::vector<time_window>{{-3000, 7000}});
  CHECK(assign(t, 7000) == std::vector<time_window>{{7000, 17000}});
  CHECK(t.default_trigger()->describe() == "processing_time_trigger");
  auto s = sliding_processing_time_windows::make(10s, 5s).value();
  CHECK_FALSE(s.is_event_time());
  CHECK(assign(s, 5000) == std::vector<time_window>{{5000, 15000}, {0, 10000}});
  CHECK(tumbling_processing_time_windows::make(10s, 10s).error().code
        == weir::errc::invalid_argument);
}

// -- sessions --------------------------------------------------------------------------

TEST_CASE("a session window starts at the record and lasts one gap") {
  auto a = event_time_session_windows::make(5s).value();
  CHECK(assign(a, 0) == std::vector<time_window>{{0, 5000}});
  CHECK(assign(a, -7000) == std::vector<time_window>{{-7000, -2000}});
  CHECK(a.as_merging() == &a);
  CHECK(a.is_event_time());
  CHECK(a.default_trigger()->describe() == "event_time_trigger");
}

TEST_CASE("sessions exactly one gap apart merge, one millisecond more apart do not") {
  auto a = event_time_session_windows::make(5s).value();
  auto groups = merge(a, {{0, 5000}, {5000, 10000}});
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].result == time_window{0, 10000});
  CHECK(groups[0].merged == std::vector<time_window>{{0, 5000}, {5000, 10000}});
  CHECK(merge(a, {{0, 5000}, {5001, 10001}}).empty());
}

TEST_CASE("a window that bridges two sessions merges all three") {
  auto a = event_time_session_windows::make(5s).value();
  auto groups = merge(a, {{10000, 15000}, {0, 5000}, {4000, 10000}, {30000, 35000}});
  REQUIRE(groups.size() == 1);
  CHECK(groups[0].result == time_window{0, 15000});
  CHECK(groups[0].merged.size() == 3);
  CHECK(std::is_sorted(groups[0].merged.begin(), groups[0].merged.end()));
}

TEST_CASE("separate runs of intersecting windows merge into separate groups") {
  auto a = event_time_session_windows::make(5s).value();
  auto groups = merge(a, {{0, 5000}, {3000, 8000}, {20000, 25000}, {24000, 29000}, {50000, 55000}});
  REQUIRE(groups.size() == 2);
  CHECK(groups[0].result == time_window{0, 8000});
  CHECK(groups[1].result == time_window{20000, 29000});
}

TEST_CASE("session make rejects a gap that is not positive") {
  CHECK(event_time_session_windows::make(0s).error().code == weir::errc::invalid_argument);
  CHECK(processing_time_session_windows::make(-1s).error().message
        == "session window gap must be positive, got -1000ms");
  auto p = processing_time_session_windows::make(1s).value();
  CHECK_FALSE(p.is_event_time());
  CHECK(merge(p, {{0, 1000}, {1000, 2000}}).size() == 1);
}

// -- global ----------------------------------------------------------------------------

TEST_CASE("global windows put every timestamp into one window that never fires by default") {
  global_windows a;
  CHECK(assign(a, 0) == std::vector<time_window>{global_window()});
  CHECK(assign(a, weir::min_watermark) == std::vector<time_window>{global_window()});
  CHECK(a.is_global());
  CHECK_FALSE(a.is_event_time());
  CHECK(a.as_merging() == nullptr);
  CHECK(a.default_trigger()->describe() == "never_trigger");
}

TEST_CASE("windows intersect when they overlap or touch, and cover both") {
  CHECK(time_window{0, 5000}.intersects({5000, 6000}));
  CHECK(time_window{5000, 6000}.intersects({0, 5000}));
  CHECK_FALSE(time_window{0, 5000}.intersects({5001, 6000}));
  CHECK(time_window{0, 5000}.cover({7000, 8000}) == time_window{0, 8000});
}

} // TEST_SUITE
