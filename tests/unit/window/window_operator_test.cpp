// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"
#include "weir/window/sliding_windows.hpp"

#include "weir/expr/expression.hpp"
#include "window_test_support.hpp"

#include <doctest/doctest.h>

#include <memory>
#include <stdexcept>
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
using weir::window::aggregate_spec;
using weir::window::check_aggregate;
using weir::window::tumbling_event_time_windows;
using weir::window::window_operator;
using weir::window::window_operator_spec;
using weir::window::window_plan;

namespace {

std::shared_ptr<const tumbling_event_time_windows> tumbling(std::chrono::milliseconds size) {
  return std::make_shared<const tumbling_event_time_windows>(
    tumbling_event_time_windows::make(size).value());
}

weir::expected<window_plan> plan_for(const schema_ptr& s, std::vector<std::string> keys,
                                     std::vector<aggregate_spec> aggs,
                                     std::chrono::milliseconds lateness = 0ms,
                                     std::chrono::milliseconds size = 10s) {
  window_operator_spec spec;
  spec.key_by = std::move(keys);
  spec.assigner = tumbling(size);
  spec.aggregates = std::move(aggs);
  spec.allowed_lateness = lateness;
  return window_plan::make(s, std::move(spec));
}

window_operator& as_window(weir::stream_operator& op) {
  return dynamic_cast<window_operator&>(op);
}

const std::vector<aggregate_spec> count_sum = {{"count", "count(*)"}, {"sum", "sum(value)"}};
const std::vector<aggregate_spec> all_five = {{"count", "count(*)"},
                                              {"sum", "sum(value)"},
                                              {"min", "min(value)"},
                                              {"max", "max(value)"},
                                              {"avg", "avg(value)"}};

struct case_run {
  recording_collector out;
  std::uint64_t late = 0;
};

// Replays golden case `name` with watermark bound `bound_ms`.
case_run run_case(const std::string& name, std::int64_t bound_ms,
                  const std::vector<aggregate_spec>& aggs,
                  std::chrono::milliseconds lateness = 0ms) {
  auto plan = plan_for(weir::test::case_schema(), {"key"}, aggs, lateness);
  REQUIRE_MESSAGE(plan, (plan ? "" : plan.error().message));
  auto op = plan->make_operator();
  case_run run;
  weir::test::replay(*op, weir::test::read_jsonl(weir::test::case_dir(name) + "/input.jsonl"),
                     bound_ms, run.out);
  run.late = as_window(*op).late_records();
  return run;
}

std::vector<row_map> expected_rows(const std::string& name, const std::string& file) {
  return weir::test::read_jsonl(weir::test::case_dir(name) + "/" + file);
}

schema_ptr kv_schema() {
  return weir::make_schema({{"key", type_id::string}, {"value", type_id::int64}});
}

} // namespace

TEST_SUITE("window") {

// -- golden semantics cases, one record per batch -----------------------------

TEST_CASE("case 01: tumbling windows are start-inclusive and end-exclusive") {
  const std::string c = "01-tumbling-end-exclusive";
  auto run = run_case(c, 0, count_sum);
  CHECK_MESSAGE(weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl")) == "",
                weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl")));
  CHECK(run.out.rows(1).empty());
  CHECK(run.late == 0);
}

TEST_CASE("case 06: a window fires at watermark end-1 and a later record goes to port 1") {
  const std::string c = "06-watermark-minus-one-and-firing";
  auto run = run_case(c, 2000, count_sum);
  const auto diff = weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl"));
  CHECK_MESSAGE(diff == "", diff);
  const auto late_diff =
    weir::test::diff_rows(run.out.rows(1), expected_rows(c, "expected_late.jsonl"));
  CHECK_MESSAGE(late_diff == "", late_diff);
  CHECK(run.late == 1);
}

TEST_CASE("case 08: allowed lateness re-fires the full result, then routes to port 1") {
  const std::string c = "08-allowed-lateness-refire-and-side-output";
  auto run = run_case(c, 0, count_sum, 5000ms);
  const auto diff = weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl"));
  CHECK_MESSAGE(diff == "", diff);
  const auto late_diff =
    weir::test::diff_rows(run.out.rows(1), expected_rows(c, "expected_late.jsonl"));
  CHECK_MESSAGE(late_diff == "", late_diff);
  CHECK(run.late == 1);
}

TEST_CASE("case 20: windows without records produce no output") {
  const std::string c = "20-empty-windows-not-emitted";
  auto run = run_case(c, 0, count_sum);
  const auto diff = weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl"));
  CHECK_MESSAGE(diff == "", diff);
  CHECK(run.out.rows(1).empty());
}

TEST_CASE("case 22: out-of-order records within the bound count in all five aggregates") {
  const std::string c = "22-out-of-order-within-bound-all-aggregates";
  auto run = run_case(c, 5000, all_five);
  const auto diff = weir::test::diff_rows(run.out.rows(), expected_rows(c, "expected.jsonl"));
  CHECK_MESSAGE(diff == "", diff);
  const auto late_diff =
    weir::test::diff_rows(run.out.rows(1), expected_rows(c, "expected_late.jsonl"));
  CHECK_MESSAGE(late_diff == "", late_diff);
  auto rows = run.out.rows();
  REQUIRE(rows.size() == 2);
  CHECK(std::holds_alternative<double>(rows[1].at("avg")));
  CHECK(std::get<double>(rows[1].at("avg")) == doctest::Approx(28.75));
}

// -- firing, ordering and output shape ----------------------------------------

TEST_CASE("results of a watermark are emitted before the watermark is forwarded") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}}, {5000}), out);
  op->process_watermark(9998, out);
  op->process_watermark(9999, out);
  REQUIRE(out.events.size() == 3);
  CHECK(out.events[0].kind == recording_collector::event::watermark);
  CHECK(out.events[0].wm == 9998);
  CHECK(out.events[1].kind == recording_collector::event::batch);
  CHECK(out.events[2].kind == recording_collector::event::watermark);
  CHECK(out.events[2].wm == 9999);
}

TEST_CASE("output rows carry key, window bounds and aggregates, with event time end - 1") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  const auto& s = *plan.output_schema();
  REQUIRE(s.size() == 5);
  CHECK(s.at(0) == weir::field{"key", type_id::string});
  CHECK(s.at(1) == weir::field{"window_start", type_id::timestamp});
  CHECK(s.at(2) == weir::field{"window_end", type_id::timestamp});
  CHECK(s.at(3) == weir::field{"count", type_id::int64});
  CHECK(s.at(4) == weir::field{"sum", type_id::int64});
  CHECK(plan.key_fields() == std::vector<std::size_t>{0});

  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"a", 2}}, {-5, 12000}), out);
  op->process_watermark(max_watermark, out);
  CHECK(out.timestamps() == std::vector<event_time>{-1, 19999});
  auto rows = out.rows();
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].at("window_start") == value{std::int64_t{-10000}});
  CHECK(rows[0].at("window_end") == value{std::int64_t{0}});
  CHECK(rows[1].at("sum") == value{std::int64_t{2}});
  CHECK(out.events.back().kind == recording_collector::event::watermark);
  CHECK(out.events.back().wm == max_watermark);
}

TEST_CASE("one watermark fires its windows ordered by window end, then key bytes") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"c", 1}, {"b", 2}, {"a", 3}, {"b", 4}, {"a", 5}},
                               {15000, 1000, 12000, 2000, 3000}),
                    out);
  op->process_watermark(max_watermark, out);
  REQUIRE(out.events.size() == 2); // one result batch, one watermark
  std::vector<std::pair<std::string, std::int64_t>> got;
  for (const auto& r : out.rows())
    got.emplace_back(std::get<std::string>(r.at("key")),
                     std::get<std::int64_t>(r.at("window_end")));
  std::vector<std::pair<std::string, std::int64_t>> want = {
    {"a", 10000}, {"b", 10000}, {"a", 20000}, {"c", 20000}};
  CHECK(got == want);
}

TEST_CASE("a window without key fields aggregates all rows together") {
  auto plan = plan_for(kv_schema(), {}, count_sum).value();
  CHECK(plan.output_schema()->at(0).name == "window_start");
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"b", 2}}, {1, 2}), out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("count") == value{std::int64_t{2}});
  CHECK(rows[0].size() == 4);
}

TEST_CASE("several key fields form one composite key") {
  auto s = weir::make_schema(
    {{"a", type_id::string}, {"b", type_id::int64}, {"value", type_id::int64}});
  auto plan = plan_for(s, {"b", "a"}, count_sum).value();
  CHECK(plan.output_schema()->at(0).name == "b");
  CHECK(plan.output_schema()->at(1).name == "a");
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(s, {{"x", 1, 1}, {"x", 2, 2}, {"x", 1, 3}, {"y", 1, 4}},
                               {0, 0, 0, 0}),
                    out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 3);
  std::int64_t total = 0;
  for (const auto& r : rows)
    total += std::get<std::int64_t>(r.at("count"));
  CHECK(total == 4);
  bool found = false;
  for (const auto& r : rows)
    if (r.at("a") == value{std::string{"x"}} && r.at("b") == value{std::int64_t{1}}) {
      found = true;
      CHECK(r.at("sum") == value{std::int64_t{4}});
    }
  CHECK(found);
}

TEST_CASE("a watermark that does not advance is ignored") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_watermark(100, out);
  op->process_watermark(100, out);
  op->process_watermark(50, out);
  CHECK(out.watermarks() == std::vector<event_time>{100});
  CHECK(as_window(*op).current_watermark() == 100);
}

TEST_CASE("a batch without event timestamps is a logic error") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  auto op = plan.make_operator();
  recording_collector out;
  CHECK_THROWS_AS(op->process_batch(make_batch(kv_schema(), {{"a", 1}}, {}), out),
                  std::logic_error);
  // An empty batch has no timestamps either and is simply nothing to do.
  CHECK_NOTHROW(op->process_batch(make_batch(kv_schema(), {}, {}), out));
  CHECK(out.events.empty());
}

// -- lateness ------------------------------------------------------------------

TEST_CASE("each late record of a batch re-fires its window at once, as Flink does per record") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum, 10000ms).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"b", 10}}, {100, 200}), out);
  op->process_watermark(9999, out); // fires a and b of [0, 10000)
  REQUIRE(out.rows().size() == 2);
  out.events.clear();
  op->process_batch(make_batch(kv_schema(), {{"b", 20}, {"a", 2}, {"b", 30}, {"c", 5}},
                               {300, 400, 500, 15000}),
                    out);
  REQUIRE(out.events.size() == 1); // the batch's firings leave as one batch
  auto rows = out.rows();
  REQUIRE(rows.size() == 3);
  CHECK(rows[0].at("key") == value{std::string{"b"}});
  CHECK(rows[0].at("count") == value{std::int64_t{2}});
  CHECK(rows[0].at("sum") == value{std::int64_t{30}});
  CHECK(rows[1].at("key") == value{std::string{"a"}});
  CHECK(rows[1].at("sum") == value{std::int64_t{3}});
  CHECK(rows[2].at("key") == value{std::string{"b"}});
  CHECK(rows[2].at("count") == value{std::int64_t{3}});
  CHECK(rows[2].at("sum") == value{std::int64_t{60}});
  CHECK(out.timestamps() == std::vector<event_time>{9999, 9999, 9999});
  CHECK(as_window(*op).emitted_results() == 5);
}

TEST_CASE("a record within lateness for a window it alone would create fires at once") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum, 5000ms).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}}, {12000}), out);
  op->process_watermark(11000, out); // fires [0, 10000) for nobody
  op->process_batch(make_batch(kv_schema(), {{"z", 7}}, {5000}), out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("key") == value{std::string{"z"}});
  CHECK(rows[0].at("window_end") == value{std::int64_t{10000}});
  CHECK(as_window(*op).late_records() == 0);
}

TEST_CASE("late rows of one batch leave as one batch on port 1 and are counted") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum).value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_watermark(9999, out);
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"b", 2}, {"c", 3}}, {9999, 10000, 5}),
                    out);
  std::size_t side_batches = 0;
  for (const auto& e : out.events)
    if (e.kind == recording_collector::event::side_batch) {
      ++side_batches;
      CHECK(e.port == 1);
    }
  CHECK(side_batches == 1);
  auto late = out.rows(1);
  REQUIRE(late.size() == 2);
  CHECK(late[0].at("key") == value{std::string{"a"}});
  CHECK(late[1].at("key") == value{std::string{"c"}});
  CHECK(out.timestamps(1) == std::vector<event_time>{9999, 5});
  CHECK(as_window(*op).late_records() == 2);
  CHECK(out.rows().empty()); // nothing re-fired: lateness is 0
}

TEST_CASE("a window's state is dropped once the watermark reaches end - 1 + lateness") {
  auto plan = plan_for(kv_schema(), {"key"}, count_sum, 5000ms).value();
  auto op = plan.make_operator();
  auto& w = as_window(*op);
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"b", 1}, {"a", 1}}, {1, 2, 10001}), out);
  CHECK(w.active_states() == 3);
  op->process_watermark(9999, out);
  CHECK(w.active_states() == 3); // fired, but still within allowed lateness
  op->process_watermark(14998, out);
  CHECK(w.active_states() == 3);
  op->process_watermark(14999, out);
  CHECK(w.active_states() == 1);
  op->process_batch(make_batch(kv_schema(), {{"a", 1}}, {9000}), out);
  CHECK(w.late_records() == 1);
  op->process_watermark(max_watermark, out);
  CHECK(w.active_states() == 0);
}

// -- aggregates ----------------------------------------------------------------

TEST_CASE("aggregates ignore nulls, over only nulls they are null and count is 0") {
  auto s = weir::make_schema({{"key", type_id::string}, {"v", type_id::int64}});
  auto plan = plan_for(s, {"key"},
                       {{"rows", "count(*)"},
                        {"n", "count(v)"},
                        {"total", "sum(v)"},
                        {"lo", "min(v)"},
                        {"hi", "max(v)"},
                        {"mean", "avg(v)"}})
                .value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(s,
                               {{"a", std::monostate{}},
                                {"a", 4},
                                {"a", std::monostate{}},
                                {"a", 1},
                                {"b", std::monostate{}}},
                               {1, 2, 3, 4, 5}),
                    out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 2);
  const auto& a = rows[0];
  CHECK(a.at("rows") == value{std::int64_t{4}});
  CHECK(a.at("n") == value{std::int64_t{2}});
  CHECK(a.at("total") == value{std::int64_t{5}});
  CHECK(a.at("lo") == value{std::int64_t{1}});
  CHECK(a.at("hi") == value{std::int64_t{4}});
  CHECK(a.at("mean") == value{2.5});
  const auto& b = rows[1];
  CHECK(b.at("rows") == value{std::int64_t{1}});
  CHECK(b.at("n") == value{std::int64_t{0}});
  CHECK(std::holds_alternative<std::monostate>(b.at("total")));
  CHECK(std::holds_alternative<std::monostate>(b.at("lo")));
  CHECK(std::holds_alternative<std::monostate>(b.at("hi")));
  CHECK(std::holds_alternative<std::monostate>(b.at("mean")));
}

TEST_CASE("min and max keep the input type, sum and avg of floats are floats") {
  auto s = weir::make_schema({{"key", type_id::string},
                              {"f", type_id::float64},
                              {"name", type_id::string},
                              {"at", type_id::timestamp}});
  auto plan = plan_for(s, {"key"},
                       {{"fsum", "sum(f)"},
                        {"favg", "avg(f)"},
                        {"fmin", "min(f)"},
                        {"first", "min(name)"},
                        {"last", "max(name)"},
                        {"latest", "max(at)"}})
                .value();
  const auto& os = *plan.output_schema();
  CHECK(os.at(3).type == type_id::float64);
  CHECK(os.at(4).type == type_id::float64);
  CHECK(os.at(5).type == type_id::float64);
  CHECK(os.at(6).type == type_id::string);
  CHECK(os.at(7).type == type_id::string);
  CHECK(os.at(8).type == type_id::timestamp);
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(s,
                               {{"k", 1.5, "pear", std::int64_t{-7}},
                                {"k", -0.25, "apple", std::int64_t{300}},
                                {"k", 2.0, "zebra", std::monostate{}}},
                               {1, 2, 3}),
                    out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(std::get<double>(rows[0].at("fsum")) == doctest::Approx(3.25));
  CHECK(std::get<double>(rows[0].at("favg")) == doctest::Approx(3.25 / 3));
  CHECK(std::get<double>(rows[0].at("fmin")) == doctest::Approx(-0.25));
  CHECK(rows[0].at("first") == value{std::string{"apple"}});
  CHECK(rows[0].at("last") == value{std::string{"zebra"}});
  CHECK(rows[0].at("latest") == value{std::int64_t{300}});
}

TEST_CASE("aggregate arguments are expressions evaluated over the batch") {
  auto plan = plan_for(kv_schema(), {"key"},
                       {{"doubled", "sum(value * 2)"}, {"big", "count(value > 1)"}})
                .value();
  auto op = plan.make_operator();
  recording_collector out;
  op->process_batch(make_batch(kv_schema(), {{"a", 1}, {"a", 2}, {"a", 3}}, {1, 2, 3}), out);
  op->process_watermark(max_watermark, out);
  auto rows = out.rows();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("doubled") == value{std::int64_t{12}});
  CHECK(rows[0].at("big") == value{std::int64_t{3}}); // count counts non-null values
}

TEST_CASE("aggregate calls accept any case and surrounding whitespace") {
  auto s = weir::make_schema({{"key", type_id::string},
                              {"value", type_id::int64},
                              {"f", type_id::float64},
                              {"ts", type_id::timestamp}});
  CHECK(check_aggregate("COUNT ( * )", *s).value() == type_id::int64);
  CHECK(check_aggregate("count(key)", *s).value() == type_id::int64);
  CHECK(check_aggregate(" Sum(value) ", *s).value() == type_id::int64);
  CHECK(check_aggregate("sum( f )", *s).value() == type_id::float64);
  CHECK(check_aggregate("avg(value)", *s).value() == type_id::float64);
  CHECK(check_aggregate("min(key)", *s).value() == type_id::string);
  CHECK(check_aggregate("mAx(ts)", *s).value() == type_id::timestamp);
}

TEST_CASE("aggregate parse errors name the problem and point at it") {
  auto s = weir::make_schema({{"key", type_id::string},
                              {"value", type_id::int64},
                              {"flag", type_id::boolean},
                              {"ts", type_id::timestamp}});
  struct bad {
    std::string call;
    weir::errc code;
    std::size_t offset;
    std::string message;
  };
  const std::vector<bad> cases = {
    {"mean(value)", weir::errc::parse_error, 0,
     "unknown aggregate function 'mean' (known: count, sum, min, max, avg, first, last, "
     "count_distinct, reduce)"},
    {"  MEAN (value)", weir::errc::parse_error, 2, "unknown aggregate function 'MEAN'"},
    {"sum(key)", weir::errc::type_error, 4, "sum needs a number, got string"},
    {"avg(  key )", weir::errc::type_error, 6, "avg needs a number, got string"},
    {"sum(ts)", weir::errc::type_error, 4, "sum needs a number, got timestamp"},
    {"max(flag)", weir::errc::type_error, 4, "max needs a number, timestamp or string, got bool"},
    {"sum(*)", weir::errc::parse_error, 4, "'*' is only allowed in count(*)"},
    {"sum()", weir::errc::parse_error, 4, "sum needs an argument"},
    {"count(  )", weir::errc::parse_error, 8, "count needs an argument"},
    {"sum(value", weir::errc::parse_error, 9, "expected ')'"},
    {"sum value", weir::errc::parse_error, 4, "expected '(' after 'sum'"},
    {"", weir::errc::parse_error, 0, "expected an aggregate call"},
    {"   ", weir::errc::parse_error, 3, "expected an aggregate call"},
    {"(value)", weir::errc::parse_error, 0, "expected an aggregate call"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.call);
    auto r = check_aggregate(c.call, *s);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == c.code);
    CHECK(r.error().offset == c.offset);
    CHECK_MESSAGE(r.error().message.find(c.message) != std::string::npos, r.error().message);
  }
}

TEST_CASE("an error in an aggregate's argument is offset from the argument's start") {
  auto s = weir::make_schema({{"key", type_id::string}, {"value", type_id::int64}});
  auto r = check_aggregate("sum(nosuch)", *s);
  REQUIRE_FALSE(r);
  CHECK(r.error().offset == 4);
  CHECK(r.error().message.find("nosuch") != std::string::npos);

  auto inner = weir::expr::compile(" value + nosuch", *s);
  REQUIRE_FALSE(inner);
  auto r2 = check_aggregate("sum( value + nosuch)", *s);
  REQUIRE_FALSE(r2);
  CHECK(r2.error().offset == 4 + inner.error().offset);
  CHECK(r2.error().offset > 4);
  CHECK(r2.error().message == inner.error().message);
}

// -- plan errors -----------------------------------------------------------------

TEST_CASE("window_plan::make rejects an unknown or repeated key field") {
  auto r = plan_for(kv_schema(), {"nosuch"}, count_sum);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == weir::errc::invalid_argument);
  CHECK(r.error().message.find("unknown key field 'nosuch'") != std::string::npos);
  auto r2 = plan_for(kv_schema(), {"key", "key"}, count_sum);
  REQUIRE_FALSE(r2);
  CHECK(r2.error().message.find("listed twice") != std::string::npos);
}

TEST_CASE("window_plan::make rejects aggregate names that repeat or clash") {
  SUBCASE("duplicate") {
    auto r = plan_for(kv_schema(), {"key"}, {{"n", "count(*)"}, {"n", "sum(value)"}});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("'n' is used twice") != std::string::npos);
  }
  SUBCASE("clash with a key field") {
    auto r = plan_for(kv_schema(), {"key"}, {{"key", "count(*)"}});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("clashes with the key field") != std::string::npos);
  }
  SUBCASE("clash with a window field") {
    auto r = plan_for(kv_schema(), {"key"}, {{"window_end", "count(*)"}});
    REQUIRE_FALSE(r);
    CHECK(r.error().message.find("clashes with the window field") != std::string::npos);
  }
  SUBCASE("empty name") {
    auto r = plan_for(kv_schema(), {"key"}, {{"", "count(*)"}});
    REQUIRE_FALSE(r);
    CHECK(r.error().code == weir::errc::invalid_argument);
  }
}

TEST_CASE("window_plan::make names the aggregate and keeps the offset into its call") {
  auto r = plan_for(kv_schema(), {"key"}, {{"n", "count(*)"}, {"bytes", "sum( key)"}});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == weir::errc::type_error);
  CHECK(r.error().offset == 5);
  CHECK(r.error().message == "aggregate 'bytes': sum needs a number, got string");
}

TEST_CASE("window_plan::make rejects negative lateness and a missing assigner") {
  auto r = plan_for(kv_schema(), {"key"}, count_sum, -1ms);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == weir::errc::invalid_argument);
  window_operator_spec spec;
  spec.aggregates = count_sum;
  auto r2 = window_plan::make(kv_schema(), spec);
  REQUIRE_FALSE(r2);
  CHECK(r2.error().message.find("assigner") != std::string::npos);
}

} // TEST_SUITE

// -- state descriptor --------------------------------------------------------------

TEST_SUITE("window") {
TEST_CASE("a plan's state descriptor changes with what its snapshot layout depends on") {
  auto s = weir::make_schema(
    {{"key", type_id::string}, {"value", type_id::int64}, {"score", type_id::float64}});
  auto desc = [&](std::vector<aggregate_spec> aggs, std::chrono::milliseconds size = 10s) {
    auto p = plan_for(s, {"key"}, std::move(aggs), 0ms, size);
    REQUIRE(p);
    return p->state_descriptor();
  };
  const auto base = desc({{"n", "count(*)"}});
  CHECK(base.find("window tumbling_event_time_windows; keys (string); aggregates count(*)")
        == 0);
  // Same layout: another aggregate name, another window size.
  CHECK(desc({{"m", "count(*)"}}) == base);
  CHECK(desc({{"n", "count(*)"}}, 1h) == base);
  // Another function, argument type, order or number of aggregates.
  CHECK(desc({{"n", "sum(score)"}}) != base);
  CHECK(desc({{"n", "sum(score)"}}).find("aggregates sum(float64)") != std::string::npos);
  CHECK(desc({{"n", "sum(value)"}}) != desc({{"n", "sum(score)"}}));
  CHECK(desc({{"n", "count(*)"}, {"s", "sum(value)"}}) != base);
  CHECK(desc({{"n", "count(*)"}, {"s", "sum(value)"}})
        != desc({{"s", "sum(value)"}, {"n", "count(*)"}}));
  // Another window kind.
  window_operator_spec spec;
  spec.key_by = {"key"};
  spec.assigner = std::make_shared<const weir::window::sliding_event_time_windows>(
    weir::window::sliding_event_time_windows::make(10s, 5s).value());
  spec.aggregates = {{"n", "count(*)"}};
  auto sliding = window_plan::make(s, std::move(spec));
  REQUIRE(sliding);
  CHECK(sliding->state_descriptor() != base);
  CHECK(sliding->state_descriptor().find("sliding_event_time_windows") != std::string::npos);
  // Another key type.
  auto by_value = plan_for(s, {"value"}, {{"n", "count(*)"}});
  REQUIRE(by_value);
  CHECK(by_value->state_descriptor() != base);
}
}
