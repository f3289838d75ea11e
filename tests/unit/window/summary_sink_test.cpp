// SPDX-License-Identifier: Apache-2.0
#include "weir/connectors/summary_sink.hpp"

#include "window_test_support.hpp"

#include <doctest/doctest.h>

#include <sstream>
#include <string>
#include <vector>

using weir::make_summary_sink_factory;
using weir::summary_sink_spec;
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
std::string run_summary(const summary_sink_spec& spec,
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

summary_sink_spec top_paths() {
  summary_sink_spec spec;
  spec.title = "Top paths";
  spec.group_by = {"path"};
  spec.aggregates = {{"views", "sum(views)"}, {"bytes", "sum(bytes)"}};
  spec.order_by = "views";
  spec.limit = 3;
  spec.highlight_label = "errors";
  spec.highlight_where = "status >= 400";
  return spec;
}

weir::error factory_error(const summary_sink_spec& spec) {
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
  summary_sink_spec spec;
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
  summary_sink_spec spec;
  spec.aggregates = {{"hits", "count(*)"}};
  spec.highlight_where = "status = 200";
  const std::string want = "Summary\n"
                           "hits  share\n"
                           "-----------\n"
                           "status = 200: 0.0% (0 of 0)\n";
  CHECK(run_summary(spec, {}) == want);
}

TEST_CASE("the summary sink's highlight counts the first aggregate over matching rows") {
  summary_sink_spec spec;
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

} // TEST_SUITE
