// SPDX-License-Identifier: Apache-2.0
#include "weir/summary/sink.hpp"

#include "window_test_support.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

using weir::make_summary_sink_factory;
namespace summary = weir::summary;
using weir::type_id;
using weir::test::make_batch;
using weir::test::recording_collector;

namespace {

weir::schema_ptr hits_schema() {
  return weir::make_schema({{"path", type_id::string},
                            {"views", type_id::int64},
                            {"status", type_id::int64},
                            {"bytes", type_id::int64}});
}

// Runs a summary sink over `batches` and returns what it printed.
std::string run_summary(const summary::sink& spec,
                        const std::vector<weir::record_batch_ptr>& batches) {
  std::ostringstream os;
  auto factory = make_summary_sink_factory(hits_schema(), spec, os);
  REQUIRE_MESSAGE(factory, (factory ? "" : factory.error().message));
  auto op = (*factory)();
  recording_collector out;
  for (const auto& b : batches)
    op->process_batch(b, out);
  CHECK(os.str().empty()); // nothing before finish
  op->process_watermark(weir::max_watermark, out);
  op->finish(out);
  return os.str();
}

std::vector<weir::record_batch_ptr> sample_input() {
  auto s = hits_schema();
  return {make_batch(s, {{"/a", 5, 200, 100}, {"/b", 3, 404, 10}}, {1, 2}),
          make_batch(s,
                     {{"/a", 2, 500, 50}, {"/c", 1, 200, std::monostate{}}, {"/d", 3, 200, 7}},
                     {3, 4, 5})};
}

summary::sink top_paths() {
  summary::sink spec;
  spec.title = "Top paths";
  spec.group_by = {"path"};
  spec.aggregates = {{"views", "sum(views)"}, {"bytes", "sum(bytes)"}};
  spec.order_by = "views";
  spec.limit = 3;
  spec.highlight_label = "errors";
  spec.highlight_where = "status >= 400";
  return spec;
}

// Aggregates of every accumulator shape: sums (int, float), counts, min/max
// over strings, avg, count_distinct (a set), first/last.
summary::sink every_kind() {
  summary::sink spec;
  spec.title = "Every kind";
  spec.group_by = {"status"};
  spec.aggregates = {{"hits", "count(*)"},
                     {"views", "sum(views)"},
                     {"half", "sum(views / 2.0)"},
                     {"sized", "count(bytes)"},
                     {"lowest", "min(path)"},
                     {"highest", "max(bytes)"},
                     {"mean", "avg(bytes)"},
                     {"paths", "count_distinct(path)"},
                     {"first_path", "first(path)"},
                     {"last_path", "last(path)"}};
  spec.order_by = "status";
  spec.ascending = true;
  spec.limit = 0;
  spec.highlight_label = "errors";
  spec.highlight_where = "status >= 400";
  return spec;
}

// Three batches with groups that recur across them.
std::vector<weir::record_batch_ptr> long_input() {
  auto s = hits_schema();
  return {make_batch(s, {{"/a", 5, 200, 100}, {"/b", 3, 404, 10}, {"/x", 1, 200, 3}}, {1, 2, 3}),
          make_batch(s,
                     {{"/a", 2, 500, 50}, {"/c", 1, 200, std::monostate{}}, {"/d", 3, 200, 7}},
                     {4, 5, 6}),
          make_batch(s, {{"/e", 4, 404, 1}, {"/a", 6, 200, 900}, {"/b", 2, 500, 20}},
                     {7, 8, 9})};
}

// A summary sink writing to `os`.
weir::stream_operator_ptr make_sink(const summary::sink& spec, std::ostream& os) {
  auto factory = make_summary_sink_factory(hits_schema(), spec, os);
  REQUIRE_MESSAGE(factory, (factory ? "" : factory.error().message));
  auto op = (*factory)();
  op->open(weir::operator_context{"summary", 0, 1, 128});
  return op;
}

// The operator state a sink fed `batches` writes at checkpoint `id`.
std::string state_after(const summary::sink& spec,
                        const std::vector<weir::record_batch_ptr>& batches,
                        std::uint64_t id = 1) {
  std::ostringstream os;
  auto op = make_sink(spec, os);
  recording_collector out;
  for (const auto& b : batches)
    op->process_batch(b, out);
  weir::operator_snapshot snap;
  op->snapshot_state(id, snap);
  CHECK_FALSE(snap.operator_state.empty());
  CHECK(snap.keyed_state == nullptr);
  return snap.operator_state;
}

// Restores `states` into a fresh sink, feeds it `batches` and returns what it
// printed.
std::string restore_and_run(const summary::sink& spec, std::vector<std::string> states,
                            const std::vector<weir::record_batch_ptr>& batches) {
  std::ostringstream os;
  auto op = make_sink(spec, os);
  weir::operator_restore in;
  in.checkpoint_id = 1;
  in.operator_states = std::move(states);
  op->restore_state(in);
  recording_collector out;
  for (const auto& b : batches)
    op->process_batch(b, out);
  op->process_watermark(weir::max_watermark, out);
  op->finish(out);
  return os.str();
}

weir::error factory_error(const summary::sink& spec) {
  auto f = make_summary_sink_factory(hits_schema(), spec);
  REQUIRE_FALSE(f);
  return f.error();
}

} // namespace

TEST_SUITE("window") {

TEST_CASE("the summary sink prints an aligned table with shares, a cut note and a highlight") {
  const std::string want = "Top paths\n"
                           "path  views  bytes  share\n"
                           "-------------------------\n"
                           "/a        7    150  50.0%\n"
                           "/b        3     10  21.4%\n"
                           "/d        3      7  21.4%\n"
                           "(1 more row)\n"
                           "errors: 35.7% (5 of 14)\n";
  CHECK(run_summary(top_paths(), sample_input()) == want);
}

TEST_CASE("the summary sink sorts ascending on request and shows every row with limit 0") {
  auto spec = top_paths();
  spec.ascending = true;
  spec.limit = 0;
  spec.highlight_where.clear();
  spec.order_by = "bytes";
  const std::string want = "Top paths\n"
                           "path  views  bytes  share\n"
                           "-------------------------\n"
                           "/d        3      7  21.4%\n"
                           "/b        3     10  21.4%\n"
                           "/a        7    150  50.0%\n"
                           "/c        1   null   7.1%\n";
  CHECK(run_summary(spec, sample_input()) == want);
}

TEST_CASE("the summary sink orders by a group field and omits share for a non-additive first aggregate") {
  summary::sink spec;
  spec.title = "Status";
  spec.group_by = {"status"};
  spec.aggregates = {{"mean_bytes", "avg(bytes)"}, {"hits", "count(*)"}};
  spec.order_by = "status";
  spec.ascending = true;
  const std::string want = "Status\n"
                           "status  mean_bytes  hits\n"
                           "------------------------\n"
                           "   200       53.50     3\n"
                           "   404       10.00     1\n"
                           "   500       50.00     1\n";
  CHECK(run_summary(spec, sample_input()) == want);
}

TEST_CASE("the summary sink with no group fields and no input prints an empty table") {
  summary::sink spec;
  spec.aggregates = {{"hits", "count(*)"}};
  spec.highlight_where = "status = 200";
  const std::string want = "Summary\n"
                           "hits  share\n"
                           "-----------\n"
                           "status = 200: 0.0% (0 of 0)\n";
  CHECK(run_summary(spec, {}) == want);
}

TEST_CASE("the summary sink's highlight counts the first aggregate over matching rows") {
  summary::sink spec;
  spec.group_by = {"path"};
  spec.aggregates = {{"hits", "count(*)"}};
  spec.highlight_label = "ok";
  spec.highlight_where = "status = 200 and bytes is not null";
  auto text = run_summary(spec, sample_input());
  CHECK(text.find("ok: 40.0% (2 of 5)\n") != std::string::npos);
}

TEST_CASE("make_summary_sink_factory rejects bad specs with a precise message") {
  SUBCASE("unknown group field") {
    auto spec = top_paths();
    spec.group_by = {"pth"};
    auto e = factory_error(spec);
    CHECK(e.code == weir::errc::invalid_argument);
    CHECK(e.message.find("unknown group_by field 'pth'") != std::string::npos);
  }
  SUBCASE("no aggregate") {
    auto spec = top_paths();
    spec.aggregates.clear();
    CHECK(factory_error(spec).message.find("at least one aggregate") != std::string::npos);
  }
  SUBCASE("aggregate that does not type-check") {
    auto spec = top_paths();
    spec.aggregates = {{"views", "sum(path)"}};
    auto e = factory_error(spec);
    CHECK(e.code == weir::errc::type_error);
    CHECK(e.offset == 4);
    CHECK(e.message.find("aggregate 'views': sum needs a number, got string")
          != std::string::npos);
  }
  SUBCASE("aggregate named like a group field") {
    auto spec = top_paths();
    spec.aggregates = {{"path", "count(*)"}};
    spec.order_by.clear();
    CHECK(factory_error(spec).message.find("name of a group_by field") != std::string::npos);
  }
  SUBCASE("order_by naming nothing") {
    auto spec = top_paths();
    spec.order_by = "hits";
    auto e = factory_error(spec);
    CHECK(e.message.find("order_by 'hits'") != std::string::npos);
    CHECK(e.message.find("views, bytes") != std::string::npos);
  }
  SUBCASE("highlight that is not boolean") {
    auto spec = top_paths();
    spec.highlight_where = "status + 1";
    auto e = factory_error(spec);
    CHECK(e.code == weir::errc::type_error);
    CHECK(e.message.find("boolean") != std::string::npos);
  }
  SUBCASE("highlight that does not compile keeps its offset") {
    auto spec = top_paths();
    spec.highlight_where = "status >= nosuch";
    auto e = factory_error(spec);
    CHECK(e.offset == 10);
    CHECK(e.message.find("highlight_where") != std::string::npos);
  }
  SUBCASE("highlight over a non-additive first aggregate") {
    auto spec = top_paths();
    spec.aggregates = {{"top", "max(views)"}};
    spec.order_by = "top";
    CHECK(factory_error(spec).message.find("count or a sum") != std::string::npos);
  }
}

TEST_CASE("a summary sink restored from its checkpoint prints the table of an uninterrupted run") {
  for (const auto& spec : {every_kind(), top_paths()}) {
    CAPTURE(spec.title);
    const auto all = long_input();
    const std::string want = run_summary(spec, all);
    CHECK(want.find("errors: ") != std::string::npos);
    // Checkpoint after each prefix of the input, restore, feed the rest.
    for (std::size_t cut = 0; cut <= all.size(); ++cut) {
      CAPTURE(cut);
      const std::vector<weir::record_batch_ptr> before(all.begin(), all.begin() + cut);
      const std::vector<weir::record_batch_ptr> after(all.begin() + cut, all.end());
      CHECK(restore_and_run(spec, {state_after(spec, before)}, after) == want);
    }
  }
}

TEST_CASE("a summary sink's state survives two restores and the snapshot leaves the sink unchanged") {
  const auto spec = every_kind();
  const auto all = long_input();
  const std::string want = run_summary(spec, all);

  std::ostringstream os1;
  auto first = make_sink(spec, os1);
  recording_collector out;
  first->process_batch(all[0], out);
  weir::operator_snapshot snap1;
  first->snapshot_state(1, snap1);
  // The first sink keeps going after its snapshot, to the same end.
  first->process_batch(all[1], out);
  first->process_batch(all[2], out);
  first->finish(out);
  CHECK(os1.str() == want);

  std::ostringstream os2;
  auto second = make_sink(spec, os2);
  second->restore_state(weir::operator_restore{1, {}, {snap1.operator_state}, {}, 0});
  second->process_batch(all[1], out);
  weir::operator_snapshot snap2;
  second->snapshot_state(2, snap2);
  CHECK(snap2.operator_state != snap1.operator_state);

  CHECK(restore_and_run(spec, {snap2.operator_state}, {all[2]}) == want);
}

TEST_CASE("two subtasks' summary states restored into one subtask merge group by group") {
  const auto spec = every_kind();
  const auto all = long_input();
  // Subtask 0 saw batch 0 and 2, subtask 1 saw batch 1; /a, /b and the
  // status groups recur in both.
  const auto s0 = state_after(spec, {all[0], all[2]});
  const auto s1 = state_after(spec, {all[1]});
  // first/last are merged by arrival order, which only one subtask knows:
  // compare them only where one subtask holds every row of a group.
  auto spec_no_order = spec;
  spec_no_order.aggregates.resize(spec.aggregates.size() - 2);
  const auto a0 = state_after(spec_no_order, {all[0], all[2]});
  const auto a1 = state_after(spec_no_order, {all[1]});
  const std::string want = run_summary(spec_no_order, all);
  CHECK(restore_and_run(spec_no_order, {a0, a1}, {}) == want);
  CHECK(restore_and_run(spec_no_order, {a1, a0}, {}) == want);
  // With first/last: the merged table has every group, the right totals
  // and, for status 404 (seen by subtask 0 alone), the very row.
  const auto full = run_summary(spec, all);
  const auto merged = restore_and_run(spec, {s0, s1}, {});
  CHECK(merged.size() == full.size());
  CHECK(full.find("errors: 44.4% (4 of 9)\n") != std::string::npos);
  CHECK(merged.find("errors: 44.4% (4 of 9)\n") != std::string::npos);
  const auto at_404 = full.find("\n   404");
  const auto row_404 = full.substr(at_404, full.find('\n', at_404 + 1) - at_404);
  CHECK(row_404.size() > 20);
  CHECK(merged.find(row_404) != std::string::npos);
  // Restored rows and new rows add up as well.
  CHECK(restore_and_run(spec_no_order, {a1}, {all[0], all[2]}) == want);
}

TEST_CASE("a summary sink restored with no state prints what a fresh sink prints") {
  const auto spec = top_paths();
  const auto all = long_input();
  CHECK(restore_and_run(spec, {}, all) == run_summary(spec, all));
  CHECK(restore_and_run(spec, {""}, all) == run_summary(spec, all));
}

TEST_CASE("a summary sink refuses a malformed state or one of another shape") {
  const auto spec = top_paths();
  const auto good = state_after(spec, long_input());
  std::ostringstream os;
  auto restore = [&](const summary::sink& sp, std::string bytes) -> std::string {
    auto op = make_sink(sp, os);
    try {
      op->restore_state(weir::operator_restore{7, {}, {std::move(bytes)}, {}, 0});
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  SUBCASE("truncated") {
    for (std::size_t n : {std::size_t{1}, good.size() / 2, good.size() - 1}) {
      auto msg = restore(spec, good.substr(0, n));
      CHECK(msg.find("summary sink: cannot restore the state of checkpoint 7") == 0);
    }
  }
  SUBCASE("trailing bytes") {
    CHECK(restore(spec, good + "x").find("1 trailing bytes") != std::string::npos);
  }
  SUBCASE("not a summary state") {
    CHECK(restore(spec, "weir-2pc-file-sink v1\nsubtask 0\npending\n").find(
            "not a summary sink state")
          != std::string::npos);
  }
  SUBCASE("another aggregate function") {
    auto other = spec;
    other.aggregates = {{"views", "sum(views)"}, {"bytes", "max(bytes)"}};
    auto msg = restore(other, good);
    CHECK(msg.find("other columns or aggregates") != std::string::npos);
    CHECK(msg.find("max") != std::string::npos);
  }
  SUBCASE("another group field") {
    auto other = spec;
    other.group_by = {"status"};
    CHECK(restore(other, good).find("other columns or aggregates") != std::string::npos);
  }
  SUBCASE("a failed restore leaves the sink empty") {
    std::ostringstream out_text;
    auto op = make_sink(spec, out_text);
    CHECK_THROWS_AS(
      op->restore_state(weir::operator_restore{7, {}, {good.substr(0, good.size() - 3)}, {}, 0}),
      std::runtime_error);
    recording_collector out;
    op->finish(out);
    CHECK(out_text.str() == run_summary(spec, {}));
  }
}

} // TEST_SUITE
