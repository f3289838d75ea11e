// SPDX-License-Identifier: Apache-2.0
#include "weir/blackhole/sink.hpp"

#include "weir/expr/random.hpp"
#include "weir/state/codec.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

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
std::string run_sink(const weir::blackhole::sink& spec, Batches... batches) {
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

std::string read_all(std::FILE* f) {
  std::rewind(f);
  std::string text;
  char buf[4096];
  while (auto n = std::fread(buf, 1, sizeof buf, f))
    text.append(buf, n);
  return text;
}

/// A blackhole subtask that writes its report to a temporary file.
struct sink_run {
  std::FILE* file = std::tmpfile();
  weir::stream_operator_ptr op;
  null_collector out;

  explicit sink_run(const weir::blackhole::sink& spec, std::size_t subtask = 0,
                    std::size_t parallelism = 1) {
    REQUIRE(file);
    auto factory = weir::make_blackhole_sink_factory(test_schema(), spec, file);
    REQUIRE(factory);
    op = (*factory)();
    op->open(weir::operator_context{"sink", subtask, parallelism, 128});
  }
  sink_run(const sink_run&) = delete;
  sink_run& operator=(const sink_run&) = delete;
  ~sink_run() { std::fclose(file); }

  void feed(const std::vector<weir::record_batch_ptr>& batches) {
    for (const auto& b : batches)
      op->process_batch(b, out);
  }
  std::string snapshot(std::uint64_t id = 1) {
    weir::operator_snapshot snap;
    op->snapshot_state(id, snap);
    CHECK(snap.keyed_state == nullptr);
    return snap.operator_state;
  }
  void restore(std::vector<std::string> states, std::uint64_t id = 1) {
    op->restore_state(weir::operator_restore{id, {}, std::move(states), {}, 0});
  }
  std::string report() {
    op->finish(out);
    return read_all(file);
  }
};

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
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
  weir::blackhole::sink spec;
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
  CHECK(run_sink(weir::blackhole::sink{}, batch_of({1, 2}, 0)).empty());
  weir::blackhole::sink report;
  report.report = true;
  auto line = run_sink(report, batch_of({1, 2}, 0));
  CHECK(field(line, "rows") == "2");
  CHECK(line.find("digest") == std::string::npos);
  CHECK(line.back() == '\n');
}

TEST_CASE("a blackhole measures latency from a generation-time field") {
  weir::blackhole::sink spec;
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
  weir::blackhole::sink spec;
  spec.latency_field = "name";
  auto r = weir::make_blackhole_sink_factory(test_schema(), spec);
  REQUIRE_FALSE(r);
  CHECK(r.error().message
        == "blackhole: latency_field 'name' must be an int64 field of ns, got string");
  spec.latency_field = "nope";
  CHECK(weir::make_blackhole_sink_factory(test_schema(), spec).error().message.rfind(
          "blackhole: latency_field 'nope' is not a field of the input", 0) == 0);
  weir::blackhole::sink slow;
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

TEST_CASE("a restored blackhole reports the rows, digest and latency count of an uninterrupted run") {
  weir::blackhole::sink spec;
  spec.digest = true;
  spec.latency_field = "gen_ns";
  const auto t = steady_ns();
  const std::vector<weir::record_batch_ptr> all{batch_of({1, 2, 3}, t), batch_of({4, 5}, t),
                                                batch_of({6, 7, 8, 9}, t - 1'000'000)};
  sink_run whole{spec};
  whole.feed(all);
  const auto want = whole.report();
  REQUIRE(field(want, "rows") == "9");

  for (std::size_t cut = 0; cut <= all.size(); ++cut) {
    CAPTURE(cut);
    sink_run before{spec};
    before.feed({all.begin(), all.begin() + static_cast<std::ptrdiff_t>(cut)});
    const auto state = before.snapshot();
    sink_run after{spec};
    after.restore({state});
    after.feed({all.begin() + static_cast<std::ptrdiff_t>(cut), all.end()});
    const auto got = after.report();
    CHECK(field(got, "rows") == "9");
    CHECK(field(got, "digest") == field(want, "digest"));
    CHECK(field(got, "count") == "9");
    // The 1 ms old rows were measured before or after the restore.
    CHECK(std::stoll(field(got, "max_ns")) >= 1'000'000);
  }
}

TEST_CASE("a blackhole's snapshot leaves it unchanged and a second restore adds on") {
  weir::blackhole::sink spec;
  spec.digest = true;
  sink_run whole{spec};
  whole.feed({batch_of({1, 2}, 0), batch_of({3}, 0), batch_of({4, 5, 6}, 0)});
  const auto want = whole.report();

  sink_run first{spec};
  first.feed({batch_of({1, 2}, 0)});
  const auto s1 = first.snapshot(1);
  first.feed({batch_of({3}, 0), batch_of({4, 5, 6}, 0)});
  CHECK(field(first.report(), "digest") == field(want, "digest"));

  sink_run second{spec};
  second.restore({s1}, 1);
  second.feed({batch_of({3}, 0)});
  const auto s2 = second.snapshot(2);
  CHECK(s2 != s1);
  sink_run third{spec};
  third.restore({s2}, 2);
  third.feed({batch_of({4, 5, 6}, 0)});
  const auto got = third.report();
  CHECK(field(got, "rows") == "6");
  CHECK(field(got, "digest") == field(want, "digest"));
}

TEST_CASE("two blackhole subtasks' states restored into one subtask add up") {
  weir::blackhole::sink spec;
  spec.digest = true;
  spec.latency_field = "gen_ns";
  const auto t = steady_ns();
  sink_run whole{spec};
  whole.feed({batch_of({1, 2, 3}, t), batch_of({4, 5}, t), batch_of({6}, t)});
  const auto want = whole.report();

  sink_run sub0{spec, 0, 2};
  sink_run sub1{spec, 1, 2};
  sub0.feed({batch_of({1, 2, 3}, t)});
  sub1.feed({batch_of({4, 5}, t)});
  sink_run merged{spec, 0, 1};
  merged.restore({sub0.snapshot(), sub1.snapshot()});
  merged.feed({batch_of({6}, t)});
  const auto got = merged.report();
  CHECK(field(got, "rows") == "6");
  CHECK(field(got, "digest") == field(want, "digest"));
  CHECK(field(got, "count") == "6");
  CHECK(field(got, "subtask") == "0");
  CHECK(field(got, "parallelism") == "1");
}

TEST_CASE("a blackhole restored with no state reports like a fresh one") {
  weir::blackhole::sink spec;
  spec.digest = true;
  sink_run fresh{spec};
  fresh.feed({batch_of({1, 2}, 0)});
  sink_run restored{spec};
  restored.restore({});
  restored.restore({""});
  restored.feed({batch_of({1, 2}, 0)});
  const auto a = fresh.report();
  const auto b = restored.report();
  CHECK(field(a, "rows") == field(b, "rows"));
  CHECK(field(a, "digest") == field(b, "digest"));
}

TEST_CASE("a restored blackhole paces only the rows of its own run") {
  // 100,000 restored rows at 1,000 rows/s would be 100 s of sleep if the
  // pacer counted them; one new row is 1 ms. (A regression hangs here.)
  weir::blackhole::sink spec;
  spec.report = true;
  weir::batch_builder b{test_schema()};
  for (int i = 0; i < 1000; ++i) {
    b.col(0).append_int(i);
    b.col(1).append_float(0);
    b.col(2).append_null();
    b.col(3).append_int(0);
    b.commit_row();
  }
  const auto big = b.finish();
  sink_run before{spec};
  for (int i = 0; i < 100; ++i)
    before.feed({big});
  const auto state = before.snapshot();
  spec.rate = 1000;
  sink_run after{spec};
  after.restore({state});
  after.feed({batch_of({1}, 0)});
  CHECK(field(after.report(), "rows") == "100001");
}

TEST_CASE("a blackhole refuses a malformed state") {
  weir::blackhole::sink spec;
  spec.report = true;
  spec.latency_field = "gen_ns";
  sink_run source{spec};
  source.feed({batch_of({1, 2, 3}, steady_ns())});
  const auto good = source.snapshot();
  auto error_of = [&](std::string bytes) -> std::string {
    sink_run r{spec};
    try {
      r.restore({std::move(bytes)}, 9);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  };
  CHECK(error_of(good).empty());
  for (std::size_t n : {std::size_t{1}, good.size() / 2, good.size() - 1}) {
    CAPTURE(n);
    CHECK(error_of(good.substr(0, n))
          == "blackhole sink: cannot restore the state of checkpoint 9: not a well-formed "
             "blackhole sink state");
  }
  CHECK_FALSE(error_of(good + "!").empty());
  CHECK_FALSE(error_of("weir-2pc-file-sink v1\nsubtask 0\npending\n").empty());
}

TEST_CASE("a latency histogram round-trips through its encoding and merges like one fed everything") {
  latency_histogram a, b, both;
  for (int i = 0; i < 500; ++i) {
    a.add(i * 37);
    both.add(i * 37);
  }
  for (int i = 0; i < 300; ++i) {
    b.add(1'000'000 + i * 1013);
    both.add(1'000'000 + i * 1013);
  }
  std::string bytes;
  a.encode(bytes);
  b.encode(bytes);
  std::string_view in = bytes;
  latency_histogram da, db;
  REQUIRE(da.decode(in));
  REQUIRE(db.decode(in));
  CHECK(in.empty());
  CHECK(da.to_json() == a.to_json());
  CHECK(da.count() == 500);
  CHECK(da.max() == a.max());
  da.merge(db);
  CHECK(da.to_json() == both.to_json());
  CHECK(da.count() == both.count());
  CHECK(da.max() == both.max());
  CHECK(da.quantile(0.5) == both.quantile(0.5));

  SUBCASE("malformed encodings are refused and leave the histogram unchanged") {
    auto refused = [&](std::string bad) {
      std::string_view v = bad;
      latency_histogram h;
      h.add(5);
      if (h.decode(v))
        return false;
      CHECK(h.count() == 1);
      CHECK(h.max() == 5);
      CHECK(v.size() == bad.size());
      return true;
    };
    std::string empty_hist;
    latency_histogram{}.encode(empty_hist);
    CHECK(empty_hist.size() == 12);
    CHECK(refused(bytes.substr(0, 11)));
    std::string neg_max = empty_hist;
    neg_max[7] = static_cast<char>(0x80); // max_ns < 0
    CHECK(refused(neg_max));
    auto with_bucket = [&](std::uint16_t bucket, std::uint64_t count) {
      std::string s = empty_hist;
      s[8] = 1; // one bucket
      weir::state::wire::put_u16(s, bucket);
      weir::state::wire::put_u64(s, count);
      return s;
    };
    CHECK_FALSE(refused(with_bucket(3, 2)));
    CHECK(refused(with_bucket(64 * 32, 2))); // beyond the last bucket
    CHECK(refused(with_bucket(3, 0)));       // an empty bucket is never written
    std::string twice = with_bucket(3, 2);
    twice[8] = 2;
    weir::state::wire::put_u16(twice, 3);
    weir::state::wire::put_u64(twice, 2);
    CHECK(refused(twice)); // buckets out of order
  }
}
}
