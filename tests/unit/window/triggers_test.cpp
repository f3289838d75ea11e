// SPDX-License-Identifier: Apache-2.0
#include "weir/window/evictor.hpp"
#include "weir/window/triggers.hpp"

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

using weir::event_time;
using weir::window::count_evictor;
using weir::window::count_trigger;
using weir::window::event_time_trigger;
using weir::window::never_trigger;
using weir::window::on_merge_context;
using weir::window::processing_time_trigger;
using weir::window::purging_trigger;
using weir::window::time_window;
using weir::window::trigger_result;

namespace {

/// A trigger context over plain containers: timers and one state per window.
class fake_context final : public on_merge_context {
public:
  event_time watermark = weir::min_watermark;
  event_time now = 0;
  time_window window;
  std::vector<time_window> merged;
  std::set<std::pair<time_window, event_time>> event_timers;
  std::set<std::pair<time_window, event_time>> processing_timers;
  std::map<time_window, std::int64_t> states;

  event_time current_watermark() const override { return watermark; }
  event_time current_processing_time() const override { return now; }
  void register_event_time_timer(event_time t) override { event_timers.insert({window, t}); }
  void delete_event_time_timer(event_time t) override { event_timers.erase({window, t}); }
  void register_processing_time_timer(event_time t) override {
    processing_timers.insert({window, t});
  }
  void delete_processing_time_timer(event_time t) override {
    processing_timers.erase({window, t});
  }
  std::optional<std::int64_t> state() const override {
    auto it = states.find(window);
    return it == states.end() ? std::nullopt : std::optional{it->second};
  }
  void set_state(std::int64_t v) override { states[window] = v; }
  void clear_state() override { states.erase(window); }
  void merge_state(std::int64_t (*combine)(std::int64_t, std::int64_t)) override {
    std::optional<std::int64_t> acc;
    for (const auto& m : merged) {
      if (auto it = states.find(m); it != states.end()) {
        acc = acc ? combine(*acc, it->second) : it->second;
        states.erase(it);
      }
    }
    if (acc)
      states[window] = *acc;
  }
};

const time_window w{0, 10000};

} // namespace

TEST_SUITE("window") {

// -- event time --------------------------------------------------------------------

TEST_CASE("the event-time trigger registers a timer at end - 1 and fires on exactly it") {
  event_time_trigger t;
  fake_context ctx;
  ctx.window = w;
  CHECK(t.on_element(500, w, ctx) == trigger_result::continue_);
  CHECK(ctx.event_timers.count({w, 9999}) == 1);
  CHECK(t.on_event_time(9999, w, ctx) == trigger_result::fire);
  CHECK(t.on_event_time(9998, w, ctx) == trigger_result::continue_);
  CHECK(t.on_event_time(10000, w, ctx) == trigger_result::continue_); // a cleanup timer
  CHECK(t.on_processing_time(9999, w, ctx) == trigger_result::continue_);
  t.clear(w, ctx);
  CHECK(ctx.event_timers.empty());
}

TEST_CASE("the event-time trigger fires at once for a record after the watermark passed end - 1") {
  event_time_trigger t;
  fake_context ctx;
  ctx.window = w;
  ctx.watermark = 9998;
  CHECK(t.on_element(1, w, ctx) == trigger_result::continue_);
  ctx.watermark = 9999;
  ctx.event_timers.clear();
  CHECK(t.on_element(1, w, ctx) == trigger_result::fire);
  CHECK(ctx.event_timers.empty()); // no second firing from a timer
}

TEST_CASE("the event-time trigger registers a merged window's timer only while it is ahead") {
  event_time_trigger t;
  fake_context ctx;
  ctx.window = w;
  ctx.watermark = 9998;
  t.on_merge(w, ctx);
  CHECK(ctx.event_timers.count({w, 9999}) == 1);
  ctx.event_timers.clear();
  ctx.watermark = 9999;
  t.on_merge(w, ctx);
  CHECK(ctx.event_timers.empty());
  CHECK(t.can_merge());
}

// -- processing time ---------------------------------------------------------------

TEST_CASE("the processing-time trigger fires on its processing-time timer at end - 1") {
  processing_time_trigger t;
  fake_context ctx;
  ctx.window = w;
  CHECK(t.on_element(123, w, ctx) == trigger_result::continue_);
  CHECK(ctx.processing_timers.count({w, 9999}) == 1);
  CHECK(ctx.event_timers.empty());
  CHECK(t.on_processing_time(9999, w, ctx) == trigger_result::fire);
  CHECK(t.on_event_time(9999, w, ctx) == trigger_result::continue_);
  ctx.now = 9999;
  ctx.processing_timers.clear();
  t.on_merge(w, ctx);
  CHECK(ctx.processing_timers.empty());
  ctx.now = 9998;
  t.on_merge(w, ctx);
  CHECK(ctx.processing_timers.size() == 1);
  t.clear(w, ctx);
  CHECK(ctx.processing_timers.empty());
}

// -- count ----------------------------------------------------------------------------

TEST_CASE("the count trigger fires every n-th record and resets its count") {
  auto t = count_trigger::make(3).value();
  fake_context ctx;
  ctx.window = w;
  std::vector<trigger_result> got;
  for (int i = 0; i < 7; ++i)
    got.push_back(t.on_element(i, w, ctx));
  using r = trigger_result;
  CHECK(got == std::vector<r>{r::continue_, r::continue_, r::fire, r::continue_,
                              r::continue_, r::fire, r::continue_});
  CHECK(ctx.state() == 1); // the leftover record
  CHECK(t.on_event_time(9999, w, ctx) == r::continue_);
  CHECK(t.on_processing_time(9999, w, ctx) == r::continue_);
  t.clear(w, ctx);
  CHECK(ctx.state() == std::nullopt);
}

TEST_CASE("a count trigger of one fires on every record") {
  auto t = count_trigger::make(1).value();
  fake_context ctx;
  ctx.window = w;
  CHECK(t.on_element(0, w, ctx) == trigger_result::fire);
  CHECK(t.on_element(0, w, ctx) == trigger_result::fire);
  CHECK(ctx.states.empty());
}

TEST_CASE("merging count triggers adds their counts") {
  auto t = count_trigger::make(5).value();
  fake_context ctx;
  ctx.states[{0, 5000}] = 2;
  ctx.states[{5000, 10000}] = 2;
  ctx.window = {0, 10000};
  ctx.merged = {{0, 5000}, {5000, 10000}};
  t.on_merge(ctx.window, ctx);
  CHECK(ctx.state() == 4);
  CHECK(ctx.states.size() == 1);
  CHECK(t.on_element(0, ctx.window, ctx) == trigger_result::fire);
}

TEST_CASE("count_trigger::make rejects a count below one") {
  auto t = count_trigger::make(0);
  REQUIRE_FALSE(t);
  CHECK(t.error().code == weir::errc::invalid_argument);
  CHECK(t.error().message == "count trigger needs a count of at least 1, got 0");
}

// -- purging and never -----------------------------------------------------------------

TEST_CASE("purging turns fire into fire_and_purge and leaves continue alone") {
  auto nested = std::make_shared<const count_trigger>(count_trigger::make(2).value());
  purging_trigger t{nested};
  fake_context ctx;
  ctx.window = w;
  CHECK(t.on_element(0, w, ctx) == trigger_result::continue_);
  CHECK(t.on_element(0, w, ctx) == trigger_result::fire_and_purge);
  CHECK(t.describe() == "purging_trigger(count_trigger(2))");
  purging_trigger et{std::make_shared<const event_time_trigger>()};
  CHECK(et.on_event_time(9999, w, ctx) == trigger_result::fire_and_purge);
  CHECK(et.on_event_time(1, w, ctx) == trigger_result::continue_);
  CHECK(et.can_merge());
}

TEST_CASE("the never trigger never fires") {
  never_trigger t;
  fake_context ctx;
  ctx.window = w;
  CHECK(t.on_element(0, w, ctx) == trigger_result::continue_);
  CHECK(t.on_event_time(weir::max_watermark, w, ctx) == trigger_result::continue_);
  CHECK(t.on_processing_time(weir::max_watermark, w, ctx) == trigger_result::continue_);
  CHECK(ctx.event_timers.empty());
}

// -- count evictor ----------------------------------------------------------------------

TEST_CASE("the count evictor drops the oldest records beyond its count, before by default") {
  auto e = count_evictor::make(3).value();
  std::vector<event_time> ts{5, 1, 9, 2, 7};
  std::vector<bool> drop(ts.size(), false);
  e.evict_before(ts, w, drop);
  CHECK(drop == std::vector<bool>{true, true, false, false, false});
  std::vector<bool> after(ts.size(), false);
  e.evict_after(ts, w, after);
  CHECK(after == std::vector<bool>(ts.size(), false));

  auto late = count_evictor::make(3, true).value();
  std::vector<bool> before2(ts.size(), false);
  late.evict_before(ts, w, before2);
  CHECK(before2 == std::vector<bool>(ts.size(), false));
  std::vector<bool> after2(ts.size(), false);
  late.evict_after(ts, w, after2);
  CHECK(after2 == std::vector<bool>{true, true, false, false, false});
}

TEST_CASE("the count evictor keeps everything up to its count and rejects a count below one") {
  auto e = count_evictor::make(3).value();
  std::vector<event_time> ts{1, 2};
  std::vector<bool> drop(ts.size(), false);
  e.evict_before(ts, w, drop);
  CHECK(drop == std::vector<bool>{false, false});
  CHECK(count_evictor::make(0).error().code == weir::errc::invalid_argument);
  CHECK(e.describe() == "count_evictor(3)");
}

} // TEST_SUITE
