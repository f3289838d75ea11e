// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_state_backend.hpp"

#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <tuple>

using weir::event_time;
using weir::state::key_group_range;
using weir::state::keyed_state_backend;
using weir::test::string_key;

namespace {

const key_group_range all{0, 127};

using fired = std::tuple<event_time, std::string, std::string>;

// Fires due event timers and records (ts, key, namespace) of each.
std::vector<fired> fire(keyed_state_backend& b, event_time wm) {
  std::vector<fired> out;
  b.advance_watermark(wm, [&](event_time ts) {
    out.emplace_back(ts, std::string{b.current_key()}, std::string{b.current_namespace()});
  });
  return out;
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("event timers fire in timestamp order with their key and namespace current") {
  keyed_state_backend b(all, 128);
  auto a = string_key("a"), c = string_key("c");
  b.set_current_key(a);
  b.register_event_time_timer(30);
  b.register_event_time_timer(10);
  b.set_current_namespace("w");
  b.register_event_time_timer(20);
  b.set_current_key(c);
  b.set_current_namespace("");
  b.register_event_time_timer(10);
  b.register_event_time_timer(40);
  CHECK(b.num_event_timers() == 5);
  CHECK(b.next_event_timer() == 10);

  CHECK(fire(b, 9).empty());
  auto out = fire(b, 30);
  const std::vector<fired> want = {{10, a, ""}, {10, c, ""}, {20, a, "w"}, {30, a, ""}};
  CHECK(out == want);
  CHECK(b.current_watermark() == 30);
  CHECK(b.num_event_timers() == 1);
  CHECK(fire(b, 39).empty());
  CHECK(fire(b, weir::max_watermark) == std::vector<fired>{{40, c, ""}});
  CHECK(b.num_event_timers() == 0);
  CHECK_FALSE(b.next_event_timer().has_value());
}

TEST_CASE("a timer registered twice fires once and a deleted timer never fires") {
  keyed_state_backend b(all, 128);
  b.set_current_key(string_key("k"));
  b.register_event_time_timer(5);
  b.register_event_time_timer(5);
  b.register_event_time_timer(6);
  b.delete_event_time_timer(6);
  b.delete_event_time_timer(7); // absent: no effect
  b.set_current_namespace("w");
  b.delete_event_time_timer(5); // other namespace: no effect
  CHECK(b.num_event_timers() == 1);
  auto out = fire(b, 100);
  REQUIRE(out.size() == 1);
  CHECK(std::get<0>(out[0]) == 5);
  CHECK(std::get<2>(out[0]).empty());
}

TEST_CASE("a timer callback may register timers that fire in the same advance") {
  keyed_state_backend b(all, 128);
  b.set_current_key(string_key("k"));
  b.register_event_time_timer(1);
  std::vector<event_time> seen;
  b.advance_watermark(10, [&](event_time ts) {
    seen.push_back(ts);
    if (ts < 20)
      b.register_event_time_timer(ts * 3); // 3, 9 fire now; 27 waits
    b.register_event_time_timer(ts);       // re-registering the firing timer re-arms it...
    b.delete_event_time_timer(ts);         // ...and deleting it again disarms it
  });
  CHECK(seen == std::vector<event_time>{1, 3, 9});
  CHECK(b.next_event_timer() == 27);
}

TEST_CASE("processing-time timers fire on advance_processing_time and report the next one") {
  keyed_state_backend b(all, 128);
  b.set_current_key(string_key("k"));
  b.register_processing_time_timer(1000);
  b.register_processing_time_timer(500);
  b.register_event_time_timer(1); // another domain
  CHECK(b.next_processing_timer() == 500);
  std::vector<event_time> seen;
  CHECK(b.advance_processing_time(999, [&](event_time ts) { seen.push_back(ts); }) == 1);
  CHECK(seen == std::vector<event_time>{500});
  CHECK(b.current_processing_time() == 999);
  CHECK(b.next_processing_timer() == 1000);
  b.delete_processing_time_timer(1000);
  CHECK_FALSE(b.next_processing_timer().has_value());
  CHECK(b.num_event_timers() == 1);
}

TEST_CASE("the watermark never goes backwards") {
  keyed_state_backend b(all, 128);
  CHECK(b.current_watermark() == weir::min_watermark);
  b.advance_watermark(50, {});
  b.advance_watermark(20, {});
  CHECK(b.current_watermark() == 50);
}

TEST_CASE("timers survive a snapshot and restore into a fresh backend") {
  keyed_state_backend b(all, 128);
  for (std::size_t i = 0; i < 40; ++i) {
    b.set_current_key(weir::test::user_key(i));
    b.set_current_namespace(i % 2 ? "w" : "");
    b.register_event_time_timer(static_cast<event_time>(100 - i));
    b.register_processing_time_timer(static_cast<event_time>(1000 + i));
  }
  auto snap = b.snapshot();
  // Changes after the snapshot are not in it.
  b.set_current_key(weir::test::user_key(0));
  b.set_current_namespace("");
  b.delete_event_time_timer(100);
  b.register_event_time_timer(1);

  keyed_state_backend r(all, 128);
  for (std::uint16_t g = 0; g < 128; ++g) {
    std::string bytes;
    snap->serialize_key_group(g, bytes);
    REQUIRE(r.restore_key_group(g, bytes).has_value());
  }
  CHECK(r.num_event_timers() == 40);
  CHECK(r.num_processing_timers() == 40);
  CHECK(r.next_processing_timer() == 1000);
  auto out = fire(r, weir::max_watermark);
  REQUIRE(out.size() == 40);
  for (std::size_t i = 0; i < 40; ++i) {
    // Ascending timestamps: 61 (user-39) ... 100 (user-0).
    auto j = 39 - i;
    CHECK(std::get<0>(out[i]) == static_cast<event_time>(100 - j));
    CHECK(std::get<1>(out[i]) == weir::test::user_key(j));
    CHECK(std::get<2>(out[i]) == (j % 2 ? "w" : ""));
  }
}
}
