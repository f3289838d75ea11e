// SPDX-License-Identifier: Apache-2.0
// The pattern operator driven directly (no actors): event-time buffering and
// sorting, late records, timeouts, snapshot and restore, state TTL.
#include "pattern_operator.hpp"

#include "weir/api/job.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

using namespace weir;
using namespace weir::internal::cep;

namespace {

struct recorder final : output_collector {
  std::vector<record_batch_ptr> main;
  std::map<std::size_t, std::vector<record_batch_ptr>> side;
  std::vector<event_time> watermarks;
  std::uint64_t dropped = 0;
  void collect(record_batch_ptr b) override { main.push_back(std::move(b)); }
  void collect_side(std::size_t port, record_batch_ptr b) override {
    side[port].push_back(std::move(b));
  }
  void emit_watermark(event_time wm) override { watermarks.push_back(wm); }
  void count_dropped_partial_matches(std::uint64_t n) override { dropped += n; }

  /// "card:small_amount->large_amount" per match row.
  std::vector<std::string> matches() const {
    std::vector<std::string> out;
    for (const auto& b : main)
      for (std::size_t r = 0; r < b->num_rows; ++r)
        out.push_back(to_display_string(b->columns[0].get(r)) + ":" +
                      to_display_string(b->columns[3].get(r)) + "->" +
                      to_display_string(b->columns[4].get(r)));
    return out;
  }
  std::size_t side_rows(std::size_t port) const {
    std::size_t n = 0;
    if (auto it = side.find(port); it != side.end())
      for (const auto& b : it->second)
        n += b->num_rows;
    return n;
  }
};

struct manual_clock final : processing_clock {
  event_time t = 0;
  event_time now() const override { return t; }
};

schema_ptr input_schema() {
  return make_schema({field{"card", type_id::string}, field{"amount", type_id::int64}});
}

pattern_plan make_plan(std::chrono::milliseconds ttl = std::chrono::milliseconds{0}) {
  cep::pattern_spec spec;
  cep::pattern_step small;
  small.name = "small";
  small.condition = "amount < 10";
  cep::pattern_step large;
  large.name = "large";
  large.condition = "amount > small.amount * 10";
  spec.steps = {small, large};
  spec.within = std::chrono::milliseconds{100};
  spec.select = {{"small_amount", "small.amount"}, {"large_amount", "large.amount"}};
  spec.state_ttl = ttl;
  auto in = input_schema();
  auto p = compiled_pattern::make(*in, spec);
  REQUIRE(p.has_value());
  pattern_plan plan;
  plan.pattern = std::make_shared<const compiled_pattern>(std::move(*p));
  plan.key_fields = {0};
  plan.input = in;
  auto head = std::vector<field>{field{"card", type_id::string},
                                 field{"match_start", type_id::timestamp},
                                 field{"match_end", type_id::timestamp}};
  auto out = head;
  out.push_back(field{"small_amount", type_id::int64});
  out.push_back(field{"large_amount", type_id::int64});
  plan.output = make_schema(out);
  auto timeout = head;
  timeout.push_back(field{"timed_out_at", type_id::timestamp});
  timeout.push_back(field{"small_amount", type_id::int64});
  timeout.push_back(field{"large_amount", type_id::int64});
  plan.timeout = make_schema(timeout);
  for (const auto& [name, text] : spec.select)
    plan.select.push_back(expr::compile(text, *plan.pattern->match_schema()).value());
  plan.emit_timeouts = true;
  return plan;
}

record_batch_ptr rows(std::vector<std::tuple<std::string, std::int64_t, event_time>> rs) {
  batch_builder b{input_schema()};
  for (const auto& [card, amount, ts] : rs) {
    b.col(0).append_string(card);
    b.col(1).append_int(amount);
    b.commit_row();
    b.timestamps().push_back(ts);
  }
  return b.finish();
}

operator_context context(const manual_clock& clock) {
  operator_context ctx;
  ctx.operator_name = "fraud";
  ctx.clock = &clock;
  return ctx;
}

} // namespace

TEST_SUITE("pattern") {
TEST_CASE("records are matched in event-time order once the watermark passes them") {
  manual_clock clock;
  pattern_operator op{make_plan()};
  op.open(context(clock));
  recorder out;
  // The large one arrives first; sorted by event time it comes second.
  op.process_batch(rows({{"c1", 900, 20}, {"c1", 5, 10}, {"c2", 3, 15}}), out);
  CHECK(out.main.empty());
  op.process_watermark(15, out);
  CHECK(out.matches().empty()); // 20 not yet passed
  op.process_watermark(20, out);
  CHECK(out.matches() == std::vector<std::string>{"c1:5->900"});
  CHECK(out.watermarks == std::vector<event_time>{15, 20});
}

TEST_CASE("records at or behind the watermark go to the late side output") {
  manual_clock clock;
  pattern_operator op{make_plan()};
  op.open(context(clock));
  recorder out;
  op.process_watermark(50, out);
  op.process_batch(rows({{"c1", 5, 50}, {"c1", 5, 49}, {"c1", 5, 51}}), out);
  CHECK(out.side_rows(1) == 2);
}

TEST_CASE("a partial match older than within goes to the timeout output") {
  manual_clock clock;
  pattern_operator op{make_plan()};
  op.open(context(clock));
  recorder out;
  op.process_batch(rows({{"c1", 5, 10}}), out);
  op.process_watermark(109, out);
  CHECK(out.side_rows(2) == 0);
  op.process_watermark(110, out);
  REQUIRE(out.side_rows(2) == 1);
  const auto& t = *out.side[2].front();
  CHECK(t.columns[3].get(0) == value{std::int64_t{110}}); // timed_out_at
  CHECK(t.timestamps[0] == 110);
}

TEST_CASE("a snapshot restored into a new instance keeps buffered records and partial matches") {
  manual_clock clock;
  pattern_operator a{make_plan()};
  a.open(context(clock));
  recorder out;
  a.process_batch(rows({{"c1", 5, 10}, {"c2", 2, 12}}), out);
  a.process_watermark(11, out); // c1's small is a partial match; c2's still buffered
  operator_snapshot snap;
  a.snapshot_state(1, snap);
  REQUIRE(snap.keyed_state);
  operator_restore restore;
  restore.checkpoint_id = 1;
  for (std::uint16_t g = 0; g < 128; ++g) {
    std::string bytes;
    snap.keyed_state->serialize_key_group(g, bytes);
    if (!bytes.empty())
      restore.key_groups.emplace_back(g, std::move(bytes));
  }
  pattern_operator b{make_plan()};
  b.open(context(clock));
  b.restore_state(restore);
  recorder out2;
  b.process_batch(rows({{"c1", 60, 30}, {"c2", 30, 31}}), out2);
  b.process_watermark(40, out2);
  auto got = out2.matches();
  std::sort(got.begin(), got.end());
  CHECK(got == std::vector<std::string>{"c1:5->60", "c2:2->30"});
}

TEST_CASE("state_ttl drops a key's pattern state once it is idle that long") {
  manual_clock clock;
  pattern_operator op{make_plan(std::chrono::milliseconds{1000})};
  op.open(context(clock));
  recorder out;
  clock.t = 5000;
  op.process_batch(rows({{"c1", 5, 10}, {"c2", 5, 10}}), out);
  op.process_watermark(11, out);
  REQUIRE(op.next_processing_timer() == std::optional<event_time>{6000});
  clock.t = 5500;
  op.process_batch(rows({{"c2", 7, 20}}), out); // c2 touched again
  clock.t = 6000;
  op.on_processing_time(6000, out); // c1 expires; c2's timer moves to 6500
  CHECK(op.next_processing_timer() == std::optional<event_time>{6500});
  op.process_batch(rows({{"c1", 900, 30}, {"c2", 900, 30}}), out);
  op.process_watermark(40, out);
  // c1 lost its partial match with its state; c2 kept its own.
  CHECK(out.matches() == std::vector<std::string>{"c2:5->900", "c2:7->900"});
}
}
