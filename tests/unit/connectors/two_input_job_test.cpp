// SPDX-License-Identifier: Apache-2.0
// A two-input operator built with data_stream::connect and run by
// job::execute: both inputs keyed by their own fields into the same key
// groups, the operator's watermark the minimum of its inputs'.
#include "kinds/sources/generator/generator.hpp"
#include "weir/api/job.hpp"
#include "weir/file/sink.hpp"
#include "weir/core/key_group.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <array>

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <unistd.h>

namespace {

/// Counts rows per key from each input (a keyed co-process); at the end
/// emits {k, n1, n2} per key. Fails the job if a key of either input is not
/// in its key groups, or if the watermark it gets passes an input's.
class co_count final : public weir::two_input_stream_operator {
public:
  explicit co_count(weir::schema_ptr out) : out_(std::move(out)) {}
  void open(const weir::operator_context& ctx) override { ctx_ = ctx; }
  void process_batch1(const weir::record_batch_ptr& b, weir::output_collector&) override {
    count(*b, 0, 2);
  }
  void process_batch2(const weir::record_batch_ptr& b, weir::output_collector&) override {
    count(*b, 1, 0);
  }
  void process_watermark(weir::event_time wm, weir::output_collector& out) override {
    if (wm > std::min(input_watermark(0), input_watermark(1)))
      throw std::runtime_error("watermark passed an input's");
    last_wm_ = wm;
    out.emit_watermark(wm);
  }
  void finish(weir::output_collector& out) override {
    if (last_wm_ != weir::max_watermark)
      throw std::runtime_error("no final watermark");
    weir::batch_builder b{out_};
    for (const auto& [k, n] : counts_) {
      b.col(0).append_int(k);
      b.col(1).append_int(n[0]);
      b.col(2).append_int(n[1]);
      b.commit_row();
    }
    out.collect(b.finish());
  }

private:
  void count(const weir::record_batch& b, std::size_t input, std::size_t field) {
    const std::size_t fields[] = {field};
    for (std::size_t r = 0; r < b.num_rows; ++r) {
      std::string key;
      weir::encode_key(b, fields, r, key);
      auto g = weir::assign_key_group(key, ctx_.max_parallelism);
      if (weir::operator_index_for_key_group(g, ctx_.max_parallelism, ctx_.parallelism)
          != ctx_.subtask_index)
        throw std::runtime_error("a key on the wrong subtask");
      ++counts_[b.columns[field].ints[r]][input];
    }
  }
  weir::schema_ptr out_;
  weir::operator_context ctx_;
  std::map<std::int64_t, std::array<std::int64_t, 2>> counts_;
  weir::event_time last_wm_ = weir::min_watermark;
};

} // namespace

TEST_SUITE("connectors") {

TEST_CASE("a keyed two-input operator runs through job::execute") {
  const auto out_path = std::filesystem::temp_directory_path()
                        / ("weir-co-" + std::to_string(::getpid()) + ".jsonl");
  weir::job_options opts;
  opts.name = "co";
  opts.parallelism = 2;
  opts.batch_size = 64;
  opts.status_interval = std::chrono::milliseconds{0};
  weir::job j{opts};
  weir::generator::source a;
  a.count = 1000;
  a.fields = {{"id", "seq"}, {"ts", "to_timestamp(seq)"}, {"k", "rand_int(seq, 1, 0, 9)"}};
  a.event_time_field = "ts";
  weir::generator::source b;
  b.count = 700;
  b.fields = {{"key", "rand_int(seq, 2, 0, 9)"}, {"ts", "to_timestamp(seq * 3)"}};
  b.event_time_field = "ts";
  auto sa = j.from(a, {"a", 0});
  auto sb = j.from(b, {"b", 0});
  REQUIRE(sa);
  REQUIRE(sb);
  auto bad = sa->connect(*sb).key_by({"k"}, {"ts"});
  REQUIRE_FALSE(bad);
  CHECK(bad.error().message == "key_by: key field 'k' is int64, but 'ts' is timestamp");
  auto keyed = sa->connect(*sb).key_by({"k"}, {"key"});
  REQUIRE(keyed);
  CHECK(keyed->is_keyed());
  auto out_schema = weir::make_schema(
    {{"k", weir::type_id::int64}, {"n1", weir::type_id::int64}, {"n2", weir::type_id::int64}});
  auto co = keyed->transform("co_count", out_schema,
                             [out_schema] { return std::make_unique<co_count>(out_schema); },
                             {"co", 0});
  REQUIRE(co);
  REQUIRE(co->sink_to(weir::file::sink{out_path.string()}, {"out", 0}));
  const auto& g = *j.graph();
  CHECK(g.nodes[2].num_inputs == 2);
  CHECK(g.edges[0].target_input == 0);
  CHECK(g.edges[1].target_input == 1);
  CHECK(g.edges[1].key_fields == std::vector<std::size_t>{0});
  CHECK(g.edges[0].key_fields == std::vector<std::size_t>{2});

  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.records_read == 1700);
  std::ifstream in{out_path};
  std::size_t lines = 0;
  std::int64_t n1 = 0, n2 = 0;
  for (std::string line; std::getline(in, line); ++lines) {
    // {"k":3,"n1":98,"n2":71}
    auto num = [&line](const std::string& f) {
      auto at = line.find("\"" + f + "\":") + f.size() + 3;
      return std::stoll(line.substr(at));
    };
    n1 += num("n1");
    n2 += num("n2");
  }
  std::filesystem::remove(out_path);
  CHECK(lines == 10); // each key once: one subtask saw it from both inputs
  CHECK(n1 == 1000);
  CHECK(n2 == 700);
}

} // TEST_SUITE

TEST_SUITE("connectors") {

// The joins through the C++ API (keyed_stream::interval_join, window_join),
// run by job::execute at parallelism 2; the pairs are counted here by brute
// force over the same generated rows.
TEST_CASE("interval and window joins run through the C++ API") {
  const auto dir = std::filesystem::temp_directory_path()
                   / ("weir-joins-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  weir::job_options opts;
  opts.name = "joins";
  opts.parallelism = 2;
  opts.batch_size = 16;
  opts.status_interval = std::chrono::milliseconds{0};
  weir::job j{opts};
  // Left: k = seq % 7 at 10 ms steps; right: k = seq % 5 at 10 ms steps + 3.
  weir::generator::source a;
  a.count = 600;
  a.fields = {{"id", "seq"}, {"ts", "to_timestamp(seq * 10)"}, {"k", "seq % 7"}};
  a.event_time_field = "ts";
  weir::generator::source b;
  b.count = 600;
  b.fields = {{"id", "seq"}, {"ts", "to_timestamp(seq * 10 + 3)"}, {"key", "seq % 5"}};
  b.event_time_field = "ts";
  auto sa = j.from(a, {"a", 0});
  auto sb = j.from(b, {"b", 0});
  REQUIRE(sa);
  REQUIRE(sb);
  auto ka = sa->key_by({"k"});
  auto kb = sb->key_by({"key"});
  REQUIRE(ka);
  REQUIRE(kb);
  weir::interval_join_options io;
  io.lower = std::chrono::milliseconds{-50};
  io.upper = std::chrono::milliseconds{30};
  io.upper_bound_exclusive = true;
  auto ij = ka->interval_join(*kb, io, {"ij", 0});
  REQUIRE_MESSAGE(ij, ij.error().message);
  // The default row: the left's fields, then the right's but its key, the
  // clashing ones renamed.
  CHECK(ij->output_schema()->to_string() ==
        "id:int64, ts:timestamp, k:int64, right_id:int64, right_ts:timestamp");
  auto tumbling = weir::window::tumbling_event_time_windows::make(std::chrono::milliseconds{100});
  REQUIRE(tumbling);
  weir::window_join_options wopts;
  wopts.select = {{"l", "left.id"}, {"r", "right.id"}, {"end", "window_end"}};
  auto wj = ka->window_join(
    *kb, std::make_shared<const weir::window::tumbling_event_time_windows>(*tumbling),
    wopts, {"wj", 0});
  REQUIRE_MESSAGE(wj, wj.error().message);
  weir::interval_join_options backwards;
  backwards.lower = std::chrono::milliseconds{5};
  backwards.upper = std::chrono::milliseconds{4};
  auto bad = ka->interval_join(*kb, backwards);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == weir::errc::invalid_argument);
  REQUIRE(ij->sink_to(weir::file::sink{(dir / "ij.jsonl").string()}, {"ij_out", 0}));
  REQUIRE(wj->sink_to(weir::file::sink{(dir / "wj.jsonl").string()}, {"wj_out", 0}));
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  auto lines = [](const std::filesystem::path& p) {
    std::ifstream in{p};
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
      ++n;
    return n;
  };
  std::size_t want_ij = 0, want_wj = 0;
  for (std::int64_t l = 0; l < 600; ++l)
    for (std::int64_t r2 = 0; r2 < 600; ++r2) {
      if (l % 7 != r2 % 5)
        continue;
      const std::int64_t lt = l * 10, rt = r2 * 10 + 3;
      want_ij += lt - 50 <= rt && rt < lt + 30;
      want_wj += lt / 100 == rt / 100;
    }
  CHECK(want_ij > 100);
  CHECK(lines(dir / "ij.jsonl") == want_ij);
  CHECK(lines(dir / "wj.jsonl") == want_wj);
  CHECK(r.late_records == 0);
  std::filesystem::remove_all(dir);
}

} // TEST_SUITE
