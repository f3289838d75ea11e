// SPDX-License-Identifier: Apache-2.0
#include "weir/connectors/blackhole_sink.hpp"

#include "weir/expr/random.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <string>

using weir::latency_histogram;
using weir::row_hasher;
using weir::type_id;

namespace {

struct null_collector final : weir::output_collector {
  std::size_t batches = 0;
  void collect(weir::record_batch_ptr) override { ++batches; }
  void collect_side(std::size_t, weir::record_batch_ptr) override { ++batches; }
  void emit_watermark(weir::event_time) override {}
};

weir::schema_ptr test_schema() {
  return weir::make_schema({{"id", type_id::int64},
                            {"score", type_id::float64},
                            {"name", type_id::string},
                            {"gen_ns", type_id::int64}});
}

weir::record_batch_ptr batch_of(std::initializer_list<std::int64_t> ids, std::int64_t gen_ns) {
  weir::batch_builder b{test_schema()};
  for (auto id : ids) {
    b.col(0).append_int(id);
    b.col(1).append_float(static_cast<double>(id) / 2);
    if (id % 3 == 0)
      b.col(2).append_null();
    else
      b.col(2).append_string("row " + std::to_string(id));
    b.col(3).append_int(gen_ns);
    b.commit_row();
  }
  return b.finish();
}

/// Runs a blackhole over `batches` and returns its report line.
template <class... Batches>
std::string run_sink(const weir::blackhole_sink_spec& spec, Batches... batches) {
  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  auto factory = weir::make_blackhole_sink_factory(test_schema(), spec, f);
  REQUIRE(factory);
  auto op = (*factory)();
  op->open(weir::operator_context{"sink", 0, 1, 128});
  null_collector out;
  (op->process_batch(batches, out), ...);
  op->finish(out);
  CHECK(out.batches == 0);
  std::rewind(f);
  std::string text;
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, f))
    text.append(buf, n);
  std::fclose(f);
  return text;
}

std::string field(const std::string& json, const std::string& key) {
  auto at = json.find("\"" + key + "\":");
  REQUIRE_MESSAGE(at != std::string::npos, key << " in " << json);
  auto start = at + key.size() + 3;
  auto end = json.find_first_of(",}", start);
  return json.substr(start, end - start);
}

} // namespace

TEST_SUITE("connectors") {

TEST_CASE("the row hash is pinned: bench/flink's Java port computes the same") {
  row_hasher h;
  h.add_int(7);
  h.add_float(2.5);
  h.add_string("nexmark rows");
  h.add_int(-1);
  CHECK(h.finish() == 0x49f14292fc677e54ULL);
  row_hasher empty;
  CHECK(empty.finish() == weir::expr::mix64(0x243F6A8885A308D3ULL));
}

TEST_CASE("a string hashes its length and its bytes, so column boundaries matter") {
  row_hasher a, b, c;
  a.add_string("ab");
  a.add_string("c");
  b.add_string("a");
  b.add_string("bc");
  c.add_string("ab");
  c.add_string("c");
  CHECK(a.finish() != b.finish());
  CHECK(a.finish() == c.finish());
  row_hasher nul, zero;
  nul.add_null();
  zero.add_int(0);
  CHECK(nul.finish() != zero.finish());
}

TEST_CASE("a blackhole reports rows and a digest that ignores batch boundaries and order") {
  weir::blackhole_sink_spec spec;
  spec.digest = true;
  auto one = run_sink(spec, batch_of({1, 2, 3, 4, 5}, 0));
  auto two = run_sink(spec, batch_of({4, 2}, 0), batch_of({5, 1, 3}, 0));
  auto other = run_sink(spec, batch_of({1, 2, 3, 4, 6}, 0));
  CHECK(field(one, "rows") == "5");
  CHECK(field(one, "blackhole") == "\"sink\"");
  CHECK(field(one, "subtask") == "0");
  CHECK(field(one, "digest") == field(two, "digest"));
  CHECK(field(one, "digest") != field(other, "digest"));
  std::uint64_t sum = 0;
  auto b = batch_of({1, 2, 3, 4, 5}, 0);
  for (std::size_t r = 0; r < b->num_rows; ++r)
    sum += weir::row_hash(*b, r);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(sum));
  CHECK(field(one, "digest") == "\"" + std::string{hex} + "\"");
}

TEST_CASE("a blackhole prints nothing unless asked to report") {
  CHECK(run_sink(weir::blackhole_sink_spec{}, batch_of({1, 2}, 0)).empty());
  weir::blackhole_sink_spec report;
  report.report = true;
  auto line = run_sink(report, batch_of({1, 2}, 0));
  CHECK(field(line, "rows") == "2");
  CHECK(line.find("digest") == std::string::npos);
  CHECK(line.back() == '\n');
}

TEST_CASE("a blackhole measures latency from a generation-time field") {
  weir::blackhole_sink_spec spec;
  spec.latency_field = "gen_ns";
  // Generated "now" minus 2 ms and minus 1 s: arrival is later than both.
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                     std::chrono::steady_clock::now().time_since_epoch())
                     .count();
  auto line = run_sink(spec, batch_of({1, 2, 3}, now - 2'000'000), batch_of({4}, now - 1'000'000'000));
  CHECK(field(line, "count") == "4");
  CHECK(std::stoll(field(line, "p50_ns")) >= 2'000'000 * 31 / 32);
  CHECK(std::stoll(field(line, "max_ns")) >= 1'000'000'000);
  CHECK(line.find("\"hist\":[[") != std::string::npos);
}

TEST_CASE("blackhole factory errors: a latency field that is not int64, a negative rate") {
  weir::blackhole_sink_spec spec;
  spec.latency_field = "name";
  auto r = weir::make_blackhole_sink_factory(test_schema(), spec);
  REQUIRE_FALSE(r);
  CHECK(r.error().message
        == "blackhole: latency_field 'name' must be an int64 field of ns, got string");
  spec.latency_field = "nope";
  CHECK(weir::make_blackhole_sink_factory(test_schema(), spec).error().message.rfind(
          "blackhole: latency_field 'nope' is not a field of the input", 0) == 0);
  weir::blackhole_sink_spec slow;
  slow.rate = -1;
  CHECK(weir::make_blackhole_sink_factory(test_schema(), slow).error().code
        == weir::errc::invalid_argument);
}

TEST_CASE("latency histogram buckets bound values within 1/32 and quantiles follow ranks") {
  for (std::uint64_t v : {0ULL, 1ULL, 31ULL, 32ULL, 33ULL, 1000ULL, 123456789ULL, 1ULL << 62}) {
    const auto b = latency_histogram::bucket_of(v);
    const auto upper = latency_histogram::upper_bound(b);
    CHECK(static_cast<std::uint64_t>(upper) >= v);
    CHECK(static_cast<double>(upper) <= static_cast<double>(v) * (1 + 1.0 / 32) + 1);
    if (b > 0)
      CHECK(static_cast<std::uint64_t>(latency_histogram::upper_bound(b - 1)) < v);
  }
  latency_histogram h;
  CHECK(h.quantile(0.5) == 0);
  for (int i = 1; i <= 1000; ++i)
    h.add(i * 1000);
  h.add(-5); // a clock that went backwards counts as 0
  CHECK(h.count() == 1001);
  CHECK(h.quantile(0.5) >= 500'000);
  CHECK(h.quantile(0.5) <= 500'000 * 33 / 32);
  CHECK(h.quantile(0.99) >= 990'000 * 31 / 32);
  CHECK(h.quantile(1.0) == 1'000'000);
  CHECK(h.max() == 1'000'000);
}
}
