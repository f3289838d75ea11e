// SPDX-License-Identifier: Apache-2.0
// job::start and running_job: a job in the background, watched, tapped,
// stopped and canceled through its handle.
#include "kinds/sources/generator/generator.hpp"
#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"
#include "weir/blackhole/sink.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <thread>
#include <vector>

namespace {

using namespace std::chrono_literals;

/// A generator of `count` rows (0 = unbounded) at `rate` rows/s into a
/// blackhole sink called "out".
weir::job generator_job(std::uint64_t count, double rate) {
  weir::job_options opts;
  opts.status_interval = 0ms;
  opts.name = "bg";
  weir::job j{opts};
  weir::generator::source g;
  if (count > 0)
    g.count = count;
  g.rate = rate;
  g.fields = {{"seq", "seq"}, {"ts", "to_timestamp(seq)"}};
  g.event_time_field = "ts";
  auto src = j.from(g, {"gen", 1});
  REQUIRE(src);
  REQUIRE(src->sink_to(weir::blackhole::sink{}, {"out", 1}));
  return j;
}

template <class F>
bool eventually(F pred, std::chrono::milliseconds timeout = 20s) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred())
      return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

} // namespace

TEST_SUITE("connectors") {

TEST_CASE("a started job reports live counters and stops gracefully") {
  auto j = generator_job(0, 2000);
  auto run = j.start();
  REQUIRE(eventually([&] {
    auto st = run.status();
    return st.state == weir::job_state::running && st.operators.size() == 2
           && st.operators[0].subtasks[0].records_out > 0;
  }));
  auto st = run.status();
  CHECK(st.name == "bg");
  CHECK(st.operators[0].name == "gen");
  CHECK(st.operators[0].is_source);
  CHECK(st.operators[1].name == "out");
  CHECK(st.operators[1].is_sink);
  CHECK(st.operators[1].inputs == std::vector<std::string>{"gen"});
  CHECK(st.operators[0].subtasks[0].bytes_out > 0);
  CHECK(!st.result);
  CHECK(!weir::is_terminal(run.state()));
  CHECK(!run.wait_for(1ms));
  run.stop();
  auto r = run.wait();
  CHECK(r.ok);
  CHECK(r.stopped);
  CHECK(run.state() == weir::job_state::stopped);
  auto end = run.status();
  REQUIRE(end.result);
  // The counters stay readable and equal the result.
  CHECK(end.operators[0].subtasks[0].records_out == r.records_read);
  CHECK(end.operators[1].subtasks[0].records_in == r.records_written);
}

TEST_CASE("cancel ends a running job at once with a failed result") {
  auto j = generator_job(0, 1000);
  auto run = j.start();
  REQUIRE(eventually([&] { return run.state() == weir::job_state::running; }));
  run.cancel();
  auto r = run.wait();
  CHECK(!r.ok);
  CHECK(r.error == "canceled");
  CHECK(run.state() == weir::job_state::canceled);
}

TEST_CASE("a sink tap sees every row the sink receives from its subscription on") {
  const std::uint64_t n = 20'000;
  auto j = generator_job(n, 10'000);
  auto run = j.start();
  std::mutex m;
  std::uint64_t first = 0, next = 0, rows = 0;
  bool gap = false;
  auto id = run.subscribe_sink("out", [&](const weir::record_batch_ptr& b, std::size_t subtask,
                                          std::uint64_t first_row) {
    std::lock_guard lock{m};
    CHECK(subtask == 0);
    if (rows == 0)
      first = next = first_row;
    gap = gap || first_row != next;
    next = first_row + b->num_rows;
    rows += b->num_rows;
  });
  REQUIRE(id);
  CHECK(!run.subscribe_sink("nope", [](const weir::record_batch_ptr&, std::size_t,
                                       std::uint64_t) {}));
  CHECK(run.sink_schema("out") != nullptr);
  CHECK(run.sink_schema("gen") == nullptr);
  auto r = run.wait();
  REQUIRE_MESSAGE(r.ok, r.error);
  run.unsubscribe_sink("out", *id);
  std::lock_guard lock{m};
  CHECK(!gap);
  CHECK(rows > 0);
  CHECK(first + rows == n);
}

TEST_CASE("status summarizes every completed checkpoint and records a restore") {
  const auto dir = std::filesystem::temp_directory_path()
                   / ("weir-running-job-ckpt-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  auto with_checkpoints = [&] {
    auto j = generator_job(0, 2000);
    j.options().checkpoint.enabled = true;
    j.options().checkpoint.dir = dir.string();
    j.options().checkpoint.interval = 50ms;
    return j;
  };
  std::uint64_t last = 0;
  {
    auto j = with_checkpoints();
    auto run = j.start();
    REQUIRE(eventually([&] { return run.status().checkpoints_completed >= 3; }));
    auto st = run.status();
    CHECK(!st.restored);
    CHECK(st.checkpoints_restored == 0);
    const auto& sum = st.checkpoint_stats;
    auto brackets = [](const weir::checkpoint_stat_summary& s, std::int64_t v) {
      return s.min <= v && v <= s.max;
    };
    std::size_t completed = 0;
    for (const auto& c : st.checkpoints) {
      if (c.status != weir::checkpoint_record::status_kind::completed)
        continue;
      ++completed;
      CHECK(brackets(sum.end_to_end_duration, c.duration_ms));
      CHECK(brackets(sum.state_size, static_cast<std::int64_t>(c.size_bytes)));
      CHECK(brackets(sum.alignment_duration, c.alignment_ms));
    }
    CHECK(completed >= 3);
    for (const auto* s : {&sum.end_to_end_duration, &sum.state_size, &sum.alignment_duration})
      CHECK((0 <= s->min && s->min <= s->avg && s->avg <= s->max));
    CHECK(sum.state_size.min > 0); // the generator's position at least
    run.stop();
    auto r = run.wait();
    REQUIRE_MESSAGE(r.ok, r.error);
    last = r.last_checkpoint_id;
    REQUIRE(last > 0);
  }
  {
    auto j = with_checkpoints();
    auto run = j.start();
    REQUIRE(eventually([&] { return run.status().restored.has_value(); }));
    auto st = run.status();
    CHECK(st.restored->checkpoint_id == last);
    CHECK_FALSE(st.restored->is_savepoint);
    CHECK(st.restored->path == dir.string());
    CHECK(st.restored->restore_ms > 0);
    CHECK(st.checkpoints_restored == 1);
    run.cancel();
    run.wait();
  }
  std::filesystem::remove_all(dir);
}

} // TEST_SUITE
