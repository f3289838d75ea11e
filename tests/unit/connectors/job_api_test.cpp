// SPDX-License-Identifier: Apache-2.0
// job::from_generator, job::from_nexmark and data_stream::sink_to_blackhole,
// built and run through the public API.
#include "weir/api/job.hpp"

#include "weir/runtime/job_graph.hpp"

#include <doctest/doctest.h>

#include <cstdio>

TEST_SUITE("connectors") {

TEST_CASE("a generated job runs to completion and its sink receives every row") {
  for (std::size_t p : {1u, 2u}) {
    weir::job_options opts;
    opts.name = "gen";
    opts.parallelism = p;
    opts.batch_size = 100;
    opts.status_interval = std::chrono::milliseconds{0};
    weir::job j{opts};
    weir::generator_source_spec g;
    g.count = 10'000;
    g.fields = {{"id", "seq"}, {"ts", "to_timestamp(seq)"}, {"k", "rand_int(seq, 1, 0, 3)"}};
    g.event_time_field = "ts";
    auto src = j.from_generator(g, {"gen", 0});
    REQUIRE(src);
    auto kept = src->filter(std::string_view{"k = 0"});
    REQUIRE(kept);
    REQUIRE(kept->sink_to_blackhole({}, {"out", 0}));
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
  weir::nexmark_source_spec n;
  n.events = 5000;
  auto bids = j.from_nexmark(n, {"bids", 2});
  REQUIRE(bids);
  CHECK(j.graph()->nodes[0].parallelism == 2);
  CHECK(j.graph()->nodes[0].kind == "nexmark_source");
  REQUIRE(bids->sink_to_blackhole());
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.records_read == 4600);
  CHECK(r.records_written == 4600);
}

TEST_CASE("generated sources and the blackhole reject bad specs through the API") {
  weir::job j;
  weir::generator_source_spec g;
  g.fields = {{"a", "seq"}};
  REQUIRE(j.from_generator(g, {"dup", 0}));
  auto dup = j.from_generator(g, {"dup", 0});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message == "duplicate stream name 'dup'");
  g.fields = {{"a", "sq"}};
  auto bad = j.from_generator(g);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "field 'a': unknown field 'sq', did you mean 'seq'?");

  weir::nexmark_source_spec n;
  n.generator.bid_proportion = 0;
  CHECK_FALSE(j.from_nexmark(n));
  n = {};
  n.rate = -3;
  CHECK_FALSE(j.from_nexmark(n));

  auto s = j.stream("dup");
  REQUIRE(s);
  weir::blackhole_sink_spec spec;
  spec.latency_field = "a";
  spec.rate = -1;
  CHECK_FALSE(s->sink_to_blackhole(spec));
  spec.rate = 0;
  CHECK(s->sink_to_blackhole(spec));
}

TEST_CASE("generated fields that nothing reads are not evaluated (projection push-down)") {
  auto make = [](bool sink_reads_all) {
    weir::job_options opts;
    opts.name = "prune";
    auto j = std::make_unique<weir::job>(opts);
    weir::generator_source_spec g;
    g.count = 100;
    g.fields = {{"a", "rand_int(seq, 1, 0, 3)"}, {"b", "seq * 2"}, {"c", "rand_int(seq, 2, 0, 9)"},
                {"ts", "to_timestamp(seq)"}, {"d", "seq + 1"}};
    g.event_time_field = "ts";
    auto src = j->from_generator(g, {"gen", 0});
    REQUIRE(src);
    auto kept = src->filter(std::string_view{"a = 0"});
    REQUIRE(kept);
    if (sink_reads_all) {
      REQUIRE(kept->sink_to_blackhole({}, {"out", 0}));
    } else {
      auto picked = kept->select({{"twice", "b + 1"}});
      REQUIRE(picked);
      REQUIRE(picked->sink_to_blackhole({}, {"out", 0}));
    }
    return j;
  };
  SUBCASE("a filter then a select read a and b; the event-time field is the reader's") {
    auto j = make(false);
    weir::runtime::prune_generated_fields(*j->graph());
    const auto& src = j->graph()->nodes[0];
    REQUIRE(src.needed_columns);
    CHECK(*src.needed_columns == std::vector<bool>{true, true, false, false, false});
    // The job still runs: the pruned columns come out null, nothing reads them.
    auto r = j->execute();
    CHECK(r.ok);
  }
  SUBCASE("a sink fed the filter's output reads every column") {
    auto j = make(true);
    weir::runtime::prune_generated_fields(*j->graph());
    const auto& src = j->graph()->nodes[0];
    REQUIRE(src.needed_columns);
    CHECK(src.needed_columns->empty());
  }
}
}
