// SPDX-License-Identifier: Apache-2.0
#include "weir/file/transactional_sink.hpp"

#include "checkpoint_test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

using namespace weir;
using weir::checkpoint::test::read_file;
using weir::checkpoint::test::temp_dir;
namespace fs = std::filesystem;

namespace {

struct no_output final : output_collector {
  std::size_t emitted = 0;
  void collect(record_batch_ptr) override { ++emitted; }
  void collect_side(std::size_t, record_batch_ptr) override { ++emitted; }
  void emit_watermark(event_time) override { ++emitted; }
};

schema_ptr ints() { return make_schema({{"n", type_id::int64}}); }

record_batch_ptr rows(std::initializer_list<std::int64_t> values) {
  batch_builder b{ints()};
  for (auto v : values) {
    b.col(0).append_int(v);
    b.commit_row();
  }
  return b.finish();
}

/// What a reader of the output directory sees: committed parts in name
/// order, concatenated; staging is hidden.
std::string committed(const fs::path& dir) {
  std::vector<fs::path> parts;
  for (const auto& e : fs::directory_iterator{dir})
    if (e.is_regular_file() && e.path().filename().string()[0] != '.')
      parts.push_back(e.path());
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts)
    out += read_file(p);
  return out;
}

std::vector<std::string> committed_names(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator{dir})
    if (e.is_regular_file())
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string lines(std::initializer_list<int> values) {
  std::string out;
  for (auto v : values)
    out += "{\"n\":" + std::to_string(v) + "}\n";
  return out;
}

/// One sink subtask, driven as its task would drive it.
struct sink_run {
  explicit sink_run(const fs::path& dir, std::size_t subtask = 0, std::size_t p = 1,
                    format::format_kind f = format::format_kind::jsonl) {
    auto s = make_transactional_file_sink(dir.string(), f, ints());
    REQUIRE(s);
    op = std::move(*s);
    operator_context ctx;
    ctx.subtask_index = subtask;
    ctx.parallelism = p;
    op->open(ctx);
  }
  void write(std::initializer_list<std::int64_t> v) { op->process_batch(rows(v), out); }
  std::string snapshot(std::uint64_t id) {
    operator_snapshot snap;
    op->snapshot_state(id, snap);
    CHECK_FALSE(snap.keyed_state);
    return snap.operator_state;
  }
  /// The end of the input as its task drives it: finish, the final
  /// snapshot `id`, and the completion of the final checkpoint.
  void end(std::uint64_t id) {
    op->finish(out);
    snapshot(id);
    op->notify_checkpoint_complete(id);
  }
  void restore(std::uint64_t id, std::vector<std::string> states) {
    operator_restore r;
    r.checkpoint_id = id;
    r.operator_states = std::move(states);
    op->restore_state(r);
  }
  stream_operator_ptr op;
  no_output out;
};

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("a stopped exactly-once file sink commits nothing after its final checkpoint") {
  temp_dir tmp{"sink2pcstop"};
  auto dir = tmp.path() / "out.jsonl";
  std::string state;
  {
    sink_run s{dir};
    s.write({1, 2});
    state = s.snapshot(1); // the final checkpoint
    s.op->notify_checkpoint_complete(1);
    s.write({3}); // e.g. a processing-time timer after the barrier
    s.op->stop(s.out);
    CHECK(committed(dir) == lines({1, 2}));
  }
  // The rerun resumes from checkpoint 1 and writes row 3 again.
  sink_run r{dir};
  r.restore(1, {state});
  r.write({3});
  r.end(2);
  CHECK(committed(dir) == lines({1, 2, 3}));
}

TEST_CASE("the exactly-once file sink publishes rows only when their checkpoint completes") {
  temp_dir tmp{"sink2pc"};
  auto dir = tmp.path() / "out.jsonl";
  sink_run s{dir};
  s.write({1, 2});
  CHECK(committed(dir).empty()); // in progress: invisible
  auto state1 = s.snapshot(1);
  CHECK(state1.find("pending 1") != std::string::npos);
  CHECK(committed(dir).empty()); // pre-committed: still invisible
  s.write({3});
  s.op->notify_checkpoint_complete(1);
  CHECK(committed(dir) == lines({1, 2}));
  CHECK(committed_names(dir) == std::vector<std::string>{"part-0-000000000001.jsonl"});
  s.snapshot(2);
  s.write({4});
  s.snapshot(3);
  CHECK(committed(dir) == lines({1, 2}));
  // Completion of 3 subsumes 2: both are published, in order.
  s.op->notify_checkpoint_complete(3);
  CHECK(committed(dir) == lines({1, 2, 3, 4}));
  s.write({5});
  s.end(4);
  CHECK(committed(dir) == lines({1, 2, 3, 4, 5}));
  CHECK(committed_names(dir)
        == std::vector<std::string>{"part-0-000000000001.jsonl", "part-0-000000000002.jsonl",
                                    "part-0-000000000003.jsonl", "part-0-000000000004.jsonl"});
  CHECK(s.out.emitted == 0);
}

TEST_CASE("the end of the input commits nothing until the final checkpoint completes") {
  temp_dir tmp{"sinkfinal"};
  auto dir = tmp.path() / "out";
  sink_run s{dir};
  CHECK(s.op->is_two_phase_commit());
  s.write({1, 2});
  s.op->finish(s.out);
  CHECK(committed(dir).empty());
  auto state = s.snapshot(5); // the final snapshot
  CHECK(state.find("pending 5") != std::string::npos);
  CHECK(committed(dir).empty());
  s.op->notify_checkpoint_complete(5);
  CHECK(committed(dir) == lines({1, 2}));
}

TEST_CASE("a failed job discards the open part and the parts of newer checkpoints") {
  temp_dir tmp{"sinkabort"};
  auto dir = tmp.path() / "out";
  sink_run s{dir};
  s.write({1});
  s.snapshot(1);
  s.write({2});
  s.snapshot(2);
  s.write({3});
  // Checkpoint 1 completed (or may have: its notification is not here yet);
  // 2 will not: its part goes, and the open one.
  s.op->abort_transactions(1);
  CHECK(committed(dir).empty());
  CHECK(committed_names(dir / ".staging")
        == std::vector<std::string>{"part-0-000000000001.pending"});
}

TEST_CASE("a checkpoint without new rows publishes no empty part") {
  temp_dir tmp{"sinkempty"};
  auto dir = tmp.path() / "o";
  sink_run s{dir};
  auto st = s.snapshot(1);
  CHECK(st.find("pending\n") != std::string::npos);
  s.op->notify_checkpoint_complete(1);
  s.end(2);
  CHECK(committed_names(dir).empty());
}

TEST_CASE("restoring completes the pending commit and discards newer rows") {
  temp_dir tmp{"sinkrestore"};
  auto dir = tmp.path() / "out";
  std::string state2;
  {
    sink_run a{dir};
    a.write({1, 2});
    a.snapshot(1);
    a.op->notify_checkpoint_complete(1);
    a.write({3});
    state2 = a.snapshot(2); // checkpoint 2 completes, but the notification is lost
    a.write({4});           // in progress at the crash
  }
  CHECK(committed(dir) == lines({1, 2}));
  sink_run b{dir};
  b.restore(2, {state2});
  CHECK(committed(dir) == lines({1, 2, 3}));
  CHECK(fs::is_empty(dir / ".staging"));
  // The source rewinds to checkpoint 2: row 4 is replayed once.
  b.write({4});
  b.snapshot(3);
  b.op->notify_checkpoint_complete(3);
  CHECK(committed(dir) == lines({1, 2, 3, 4}));
}

TEST_CASE("restoring an older checkpoint discards pre-committed parts of a failed one") {
  temp_dir tmp{"sinkolder"};
  auto dir = tmp.path() / "out";
  std::string state1;
  {
    sink_run a{dir};
    a.write({1});
    state1 = a.snapshot(1);
    a.op->notify_checkpoint_complete(1);
    a.write({2});
    a.snapshot(2); // never completes
    a.write({3});
  }
  sink_run b{dir};
  b.restore(1, {state1}); // part 1 is committed already: nothing to redo
  CHECK(committed(dir) == lines({1}));
  CHECK(fs::is_empty(dir / ".staging"));
  b.write({2, 3});
  b.end(2);
  CHECK(committed(dir) == lines({1, 2, 3}));
}

TEST_CASE("restoring deletes committed parts newer than the restored checkpoint") {
  temp_dir tmp{"sinknewer"};
  auto dir = tmp.path() / "out";
  std::string state1;
  {
    sink_run a{dir};
    a.write({1});
    state1 = a.snapshot(1);
    a.op->notify_checkpoint_complete(1);
    a.write({2});
    a.end(2); // part 2 at the final checkpoint
  }
  CHECK(committed(dir) == lines({1, 2}));
  // Checkpoint 1 restored nonetheless (2 was lost): row 2 is replayed and
  // must not appear twice.
  sink_run b{dir};
  b.restore(1, {state1});
  CHECK(committed(dir) == lines({1}));
  b.write({2});
  b.end(2);
  CHECK(committed(dir) == lines({1, 2}));
}

TEST_CASE("a fresh start deletes the output of an earlier run") {
  temp_dir tmp{"sinkfresh"};
  auto dir = tmp.path() / "out";
  {
    sink_run a{dir};
    a.write({1});
    a.end(1);
  }
  sink_run b{dir};
  CHECK(committed(dir) == lines({1})); // nothing happens before the first row
  b.write({7});
  CHECK(committed(dir).empty());
  b.end(1);
  CHECK(committed(dir) == lines({7}));
}

TEST_CASE("after rescaling, subtask 0 takes over the pending commits of old subtasks") {
  temp_dir tmp{"sinkrescale"};
  auto dir = tmp.path() / "out";
  std::string s0, s1;
  {
    sink_run a0{dir, 0, 2}, a1{dir, 1, 2};
    a0.write({1});
    a1.write({2});
    s0 = a0.snapshot(1);
    s1 = a1.snapshot(1);
    a1.write({3}); // in progress at the crash
  }
  sink_run b{dir, 0, 1};
  b.restore(1, {s0, s1});
  CHECK(committed_names(dir)
        == std::vector<std::string>{"part-0-000000000001.jsonl", "part-1-000000000001.jsonl"});
  CHECK(committed(dir) == lines({1, 2}));
  CHECK(fs::is_empty(dir / ".staging"));
}

TEST_CASE("every csv part starts with the header") {
  temp_dir tmp{"sinkcsv"};
  auto dir = tmp.path() / "out.csv";
  sink_run s{dir, 0, 1, format::format_kind::csv};
  s.write({1});
  s.snapshot(1);
  s.op->notify_checkpoint_complete(1);
  s.write({2});
  s.end(2);
  CHECK(read_file(dir / "part-0-000000000001.csv") == "n\n1\n");
  CHECK(read_file(dir / "part-0-000000000002.csv") == "n\n2\n");
}

TEST_CASE("restore fails loudly when a pending part has vanished") {
  temp_dir tmp{"sinklost"};
  auto dir = tmp.path() / "out";
  std::string state;
  {
    sink_run a{dir};
    a.write({1});
    state = a.snapshot(1);
  }
  fs::remove(dir / ".staging" / "part-0-000000000001.pending");
  sink_run b{dir};
  CHECK_THROWS_WITH_AS(b.restore(1, {state}),
                       doctest::Contains("cannot complete the commit of checkpoint 1"),
                       std::runtime_error);
  CHECK_THROWS_AS(b.restore(1, {"garbage"}), std::runtime_error);
}

TEST_CASE("the exactly-once file sink rejects apache_combined and an empty path") {
  CHECK(make_transactional_file_sink("x", format::format_kind::apache_combined).error().code
        == errc::invalid_argument);
  CHECK(make_transactional_file_sink("", format::format_kind::jsonl).error().code
        == errc::invalid_argument);
}
}
