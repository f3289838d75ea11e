// SPDX-License-Identifier: Apache-2.0
// The window operator with every assigner, trigger and evictor kind, the
// aggregates beyond the spine, and snapshot/restore through keyed state.
#include "weir/state/keyed_state_backend.hpp"
#include "weir/window/window_operator.hpp"

#include "window_test_support.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace std::chrono_literals;
using weir::event_time;
using weir::max_watermark;
using weir::schema_ptr;
using weir::type_id;
using weir::value;
using weir::test::make_batch;
using weir::test::recording_collector;
using weir::test::row_map;
using namespace weir::window;

namespace {

template <class T>
std::shared_ptr<const T> shared(weir::expected<T> x) {
  REQUIRE_MESSAGE(x, (x ? "" : x.error().message));
  return std::make_shared<const T>(std::move(*x));
}

const std::vector<aggregate_spec> count_sum = {{"count", "count(*)"}, {"sum", "sum(value)"}};

window_plan make_plan(std::shared_ptr<const window_assigner> a,
                      std::vector<aggregate_spec> aggs = count_sum,
                      std::shared_ptr<const trigger> t = nullptr,
                      std::shared_ptr<const evictor> e = nullptr,
                      std::chrono::milliseconds lateness = 0ms,
                      schema_ptr s = weir::test::case_schema()) {
  window_operator_spec spec;
  spec.key_by = {"key"};
  spec.assigner = std::move(a);
  spec.aggregates = std::move(aggs);
  spec.trigger = std::move(t);
  spec.evictor = std::move(e);
  spec.allowed_lateness = lateness;
  auto p = window_plan::make(s, std::move(spec));
  REQUIRE_MESSAGE(p, (p ? "" : p.error().message));
  return *p;
}

std::vector<row_map> input_of(const std::string& c) {
  return weir::test::read_jsonl(weir::test::case_dir(c) + "/input.jsonl");
}

std::vector<row_map> expected_of(const std::string& c, const std::string& file) {
  return weir::test::read_jsonl(weir::test::case_dir(c) + "/" + file);
}

// Replays `input` (case field layout) one record per batch, bound `bound_ms`.
recording_collector run(const window_plan& plan, const std::vector<row_map>& input,
                        std::int64_t bound_ms = 0) {
  auto op = plan.make_operator();
  recording_collector out;
  weir::test::replay(*op, input, bound_ms, out);
  return out;
}

// Sorts rows as the cases README says: by window_end (or key), then key (or
// fire); stable, so repeated firings keep emission order.
std::vector<row_map> canonical(std::vector<row_map> rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const row_map& a, const row_map& b) {
    if (a.count("window_end"))
      return std::tie(a.at("window_end"), a.at("key")) < std::tie(b.at("window_end"), b.at("key"));
    return std::tie(a.at("key"), a.at("fire")) < std::tie(b.at("key"), b.at("fire"));
  });
  return rows;
}

#define CHECK_ROWS(actual, expected)                                                    \
  do {                                                                                  \
    const auto diff_ = weir::test::diff_rows(canonical(actual), canonical(expected));   \
    CHECK_MESSAGE(diff_ == "", diff_);                                                  \
  } while (false)

row_map row(std::initializer_list<std::pair<const std::string, value>> xs) {
  return row_map{xs};
}

std::vector<row_map> records(const std::vector<std::tuple<std::string, event_time, std::int64_t>>& xs) {
  std::vector<row_map> out;
  int i = 0;
  for (const auto& [k, ts, v] : xs)
    out.push_back(row({{"id", "e" + std::to_string(++i)}, {"key", k}, {"ts", ts}, {"value", v}}));
  return out;
}

/// A processing-time clock a test sets by hand.
class manual_clock final : public weir::processing_clock {
public:
  event_time t = 0;
  event_time now() const override { return t; }
};

} // namespace

TEST_SUITE("window") {

// -- the golden cases, operator level ------------------------------------------------

TEST_CASE("case 02: a sliding window reduce sees each record in size/slide windows") {
  const std::string c = "02-sliding-reduce-multi-assign";
  auto plan = make_plan(shared(sliding_event_time_windows::make(10s, 5s)),
                        {{"count", "count(*)"}, {"sum", "reduce(acc + value, 0)"}});
  CHECK_ROWS(run(plan, input_of(c)).rows(), expected_of(c, "expected.jsonl"));
}

TEST_CASE("case 04: daily windows with a -8h offset start at 16:00 UTC") {
  const std::string c = "04-tumbling-daily-offset-timezone";
  auto local = make_plan(shared(tumbling_event_time_windows::make(24h, -8h)));
  CHECK_ROWS(run(local, input_of(c)).rows(), expected_of(c, "expected.jsonl"));
  auto utc = make_plan(shared(tumbling_event_time_windows::make(24h)));
  CHECK_ROWS(run(utc, input_of(c)).rows(), expected_of(c, "expected_no_offset.jsonl"));
}

TEST_CASE("case 09: session windows exactly one gap apart merge") {
  const std::string c = "09-session-gap-boundary";
  auto plan = make_plan(shared(event_time_session_windows::make(5s)));
  CHECK_ROWS(run(plan, input_of(c)).rows(), expected_of(c, "expected.jsonl"));
}

TEST_CASE("case 12: a keyed count window fires per key and never emits the leftovers") {
  const std::string c = "12-count-window-keyed-leftover";
  auto count = shared(count_trigger::make(3));
  auto plan = make_plan(std::make_shared<const global_windows>(), count_sum,
                        std::make_shared<const purging_trigger>(count));
  auto out = run(plan, input_of(c));
  CHECK_ROWS(out.rows(), expected_of(c, "expected.jsonl"));
  // Results carry the global window's event time.
  CHECK(out.timestamps() == std::vector<event_time>(3, max_watermark));
}

TEST_CASE("case 13: a count trigger without purge re-emits the growing window") {
  const std::string c = "13-global-window-count-trigger-no-purge";
  auto count = shared(count_trigger::make(2));
  auto running = make_plan(std::make_shared<const global_windows>(), count_sum, count);
  CHECK_ROWS(run(running, input_of(c)).rows(), expected_of(c, "expected.jsonl"));
  auto purging = make_plan(std::make_shared<const global_windows>(), count_sum,
                           std::make_shared<const purging_trigger>(count));
  CHECK_ROWS(run(purging, input_of(c)).rows(), expected_of(c, "expected_purging.jsonl"));
}

// -- global and count windows ---------------------------------------------------------

TEST_CASE("a global window without a trigger never fires, not even at the end of input") {
  auto plan = make_plan(std::make_shared<const global_windows>());
  auto out = run(plan, records({{"a", 1, 1}, {"a", 2, 2}}));
  CHECK(out.rows().empty());
  CHECK(plan.output_schema()->to_string() == "key:string, fire:int64, count:int64, sum:int64");
}

TEST_CASE("a sliding count window keeps the last size records and fires every slide") {
  auto input = records({{"a", 1, 1}, {"a", 2, 2}, {"b", 3, 100}, {"a", 4, 3},
                        {"a", 5, 4}, {"a", 6, 5}});
  SUBCASE("countWindow(3, 1) fires on every record, partial windows first") {
    auto plan = make_plan(std::make_shared<const global_windows>(), count_sum,
                          shared(count_trigger::make(1)), shared(count_evictor::make(3)));
    CHECK_ROWS(run(plan, input).rows(),
               (std::vector<row_map>{
                 row({{"key", "a"}, {"fire", 1}, {"count", 1}, {"sum", 1}}),
                 row({{"key", "a"}, {"fire", 2}, {"count", 2}, {"sum", 3}}),
                 row({{"key", "a"}, {"fire", 3}, {"count", 3}, {"sum", 6}}),
                 row({{"key", "a"}, {"fire", 4}, {"count", 3}, {"sum", 9}}),
                 row({{"key", "a"}, {"fire", 5}, {"count", 3}, {"sum", 12}}),
                 row({{"key", "b"}, {"fire", 1}, {"count", 1}, {"sum", 100}})}));
  }
  SUBCASE("countWindow(3, 2) fires every second record of a key over the last three") {
    auto plan = make_plan(std::make_shared<const global_windows>(), count_sum,
                          shared(count_trigger::make(2)), shared(count_evictor::make(3)));
    CHECK_ROWS(run(plan, input).rows(),
               (std::vector<row_map>{
                 row({{"key", "a"}, {"fire", 1}, {"count", 2}, {"sum", 3}}),
                 row({{"key", "a"}, {"fire", 2}, {"count", 3}, {"sum", 9}})}));
  }
}

TEST_CASE("count windows buffer records in keyed state and drop evicted ones for good") {
  auto plan = make_plan(std::make_shared<const global_windows>(), count_sum,
                        shared(count_trigger::make(1)), shared(count_evictor::make(2)));
  auto op = plan.make_operator();
  recording_collector out;
  const auto s = weir::test::case_schema();
  for (std::int64_t v = 1; v <= 5; ++v)
    op->process_batch(make_batch(s, {{"e", "a", v, v}}, {v}), out);
  CHECK(dynamic_cast<window_operator&>(*op).active_states() == 1);
  auto rows = out.rows();
  REQUIRE(rows.size() == 5);
  CHECK(rows.back().at("sum") == value{std::int64_t{9}}); // 4 + 5
}

TEST_CASE("a count trigger on time windows fires early and the window is still cleaned up") {
  auto plan = make_plan(shared(tumbling_event_time_windows::make(10s)), count_sum,
                        shared(count_trigger::make(2)));
  auto op = plan.make_operator();
  recording_collector out;
  weir::test::replay(*op, records({{"a", 1, 1}, {"a", 2, 2}, {"a", 3, 4}, {"a", 20000, 8}}), 0,
                     out);
  CHECK_ROWS(out.rows(), (std::vector<row_map>{
                           row({{"key", "a"}, {"window_start", 0}, {"window_end", 10000},
                                {"count", 2}, {"sum", 3}})}));
  CHECK(dynamic_cast<window_operator&>(*op).active_states() == 0);
}

// -- sessions -------------------------------------------------------------------------

TEST_CASE("a late record within lateness that bridges two fired sessions merges them and re-fires") {
  auto plan = make_plan(shared(event_time_session_windows::make(5s)), count_sum, nullptr,
                        nullptr, 30s);
  auto out = run(plan, records({{"a", 0, 1}, {"a", 9000, 2}, {"a", 30000, 4}, {"a", 4500, 8}}));
  CHECK(out.rows() == std::vector<row_map>{
                        row({{"key", "a"}, {"window_start", 0}, {"window_end", 5000},
                             {"count", 1}, {"sum", 1}}),
                        row({{"key", "a"}, {"window_start", 9000}, {"window_end", 14000},
                             {"count", 1}, {"sum", 2}}),
                        row({{"key", "a"}, {"window_start", 0}, {"window_end", 14000},
                             {"count", 3}, {"sum", 11}}),
                        row({{"key", "a"}, {"window_start", 30000}, {"window_end", 35000},
                             {"count", 1}, {"sum", 4}})});
  CHECK(out.rows(1).empty());
}

TEST_CASE("a record late on its own joins a live session it touches") {
  auto plan = make_plan(shared(event_time_session_windows::make(5s)));
  // After a@8000 the watermark is 7999; a@1000's own window [1000, 6000) is
  // past it, but it touches the live session [3000, 13000).
  auto out = run(plan, records({{"a", 3000, 1}, {"a", 8000, 2}, {"a", 1000, 4}}));
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 1000},
                                                {"window_end", 13000}, {"count", 3},
                                                {"sum", 7}})});
  CHECK(out.rows(1).empty());
}

TEST_CASE("a record too late for any session goes to the late output") {
  auto plan = make_plan(shared(event_time_session_windows::make(5s)));
  auto op = plan.make_operator();
  recording_collector out;
  weir::test::replay(*op, records({{"a", 0, 1}, {"a", 20000, 2}, {"a", 9000, 4}}), 0, out);
  CHECK(out.rows(1).size() == 1);
  CHECK(dynamic_cast<window_operator&>(*op).late_records() == 1);
  CHECK(out.rows().size() == 2);
}

TEST_CASE("a merging assigner rejects a trigger that cannot merge") {
  class no_merge final : public trigger {
  public:
    trigger_result on_element(event_time, const time_window&, trigger_context&) const override {
      return trigger_result::continue_;
    }
    trigger_result on_event_time(event_time, const time_window&, trigger_context&) const override {
      return trigger_result::continue_;
    }
    trigger_result on_processing_time(event_time, const time_window&,
                                      trigger_context&) const override {
      return trigger_result::continue_;
    }
    void clear(const time_window&, trigger_context&) const override {}
    std::string describe() const override { return "no_merge"; }
  };
  window_operator_spec spec;
  spec.assigner = shared(event_time_session_windows::make(1s));
  spec.trigger = std::make_shared<const no_merge>();
  spec.aggregates = count_sum;
  auto p = window_plan::make(weir::test::case_schema(), spec);
  REQUIRE_FALSE(p);
  CHECK(p.error().code == weir::errc::invalid_argument);
  CHECK(p.error().message
        == "window: no_merge cannot be used with event_time_session_windows(gap 1000ms), "
           "whose windows merge");
}

TEST_CASE("merged sessions combine count, sum, min, max and avg as one window would") {
  auto plan = make_plan(shared(event_time_session_windows::make(5s)),
                        {{"n", "count(*)"}, {"sum", "sum(value)"}, {"low", "min(value)"},
                         {"high", "max(value)"}, {"mean", "avg(value)"},
                         {"kinds", "count_distinct(value)"}});
  // [0, 5000) and [7000, 17000) (two touching records), then 3000 bridges them.
  auto out = run(plan, records({{"a", 0, 5}, {"a", 12000, -3}, {"a", 7000, 9}, {"a", 3000, 5}}),
                 20000);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 0},
                                                {"window_end", 17000}, {"n", 4}, {"sum", 16},
                                                {"low", -3}, {"high", 9}, {"mean", 4.0},
                                                {"kinds", 3}})});
}

TEST_CASE("a sliding window fires when the watermark reaches end - 1, not before") {
  auto plan = make_plan(shared(sliding_event_time_windows::make(10s, 5s)));
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(weir::test::case_schema(), {{"e1", "a", 7000, 1}}, {7000}), out);
  op->process_watermark(9998, out);
  CHECK(out.rows().empty());
  op->process_watermark(9999, out);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 0},
                                                {"window_end", 10000}, {"count", 1},
                                                {"sum", 1}})});
  op->process_watermark(14998, out);
  CHECK(out.rows().size() == 1);
  op->process_watermark(14999, out);
  CHECK(out.rows().size() == 2);
  CHECK(dynamic_cast<window_operator&>(*op).active_states() == 0);
}

TEST_CASE("keys a slice gains after one of its windows fired come out in byte order") {
  // Slices of 5 s; the slice [5000, 10000) is read (and its keys sorted) by
  // the window ending at 10000, then gains keys before the window ending at
  // 15000, which also merges in the slice [10000, 15000).
  auto plan = make_plan(shared(sliding_event_time_windows::make(10s, 5s)));
  auto op = plan.make_operator();
  recording_collector out;
  const auto s = weir::test::case_schema();
  op->process_batch(make_batch(s, {{"e1", "m", 7000, 1}, {"e2", "c", 7000, 1},
                                   {"e3", "k", 2000, 1}}, {7000, 7000, 2000}), out);
  op->process_watermark(9999, out);
  // [-5000, 5000) holds k alone; [0, 10000) holds all three.
  std::vector<std::string> keys;
  for (const auto& r : out.rows())
    keys.push_back(std::get<std::string>(r.at("key")));
  CHECK(keys == std::vector<std::string>{"k", "c", "k", "m"});
  op->process_batch(make_batch(s, {{"e4", "z", 8000, 1}, {"e5", "a", 8000, 1},
                                   {"e6", "c", 8000, 1}, {"e7", "m", 12000, 1},
                                   {"e8", "d", 12000, 1}, {"e9", "b", 9000, 1}},
                               {8000, 8000, 8000, 12000, 12000, 9000}), out);
  op->process_watermark(14999, out);
  const auto rows = out.rows();
  REQUIRE(rows.size() == 10);
  std::vector<std::pair<std::string, std::int64_t>> second;
  for (std::size_t i = 4; i < rows.size(); ++i) {
    CHECK(std::get<std::int64_t>(rows[i].at("window_end")) == 15000);
    second.emplace_back(std::get<std::string>(rows[i].at("key")),
                        std::get<std::int64_t>(rows[i].at("count")));
  }
  CHECK(second == std::vector<std::pair<std::string, std::int64_t>>{
                      {"a", 1}, {"b", 1}, {"c", 2}, {"d", 1}, {"m", 2}, {"z", 1}});
}

// -- processing time ----------------------------------------------------------------

TEST_CASE("a processing-time tumbling window fires when the clock reaches end - 1") {
  auto plan = make_plan(shared(tumbling_processing_time_windows::make(10s)));
  auto op = plan.make_operator();
  recording_collector out;
  const auto s = weir::test::case_schema();
  op->on_processing_time(1000, out);
  // Event times are irrelevant; the record goes to [0, 10000) by the clock.
  op->process_batch(make_batch(s, {{"e1", "a", 99999, 1}, {"e2", "a", -5, 2}}, {99999, -5}), out);
  CHECK(op->next_processing_timer() == 9999);
  op->process_watermark(max_watermark, out); // event time does not fire it
  op->on_processing_time(9998, out);
  CHECK(out.rows().empty());
  op->on_processing_time(9999, out);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 0},
                                                {"window_end", 10000}, {"count", 2},
                                                {"sum", 3}})});
  CHECK(op->next_processing_timer() == std::nullopt);
  CHECK(dynamic_cast<window_operator&>(*op).active_states() == 0);
}

TEST_CASE("processing-time windows are not flushed at the end of input") {
  auto plan = make_plan(shared(tumbling_processing_time_windows::make(10s)));
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(weir::test::case_schema(), {{"e1", "a", 1, 1}}, {}), out);
  op->process_watermark(max_watermark, out);
  op->finish(out);
  CHECK(out.rows().empty());
  CHECK(op->next_processing_timer() == 9999);
}

TEST_CASE("processing-time sliding windows read the clock of the operator context") {
  auto plan = make_plan(shared(sliding_processing_time_windows::make(10s, 5s)));
  auto op = plan.make_operator();
  manual_clock clock;
  weir::operator_context ctx;
  ctx.clock = &clock;
  op->open(ctx);
  recording_collector out;
  const auto s = weir::test::case_schema();
  clock.t = 6000;
  op->process_batch(make_batch(s, {{"e1", "a", 0, 1}}, {0}), out);
  clock.t = 11000;
  op->process_batch(make_batch(s, {{"e2", "a", 0, 2}}, {0}), out);
  CHECK(op->next_processing_timer() == 9999);
  op->on_processing_time(20000, out);
  CHECK(out.rows() == std::vector<row_map>{
                        row({{"key", "a"}, {"window_start", 0}, {"window_end", 10000},
                             {"count", 1}, {"sum", 1}}),
                        row({{"key", "a"}, {"window_start", 5000}, {"window_end", 15000},
                             {"count", 2}, {"sum", 3}}),
                        row({{"key", "a"}, {"window_start", 10000}, {"window_end", 20000},
                             {"count", 1}, {"sum", 2}})});
}

TEST_CASE("processing-time sessions merge by arrival time and fire on the clock") {
  auto plan = make_plan(shared(processing_time_session_windows::make(5s)));
  auto op = plan.make_operator();
  recording_collector out;
  const auto s = weir::test::case_schema();
  op->on_processing_time(1000, out);
  op->process_batch(make_batch(s, {{"e1", "a", 0, 1}}, {0}), out);
  op->on_processing_time(5998, out); // [5998, 10998) touches [1000, 6000): merged
  op->process_batch(make_batch(s, {{"e2", "a", 0, 2}}, {0}), out);
  CHECK(out.rows().empty());
  CHECK(op->next_processing_timer() == 10997);
  op->on_processing_time(10997, out);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 1000},
                                                {"window_end", 10998}, {"count", 2},
                                                {"sum", 3}})});
  // A session the clock has passed fires alone: [20000, 25000) at 24999.
  op->on_processing_time(20000, out);
  op->process_batch(make_batch(s, {{"e3", "a", 0, 4}}, {0}), out);
  op->on_processing_time(30000, out);
  CHECK(out.rows().size() == 2);
}

// -- aggregates ------------------------------------------------------------------------

TEST_CASE("first, last and count_distinct follow arrival order and ignore nulls") {
  auto s = weir::make_schema({{"key", type_id::string}, {"value", type_id::int64},
                              {"tag", type_id::string}});
  window_operator_spec spec;
  spec.key_by = {"key"};
  spec.assigner = shared(tumbling_event_time_windows::make(10s));
  spec.aggregates = {{"first", "first(tag)"}, {"last", "last(tag)"},
                     {"distinct", "count_distinct(tag)"}, {"first_v", "FIRST( value )"}};
  auto plan = window_plan::make(s, spec).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(s,
                               {{"a", std::monostate{}, "x"},
                                {"a", 2, std::monostate{}},
                                {"a", 3, "y"},
                                {"a", 4, "x"},
                                {"a", 5, std::monostate{}}},
                               {5000, 1000, 9000, 2000, 3000}),
                    out);
  op->process_watermark(max_watermark, out);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 0},
                                                {"window_end", 10000}, {"first", "x"},
                                                {"last", "x"}, {"distinct", 2},
                                                {"first_v", 2}})});
  CHECK(plan.output_schema()->to_string()
        == "key:string, window_start:timestamp, window_end:timestamp, first:string, "
           "last:string, distinct:int64, first_v:int64");
}

TEST_CASE("first and last of merged sessions follow arrival order, not event time") {
  auto plan = make_plan(shared(event_time_session_windows::make(10s)),
                        {{"first", "first(value)"}, {"last", "last(value)"}});
  // Arrival: 10 @0, 20 @20000, 30 @10000 (bridges both into one session).
  auto out = run(plan, records({{"a", 0, 10}, {"a", 20000, 20}, {"a", 10000, 30}}), 60000);
  CHECK(out.rows() == std::vector<row_map>{row({{"key", "a"}, {"window_start", 0},
                                                {"window_end", 30000}, {"first", 10},
                                                {"last", 30}})});
}

TEST_CASE("a reduce folds in arrival order, also across merged sessions") {
  const std::vector<aggregate_spec> aggs = {{"digits", "reduce(acc * 10 + value, 0)"},
                                            {"count", "count(*)"}};
  auto input = records({{"a", 0, 1}, {"a", 20000, 2}, {"a", 10000, 3}});
  SUBCASE("tumbling") {
    auto plan = make_plan(shared(tumbling_event_time_windows::make(1h)), aggs);
    auto rows = run(plan, input, 60000).rows();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("digits") == value{std::int64_t{123}});
  }
  SUBCASE("sessions keep the records and fold when firing") {
    auto plan = make_plan(shared(event_time_session_windows::make(10s)), aggs);
    auto rows = run(plan, input, 60000).rows();
    REQUIRE(rows.size() == 1);
    CHECK(rows[0].at("digits") == value{std::int64_t{123}});
    CHECK(rows[0].at("window_end") == value{std::int64_t{30000}});
  }
}

TEST_CASE("a reduce over floats, strings and with a null start") {
  auto s = weir::make_schema({{"key", type_id::string}, {"value", type_id::int64},
                              {"tag", type_id::string}});
  window_operator_spec spec;
  spec.key_by = {"key"};
  spec.assigner = shared(tumbling_event_time_windows::make(10s));
  spec.aggregates = {{"half", "reduce(acc + value / 2.0, 0.0)"},
                     {"tags", "reduce(concat(acc, tag), '')"},
                     {"widened", "reduce(acc + value, 0.0)"},
                     {"nulls", "reduce(acc + value, 1 / 0)"}};
  auto plan = window_plan::make(s, spec).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(s, {{"a", 1, "x"}, {"a", 2, "y"}}, {1, 2}), out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("half") == value{1.5});
  CHECK(rows[0].at("tags") == value{std::string{"xy"}});
  CHECK(rows[0].at("widened") == value{3.0});
  CHECK(rows[0].at("nulls") == value{std::monostate{}});
}

TEST_CASE("reduce errors point into the call") {
  const auto s = weir::test::case_schema();
  struct bad {
    std::string call;
    weir::errc code;
    std::size_t offset;
    std::string message;
  };
  const std::vector<bad> cases = {
    {"reduce(acc + value)", weir::errc::parse_error, 18,
     "reduce takes two arguments, an expression over 'acc' and the record and the start "
     "value: reduce(acc + value, 0)"},
    {"reduce(acc, 0, 1)", weir::errc::parse_error, 13, "reduce takes two arguments"},
    {"reduce( , 0)", weir::errc::parse_error, 8, "reduce needs an expression before the ','"},
    {"reduce(acc + value, )", weir::errc::parse_error, 20, "reduce needs a start value"},
    {"reduce(acc + value, value)", weir::errc::type_error, 20,
     "reduce: the start value must be a constant, got unknown field 'value'"},
    {"reduce(acc + value, null)", weir::errc::parse_error, 20, "needs a type"},
    {"reduce(acc + value / 2.0, 0)", weir::errc::type_error, 7,
     "reduce: the expression has type float64 but the start value has type int64 (write "
     "the start value as 0.0)"},
    {"reduce(acc + valu, 0)", weir::errc::type_error, 13, "unknown field 'valu'"},
    {"reduce()", weir::errc::parse_error, 7, "reduce needs two arguments"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.call);
    auto r = check_aggregate(c.call, *s);
    REQUIRE_FALSE(r);
    CAPTURE(r.error().message);
    CHECK(r.error().offset == c.offset);
    CHECK(r.error().message.find(c.message) != std::string::npos);
  }
  auto acc = weir::make_schema({{"acc", type_id::int64}});
  auto clash = check_aggregate("reduce(acc + 1, 0)", *acc);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().message.find("has a field named 'acc'") != std::string::npos);
  CHECK(check_aggregate("reduce(acc + value, 0)", *s).value() == type_id::int64);
  CHECK(check_aggregate("count_distinct(key)", *s).value() == type_id::int64);
  CHECK(check_aggregate("last(ts)", *s).value() == type_id::timestamp);
  CHECK(check_aggregate("first(null)", *s).error().code == weir::errc::type_error);
}

TEST_CASE("global window results clash with a key or aggregate named fire") {
  window_operator_spec spec;
  spec.assigner = std::make_shared<const global_windows>();
  spec.aggregates = {{"fire", "count(*)"}};
  auto p = window_plan::make(weir::test::case_schema(), spec);
  REQUIRE_FALSE(p);
  CHECK(p.error().message == "aggregate 'fire': name clashes with the window field of that name");
  // A time window may have an aggregate called fire.
  spec.assigner = shared(tumbling_event_time_windows::make(1s));
  CHECK(window_plan::make(weir::test::case_schema(), spec));
}

// -- snapshot and restore ---------------------------------------------------------------

namespace {

// Serializes every key group of `snap`, as the state writer would.
weir::operator_restore to_restore(const weir::operator_snapshot& snap) {
  weir::operator_restore r;
  r.checkpoint_id = 7;
  const auto range = snap.keyed_state->range();
  for (auto g = range.start; g <= range.end; ++g) {
    std::string bytes;
    snap.keyed_state->serialize_key_group(g, bytes);
    if (!bytes.empty())
      r.key_groups.emplace_back(g, std::move(bytes));
  }
  r.operator_states.push_back(snap.operator_state);
  return r;
}

// Runs `input` once straight and once with a snapshot after each prefix,
// restored into a fresh operator; every run must give the same output.
void check_restore_anywhere(const window_plan& plan, const std::vector<row_map>& input,
                            std::int64_t bound) {
  const auto s = weir::test::case_schema();
  auto straight = run(plan, input, bound);
  for (std::size_t cut = 0; cut <= input.size(); ++cut) {
    CAPTURE(cut);
    recording_collector out;
    auto op = plan.make_operator();
    event_time max_ts = weir::min_watermark;
    event_time wm = weir::min_watermark;
    auto feed = [&](weir::stream_operator& o, std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) {
        const auto& rec = input[i];
        const auto ts = std::get<std::int64_t>(rec.at("ts"));
        o.process_batch(make_batch(s, {{rec.at("id"), rec.at("key"), ts, rec.at("value")}}, {ts}),
                        out);
        max_ts = std::max(max_ts, ts);
        if (max_ts - bound - 1 > wm) {
          wm = max_ts - bound - 1;
          o.process_watermark(wm, out);
        }
      }
    };
    feed(*op, 0, cut);
    weir::operator_snapshot snap;
    op->snapshot_state(7, snap);
    REQUIRE(snap.keyed_state);
    op.reset(); // the restored operator must not depend on the old one
    auto restored = plan.make_operator();
    restored->open(weir::operator_context{});
    restored->restore_state(to_restore(snap));
    if (wm != weir::min_watermark)
      restored->process_watermark(wm, out); // the runtime replays the watermark
    feed(*restored, cut, input.size());
    restored->process_watermark(max_watermark, out);
    const auto diff = weir::test::diff_rows(out.rows(), straight.rows());
    CHECK_MESSAGE(diff == "", diff);
    CHECK(weir::test::diff_rows(out.rows(1), straight.rows(1)) == "");
  }
}

} // namespace

TEST_CASE("a restored operator continues exactly: lateness and re-firing (case 08)") {
  check_restore_anywhere(make_plan(shared(tumbling_event_time_windows::make(10s)), count_sum,
                                   nullptr, nullptr, 5s),
                         input_of("08-allowed-lateness-refire-and-side-output"), 0);
}

TEST_CASE("a restored operator continues exactly: sessions and their merging set") {
  check_restore_anywhere(
    make_plan(shared(event_time_session_windows::make(5s)),
              {{"count", "count(*)"}, {"first", "first(value)"}, {"last", "last(value)"},
               {"distinct", "count_distinct(value)"}},
              nullptr, nullptr, 30s),
    records({{"a", 0, 1}, {"b", 100, 7}, {"a", 9000, 2}, {"a", 30000, 4}, {"a", 4500, 8},
             {"b", 2000, 7}}),
    0);
}

TEST_CASE("a restored operator continues exactly: count windows, evictors, fire numbers") {
  check_restore_anywhere(make_plan(std::make_shared<const global_windows>(), count_sum,
                                   shared(count_trigger::make(2)), shared(count_evictor::make(3))),
                         input_of("12-count-window-keyed-leftover"), 0);
  check_restore_anywhere(make_plan(std::make_shared<const global_windows>(), count_sum,
                                   shared(count_trigger::make(2))),
                         input_of("13-global-window-count-trigger-no-purge"), 0);
}

TEST_CASE("restoring corrupt key-group bytes fails the subtask with the group named") {
  auto plan = make_plan(shared(tumbling_event_time_windows::make(10s)));
  auto op = plan.make_operator();
  weir::operator_restore r;
  r.checkpoint_id = 3;
  r.key_groups.emplace_back(5, "garbage");
  CHECK_THROWS_WITH_AS(op->restore_state(r),
                       doctest::Contains("cannot restore key group 5 of checkpoint 3"),
                       std::runtime_error);
}

TEST_CASE("restoring window state of other aggregates fails instead of misreading it") {
  // Taken with count and sum (two accumulators per window), restored into a
  // window with three aggregates: the sliced path and the per-window path.
  const std::vector<std::shared_ptr<const window_assigner>> assigners{
    shared(tumbling_event_time_windows::make(10s)), shared(event_time_session_windows::make(5s))};
  for (const auto& assigner : assigners) {
    const auto s = weir::test::case_schema();
    recording_collector out;
    auto op = make_plan(assigner).make_operator();
    op->open(weir::operator_context{});
    op->process_batch(make_batch(s, {{"e1", "a", std::int64_t{1000}, std::int64_t{5}}},
                                 {1000}),
                      out);
    weir::operator_snapshot snap;
    op->snapshot_state(7, snap);
    auto other = make_plan(assigner, {{"count", "count(*)"}, {"sum", "sum(value)"},
                                      {"max", "max(value)"}})
                   .make_operator();
    other->open(weir::operator_context{});
    other->restore_state(to_restore(snap));
    CHECK_THROWS_WITH_AS(
      {
        other->process_batch(
          make_batch(s, {{"e2", "a", std::int64_t{2000}, std::int64_t{6}}}, {2000}),
          out);
        other->process_watermark(weir::max_watermark, out);
      },
      doctest::Contains("window state holds 2 accumulators per window, but the window has 3"),
      std::runtime_error);
  }
}
TEST_CASE("a subtask added by scaling up restores the watermark from the union of operator states") {
  // Key "a"'s window [0, 10 s) fired before the checkpoint. After scaling up,
  // the subtask that takes over the key group inherits no operator state; a
  // record late before the checkpoint must still be late there.
  const std::vector<std::shared_ptr<const window_assigner>> assigners{
    shared(tumbling_event_time_windows::make(10s)), shared(event_time_session_windows::make(5s))};
  for (const auto& assigner : assigners) {
    const auto s = weir::test::case_schema();
    auto plan = make_plan(assigner);
    recording_collector before;
    auto op = plan.make_operator();
    op->open(weir::operator_context{});
    op->process_batch(make_batch(s, {{"e1", "a", std::int64_t{1000}, std::int64_t{5}}}, {1000}),
                      before);
    op->process_watermark(20000, before);
    REQUIRE(before.rows().size() == 1);
    weir::operator_snapshot snap;
    op->snapshot_state(7, snap);
    auto r = to_restore(snap);
    r.union_operator_states = std::move(r.operator_states);
    r.operator_states.clear();

    recording_collector after;
    auto restored = plan.make_operator();
    restored->open(weir::operator_context{});
    restored->restore_state(r);
    restored->process_batch(
      make_batch(s, {{"e2", "a", std::int64_t{2000}, std::int64_t{6}}}, {2000}), after);
    restored->process_watermark(weir::max_watermark, after);
    CHECK(after.rows().empty());     // no second result for [0, 10 s)
    CHECK(after.rows(1).size() == 1); // the record is late
  }
}

// -- sliced aggregation ------------------------------------------------------------------

namespace {

// Seeded keyed records, out of order by up to 3 s against a 2 s bound, so
// that some are late; values repeat (count_distinct) and go negative.
std::vector<row_map> random_records(std::uint64_t seed, std::size_t n) {
  // Short keys, and keys of one length whose encodings (15 bytes) differ in
  // their last bytes: the two paths of the window's key comparison.
  static const std::vector<std::string> keys = {"k0", "k1", "k2", "station-03",
                                                "station-04", "station-13", "station-31"};
  std::mt19937_64 rnd{seed};
  std::vector<row_map> out;
  for (std::size_t i = 0; i < n; ++i) {
    const auto ts = static_cast<event_time>(i * 97) - static_cast<event_time>(rnd() % 3000);
    out.push_back(row({{"id", std::string{"r"} + std::to_string(i)},
                       {"key", keys[rnd() % keys.size()]},
                       {"ts", ts},
                       {"value", static_cast<std::int64_t>(rnd() % 40) - 10}}));
  }
  return out;
}

const std::vector<aggregate_spec> every_mergeable = {
  {"n", "count(*)"},          {"sum", "sum(value)"},   {"lo", "min(value)"},
  {"hi", "max(value)"},       {"mean", "avg(value)"},  {"first", "first(value)"},
  {"last", "last(value)"},    {"distinct", "count_distinct(value)"}};

// Event-time windows the sliced path handles: tumbling with and without
// an offset, sliding with slices of the slide, of gcd = 2 s, of 1 s with an
// offset, and twenty slices a window. (A function: `shared` checks with
// doctest, inside a test only.)
std::vector<std::shared_ptr<const window_assigner>> sliced_assigners() {
  return {shared(tumbling_event_time_windows::make(5s)),
          shared(tumbling_event_time_windows::make(5s, -1s)),
          shared(sliding_event_time_windows::make(6s, 2s)),
          shared(sliding_event_time_windows::make(10s, 4s)),
          shared(sliding_event_time_windows::make(5s, 3s, 1s)),
          shared(sliding_event_time_windows::make(10s, 500ms))};
}

window_plan plan_with(std::shared_ptr<const window_assigner> a, bool slicing,
                      const std::vector<aggregate_spec>& aggregates = every_mergeable) {
  window_operator_spec spec;
  spec.key_by = {"key"};
  spec.assigner = std::move(a);
  spec.aggregates = aggregates;
  spec.allow_slicing = slicing;
  auto p = window_plan::make(weir::test::case_schema(), std::move(spec));
  REQUIRE_MESSAGE(p, (p ? "" : p.error().message));
  return *p;
}

// Runs `input` (bound 2 s) through each assigner's sliced and per-window
// operators: the same rows in the same order, the same late output and the
// same watermarks.
void check_sliced_as_per_window(
  const std::vector<std::shared_ptr<const window_assigner>>& assigners,
  const std::vector<row_map>& input) {
  for (const auto& a : assigners) {
    CAPTURE(a->describe());
    auto sliced = run(plan_with(a, true), input, 2000);
    auto per_window = run(plan_with(a, false), input, 2000);
    REQUIRE(per_window.rows().size() > 20);
    CHECK(weir::test::diff_rows(sliced.rows(), per_window.rows()) == "");
    CHECK(sliced.timestamps() == per_window.timestamps());
    CHECK(weir::test::diff_rows(sliced.rows(1), per_window.rows(1)) == "");
    CHECK(sliced.watermarks() == per_window.watermarks());
  }
}

} // namespace

TEST_CASE("sliced aggregation emits exactly what per-window aggregation does, in the same order") {
  auto assigners = sliced_assigners();
  assigners.push_back(shared(sliding_event_time_windows::make(2s, 5s))); // gaps: per window
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    CAPTURE(seed);
    check_sliced_as_per_window(assigners, random_records(seed, 400));
  }
}

TEST_CASE("sliced aggregation matches per-window aggregation when keys come and go between slices") {
  // As Nexmark's auctions: the keys drift, so most keys have contents in
  // one or two of a window's slices, and the firing looks up only those.
  for (std::uint64_t seed = 21; seed <= 23; ++seed) {
    std::mt19937_64 rnd{seed};
    std::vector<row_map> input;
    for (std::size_t i = 0; i < 600; ++i) {
      const auto ts = static_cast<event_time>(i * 50) - static_cast<event_time>(rnd() % 2500);
      const auto key = i / 40 + rnd() % 4; // about 4 new keys per 2 s
      input.push_back(row({{"id", std::string{"r"} + std::to_string(i)},
                           {"key", std::string{"k"} + std::to_string(key)},
                           {"ts", ts},
                           {"value", static_cast<std::int64_t>(rnd() % 40) - 10}}));
    }
    CAPTURE(seed);
    check_sliced_as_per_window(sliced_assigners(), input);
  }
}

TEST_CASE("sliced aggregation restores from a snapshot anywhere and continues exactly") {
  check_restore_anywhere(plan_with(shared(sliding_event_time_windows::make(6s, 2s)), true),
                         random_records(11, 60), 2000);
  check_restore_anywhere(plan_with(shared(tumbling_event_time_windows::make(3s)), true),
                         random_records(12, 60), 2000);
}


// -- sliced aggregation: edge cases against the per-window path ---------------------------

namespace {

/// One step of a script: a batch of (key, ts, value) rows, or a watermark.
struct script_step {
  bool is_watermark = false;
  event_time wm = 0;
  std::vector<std::tuple<value, event_time, value>> rows;
};
using script = std::vector<script_step>;

script_step wm_step(event_time wm) {
  script_step s;
  s.is_watermark = true;
  s.wm = wm;
  return s;
}

script_step batch_step(std::vector<std::tuple<value, event_time, value>> rows) {
  script_step s;
  s.rows = std::move(rows);
  return s;
}

window_plan plan_keyed(std::shared_ptr<const window_assigner> a, bool slicing,
                       std::vector<std::string> key_by = {"key"},
                       std::vector<aggregate_spec> aggs = every_mergeable) {
  window_operator_spec spec;
  spec.key_by = std::move(key_by);
  spec.assigner = std::move(a);
  spec.aggregates = std::move(aggs);
  spec.allow_slicing = slicing;
  auto p = window_plan::make(weir::test::case_schema(), std::move(spec));
  REQUIRE_MESSAGE(p, (p ? "" : p.error().message));
  return *p;
}

void play(weir::stream_operator& op, const script& sc, std::size_t from, std::size_t to,
          recording_collector& out) {
  const auto s = weir::test::case_schema();
  for (std::size_t i = from; i < to; ++i) {
    const auto& st = sc[i];
    if (st.is_watermark) {
      op.process_watermark(st.wm, out);
      continue;
    }
    std::vector<std::vector<value>> rows;
    std::vector<event_time> ts;
    for (const auto& [k, t, v] : st.rows) {
      rows.push_back({value{"s" + std::to_string(i)}, k, t, v});
      ts.push_back(t);
    }
    op.process_batch(make_batch(s, rows, ts), out);
  }
}

recording_collector play_all(const window_plan& plan, const script& sc) {
  auto op = plan.make_operator();
  recording_collector out;
  play(*op, sc, 0, sc.size(), out);
  return out;
}

void check_same_output(const recording_collector& sliced, const recording_collector& per_window) {
  const auto diff = weir::test::diff_rows(sliced.rows(), per_window.rows());
  CHECK_MESSAGE(diff == "", diff);
  CHECK(sliced.timestamps() == per_window.timestamps());
  const auto late = weir::test::diff_rows(sliced.rows(1), per_window.rows(1));
  CHECK_MESSAGE(late == "", late);
  CHECK(sliced.watermarks() == per_window.watermarks());
}

/// Runs `sc` sliced and per window and compares everything emitted; then
/// snapshots the sliced operator after every step, restores it into a fresh
/// operator and checks the continued run emits the same again.
void check_sliced_like_per_window(const std::shared_ptr<const window_assigner>& a,
                                  const script& sc,
                                  const std::vector<std::string>& key_by = {"key"},
                                  bool restore_everywhere = true,
                                  std::size_t restore_stride = 1) {
  CAPTURE(a->describe());
  const auto sliced_plan = plan_keyed(a, true, key_by);
  const auto per_window = play_all(plan_keyed(a, false, key_by), sc);
  check_same_output(play_all(sliced_plan, sc), per_window);
  if (!restore_everywhere)
    return;
  for (std::size_t cut = 0; cut <= sc.size(); cut += restore_stride) {
    CAPTURE(cut);
    recording_collector out;
    auto op = sliced_plan.make_operator();
    play(*op, sc, 0, cut, out);
    weir::operator_snapshot snap;
    op->snapshot_state(7, snap);
    REQUIRE(snap.keyed_state);
    op.reset();
    auto restored = sliced_plan.make_operator();
    restored->open(weir::operator_context{});
    restored->restore_state(to_restore(snap));
    play(*restored, sc, cut, sc.size(), out);
    check_same_output(out, per_window);
  }
}

/// A random script around `base`: batches of 1..4 rows (keys k0..k3 and
/// null, some values null), timestamps on and next to slice and window
/// boundaries of `grid` (shifted by `shift`), some behind the watermark;
/// watermarks after some batches, by small steps, to just below a record,
/// by big jumps, and at the end max_watermark; sometimes records after it.
script random_script(std::uint64_t seed, event_time base, std::int64_t grid, std::int64_t shift,
                     std::size_t steps) {
  std::mt19937_64 rnd{seed};
  script sc;
  event_time wm = base - 3 * grid;
  event_time hi = base;
  bool started = false;
  for (std::size_t i = 0; i < steps; ++i) {
    std::vector<std::tuple<value, event_time, value>> rows;
    const auto n = 1 + rnd() % 4;
    for (std::size_t r = 0; r < n; ++r) {
      event_time ts = 0;
      switch (rnd() % 4) {
        case 0: // on a boundary or next to one
          ts = (hi / grid) * grid + shift + static_cast<event_time>(rnd() % 5) * grid
               + static_cast<event_time>(rnd() % 3) - 1 - 2 * grid;
          break;
        case 1: // just after the watermark
          ts = wm + 1 + static_cast<event_time>(rnd() % 2);
          break;
        case 2: // behind the watermark (late for some windows or all)
          ts = wm - static_cast<event_time>(rnd() % (4 * grid));
          break;
        default:
          ts = hi + static_cast<event_time>(rnd() % (3 * grid)) - grid;
      }
      hi = std::max(hi, ts);
      const auto k = rnd() % 6;
      // (null key and value now and then; assigned, not built in a ?:,
      // which GCC 12 -O3 misreads as a maybe-uninitialized string)
      value key;
      if (k != 5)
        key.emplace<std::string>("k" + std::to_string(k));
      value v;
      if (rnd() % 7 != 0)
        v.emplace<std::int64_t>(static_cast<std::int64_t>(rnd() % 30) - 10);
      rows.emplace_back(std::move(key), ts, std::move(v));
    }
    sc.push_back(batch_step(std::move(rows)));
    const auto w = rnd() % 6;
    event_time next = wm;
    if (w == 0)
      next = wm + 1;
    else if (w == 1)
      next = hi - 1;
    else if (w == 2)
      next = hi - static_cast<event_time>(rnd() % (2 * grid));
    else if (w == 3 && rnd() % 4 == 0)
      next = hi + static_cast<event_time>(rnd() % (20 * grid)); // jumps over many windows
    if (next > wm || !started) {
      started = true;
      wm = std::max(wm, next);
      sc.push_back(wm_step(wm));
      sc.push_back(wm_step(wm)); // a repeated watermark changes nothing
    }
  }
  sc.push_back(wm_step(max_watermark));
  sc.push_back(batch_step({{value{"k1"}, hi, value{std::int64_t{1}}}})); // late: after the end
  sc.push_back(wm_step(max_watermark));
  return sc;
}

std::vector<std::shared_ptr<const window_assigner>> sliceable_assigners() {
  return {
    shared(tumbling_event_time_windows::make(7ms, 3ms)),
    shared(tumbling_event_time_windows::make(7ms, -5ms)),
    shared(tumbling_event_time_windows::make(1ms)),
    shared(sliding_event_time_windows::make(10ms, 4ms, 7ms)),  // offset > slide
    shared(sliding_event_time_windows::make(10ms, 4ms, -9ms)), // offset < -slide
    shared(sliding_event_time_windows::make(10ms, 3ms, 2ms)),  // slices of 1 ms
    shared(sliding_event_time_windows::make(9ms, 6ms, -5ms)),  // slices of 3 ms
    shared(sliding_event_time_windows::make(12ms, 12ms, 5ms)), // slide = size
    shared(sliding_event_time_windows::make(1ms, 1ms)),
    shared(sliding_event_time_windows::make(40ms, 1ms, 13ms)), // 40 windows a record
    shared(sliding_event_time_windows::make(40ms, 39ms, -3ms)), // 40 slices a window
  };
}

} // namespace

TEST_CASE("sliced aggregation matches per-window aggregation before the epoch, with odd offsets and gcd slices") {
  for (const event_time base : {event_time{-95}, event_time{0}, event_time{-1'000'000'000'000'003},
                                event_time{4'000'000'000'000'000'017}}) {
    for (std::uint64_t seed = 1; seed <= 2; ++seed) {
      CAPTURE(base);
      CAPTURE(seed);
      const auto sc = random_script(seed * 31 + 5, base, 4, 1, 25);
      for (const auto& a : sliceable_assigners())
        check_sliced_like_per_window(a, sc, {"key"}, seed == 1 && base == -95, 4);
    }
  }
}

TEST_CASE("sliced aggregation matches per-window aggregation with multi-field keys holding nulls") {
  for (std::uint64_t seed = 1; seed <= 2; ++seed) {
    CAPTURE(seed);
    const auto sc = random_script(seed + 100, -20, 3, 0, 20);
    for (const auto& a : sliceable_assigners())
      check_sliced_like_per_window(a, sc, {"value", "key"}, seed == 1, 5);
  }
}

TEST_CASE("sliced aggregation fires every window at once when the watermark jumps to the end") {
  // Records on exact slice and window boundaries, no watermark until the end;
  // then records late for some windows after a watermark inside the range.
  const script sc = {
    batch_step({{value{"a"}, -40, value{std::int64_t{1}}},
                {value{"b"}, -1, value{std::int64_t{2}}},
                {value{"a"}, 0, value{std::int64_t{3}}},
                {value{"a"}, 11, value{std::int64_t{4}}},
                {value{"b"}, 12, value{std::int64_t{5}}},
                {value{"c"}, 1000, value{std::int64_t{6}}}}),
    wm_step(11),
    batch_step({{value{"a"}, 3, value{std::int64_t{7}}},   // late for some windows only
                {value{"b"}, 11, value{std::int64_t{8}}},  // at the watermark
                {value{"a"}, 12, value{std::int64_t{9}}},  // just after it
                {value{"c"}, -30, value{std::int64_t{10}}}}), // late for every window
    wm_step(999),
    wm_step(max_watermark),
  };
  for (const auto& a : sliceable_assigners())
    check_sliced_like_per_window(a, sc);
}

TEST_CASE("sliced aggregation emits windows whose end overflows int64 as the per-window path does") {
  // Windows near Long.MAX_VALUE end at max_watermark (saturated); their start
  // is still the real start.
  const event_time top = max_watermark;
  const script sc = {
    batch_step({{value{"a"}, top - 3, value{std::int64_t{1}}},
                {value{"a"}, top - 12, value{std::int64_t{2}}},
                {value{"b"}, top, value{std::int64_t{3}}},
                {value{"b"}, top - 8, value{std::int64_t{4}}}}),
    wm_step(top - 20),
    wm_step(top - 5),
    wm_step(max_watermark),
  };
  for (const auto& a : std::vector<std::shared_ptr<const window_assigner>>{
         shared(tumbling_event_time_windows::make(10ms)),
         shared(sliding_event_time_windows::make(10ms, 5ms)),
         shared(sliding_event_time_windows::make(10ms, 4ms, 1ms)),
         shared(tumbling_event_time_windows::make(1ms)), // a slice [max, max)
         shared(sliding_event_time_windows::make(3ms, 1ms))})
    check_sliced_like_per_window(a, sc);
}

TEST_CASE("sliced aggregation handles windows at the start of the int64 range") {
  // 8 divides 2^63: the first window starts exactly at Long.MIN_VALUE.
  const event_time bottom = weir::min_watermark;
  const script sc = {
    batch_step({{value{"a"}, bottom + 3, value{std::int64_t{1}}},
                {value{"b"}, bottom, value{std::int64_t{2}}},
                {value{"a"}, bottom + 9, value{std::int64_t{3}}}}),
    wm_step(bottom + 2),
    wm_step(bottom + 7),
    batch_step({{value{"a"}, bottom + 5, value{std::int64_t{4}}}}),
    wm_step(max_watermark),
  };
  check_sliced_like_per_window(shared(tumbling_event_time_windows::make(8ms)), sc);
}

TEST_CASE("sliced aggregation handles window sizes and offsets near the int64 range") {
  const std::int64_t e18 = 1'000'000'000'000'000'000;
  const script sc = {
    batch_step({{value{"a"}, 0, value{std::int64_t{1}}},
                {value{"a"}, e18, value{std::int64_t{2}}},
                {value{"b"}, -e18, value{std::int64_t{3}}},
                {value{"b"}, 2 * e18 + 7, value{std::int64_t{4}}}}),
    wm_step(e18 / 2),
    wm_step(3 * e18),
    wm_step(max_watermark),
  };
  for (const auto& a : std::vector<std::shared_ptr<const window_assigner>>{
         shared(tumbling_event_time_windows::make(std::chrono::milliseconds{6 * e18},
                                                  std::chrono::milliseconds{5 * e18})),
         shared(sliding_event_time_windows::make(std::chrono::milliseconds{6 * e18},
                                                 std::chrono::milliseconds{2 * e18},
                                                 std::chrono::milliseconds{5 * e18})),
         shared(sliding_event_time_windows::make(std::chrono::milliseconds{6 * e18},
                                                 std::chrono::milliseconds{4 * e18},
                                                 std::chrono::milliseconds{-5 * e18}))})
    check_sliced_like_per_window(a, sc);
}

TEST_CASE("sliced aggregation restored after rescaling fires no window twice") {
  // Rescaling hands a subtask key groups whose windows fired up to another
  // subtask's watermark: merged with a subtask that was behind (the restored
  // operator starts at the lowest watermark), or with no operator state at
  // all (scaling up: new subtasks get none, and start at min_watermark). A
  // window that already fired for a key must not fire again.
  auto a = shared(sliding_event_time_windows::make(10ms, 5ms));
  const auto s = weir::test::case_schema();
  auto run_restored = [&](bool slicing, bool with_lagging_subtask) {
    const auto plan = plan_keyed(a, slicing);
    recording_collector out;
    auto ahead = plan.make_operator();
    ahead->process_batch(make_batch(s, {{"e1", "a", std::int64_t{97}, std::int64_t{1}}}, {97}), out);
    ahead->process_watermark(100, out); // fires a's [90, 100); [95, 105) is pending
    weir::operator_snapshot s1;
    ahead->snapshot_state(7, s1);
    auto r = to_restore(s1);
    if (with_lagging_subtask) {
      auto behind = plan.make_operator();
      behind->process_batch(make_batch(s, {{"e2", "b", std::int64_t{52}, std::int64_t{2}}}, {52}),
                            out);
      behind->process_watermark(50, out);
      weir::operator_snapshot s2;
      behind->snapshot_state(7, s2);
      auto r2 = to_restore(s2);
      for (auto& g : r2.key_groups) {
        REQUIRE(std::none_of(r.key_groups.begin(), r.key_groups.end(),
                             [&](const auto& x) { return x.first == g.first; }));
        r.key_groups.push_back(std::move(g));
      }
      r.operator_states.push_back(r2.operator_states.front());
    } else {
      r.operator_states.clear(); // a new subtask after scaling up
    }
    auto restored = plan.make_operator();
    restored->open(weir::operator_context{});
    restored->restore_state(r);
    restored->process_watermark(max_watermark, out);
    return out;
  };
  SUBCASE("merged with a subtask whose watermark was behind") {
    const auto per_window = run_restored(false, true);
    CHECK(per_window.rows().size() == 4); // a: [90, 100) [95, 105), b: [45, 55) [50, 60)
    check_same_output(run_restored(true, true), per_window);
  }
  SUBCASE("on a new subtask without operator state") {
    const auto per_window = run_restored(false, false);
    CHECK(per_window.rows().size() == 2); // a: [90, 100) [95, 105)
    check_same_output(run_restored(true, false), per_window);
  }
}

// -- two-phase (local/global) aggregation --------------------------------------------

namespace {

const std::vector<aggregate_spec> splittable = {
  {"n", "count(*)"},     {"sum", "sum(value)"}, {"lo", "min(value)"},
  {"hi", "max(value)"},  {"mean", "avg(value)"}, {"distinct", "count_distinct(value)"}};

window_plan splittable_plan(std::shared_ptr<const window_assigner> a) {
  return plan_with(std::move(a), true, splittable);
}

// Feeds a global phase from several local phases as the runtime would: a
// local's batches go straight in; the global's watermark is the minimum of
// the locals' last watermarks.
struct two_phase {
  struct to_global final : weir::output_collector {
    two_phase* self = nullptr;
    std::size_t index = 0;
    void collect(weir::record_batch_ptr b) override { self->global->process_batch(b, self->out); }
    void collect_side(std::size_t, weir::record_batch_ptr) override {
      FAIL("a local phase has no side output");
    }
    void emit_watermark(event_time wm) override {
      self->local_wm[index] = wm;
      const auto low = *std::min_element(self->local_wm.begin(), self->local_wm.end());
      if (low > self->global_wm) {
        self->global_wm = low;
        self->global->process_watermark(low, self->out);
      }
    }
  };

  two_phase(const window_plan& plan, std::size_t n)
    : global(plan.make_global_operator()), local_wm(n, weir::min_watermark), links(n) {
    for (std::size_t i = 0; i < n; ++i) {
      locals.push_back(plan.make_local_operator());
      links[i].self = this;
      links[i].index = i;
    }
  }

  weir::stream_operator_ptr global;
  std::vector<weir::stream_operator_ptr> locals;
  std::vector<event_time> local_wm;
  std::vector<to_global> links;
  event_time global_wm = weir::min_watermark;
  recording_collector out;
};

// The records go round-robin to `locals` local phases, each watermark to
// all of them; with `flushes`, a checkpoint barrier or idleness reaches a
// random local now and then.
recording_collector run_two_phase(const window_plan& plan, const std::vector<row_map>& input,
                                  std::int64_t bound_ms, std::size_t locals, std::uint64_t seed,
                                  std::uint64_t& late, bool flushes = true) {
  two_phase tp{plan, locals};
  std::mt19937_64 rnd{seed};
  const auto s = weir::test::case_schema();
  event_time max_ts = weir::min_watermark;
  event_time wm = weir::min_watermark;
  for (std::size_t i = 0; i < input.size(); ++i) {
    const auto& rec = input[i];
    const auto ts = std::get<std::int64_t>(rec.at("ts"));
    const auto k = i % locals;
    tp.locals[k]->process_batch(
      make_batch(s, {{rec.at("id"), rec.at("key"), ts, rec.at("value")}}, {ts}), tp.links[k]);
    if (flushes && rnd() % 50 == 0) {
      const auto b = rnd() % locals;
      tp.locals[b]->prepare_snapshot_pre_barrier(1, tp.links[b]);
    }
    if (flushes && rnd() % 97 == 0) { // an input going idle flushes as a barrier does
      const auto b = rnd() % locals;
      tp.locals[b]->prepare_idle(tp.links[b]);
    }
    max_ts = std::max(max_ts, ts);
    if (max_ts - bound_ms - 1 > wm) {
      wm = max_ts - bound_ms - 1;
      for (std::size_t j = 0; j < locals; ++j)
        tp.locals[j]->process_watermark(wm, tp.links[j]);
    }
  }
  for (std::size_t j = 0; j < locals; ++j) {
    tp.locals[j]->process_watermark(max_watermark, tp.links[j]);
    tp.locals[j]->finish(tp.links[j]);
  }
  tp.global->finish(tp.out);
  late = dynamic_cast<const weir::window::window_operator&>(*tp.global).late_records();
  CHECK(tp.out.late_counted == late); // reported to the runtime's metrics too
  return std::move(tp.out);
}

} // namespace

TEST_CASE("two-phase aggregation emits exactly what one window operator does") {
  const auto assigners = sliced_assigners();
  std::uint64_t all_late = 0;
  for (std::uint64_t seed = 1; seed <= 4; ++seed) {
    const auto input = random_records(seed, 400);
    for (const auto& a : assigners) {
      const auto plan = splittable_plan(a);
      REQUIRE(plan.supports_local_aggregation());
      auto op = plan.make_operator();
      recording_collector one;
      weir::test::replay(*op, input, 2000, one);
      const auto one_late = dynamic_cast<const weir::window::window_operator&>(*op).late_records();
      REQUIRE(one.rows().size() > 20);
      all_late += one_late;
      for (std::size_t locals : {1, 3}) {
        CAPTURE(seed);
        CAPTURE(a->describe());
        CAPTURE(locals);
        std::uint64_t late = 0;
        auto two = run_two_phase(plan, input, 2000, locals, seed, late);
        CHECK(weir::test::diff_rows(two.rows(), one.rows()) == "");
        CHECK(two.timestamps() == one.timestamps());
        CHECK(late == one_late); // counted; not routed (no late output with two phases)
        CHECK(two.watermarks() == one.watermarks());
      }
    }
  }
  CHECK(all_late > 0); // the input has late records, so late counting is exercised
}

TEST_CASE("a local phase holding more partials than its bound emits early, same results") {
  std::vector<row_map> input;
  // 70,000 keys in the first 5 s slice: more than a local phase holds.
  for (std::size_t i = 0; i < 150000; ++i)
    input.push_back(row({{"id", std::string{"r"} + std::to_string(i)},
                         {"key", std::string{"k"} + std::to_string(i % 70000)},
                         {"ts", static_cast<event_time>(i / 20)},
                         {"value", static_cast<std::int64_t>(i % 13)}}));
  const auto plan = splittable_plan(shared(tumbling_event_time_windows::make(5s)));
  auto op = plan.make_operator();
  recording_collector one;
  weir::test::replay(*op, input, 0, one);
  REQUIRE(one.rows().size() > 70000);
  std::uint64_t late = 0;
  auto two = run_two_phase(plan, input, 0, 1, 5, late, false);
  CHECK(weir::test::diff_rows(two.rows(), one.rows()) == "");
  CHECK(late == 0);
}

TEST_CASE("two-phase aggregation keyed by one int64 field, nulls included, emits what one window operator does") {
  // The local phase indexes an int64 key by value; a null key is its own key.
  window_operator_spec spec;
  spec.aggregates = {{"n", "count(*)"}, {"distinct", "count_distinct(id)"}};
  SUBCASE("keyed by an int64") { spec.key_by = {"value"}; }
  SUBCASE("not keyed (one key for all, indexed as the int64 0)") { spec.key_by = {}; }
  const bool keyed = !spec.key_by.empty();
  for (std::uint64_t seed = 31; seed <= 33; ++seed) {
    auto input = random_records(seed, 500);
    for (std::size_t i = 0; i < input.size(); i += 7)
      input[i]["value"] = std::monostate{};
    for (const auto& a : sliced_assigners()) {
      CAPTURE(seed);
      CAPTURE(a->describe());
      spec.assigner = a;
      auto plan = window_plan::make(weir::test::case_schema(), spec);
      REQUIRE(plan);
      REQUIRE(plan->supports_local_aggregation());
      auto op = plan->make_operator();
      recording_collector one;
      weir::test::replay(*op, input, 2000, one);
      REQUIRE(one.rows().size() > (keyed ? 20U : 5U));
      if (keyed) {
        bool null_key = false;
        for (const auto& r : one.rows())
          null_key = null_key || std::holds_alternative<std::monostate>(r.at("value"));
        CHECK(null_key);
      }
      for (std::size_t locals : {1, 3}) {
        CAPTURE(locals);
        std::uint64_t late = 0;
        auto two = run_two_phase(*plan, input, 2000, locals, seed, late);
        CHECK(weir::test::diff_rows(two.rows(), one.rows()) == "");
        CHECK(two.timestamps() == one.timestamps());
      }
    }
  }
  if (keyed) {
    std::vector<row_map> input;
    for (std::size_t i = 0; i < 150000; ++i)
      input.push_back(row({{"id", std::string{"r"} + std::to_string(i % 3)},
                           {"key", std::string{"k"}},
                           {"ts", static_cast<event_time>(i / 20)},
                           {"value", static_cast<std::int64_t>(i % 70000) - 35000}}));
    spec.assigner = shared(tumbling_event_time_windows::make(5s));
    auto plan = window_plan::make(weir::test::case_schema(), spec);
    REQUIRE(plan);
    auto op = plan->make_operator();
    recording_collector one;
    weir::test::replay(*op, input, 0, one);
    REQUIRE(one.rows().size() > 70000);
    std::uint64_t late = 0;
    auto two = run_two_phase(*plan, input, 0, 1, 5, late, false);
    CHECK(weir::test::diff_rows(two.rows(), one.rows()) == "");
  }
}

TEST_CASE("two-phase aggregation is offered only where merging cannot change results") {
  auto plan_of = [](std::shared_ptr<const window_assigner> a, std::vector<aggregate_spec> aggs) {
    window_operator_spec spec;
    spec.key_by = {"key"};
    spec.assigner = std::move(a);
    spec.aggregates = std::move(aggs);
    auto p = window_plan::make(weir::test::case_schema(), std::move(spec));
    REQUIRE(p);
    return *p;
  };
  const auto tumbling = shared(tumbling_event_time_windows::make(5s));
  CHECK(plan_of(tumbling, splittable).supports_local_aggregation());
  CHECK(plan_of(tumbling, splittable).partial_schema()->to_string().find("partial") !=
        std::string::npos);
  CHECK_FALSE(plan_of(tumbling, {{"f", "first(value)"}}).supports_local_aggregation());
  CHECK_FALSE(plan_of(tumbling, {{"l", "last(value)"}}).supports_local_aggregation());
  CHECK_FALSE(plan_of(tumbling, {{"r", "reduce(acc + value, 0)"}}).supports_local_aggregation());
  CHECK_FALSE(plan_of(tumbling, {{"s", "sum(value * 1.5)"}}).supports_local_aggregation());
  CHECK_FALSE(plan_of(tumbling, {{"m", "max(value * 1.5)"}}).supports_local_aggregation());
  CHECK(plan_of(tumbling, {{"m", "max(value * 2)"}}).supports_local_aggregation());
  CHECK_FALSE(plan_of(shared(event_time_session_windows::make(5s)), splittable)
                .supports_local_aggregation());
  CHECK_FALSE(plan_of(shared(sliding_event_time_windows::make(2s, 5s)), splittable)
                .supports_local_aggregation()); // gaps: not sliced
  CHECK_THROWS_AS(plan_of(tumbling, {{"f", "first(value)"}}).make_local_operator(),
                  std::logic_error);
}

} // TEST_SUITE

TEST_CASE("records between sliding windows whose slide exceeds their size are not late") {
  // Windows of 1 s every 3 s: [0, 1000), [3000, 4000), ...; 1500 and 2500
  // fall in no window. They are dropped (Flink's WindowOperator), neither
  // counted late nor emitted on the late side output.
  auto plan = make_plan(shared(sliding_event_time_windows::make(1s, 3s)));
  auto op = plan.make_operator();
  recording_collector out;
  const auto s = weir::test::case_schema();
  op->process_batch(make_batch(s, {{"e1", "a", 500, 1}, {"e2", "a", 1500, 1},
                                   {"e3", "a", 2500, 1}, {"e4", "a", 3500, 1}},
                               {500, 1500, 2500, 3500}),
                    out);
  op->process_watermark(max_watermark, out);
  op->finish(out);
  CHECK(out.rows(1).empty());
  CHECK(out.late_counted == 0);
  CHECK(dynamic_cast<window_operator&>(*op).late_records() == 0);
  const auto rows = out.rows();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("window_start") == value{std::int64_t{0}});
  CHECK(rows[1].at("window_start") == value{std::int64_t{3000}});
}
