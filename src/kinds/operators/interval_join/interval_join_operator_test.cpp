// SPDX-License-Identifier: Apache-2.0
// The interval and window join operators driven directly (no actors):
// bounds, result timestamps, late rows, state cleanup, snapshot and restore
// into another key-group range, the row shapes.
#include "interval_join_operator.hpp"
#include "../window_join/window_join_operator.hpp"

#include "weir/core/key_group.hpp"
#include "weir/state/key_group_range.hpp"
#include "weir/window/session_windows.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <doctest/doctest.h>

#include <string>
#include <tuple>
#include <vector>

using namespace std::chrono_literals;
using weir::type_id;

namespace {

struct collector final : weir::output_collector {
  std::vector<std::pair<std::size_t, weir::record_batch_ptr>> batches;
  std::vector<weir::event_time> watermarks;
  void collect(weir::record_batch_ptr b) override { batches.emplace_back(0, std::move(b)); }
  void collect_side(std::size_t port, weir::record_batch_ptr b) override {
    batches.emplace_back(port, std::move(b));
  }
  void emit_watermark(weir::event_time wm) override { watermarks.push_back(wm); }

  /// Rows on `port` as text "field=value,..." each, with "@ts".
  std::vector<std::string> rows(std::size_t port = 0) const {
    std::vector<std::string> out;
    for (const auto& [p, b] : batches) {
      if (p != port)
        continue;
      for (std::size_t r = 0; r < b->num_rows; ++r) {
        std::string s;
        for (std::size_t c = 0; c < b->columns.size(); ++c)
          s += (c ? "," : "") + b->schema->at(c).name + "=" +
               weir::to_display_string(b->columns[c].get(r));
        out.push_back(s + "@" + std::to_string(b->timestamps[r]));
      }
    }
    return out;
  }
};

const auto side_schema =
  weir::make_schema({{"key", type_id::string}, {"ts", type_id::timestamp}, {"value", type_id::string}});

/// One batch of (key, ts, value) rows with event time ts.
weir::record_batch_ptr batch(std::vector<std::tuple<std::string, std::int64_t, std::string>> rows) {
  weir::batch_builder b{side_schema};
  for (const auto& [k, ts, v] : rows) {
    b.col(0).append_string(k);
    b.col(1).append_int(ts);
    b.col(2).append_string(v);
    b.commit_row();
    b.timestamps().push_back(ts);
  }
  return b.finish();
}

const weir::join_select case_select = {{"key", "left.key"},   {"left", "left.value"},
                                       {"right", "right.value"}, {"ts", "timestamp"}};

weir::internal::join_rows rows_of(const weir::join_select& select, bool windowed = false) {
  return weir::internal::join_rows::make(side_schema, side_schema, {0}, select, windowed).value();
}

weir::operator_context context(std::size_t subtask = 0, std::size_t parallelism = 1) {
  weir::operator_context ctx;
  ctx.operator_name = "join";
  ctx.subtask_index = subtask;
  ctx.parallelism = parallelism;
  ctx.max_parallelism = 128;
  return ctx;
}

std::unique_ptr<weir::internal::interval_join_operator> interval(std::int64_t lower,
                                                                 std::int64_t upper,
                                                                 std::size_t subtask = 0,
                                                                 std::size_t parallelism = 1) {
  auto op = std::make_unique<weir::internal::interval_join_operator>(rows_of(case_select),
                                                                     std::vector<std::size_t>{0},
                                                                     std::vector<std::size_t>{0},
                                                                     lower, upper);
  op->open(context(subtask, parallelism));
  return op;
}

/// Snapshots `op` and restores it into `into` (only the key groups of
/// `into`'s range), as a restore after rescaling does.
void transfer(weir::stream_operator& op, weir::stream_operator& into,
              weir::state::key_group_range range) {
  weir::operator_snapshot snap;
  op.snapshot_state(1, snap);
  weir::operator_restore restore;
  restore.checkpoint_id = 1;
  for (std::uint16_t g = range.start; g <= range.end; ++g) {
    std::string bytes;
    snap.keyed_state->serialize_key_group(g, bytes);
    if (!bytes.empty())
      restore.key_groups.emplace_back(g, std::move(bytes));
  }
  restore.operator_states.push_back(snap.operator_state);
  into.restore_state(restore);
}

} // namespace

TEST_SUITE("interval_join") {

TEST_CASE("both bounds are inclusive by default and the pair's time is the larger (case 15)") {
  auto op = interval(-2000, 1000);
  collector out;
  op->process_batch1(batch({{"k1", 10000, "a1"}, {"k2", 10000, "a2"}}), out);
  op->process_batch2(batch({{"k1", 7999, "b1"},
                            {"k1", 8000, "b2"},
                            {"k1", 10000, "b3"},
                            {"k1", 11000, "b4"},
                            {"k3", 10000, "b6"},
                            {"k1", 11001, "b5"}}),
                     out);
  CHECK(out.rows() == std::vector<std::string>{"key=k1,left=a1,right=b2,ts=10000@10000",
                                               "key=k1,left=a1,right=b3,ts=10000@10000",
                                               "key=k1,left=a1,right=b4,ts=11000@11000"});
}

TEST_CASE("exclusive bounds are shifted by one millisecond") {
  auto op = interval(-2000 + 1, 1000 - 1);
  collector out;
  op->process_batch1(batch({{"k1", 10000, "a1"}}), out);
  op->process_batch2(batch({{"k1", 8000, "b2"}, {"k1", 10000, "b3"}, {"k1", 11000, "b4"}}), out);
  CHECK(out.rows() == std::vector<std::string>{"key=k1,left=a1,right=b3,ts=10000@10000"});
}

TEST_CASE("a right row first is joined by the left row that arrives later") {
  auto op = interval(-2000, 1000);
  collector out;
  op->process_batch2(batch({{"k", 9000, "b"}}), out);
  op->process_batch1(batch({{"k", 10000, "a"}, {"k", 11001, "late-partner"}}), out);
  CHECK(out.rows() == std::vector<std::string>{"key=k,left=a,right=b,ts=10000@10000"});
}

TEST_CASE("rows below the watermark are late, on the side's port, and match nothing") {
  auto op = interval(-2000, 1000);
  collector out;
  op->process_batch1(batch({{"k", 10000, "a"}}), out);
  op->process_watermark1(9500, out);
  op->process_watermark2(9500, out);
  CHECK(out.watermarks == std::vector<weir::event_time>{9500});
  op->process_batch2(batch({{"k", 9499, "b-late"}, {"k", 9500, "b-on-time"}}), out);
  op->process_batch1(batch({{"k", 9000, "a-late"}}), out);
  CHECK(out.rows() == std::vector<std::string>{"key=k,left=a,right=b-on-time,ts=10000@10000"});
  CHECK(out.rows(2) == std::vector<std::string>{"key=k,ts=9499,value=b-late@9499"});
  CHECK(out.rows(1) == std::vector<std::string>{"key=k,ts=9000,value=a-late@9000"});
  CHECK(op->late_records() == 2);
}

TEST_CASE("buffered rows are dropped once the watermark passes their last possible match") {
  auto op = interval(-2000, 1000);
  collector out;
  op->process_batch1(batch({{"k", 10000, "a"}}), out);
  op->process_batch2(batch({{"k", 10000, "b"}}), out);
  CHECK(op->buffered(0) == 1);
  CHECK(op->buffered(1) == 1);
  // Left a matches rights up to 11000; right b matches lefts up to 12000.
  op->process_watermark1(11000, out);
  op->process_watermark2(11000, out);
  CHECK(op->buffered(0) == 1); // a right row at 11000 is still on time
  op->process_batch2(batch({{"k", 11000, "b2"}}), out);
  CHECK(out.rows().size() == 2);
  op->process_watermark1(11001, out);
  op->process_watermark2(11001, out);
  CHECK(op->buffered(0) == 0);
  CHECK(op->buffered(1) == 2);
  op->process_watermark1(weir::max_watermark, out);
  op->process_watermark2(weir::max_watermark, out);
  CHECK(op->buffered(1) == 0);
  CHECK(op->backend().num_event_timers() == 0);
}

TEST_CASE("buffers survive a snapshot restored at another parallelism") {
  auto op = interval(-2000, 1000);
  collector out;
  std::vector<std::tuple<std::string, std::int64_t, std::string>> lefts;
  for (int k = 0; k < 40; ++k)
    lefts.emplace_back("k" + std::to_string(k), 10000, "a" + std::to_string(k));
  op->process_batch1(batch(lefts), out);
  op->process_watermark1(9000, out);
  op->process_watermark2(9000, out);
  std::size_t joined = 0;
  for (std::size_t subtask = 0; subtask < 2; ++subtask) {
    auto range = weir::state::key_group_range_for_subtask(128, 2, subtask);
    auto restored = interval(-2000, 1000, subtask, 2);
    transfer(*op, *restored, range);
    collector out2;
    // The restored watermark makes a row at 8999 late here too.
    std::vector<std::tuple<std::string, std::int64_t, std::string>> rights;
    for (int k = 0; k < 40; ++k) {
      std::string key = "k" + std::to_string(k);
      std::string enc;
      // Only the keys of this subtask's key groups reach it.
      auto one = batch({{key, 0, ""}});
      weir::encode_key(*one, std::vector<std::size_t>{0}, 0, enc);
      if (range.contains(weir::assign_key_group(enc, 128)))
        rights.emplace_back(key, 10500, "b" + std::to_string(k));
    }
    restored->process_batch2(batch(rights), out2);
    restored->process_batch2(batch({{rights.empty() ? "k0" : std::get<0>(rights[0]), 8999, "x"}}),
                             out2);
    joined += out2.rows().size();
    CHECK(out2.rows().size() == rights.size());
    CHECK(out2.rows(2).size() == 1);
  }
  CHECK(joined == 40);
}

TEST_CASE("the default row keeps the left fields and renames clashing right fields") {
  auto j = rows_of({});
  CHECK(j.output_schema()->to_string() == rows_of({}).output_schema()->to_string());
  std::vector<std::string> names;
  for (const auto& f : j.output_schema()->fields())
    names.push_back(f.name);
  CHECK(names == std::vector<std::string>{"key", "ts", "value", "right_ts", "right_value"});
  auto w = rows_of({}, true);
  CHECK(w.output_schema()->size() == 7);
  CHECK(w.output_schema()->at(5).name == "window_start");
}

TEST_CASE("a select expression that does not compile is named with its offset") {
  auto r = weir::internal::join_rows::make(side_schema, side_schema, {0},
                                           {{"ok", "left.key"}, {"bad", "right.valu + 1"}},
                                           false);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.rfind("select field 'bad': ", 0) == 0);
  CHECK(r.error().message.find("right.value") != std::string::npos); // did you mean
  auto dup = weir::internal::join_rows::make(side_schema, side_schema, {0},
                                             {{"x", "left.key"}, {"x", "right.key"}}, false);
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "select: field 'x' is named twice");
}

} // TEST_SUITE

TEST_SUITE("window_join") {

namespace {
const weir::join_select window_select = {{"key", "left.key"},
                                         {"left", "left.value"},
                                         {"right", "right.value"},
                                         {"start", "window_start"},
                                         {"end", "window_end"}};

template <class Assigner>
std::unique_ptr<weir::internal::window_join_operator> window_join(Assigner a) {
  auto op = std::make_unique<weir::internal::window_join_operator>(
    rows_of(window_select, true), std::vector<std::size_t>{0}, std::vector<std::size_t>{0},
    std::make_shared<const Assigner>(std::move(a)));
  op->open(context());
  return op;
}

void advance(weir::internal::window_join_operator& op, weir::event_time wm, collector& out) {
  op.process_watermark1(wm, out);
  op.process_watermark2(wm, out);
}
} // namespace

TEST_CASE("a tumbling window emits every pair of a key when it fires, at end - 1") {
  auto op = window_join(weir::window::tumbling_event_time_windows::make(10s).value());
  collector out;
  op->process_batch1(batch({{"a", 1000, "L1"}, {"a", 4000, "L2"}, {"b", 3000, "Lb"}}), out);
  op->process_batch2(batch({{"a", 9999, "R1"}, {"a", 10000, "R-next"}, {"c", 1, "Rc"}}), out);
  CHECK(out.rows().empty());
  advance(*op, 9998, out);
  CHECK(out.rows().empty());
  advance(*op, 9999, out);
  CHECK(out.rows() == std::vector<std::string>{
                        "key=a,left=L1,right=R1,start=0,end=10000@9999",
                        "key=a,left=L2,right=R1,start=0,end=10000@9999"});
  CHECK(op->backend().num_event_timers() == 1); // [10000, 20000) of a
}

TEST_CASE("a sliding window joins a row in each window it belongs to") {
  auto op = window_join(weir::window::sliding_event_time_windows::make(10s, 5s).value());
  collector out;
  op->process_batch1(batch({{"a", 7000, "L"}}), out);
  op->process_batch2(batch({{"a", 8000, "R"}}), out);
  advance(*op, weir::max_watermark, out);
  CHECK(out.rows() == std::vector<std::string>{"key=a,left=L,right=R,start=0,end=10000@9999",
                                               "key=a,left=L,right=R,start=5000,end=15000@14999"});
}

TEST_CASE("a row bridging two sessions merges them and their rows") {
  auto op = window_join(weir::window::event_time_session_windows::make(3s).value());
  collector out;
  op->process_batch1(batch({{"a", 1000, "L1"}}), out);  // [1000, 4000)
  op->process_batch2(batch({{"a", 6000, "R1"}}), out);  // [6000, 9000)
  op->process_batch1(batch({{"a", 3500, "L2"}}), out);  // [3500, 6500) bridges
  op->process_batch2(batch({{"a", 20000, "R2"}}), out); // a session of its own
  CHECK(op->backend().num_event_timers() == 2);
  advance(*op, 8998, out);
  CHECK(out.rows().empty());
  advance(*op, 8999, out);
  CHECK(out.rows() == std::vector<std::string>{"key=a,left=L1,right=R1,start=1000,end=9000@8999",
                                               "key=a,left=L2,right=R1,start=1000,end=9000@8999"});
  advance(*op, weir::max_watermark, out);
  CHECK(out.rows().size() == 2); // R2's session has no left row
  CHECK(op->backend().num_entries("sessions") == 0);
}

TEST_CASE("a row whose windows have all fired is late") {
  auto op = window_join(weir::window::tumbling_event_time_windows::make(10s).value());
  collector out;
  advance(*op, 10000, out);
  op->process_batch1(batch({{"a", 9999, "late"}, {"a", 10000, "on-time"}}), out);
  op->process_batch2(batch({{"a", 10001, "R"}}), out);
  advance(*op, weir::max_watermark, out);
  CHECK(out.rows(1) == std::vector<std::string>{"key=a,ts=9999,value=late@9999"});
  CHECK(out.rows().size() == 1);
  CHECK(op->late_records() == 1);
}

TEST_CASE("panes survive a snapshot and restore") {
  auto op = window_join(weir::window::tumbling_event_time_windows::make(10s).value());
  collector out;
  op->process_batch1(batch({{"a", 1000, "L1"}}), out);
  advance(*op, 500, out);
  auto restored = window_join(weir::window::tumbling_event_time_windows::make(10s).value());
  transfer(*op, *restored, weir::state::key_group_range{0, 127});
  collector out2;
  restored->process_batch2(batch({{"a", 2000, "R1"}, {"a", 400, "R0"}}), out2);
  advance(*restored, weir::max_watermark, out2);
  CHECK(out2.rows() == std::vector<std::string>{"key=a,left=L1,right=R1,start=0,end=10000@9999",
                                                "key=a,left=L1,right=R0,start=0,end=10000@9999"});
  // 400 is below the watermark but in [0, 10000), which has not fired:
  // on time for a window join (Flink's window operator checks windows only).
  CHECK(out2.rows(2).empty());
}

} // TEST_SUITE
