// SPDX-License-Identifier: Apache-2.0
// generator::add_source, nexmark::add_source and blackhole::add_sink,
// built and run through the public API; job::from and data_stream::sink_to
// with a kind defined outside weir.
#include "api/internal/projection.hpp"
#include "kinds/sources/generator/generator.hpp"
#include "kinds/sources/nexmark/nexmark.hpp"
#include "weir/api/job.hpp"
#include "weir/blackhole/sink.hpp"
#include "weir/file/sink.hpp"
#include "weir/expr/random.hpp"

#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <unistd.h>

// A sink kind of a program's own: its spec and `add_sink` in its namespace,
// nothing in weir's headers. `sink_to` finds it by argument-dependent lookup.
namespace app {
struct counting_sink {
  std::shared_ptr<std::atomic<std::uint64_t>> rows;
  std::int64_t only_k = -1; ///< count only rows whose k is this; -1: all
};
weir::expected<std::monostate> add_sink(const weir::data_stream& in, counting_sink spec,
                                        weir::operator_options opts = {}) {
  if (!spec.rows)
    return weir::make_error(weir::errc::invalid_argument, "counting_sink needs a counter");
  return in.sink_to_callback(
    [spec](const weir::row_view& row) {
      if (spec.only_k < 0 || row.get_int("k") == spec.only_k)
        ++*spec.rows;
    },
    std::move(opts));
}
} // namespace app

// What `from` and `sink_to` accept: a kind's spec, and nothing else.
static_assert(weir::sink_spec<weir::blackhole::sink>);
static_assert(weir::sink_spec<weir::file::sink>);
static_assert(weir::sink_spec<app::counting_sink>);
static_assert(!weir::sink_spec<weir::generator::source>);
static_assert(!weir::sink_spec<std::string>);
static_assert(weir::source_spec<weir::generator::source>);
static_assert(weir::source_spec<weir::nexmark::source>);
static_assert(!weir::source_spec<weir::file::sink>);
static_assert(!weir::source_spec<int>);

TEST_SUITE("connectors") {

TEST_CASE("sink_to runs a sink kind defined outside weir and reports its errors") {
  weir::job_options opts;
  opts.parallelism = 2;
  opts.status_interval = std::chrono::milliseconds{0};
  weir::job j{opts};
  weir::generator::source g;
  g.count = 3'000;
  g.fields = {{"id", "seq"}, {"k", "seq % 3"}};
  auto src = j.from(g, {"gen", 0});
  REQUIRE(src);
  auto none = src->sink_to(app::counting_sink{}, {"none", 0});
  REQUIRE_FALSE(none);
  CHECK(none.error().message == "counting_sink needs a counter");
  auto rows = std::make_shared<std::atomic<std::uint64_t>>(0);
  REQUIRE(src->sink_to(app::counting_sink{rows, 1}, {"ones", 0}));
  auto dup = src->sink_to(app::counting_sink{rows, 1}, {"ones", 0});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "duplicate stream name 'ones'");
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.records_read == 3'000);
  CHECK(rows->load() == 1'000);
}

TEST_CASE("a generated job runs to completion and its sink receives every row") {
  for (std::size_t p : {1u, 2u}) {
    weir::job_options opts;
    opts.name = "gen";
    opts.parallelism = p;
    opts.batch_size = 100;
    opts.status_interval = std::chrono::milliseconds{0};
    weir::job j{opts};
    weir::generator::source g;
    g.count = 10'000;
    g.fields = {{"id", "seq"}, {"ts", "to_timestamp(seq)"}, {"k", "rand_int(seq, 1, 0, 3)"}};
    g.event_time_field = "ts";
    auto src = j.from(g, {"gen", 0});
    REQUIRE(src);
    auto kept = src->filter(std::string_view{"k = 0"});
    REQUIRE(kept);
    REQUIRE(kept->sink_to(weir::blackhole::sink{}, {"out", 0}));
    auto r = j.execute();
    REQUIRE_MESSAGE(r.ok, r.error);
    CHECK(r.records_read == 10'000);
    CHECK(r.records_written > 2'000);
    CHECK(r.records_written < 3'000);
  }
}

TEST_CASE("a nexmark job reads events and writes the bids") {
  weir::job_options opts;
  opts.status_interval = std::chrono::milliseconds{0};
  weir::job j{opts};
  weir::nexmark::source n;
  n.events = 5000;
  auto bids = j.from(n, {"bids", 2});
  REQUIRE(bids);
  CHECK(j.graph()->nodes[0].parallelism == 2);
  CHECK(j.graph()->nodes[0].kind == "nexmark_source");
  REQUIRE(bids->sink_to(weir::blackhole::sink{}));
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.records_read == 4600);
  CHECK(r.records_written == 4600);
}

TEST_CASE("generated sources and the blackhole reject bad specs through the API") {
  weir::job j;
  weir::generator::source g;
  g.fields = {{"a", "seq"}};
  REQUIRE(j.from(g, {"dup", 0}));
  auto dup = j.from(g, {"dup", 0});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "duplicate stream name 'dup'");
  g.fields = {{"a", "sq"}};
  auto bad = j.from(g);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "field 'a': unknown field 'sq', did you mean 'seq'?");

  weir::nexmark::source n;
  n.generator.bid_proportion = 0;
  CHECK_FALSE(j.from(n));
  n = {};
  n.rate = -3;
  CHECK_FALSE(j.from(n));

  auto s = j.stream("dup");
  REQUIRE(s);
  weir::blackhole::sink spec;
  spec.latency_field = "a";
  spec.rate = -1;
  CHECK_FALSE(s->sink_to(spec));
  spec.rate = 0;
  CHECK(s->sink_to(spec));
}

namespace {

struct vector_collector final : weir::output_collector {
  std::vector<weir::record_batch_ptr> batches;
  void collect(weir::record_batch_ptr b) override { batches.push_back(std::move(b)); }
  void collect_side(std::size_t, weir::record_batch_ptr) override {}
  void emit_watermark(weir::event_time) override {}
};

} // namespace

TEST_CASE("a projection takes the columns of a batch it alone holds, and copies otherwise") {
  // Outputs: a by name, a + c, a by name again, b by name. Only the last
  // use of a column may take it, and the expression must read it first.
  const auto in_schema = weir::make_schema(
    {{"a", weir::type_id::int64}, {"b", weir::type_id::string}, {"c", weir::type_id::int64}});
  const auto out_schema = weir::make_schema({{"x", weir::type_id::int64},
                                             {"y", weir::type_id::int64},
                                             {"z", weir::type_id::int64},
                                             {"w", weir::type_id::string}});
  auto compiled = [&](const char* text) {
    auto e = weir::expr::compile(text, *in_schema);
    REQUIRE(e);
    return *e;
  };
  std::vector<weir::internal::projection::output_column> cols;
  for (const char* text : {"a", "a + c", "a", "b"}) {
    auto e = compiled(text);
    const auto f = e.field_reference();
    cols.push_back({f ? static_cast<int>(*f) : -1, std::move(e)});
  }
  CHECK(cols[0].source == 0);
  CHECK(cols[1].source == -1);
  CHECK(cols[3].source == 1);
  weir::internal::projection proj{out_schema, std::move(cols)};
  auto make_batch = [&] {
    weir::batch_builder b{in_schema};
    for (int i = 0; i < 5; ++i) {
      b.col(0).append_int(i);
      b.col(1).append_string(std::string(static_cast<std::size_t>(i), 'q'));
      b.col(2).append_int(100 * i);
      b.commit_row();
      b.timestamps().push_back(i);
    }
    return b.finish();
  };
  auto check_output = [](const weir::record_batch& r) {
    CHECK(r.columns[0].ints == weir::buffer<std::int64_t>{0, 1, 2, 3, 4});
    CHECK(r.columns[1].ints == weir::buffer<std::int64_t>{0, 101, 202, 303, 404});
    CHECK(r.columns[2].ints == weir::buffer<std::int64_t>{0, 1, 2, 3, 4});
    CHECK(r.columns[3].str(4) == "qqqq");
    CHECK(r.timestamps == weir::buffer<weir::event_time>{0, 1, 2, 3, 4});
  };
  SUBCASE("shared: the input stays whole") {
    auto batch = make_batch();
    const auto other_holder = batch;
    vector_collector out;
    proj.process_batch(batch, out);
    REQUIRE(out.batches.size() == 1);
    check_output(*out.batches[0]);
    CHECK(batch->columns[0].ints.size() == 5);
    CHECK(batch->columns[1].str(2) == "qq");
    CHECK(batch->timestamps.size() == 5);
  }
  SUBCASE("held by the caller alone: the same output") {
    vector_collector out;
    proj.process_batch(make_batch(), out);
    REQUIRE(out.batches.size() == 1);
    check_output(*out.batches[0]);
  }
}

TEST_CASE("generated fields that nothing reads are not evaluated (projection push-down)") {
  const auto out_path = std::filesystem::temp_directory_path()
                        / ("weir-prune-" + std::to_string(::getpid()) + ".jsonl");
  auto make = [&out_path](bool sink_reads_all, bool push_down = true) {
    weir::job_options opts;
    opts.name = "prune";
    auto j = std::make_unique<weir::job>(opts);
    weir::generator::source g;
    g.count = 100;
    g.fields = {{"a", "rand_int(seq, 1, 0, 3)"}, {"b", "seq * 2"}, {"c", "rand_int(seq, 2, 0, 9)"},
                {"ts", "to_timestamp(seq)"}, {"d", "seq + 1"}};
    g.event_time_field = "ts";
    g.projection_push_down = push_down;
    auto src = j->from(g, {"gen", 0});
    REQUIRE(src);
    auto kept = src->filter(std::string_view{"a = 0"});
    REQUIRE(kept);
    if (sink_reads_all) {
      REQUIRE(kept->sink_to(weir::blackhole::sink{}, {"out", 0}));
    } else {
      auto picked = kept->select({{"twice", "b + 1"}});
      REQUIRE(picked);
      REQUIRE(picked->sink_to(weir::file::sink{out_path.string()}, {"out", 0}));
    }
    return j;
  };
  SUBCASE("a filter then a select read a and b; the event-time field is the reader's") {
    auto j = make(false);
    weir::runtime::prune_generated_fields(*j->graph());
    const auto& src = j->graph()->nodes[0];
    REQUIRE(src.needed_columns);
    CHECK(*src.needed_columns == std::vector<bool>{true, true, false, false, false});
    // The filter copies only what the select after it reads: b.
    const auto& filter = j->graph()->nodes[1];
    REQUIRE(filter.needed_columns);
    CHECK(*filter.needed_columns == std::vector<bool>{false, true, false, false, false});
    // The job still runs and gives the rows of the full computation: the
    // pruned columns come out null, nothing reads them.
    auto r = j->execute();
    CHECK(r.ok);
    std::vector<std::string> want;
    const auto mseed = weir::expr::mixed_seed(0);
    for (std::int64_t seq = 0; seq < 100; ++seq)
      if (weir::expr::random_int(weir::expr::random_word(mseed, seq, 1), 0, 3) == 0)
        want.push_back("{\"twice\":" + std::to_string(seq * 2 + 1) + "}");
    std::vector<std::string> got;
    std::ifstream in{out_path};
    for (std::string line; std::getline(in, line);)
      got.push_back(line);
    std::filesystem::remove(out_path);
    CHECK_FALSE(want.empty());
    CHECK(got == want);
  }
  SUBCASE("without projection push-down the source has no mask (whole rows), same output") {
    auto j = make(false, false);
    weir::runtime::prune_generated_fields(*j->graph());
    CHECK_FALSE(j->graph()->nodes[0].needed_columns); // every field evaluated
    auto r = j->execute();
    CHECK(r.ok);
    std::vector<std::string> want;
    const auto mseed = weir::expr::mixed_seed(0);
    for (std::int64_t seq = 0; seq < 100; ++seq)
      if (weir::expr::random_int(weir::expr::random_word(mseed, seq, 1), 0, 3) == 0)
        want.push_back("{\"twice\":" + std::to_string(seq * 2 + 1) + "}");
    std::vector<std::string> got;
    std::ifstream in{out_path};
    for (std::string line; std::getline(in, line);)
      got.push_back(line);
    std::filesystem::remove(out_path);
    CHECK_FALSE(want.empty());
    CHECK(got == want);
  }
  SUBCASE("a sink fed the filter's output reads every column") {
    auto j = make(true);
    weir::runtime::prune_generated_fields(*j->graph());
    const auto& src = j->graph()->nodes[0];
    REQUIRE(src.needed_columns);
    CHECK(src.needed_columns->empty());
  }
}

TEST_CASE("a splittable window gets a local phase chained into its input's task") {
  auto make = [](bool local, std::string late_output) {
    weir::job_options opts;
    opts.name = "two-phase";
    opts.parallelism = 2;
    auto j = std::make_unique<weir::job>(opts);
    weir::generator::source g;
    g.count = 20000;
    g.fields = {{"k", "rand_int(seq, 1, 0, 9)"}, {"v", "rand_int(seq, 2, 0, 99)"},
                {"ts", "to_timestamp(seq)"}};
    g.event_time_field = "ts";
    auto src = j->from(g, {"gen", 0});
    REQUIRE(src);
    auto keyed = src->key_by({"k"});
    REQUIRE(keyed);
    weir::window_options w;
    w.local_aggregation = local;
    w.late_output = std::move(late_output);
    auto win = keyed->window(
      std::make_shared<const weir::window::tumbling_event_time_windows>(
        *weir::window::tumbling_event_time_windows::make(std::chrono::milliseconds{1000})),
      {{"n", "count(*)"}, {"total", "sum(v)"}}, w, {"per_k", 0});
    REQUIRE(win);
    REQUIRE(win->sink_to(weir::blackhole::sink{}, {"out", 0}));
    return j;
  };
  SUBCASE("when asked: source -> per_k/local (chained) -> hash on the partial key -> per_k") {
    auto j = make(true, "");
    const auto& g = *j->graph();
    REQUIRE(g.nodes.size() == 4);
    CHECK(g.nodes[1].kind == "local_window_aggregate");
    CHECK(g.nodes[1].name == "per_k/local");
    CHECK(g.nodes[1].parallelism == g.nodes[0].parallelism);
    REQUIRE(g.nodes[1].reads);
    CHECK(*g.nodes[1].reads == std::vector<std::size_t>{0, 1}); // k, v (not ts)
    CHECK(g.nodes[2].kind == "window");
    const auto plan = weir::runtime::build_execution_plan(g);
    for (std::size_t e = 0; e < g.edges.size(); ++e) {
      const auto& edge = g.edges[e];
      if (edge.target == 1)
        CHECK(plan.edge_is_chained[e]);
      if (edge.target == 2) {
        CHECK(edge.mode == weir::runtime::partitioning::hash);
        CHECK(edge.key_fields == std::vector<std::size_t>{0});
      }
    }
    // The generator evaluates only what the local phase reads (its event
    // time is computed for the timestamps either way).
    weir::runtime::prune_generated_fields(*j->graph());
    REQUIRE(g.nodes[0].needed_columns);
    CHECK(*g.nodes[0].needed_columns == std::vector<bool>{true, true, false});
    auto r = j->execute();
    CHECK(r.ok);
  }
  SUBCASE("not by default, nor with a late output (late records must stay routable)") {
    CHECK_FALSE(weir::window_options{}.local_aggregation);
    for (auto [local, late] : {std::pair{false, std::string{}}, std::pair{true, std::string{"late"}}}) {
      auto j = make(local, late);
      const auto& g = *j->graph();
      CHECK(g.nodes.size() == 3);
      for (const auto& n : g.nodes)
        CHECK(n.kind != "local_window_aggregate");
    }
  }
}
}
