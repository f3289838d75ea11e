// SPDX-License-Identifier: Apache-2.0
#include "weir/file/sink.hpp"

#include "format_test_util.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <stdexcept>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

/// Fails the test if a sink emits anything downstream.
struct no_output final : output_collector {
  std::size_t emitted = 0;
  void collect(record_batch_ptr) override { ++emitted; }
  void collect_side(std::size_t, record_batch_ptr) override { ++emitted; }
  void emit_watermark(event_time) override { ++emitted; }
};

record_batch_ptr rows(const schema_ptr& s, std::int64_t from, std::int64_t to) {
  batch_builder b{s};
  for (auto i = from; i < to; ++i) {
    b.col(0).append_string("k" + std::to_string(i));
    b.col(1).append_int(i);
    b.commit_row();
  }
  return b.finish();
}

schema_ptr kv() { return make_schema({{"key", type_id::string}, {"n", type_id::int64}}); }

} // namespace

TEST_SUITE("format") {
TEST_CASE("file sink creates parent directories and truncates and writes jsonl") {
  temp_dir dir{"sink"};
  const auto path = (dir.path() / "a" / "b" / "out.jsonl").string();
  for (int run = 0; run < 2; ++run) { // the second run truncates the first's output
    auto sink = make_file_sink(path, format_kind::jsonl, kv());
    REQUIRE(sink);
    no_output out;
    (*sink)->open(operator_context{});
    (*sink)->process_batch(rows(kv(), 0, 2), out);
    (*sink)->process_watermark(100, out);
    (*sink)->process_batch(rows(kv(), 2, 3), out);
    (*sink)->finish(out);
    CHECK(out.emitted == 0);
  }
  CHECK(read_file(path) == "{\"key\":\"k0\",\"n\":0}\n{\"key\":\"k1\",\"n\":1}\n"
                           "{\"key\":\"k2\",\"n\":2}\n");
}

TEST_CASE("file sink writes a csv header even when no rows arrive") {
  temp_dir dir{"sinkcsv"};
  const auto path = (dir.path() / "empty.csv").string();
  auto sink = make_file_sink(path, format_kind::csv, kv());
  REQUIRE(sink);
  no_output out;
  (*sink)->open(operator_context{});
  (*sink)->finish(out);
  CHECK(read_file(path) == "key,n\n");

  const auto path2 = (dir.path() / "lazy.csv").string();
  auto lazy = make_file_sink(path2, format_kind::csv); // schema from the first batch
  REQUIRE(lazy);
  (*lazy)->open(operator_context{});
  (*lazy)->process_batch(rows(kv(), 0, 1), out);
  (*lazy)->finish(out);
  CHECK(read_file(path2) == "key,n\nk0,0\n");
}

TEST_CASE("file sink writes large outputs completely across buffer flushes") {
  temp_dir dir{"sinkbig"};
  const auto path = (dir.path() / "big.jsonl").string();
  auto sink = make_file_sink(path, format_kind::jsonl, kv());
  REQUIRE(sink);
  no_output out;
  (*sink)->open(operator_context{});
  for (int b = 0; b < 100; ++b)
    (*sink)->process_batch(rows(kv(), b * 1000, (b + 1) * 1000), out);
  (*sink)->finish(out);
  auto text = read_file(path);
  CHECK(text.size() > (1u << 20));
  CHECK(std::count(text.begin(), text.end(), '\n') == 100000);
  CHECK(text.substr(text.size() - 27) == "{\"key\":\"k99999\",\"n\":99999}\n");
}

TEST_CASE("file sink rejects apache_combined and throws naming the path when it cannot write") {
  auto bad = make_file_sink("out.log", format_kind::apache_combined);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == errc::invalid_argument);

  temp_dir dir{"sinkerr"};
  auto blocker = dir.file("file", "x"); // a file where a directory is needed
  auto sink = make_file_sink(blocker + "/sub/out.jsonl", format_kind::jsonl);
  REQUIRE(sink);
  CHECK_THROWS_AS((*sink)->open(operator_context{}), std::runtime_error);
  try {
    (*sink)->open(operator_context{});
  } catch (const std::runtime_error& e) {
    CHECK(std::string{e.what()}.rfind("cannot write " + blocker + "/sub/out.jsonl: ", 0) == 0);
  }

  auto dir_as_file = make_file_sink(dir.path().string(), format_kind::jsonl);
  REQUIRE(dir_as_file);
  CHECK_THROWS_WITH_AS((*dir_as_file)->open(operator_context{}),
                       ("cannot write " + dir.path().string() + ": Is a directory").c_str(),
                       std::runtime_error);
}

TEST_CASE("file sink writes under an in-progress name, renamed at finish or stop only") {
  namespace fs = std::filesystem;
  temp_dir dir{"sinkinprogress"};
  const auto path = (dir.path() / "out.jsonl").string();
  const auto partial = in_progress_path(path);
  CHECK(partial == path + ".inprogress");
  for (int end = 0; end < 3; ++end) { // finish, stop, failure
    CAPTURE(end);
    dir.file("out.jsonl", "an earlier run's output\n");
    {
      auto sink = make_file_sink(path, format_kind::jsonl, kv(), std::chrono::hours{1});
      REQUIRE(sink);
      no_output out;
      (*sink)->open(operator_context{});
      CHECK_FALSE(fs::exists(path)); // the earlier output is gone
      (*sink)->process_batch(rows(kv(), 0, 2), out);
      CHECK(fs::exists(partial));
      if (end == 0)
        (*sink)->finish(out);
      else if (end == 1)
        (*sink)->stop(out);
      // end == 2: destroyed without either, as a failed job's sink is
    }
    if (end < 2) {
      CHECK_FALSE(fs::exists(partial));
      CHECK(read_file(path) == "{\"key\":\"k0\",\"n\":0}\n{\"key\":\"k1\",\"n\":1}\n");
    } else {
      CHECK_FALSE(fs::exists(path));
      CHECK(fs::exists(partial));
    }
    fs::remove(partial);
  }
}

TEST_CASE("file sink flushes written rows once flush_interval has passed") {
  temp_dir dir{"sinkflush"};
  const auto path = (dir.path() / "out.jsonl").string();
  const auto partial = in_progress_path(path);
  no_output out;

  // 0: every batch reaches the file at once.
  auto eager = make_file_sink(path, format_kind::jsonl, kv(), std::chrono::milliseconds{0});
  REQUIRE(eager);
  (*eager)->open(operator_context{});
  (*eager)->process_batch(rows(kv(), 0, 1), out);
  CHECK(read_file(partial) == "{\"key\":\"k0\",\"n\":0}\n");
  (*eager)->finish(out);

  // An hour: buffered, with a wake-up asked for at the deadline, which
  // flushes without another batch.
  auto lazy = make_file_sink(path, format_kind::jsonl, kv(), std::chrono::hours{1});
  REQUIRE(lazy);
  (*lazy)->open(operator_context{});
  CHECK_FALSE((*lazy)->next_processing_timer().has_value()); // nothing to flush
  (*lazy)->process_batch(rows(kv(), 0, 1), out);
  CHECK(read_file(partial).empty());
  auto due = (*lazy)->next_processing_timer();
  REQUIRE(due.has_value());
  auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count();
  CHECK(*due > now + 3'500'000);
  (*lazy)->on_processing_time(now, out); // not due yet
  CHECK(read_file(partial).empty());
  (*lazy)->finish(out);
  CHECK(read_file(path) == "{\"key\":\"k0\",\"n\":0}\n");
}

TEST_CASE("stdout sink emits nothing downstream") {
  auto sink = make_stdout_sink(format_kind::jsonl, kv());
  no_output out;
  sink->open(operator_context{});
  sink->process_batch(rows(kv(), 0, 0), out); // no rows: prints nothing
  sink->process_watermark(5, out);
  sink->finish(out);
  CHECK(out.emitted == 0);
}
}
