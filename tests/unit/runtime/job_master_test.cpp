// SPDX-License-Identifier: Apache-2.0
// The job master (actors/job_master.hpp) driven without CAF: a recording
// environment stands in for the subtask actors, the state writer and the
// timers; the checkpoint store is a real LMDB environment, so what the
// master restores after a restart is what its commits stored.
#include "job_master.hpp"

#include "checkpoint/checkpoint_test_util.hpp"
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/core/key_group.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

using namespace weir;
using namespace weir::runtime;
using weir::checkpoint::test::temp_dir;
using namespace std::chrono_literals;

namespace {

/// What the master sent to one subtask.
struct subtask_message {
  enum kind_t { trigger, stop_source, notify_complete, cancel, stop } kind;
  std::uint32_t task = 0;
  std::uint64_t checkpoint_id = 0; ///< stop: keep_up_to
  std::int64_t timestamp_ms = 0;   ///< trigger and stop_source only
};

/// Records every call; the wall clock is set by the test.
class recording_environment final : public job_master_environment {
public:
  std::chrono::milliseconds clock{1'700'000'000'000};
  std::vector<std::vector<subtask_deployment>> deployments;
  std::vector<subtask_message> sent;
  std::vector<std::pair<std::uint32_t, subtask_state_query>> queries;
  std::vector<std::uint64_t> discarded;
  std::vector<std::pair<std::size_t, write_snapshot_request>> final_state_writes;
  std::vector<std::pair<std::size_t, checkpoint::snapshot_manifest>> commits;
  std::vector<std::pair<savepoint_request, checkpoint::snapshot_manifest>> savepoint_writes;
  std::vector<drain_purpose> drains;
  std::vector<std::pair<job_master_timer, std::chrono::milliseconds>> timers;
  std::vector<savepoint_request> savepoint_retries;
  int finished_calls = 0;

  std::chrono::milliseconds now() override { return clock; }
  void deploy(std::vector<subtask_deployment> tasks) override {
    deployments.push_back(std::move(tasks));
  }
  void trigger_checkpoint(std::uint32_t task, std::uint64_t id, std::int64_t ts) override {
    sent.push_back({subtask_message::trigger, task, id, ts});
  }
  void stop_source(std::uint32_t task, std::uint64_t id, std::int64_t ts) override {
    sent.push_back({subtask_message::stop_source, task, id, ts});
  }
  void notify_checkpoint_complete(std::uint32_t task, std::uint64_t id) override {
    sent.push_back({subtask_message::notify_complete, task, id, 0});
  }
  void cancel_checkpoint(std::uint32_t task, std::uint64_t id) override {
    sent.push_back({subtask_message::cancel, task, id, 0});
  }
  void stop_subtask(std::uint32_t task, std::uint64_t keep_up_to) override {
    sent.push_back({subtask_message::stop, task, keep_up_to, 0});
  }
  void query_state(std::uint32_t task, subtask_state_query q) override {
    queries.emplace_back(task, std::move(q));
  }
  void discard_checkpoint(std::uint64_t id) override { discarded.push_back(id); }
  void write_final_state(std::size_t attempt, write_snapshot_request req) override {
    final_state_writes.emplace_back(attempt, std::move(req));
  }
  void commit_checkpoint(std::size_t attempt, checkpoint::snapshot_manifest m) override {
    commits.emplace_back(attempt, std::move(m));
  }
  void write_savepoint(savepoint_request req, checkpoint::snapshot_manifest m) override {
    savepoint_writes.emplace_back(std::move(req), std::move(m));
  }
  void drain_state_writer(drain_purpose p) override { drains.push_back(p); }
  void schedule(job_master_timer t, std::chrono::milliseconds delay) override {
    timers.emplace_back(t, delay);
  }
  void retry_savepoint(savepoint_request r, std::chrono::milliseconds) override {
    savepoint_retries.push_back(std::move(r));
  }
  void finished() override { ++finished_calls; }

  /// The messages of kind `k` sent since the list was last cleared.
  std::vector<subtask_message> of_kind(subtask_message::kind_t k) const {
    std::vector<subtask_message> out;
    for (const auto& m : sent)
      if (m.kind == k)
        out.push_back(m);
    return out;
  }
  /// Whether timer `t` was set (since the list was last cleared).
  bool scheduled(job_master_timer t) const {
    return std::any_of(timers.begin(), timers.end(), [t](const auto& x) { return x.first == t; });
  }
};

stream_node node(std::size_t id, std::string name, std::size_t parallelism) {
  stream_node n;
  n.id = id;
  n.name = std::move(name);
  n.kind = "test";
  n.parallelism = parallelism;
  n.outputs.push_back({n.name, make_schema({{"v", type_id::int64}}), false});
  return n;
}

/// src (parallelism 1) -rebalance-> out (a sink, parallelism 2): three
/// subtasks in two chains; `keyed`: the edge is keyed by v instead.
/// Checkpoints into `dir`, restarts as given.
std::shared_ptr<job_graph> two_chain_graph(const std::string& dir, std::size_t restarts,
                                           bool keyed) {
  auto g = std::make_shared<job_graph>();
  auto src = node(0, "src", 1);
  src.is_source = true;
  auto out = node(1, "out", 2);
  out.is_sink = true;
  out.outputs.clear();
  g->nodes = {std::move(src), std::move(out)};
  stream_edge e;
  e.source = 0;
  e.target = 1;
  e.mode = keyed ? partitioning::hash : partitioning::rebalance;
  if (keyed)
    e.key_fields = {0};
  g->edges = {e};
  auto& o = g->options;
  o.name = "job-master-test";
  o.status_interval = 0ms; // no status line on the test's stderr
  o.checkpoint.enabled = true;
  o.checkpoint.dir = dir;
  o.checkpoint.interval = 1000ms;
  o.checkpoint.timeout = 5000ms;
  o.restart.attempts = restarts;
  o.restart.delay = 250ms;
  return g;
}

/// One job master on a real checkpoint store, with the helpers a test
/// needs to play the subtasks and the state writer.
struct fixture {
  explicit fixture(std::size_t restarts = 1, std::size_t tolerable_failures = 0,
                   bool keyed = false)
    : dir("job-master") {
    auto g = two_chain_graph((dir.path() / "checkpoints").string(), restarts, keyed);
    g->options.checkpoint.tolerable_failures = tolerable_failures;
    ctx = std::make_shared<job_context>(g);
    checkpoint::store_options so;
    so.dir = g->options.checkpoint.dir;
    so.map_size = std::size_t{1} << 30;
    so.retain = 3;
    auto store = checkpoint::lmdb_checkpoint_store::open(so);
    REQUIRE(store);
    ctx->store = std::move(*store);
    master.emplace(ctx, env);
  }

  /// The source's task number and the sinks' in this attempt.
  std::uint32_t source_task() const {
    for (std::uint32_t t = 0; t < master->subtasks(); ++t)
      if (master->is_source(t))
        return t;
    FAIL("no source task");
    return 0;
  }
  std::vector<std::uint32_t> sink_tasks() const {
    std::vector<std::uint32_t> out;
    for (std::uint32_t t = 0; t < master->subtasks(); ++t)
      if (!master->is_source(t))
        out.push_back(t);
    return out;
  }
  std::string operator_of(std::uint32_t task) const {
    return ctx->plan.vertices[master->vertex_subtask(task).first].name;
  }

  /// Task `task` stored `state` as its operator state for checkpoint `id`
  /// (in the real store) and acknowledges it.
  void ack(std::uint32_t task, std::uint64_t id, const std::string& state = "") {
    write_snapshot_result r;
    r.checkpoint_id = id;
    r.task = task;
    r.ok = true;
    if (!state.empty()) {
      auto [vertex, subtask] = master->vertex_subtask(task);
      checkpoint::operator_state_write w;
      w.operator_uid = operator_of(task);
      w.subtask = static_cast<std::uint32_t>(subtask);
      w.parallelism = static_cast<std::uint32_t>(ctx->plan.vertices[vertex].parallelism);
      w.first_key_group = 0;
      w.last_key_group = 127;
      w.operator_state = state;
      auto handles = ctx->store->write_state(id, std::span{&w, 1});
      REQUIRE(handles);
      r.ack.operators = std::move(*handles);
    }
    master->on_acknowledge(std::move(r));
  }

  /// Commits every manifest the master handed over, in the real store, and
  /// answers each commit.
  void commit_all() {
    auto commits = std::move(env.commits);
    env.commits.clear();
    for (auto& [attempt, m] : commits) {
      commit_manifest_result c;
      c.checkpoint_id = m.checkpoint_id;
      auto deleted = ctx->store->commit_manifest(m);
      REQUIRE(deleted);
      c.ok = true;
      master->on_checkpoint_committed(attempt, m.checkpoint_id, c);
    }
  }

  /// Task `task` ended its input and leaves `what` as its final state (none
  /// if empty); a sink's final snapshot waits for checkpoint `commit_at`
  /// (`task_final_state`).
  void final_state(std::uint32_t task, const std::string& what, std::uint64_t commit_at = 0) {
    task_final_state fs;
    fs.request.task = task;
    fs.request.checkpoint_id = commit_at;
    if (!what.empty()) {
      operator_snapshot_entry e;
      e.operator_uid = operator_of(task);
      e.subtask = static_cast<std::uint32_t>(master->vertex_subtask(task).second);
      e.parallelism = master->is_source(task) ? 1 : 2;
      e.snapshot.operator_state = what;
      fs.request.operators.push_back(std::move(e));
    }
    master->on_final_state(std::move(fs));
  }

  /// The state writer answers every final-state write handed to it.
  void answer_final_state_writes() {
    auto writes = std::move(env.final_state_writes);
    env.final_state_writes.clear();
    for (const auto& [attempt, req] : writes) {
      write_snapshot_result r;
      r.checkpoint_id = req.checkpoint_id;
      r.task = req.task;
      r.ok = true;
      master->on_final_state_written(attempt, r);
    }
  }

  /// Every subtask of this attempt ends (`error` empty: normally).
  void end_all(std::optional<std::string> error = std::nullopt) {
    for (std::uint32_t t = 0; t < master->subtasks(); ++t)
      master->on_subtask_ended(t, error);
  }

  temp_dir dir;
  std::shared_ptr<job_context> ctx;
  recording_environment env;
  std::optional<job_master> master;
};

} // namespace

TEST_SUITE("runtime") {

TEST_CASE("job master: deploys downstream first, each subtask wired to subtasks deployed "
          "before it, and arms the checkpoint timer") {
  fixture f;
  f.master->start();
  REQUIRE(f.env.deployments.size() == 1);
  const auto& d = f.env.deployments[0];
  REQUIRE(d.size() == 3);
  CHECK(f.master->running() == 3);
  for (std::uint32_t t = 0; t < d.size(); ++t) {
    CHECK(d[t].task == t);
    CHECK(d[t].attempt == 0);
    CHECK(d[t].restores.empty()); // an empty store: nothing to restore
    for (const auto& c : d[t].out_channels)
      CHECK(c.target_task < t);
  }
  // The source comes last and feeds both sink subtasks.
  auto src = f.source_task();
  CHECK(src == 2);
  REQUIRE(d[src].out_channels.size() == 2);
  CHECK(d[src].out_channels[0].target_task != d[src].out_channels[1].target_task);
  REQUIRE(f.env.timers.size() == 1);
  CHECK(f.env.timers[0].first == job_master_timer::checkpoint);
  CHECK(f.env.timers[0].second == 1000ms);
  CHECK(f.ctx->journal.state() == job_state::running);
  CHECK(f.master->checkpoint_summary() == "none yet");
}

TEST_CASE("job master: a checkpoint is triggered at the sources, acknowledged by every "
          "subtask, committed and completed") {
  fixture f;
  f.master->start();
  f.env.timers.clear();
  f.master->on_checkpoint_timer();
  // Only the source gets the trigger; the barrier reaches the sinks in-band.
  auto triggers = f.env.of_kind(subtask_message::trigger);
  REQUIRE(triggers.size() == 1);
  CHECK(triggers[0].task == f.source_task());
  CHECK(triggers[0].checkpoint_id == 1);
  CHECK(triggers[0].timestamp_ms == f.env.clock.count());
  CHECK(f.env.scheduled(job_master_timer::checkpoint));
  REQUIRE(f.master->coordinator());
  CHECK(f.master->coordinator()->is_in_flight(1));

  f.env.clock += 40ms;
  auto sinks = f.sink_tasks();
  f.ack(sinks[0], 1, "sink-0");
  f.ack(sinks[1], 1, "sink-1");
  CHECK(f.env.commits.empty()); // the source has not acknowledged yet
  SUBCASE("a second acknowledgement of the same subtask changes nothing") {
    f.ack(sinks[1], 1);
    CHECK(f.env.commits.empty());
  }
  f.ack(f.source_task(), 1, "offset=42");
  REQUIRE(f.env.commits.size() == 1);
  CHECK(f.env.commits[0].first == 0);
  CHECK(f.env.commits[0].second.checkpoint_id == 1);
  CHECK(f.env.commits[0].second.handles.size() == 3);
  CHECK(f.env.of_kind(subtask_message::notify_complete).empty()); // not before the commit

  f.commit_all();
  auto notified = f.env.of_kind(subtask_message::notify_complete);
  REQUIRE(notified.size() == 3);
  for (const auto& m : notified)
    CHECK(m.checkpoint_id == 1);
  CHECK_FALSE(f.master->coordinator()->is_in_flight(1));
  CHECK(f.master->last_completed_id() == 1);
  CHECK(f.master->checkpoint_summary().rfind("#1 (40 ms", 0) == 0);
  job_status s;
  f.ctx->journal.copy_to(s);
  CHECK(s.checkpoints_completed == 1);
  CHECK(s.checkpoints_failed == 0);
  // The store holds it: a restore would read it.
  auto latest = f.ctx->store->read_latest();
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);

  // The job ends: the master waits for the writer's mailbox, then records
  // the outcome.
  f.end_all();
  REQUIRE(f.env.drains.size() == 1);
  CHECK(f.env.drains[0] == drain_purpose::finish);
  CHECK(f.env.finished_calls == 0);
  f.master->on_state_writer_drained(drain_purpose::finish);
  CHECK(f.env.finished_calls == 1);
  CHECK(f.ctx->result.checkpoints_completed == 1);
  CHECK(f.ctx->result.last_checkpoint_id == 1);
  CHECK_FALSE(f.ctx->failure());
}

TEST_CASE("job master: a declined checkpoint is aborted everywhere and the next one goes on") {
  fixture f;
  f.master->start();
  f.master->on_checkpoint_timer();
  auto sinks = f.sink_tasks();
  f.ack(sinks[0], 1);
  f.master->on_decline(1, sinks[1], "barrier alignment was cancelled");
  // Every subtask drops it and the writer discards its state.
  auto cancels = f.env.of_kind(subtask_message::cancel);
  CHECK(cancels.size() == 3);
  for (const auto& m : cancels)
    CHECK(m.checkpoint_id == 1);
  CHECK(f.env.discarded == std::vector<std::uint64_t>{1});
  CHECK_FALSE(f.master->coordinator()->is_in_flight(1));
  // A late acknowledgement commits nothing.
  f.ack(f.source_task(), 1);
  CHECK(f.env.commits.empty());
  job_status s;
  f.ctx->journal.copy_to(s);
  REQUIRE(s.checkpoints.size() == 1);
  CHECK(s.checkpoints[0].status == checkpoint_record::status_kind::failed);
  CHECK(s.checkpoints[0].failure_reason
        == "declined by task " + std::to_string(sinks[1]) + ": barrier alignment was cancelled");
  // A decline is not a storage failure: the job neither fails nor restarts.
  CHECK_FALSE(f.master->restarting());
  CHECK_FALSE(f.master->failed());
  CHECK(f.env.of_kind(subtask_message::stop).empty());

  f.env.clock += 1000ms;
  f.env.sent.clear();
  f.master->on_checkpoint_timer();
  auto triggers = f.env.of_kind(subtask_message::trigger);
  REQUIRE(triggers.size() == 1);
  CHECK(triggers[0].checkpoint_id == 2);
}

TEST_CASE("job master: a checkpoint that times out is aborted and counted; past "
          "tolerable_failures the job restarts") {
  SUBCASE("one failure tolerated") {
    fixture f(/*restarts=*/1, /*tolerable_failures=*/1);
    f.master->start();
    f.master->on_checkpoint_timer();
    f.ack(f.sink_tasks()[0], 1);
    f.env.clock += 4999ms;
    f.master->on_checkpoint_timer(); // not timed out yet: nothing new either
    CHECK(f.master->coordinator()->is_in_flight(1));
    CHECK(f.env.of_kind(subtask_message::trigger).size() == 1);
    f.env.clock += 1ms;
    f.master->on_checkpoint_timer();
    CHECK_FALSE(f.master->coordinator()->is_in_flight(1));
    CHECK(f.env.discarded == std::vector<std::uint64_t>{1});
    CHECK(f.env.of_kind(subtask_message::cancel).size() == 3);
    CHECK(f.env.of_kind(subtask_message::stop).empty());
    CHECK_FALSE(f.master->restarting());
    // The same timer call triggered the next one.
    auto triggers = f.env.of_kind(subtask_message::trigger);
    REQUIRE(triggers.size() == 2);
    CHECK(triggers[1].checkpoint_id == 2);
    job_status s;
    f.ctx->journal.copy_to(s);
    CHECK(s.checkpoints_failed == 1);
    // The second in a row fails the job, which restarts.
    f.env.clock += 5000ms;
    f.master->on_checkpoint_timer();
    CHECK(f.master->restarting());
    CHECK(f.env.of_kind(subtask_message::stop).size() == 3);
  }
  SUBCASE("none tolerated, no restart left: the job fails naming the timeout") {
    fixture f(/*restarts=*/0, /*tolerable_failures=*/0);
    f.master->start();
    f.master->on_checkpoint_timer();
    f.env.clock += 5000ms;
    f.master->on_checkpoint_timer();
    CHECK(f.master->failed());
    CHECK_FALSE(f.master->restarting());
    auto why = f.ctx->failure();
    REQUIRE(why);
    CHECK(why->find("no checkpoint has completed yet") != std::string::npos);
    auto stops = f.env.of_kind(subtask_message::stop);
    CHECK(stops.size() == 3);
    for (const auto& m : stops)
      CHECK(m.checkpoint_id == 0); // keep nothing: no checkpoint completed
    f.end_all("user_shutdown");
    REQUIRE(f.env.drains.size() == 1);
    f.master->on_state_writer_drained(f.env.drains[0]);
    CHECK(f.env.finished_calls == 1);
    CHECK(f.ctx->result.checkpoints_failed == 1);
  }
  SUBCASE("a snapshot that could not be stored declines the checkpoint and counts") {
    fixture f(/*restarts=*/0, /*tolerable_failures=*/1);
    f.master->start();
    f.master->on_checkpoint_timer();
    write_snapshot_result r;
    r.checkpoint_id = 1;
    r.task = f.source_task();
    r.error = "MDB_MAP_FULL";
    f.master->on_acknowledge(r);
    CHECK_FALSE(f.master->coordinator()->is_in_flight(1));
    CHECK(f.env.discarded == std::vector<std::uint64_t>{1});
    job_status s;
    f.ctx->journal.copy_to(s);
    REQUIRE(s.checkpoints.size() == 1);
    CHECK(s.checkpoints[0].failure_reason
          == "declined by task " + std::to_string(f.source_task())
               + ": operator 'src' subtask 0/1 could not store its state: MDB_MAP_FULL");
    CHECK(s.checkpoints_failed == 1);
    CHECK_FALSE(f.master->failed());
  }
}

TEST_CASE("job master: a subtask failure restarts the job from the latest completed checkpoint") {
  fixture f(/*restarts=*/1);
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();
  // Checkpoint 1 completes with state; checkpoint 2 is in flight.
  f.master->on_checkpoint_timer();
  f.ack(sinks[0], 1, "sink-0@1");
  f.ack(sinks[1], 1, "sink-1@1");
  f.ack(src, 1, "offset=10");
  f.commit_all();
  f.env.clock += 1000ms;
  f.master->on_checkpoint_timer();
  f.ack(sinks[0], 2, "sink-0@2");
  f.env.sent.clear();
  f.env.timers.clear();

  f.master->on_subtask_ended(sinks[1], "operator 'out' failed: disk gone");
  CHECK(f.master->restarting());
  CHECK(f.ctx->journal.state() == job_state::restarting);
  // Every subtask is stopped and keeps no transaction newer than checkpoint 1.
  auto stops = f.env.of_kind(subtask_message::stop);
  REQUIRE(stops.size() == 3);
  for (const auto& m : stops)
    CHECK(m.checkpoint_id == 1);
  job_status s;
  f.ctx->journal.copy_to(s);
  REQUIRE(s.exceptions.size() == 1);
  CHECK(s.exceptions[0].restarted);
  CHECK(s.exceptions[0].message == "operator 'out' failed: disk gone");
  // Acknowledgements of the failing attempt are ignored.
  f.ack(sinks[1], 2);
  f.ack(src, 2);
  CHECK(f.env.commits.empty());

  // The others stop; the restart waits for its delay, then for the writer.
  f.master->on_subtask_ended(sinks[0], "user_shutdown");
  CHECK_FALSE(f.env.scheduled(job_master_timer::redeploy));
  f.master->on_subtask_ended(src, "user_shutdown");
  REQUIRE(f.env.timers.size() == 1);
  CHECK(f.env.timers[0].first == job_master_timer::redeploy);
  CHECK(f.env.timers[0].second == 250ms);
  CHECK(f.env.deployments.size() == 1);
  f.master->on_redeploy_timer();
  REQUIRE(f.env.drains == std::vector<drain_purpose>{drain_purpose::redeploy});
  CHECK(f.env.deployments.size() == 1);
  f.master->on_state_writer_drained(drain_purpose::redeploy);

  // Attempt 2 restores checkpoint 1: every subtask gets its own state.
  REQUIRE(f.env.deployments.size() == 2);
  CHECK(f.master->attempt() == 1);
  CHECK_FALSE(f.master->restarting());
  CHECK(f.ctx->journal.state() == job_state::running);
  CHECK(f.ctx->result.restarts == 1);
  CHECK(f.ctx->result.restored_checkpoint_id == 1);
  CHECK_FALSE(f.ctx->failure());
  const auto& d = f.env.deployments[1];
  REQUIRE(d.size() == 3);
  for (const auto& t : d) {
    CHECK(t.attempt == 1);
    REQUIRE(t.restores.size() == 1);
    CHECK(t.restores[0]->checkpoint_id == 1);
    REQUIRE(t.restores[0]->operator_states.size() == 1);
    const auto& state = t.restores[0]->operator_states[0];
    if (f.master->is_source(t.task))
      CHECK(state == "offset=10");
    else
      CHECK(state == "sink-" + std::to_string(t.subtask) + "@1");
  }
  // A final-state write answered for the old attempt is ignored.
  write_snapshot_result late;
  late.checkpoint_id = 2;
  late.task = src;
  late.ok = true;
  f.master->on_final_state_written(0, late);
  CHECK(f.env.commits.empty());
  // Checkpoints go on after the restored one.
  f.env.sent.clear();
  f.master->on_checkpoint_timer();
  auto triggers = f.env.of_kind(subtask_message::trigger);
  REQUIRE(triggers.size() == 1);
  CHECK(triggers[0].checkpoint_id > 1);

  // No attempt left: the next failure fails the job.
  f.env.timers.clear();
  f.master->on_subtask_ended(src, "operator 'src' failed: again");
  CHECK(f.master->failed());
  CHECK(f.ctx->failure()
        == std::optional<std::string>{"a subtask stopped: operator 'src' failed: again"});
  f.master->on_subtask_ended(sinks[0], "user_shutdown");
  f.master->on_subtask_ended(sinks[1], "user_shutdown");
  CHECK_FALSE(f.env.scheduled(job_master_timer::redeploy));
  REQUIRE(f.env.drains.size() == 2);
  CHECK(f.env.drains[1] == drain_purpose::finish);
}

TEST_CASE("job master: end of input: every subtask leaves its final state, the final "
          "checkpoint holds them and its completion lets the sinks commit") {
  fixture f;
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();
  // The source's input ends: its final positions stand in for it.
  f.final_state(src, "offset=end");
  CHECK(f.env.final_state_writes.empty());
  // A periodic checkpoint now goes on without the source: no trigger to it,
  // its final state is written for it instead.
  f.master->on_checkpoint_timer();
  CHECK(f.env.of_kind(subtask_message::trigger).empty());
  REQUIRE(f.env.final_state_writes.size() == 1);
  CHECK(f.env.final_state_writes[0].second.checkpoint_id == 1);
  CHECK(f.env.final_state_writes[0].second.task == src);
  f.env.final_state_writes.clear();
  f.ack(sinks[0], 1);
  f.ack(sinks[1], 1);
  f.ack(src, 1, "offset=end"); // the writer's answer for the final state
  f.commit_all();
  CHECK(f.master->last_completed_id() == 1);

  // Both sinks drain their input and pre-commit their last transaction,
  // which a checkpoint after their last one (1) commits: once the last has,
  // the final checkpoint is triggered at once.
  f.final_state(sinks[0], "txn-0", 2);
  CHECK(f.master->coordinator()->latest_id() == 1);
  f.env.sent.clear();
  f.final_state(sinks[1], "txn-1", 2);
  CHECK(f.master->coordinator()->latest_id() == 2);
  CHECK(f.master->coordinator()->is_in_flight(2));
  CHECK(f.env.of_kind(subtask_message::trigger).empty());
  // Every task takes part through its final state.
  REQUIRE(f.env.final_state_writes.size() == 3);
  for (const auto& [attempt, req] : f.env.final_state_writes) {
    CHECK(attempt == 0);
    CHECK(req.checkpoint_id == 2);
  }
  for (const auto& [attempt, req] : f.env.final_state_writes) {
    write_snapshot_result r;
    r.checkpoint_id = req.checkpoint_id;
    r.task = req.task;
    r.ok = true;
    f.master->on_final_state_written(attempt, r);
  }
  REQUIRE(f.env.commits.size() == 1);
  CHECK(f.env.commits[0].second.checkpoint_id == 2);
  CHECK(f.env.of_kind(subtask_message::notify_complete).empty());
  f.commit_all();
  // The sinks commit on this notification, then end.
  auto notified = f.env.of_kind(subtask_message::notify_complete);
  REQUIRE(notified.size() == 3);
  for (const auto& m : notified)
    CHECK(m.checkpoint_id == 2);
  // No further checkpoint: one after every input ended completed, and the
  // subtasks are ending (one triggered now would be left in flight).
  f.env.final_state_writes.clear();
  f.master->on_checkpoint_timer();
  CHECK(f.master->coordinator()->latest_id() == 2);
  CHECK(f.master->coordinator()->in_flight() == 0);
  f.end_all();
  REQUIRE(f.env.drains == std::vector<drain_purpose>{drain_purpose::finish});
  f.master->on_state_writer_drained(drain_purpose::finish);
  CHECK(f.env.finished_calls == 1);
  CHECK(f.ctx->result.checkpoints_completed == 2);
  CHECK(f.ctx->result.last_checkpoint_id == 2);
  CHECK_FALSE(f.ctx->failure());
}

TEST_CASE("job master: the checkpoint in flight when the last input ends holds every final "
          "state: the sinks commit on it and no further checkpoint is triggered") {
  fixture f;
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();
  // Checkpoint 1: the source takes it, then its input ends; the sinks'
  // inputs end before barrier 1 reaches them, so their final snapshots are
  // committed by checkpoint 1 (they took no snapshot before).
  f.master->on_checkpoint_timer();
  REQUIRE(f.master->coordinator()->is_in_flight(1));
  f.ack(src, 1, "offset=10");
  f.final_state(src, "offset=end");
  f.final_state(sinks[0], "txn-0", 1);
  f.final_state(sinks[1], "txn-1", 1);
  // Both sinks take part in checkpoint 1 through their final state.
  REQUIRE(f.env.final_state_writes.size() == 2);
  for (const auto& [attempt, req] : f.env.final_state_writes)
    CHECK(req.checkpoint_id == 1);
  f.answer_final_state_writes();
  REQUIRE(f.env.commits.size() == 1);
  f.env.sent.clear();
  f.commit_all();
  auto notified = f.env.of_kind(subtask_message::notify_complete);
  REQUIRE(notified.size() == 3);
  // The sinks end on this notification: no final checkpoint is owed.
  CHECK(f.master->coordinator()->latest_id() == 1);
  CHECK(f.master->coordinator()->in_flight() == 0);
  CHECK(f.env.final_state_writes.empty());
  // Nor does the periodic timer trigger one before they have ended.
  f.master->on_checkpoint_timer();
  CHECK(f.master->coordinator()->latest_id() == 1);
  CHECK(f.env.of_kind(subtask_message::trigger).empty());
  f.end_all();
  f.master->on_state_writer_drained(drain_purpose::finish);
  CHECK(f.env.finished_calls == 1);
  CHECK(f.ctx->result.checkpoints_completed == 1);
  CHECK(f.ctx->result.checkpoints_aborted == 0);
  CHECK(f.ctx->result.last_checkpoint_id == 1);
  auto latest = f.ctx->store->read_latest();
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);
}

TEST_CASE("job master: a sink whose final snapshot a newer checkpoint commits gets its final "
          "checkpoint after the one in flight completes") {
  fixture f;
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();
  f.master->on_checkpoint_timer();
  f.ack(src, 1, "offset=10");
  f.final_state(src, "offset=end");
  // Sink 0 took checkpoint 1 itself before its input ended: its final
  // snapshot waits for checkpoint 2. Sink 1's is committed by checkpoint 1.
  f.ack(sinks[0], 1, "txn-open");
  f.final_state(sinks[0], "txn-0", 2);
  f.final_state(sinks[1], "txn-1", 1);
  f.answer_final_state_writes();
  f.commit_all();
  CHECK(f.master->last_completed_id() == 1);
  // Checkpoint 2, the final one, at once: every task takes part through its
  // final state.
  CHECK(f.master->coordinator()->is_in_flight(2));
  REQUIRE(f.env.final_state_writes.size() == 3);
  f.answer_final_state_writes();
  f.commit_all();
  CHECK(f.master->last_completed_id() == 2);
  CHECK(f.master->coordinator()->latest_id() == 2);
  f.master->on_checkpoint_timer();
  CHECK(f.master->coordinator()->latest_id() == 2);
  f.end_all();
  f.master->on_state_writer_drained(drain_purpose::finish);
  CHECK(f.ctx->result.checkpoints_completed == 2);
  CHECK(f.ctx->result.checkpoints_aborted == 0);
}

TEST_CASE("job master: a checkpoint whose commit is sent while the job ends is counted once "
          "the writer answers it") {
  fixture f;
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();
  f.master->on_checkpoint_timer();
  REQUIRE(f.master->coordinator()->is_in_flight(1));
  // No two-phase-commit sink: the sinks' final states hold nothing and
  // acknowledge checkpoint 1 at once; the source's final positions are
  // written for it. Every subtask then ends without waiting.
  f.final_state(sinks[0], "");
  f.final_state(sinks[1], "");
  f.final_state(src, "offset=end");
  REQUIRE(f.env.final_state_writes.size() == 1);
  f.end_all();
  REQUIRE(f.env.drains == std::vector<drain_purpose>{drain_purpose::finish});
  // The writer answers the final-state write before the drain: the last
  // acknowledgement sends the manifest commit, after the drain.
  f.answer_final_state_writes();
  REQUIRE(f.env.commits.size() == 1);
  f.master->on_state_writer_drained(drain_purpose::finish);
  // The job waits for that commit's answer before it counts.
  CHECK(f.env.finished_calls == 0);
  REQUIRE(f.env.drains.size() == 2);
  CHECK(f.env.drains[1] == drain_purpose::finish);
  f.commit_all();
  f.master->on_state_writer_drained(drain_purpose::finish);
  CHECK(f.env.finished_calls == 1);
  CHECK(f.ctx->result.checkpoints_completed == 1);
  CHECK(f.ctx->result.checkpoints_aborted == 0);
  CHECK(f.ctx->result.last_checkpoint_id == 1);
  auto latest = f.ctx->store->read_latest();
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);
}

TEST_CASE("job master: stop with savepoint: the stop's final checkpoint is copied to the "
          "savepoint path and the job stops") {
  fixture f;
  f.master->start();
  auto src = f.source_task();
  auto sinks = f.sink_tasks();

  SUBCASE("refused at once: the checkpoint dir, a non-empty directory, no path") {
    for (std::string path : {f.ctx->graph->options.checkpoint.dir, f.dir.str(), std::string{}}) {
      savepoint_request r{path, true, std::make_shared<reply_slot<savepoint_result>>()};
      auto answer = r.reply->future();
      f.master->on_savepoint_request(std::move(r));
      auto got = answer.get();
      REQUIRE_FALSE(got);
      CHECK(got.error().code == errc::invalid_argument);
    }
    CHECK_FALSE(f.master->stopping());
    CHECK(f.env.sent.empty());
  }

  SUBCASE("taken") {
    auto path = (f.dir.path() / "savepoint").string();
    savepoint_request r{path, true, std::make_shared<reply_slot<savepoint_result>>()};
    auto answer = r.reply->future();
    f.env.clock += 5ms;
    f.master->on_savepoint_request(std::move(r));
    CHECK(f.master->stopping());
    CHECK(f.ctx->result.stopped);
    // The source is told to stop after taking checkpoint 1; nothing else
    // triggers it.
    CHECK(f.env.of_kind(subtask_message::trigger).empty());
    auto stops = f.env.of_kind(subtask_message::stop_source);
    REQUIRE(stops.size() == 1);
    CHECK(stops[0].task == src);
    CHECK(stops[0].checkpoint_id == 1);
    CHECK(stops[0].timestamp_ms == f.env.clock.count());
    CHECK(f.ctx->result.stop_checkpoint_id == 1);
    // While stopping, periodic checkpoints wait for the stop's.
    f.master->on_checkpoint_timer();
    CHECK(f.master->coordinator()->latest_id() == 1);
    // A second savepoint is refused while stopping.
    savepoint_request again{(f.dir.path() / "other").string(), false,
                            std::make_shared<reply_slot<savepoint_result>>()};
    auto refused = again.reply->future();
    f.master->on_savepoint_request(std::move(again));
    REQUIRE_FALSE(refused.get());

    f.ack(src, 1, "offset=7");
    f.ack(sinks[0], 1, "txn-0");
    f.ack(sinks[1], 1, "txn-1");
    // The commit goes first, the copy right after it.
    REQUIRE(f.env.commits.size() == 1);
    REQUIRE(f.env.savepoint_writes.size() == 1);
    CHECK(f.env.savepoint_writes[0].first.path == path);
    CHECK(f.env.savepoint_writes[0].second.checkpoint_id == 1);
    f.commit_all();
    CHECK(f.env.of_kind(subtask_message::notify_complete).size() == 3);
    auto [req, m] = std::move(f.env.savepoint_writes[0]);
    auto bytes = f.ctx->store->export_checkpoint(m, req.path);
    REQUIRE(bytes);
    f.master->on_savepoint_written(req, m.checkpoint_id, {true, "", *bytes});
    auto got = answer.get();
    REQUIRE(got);
    CHECK(got->path == path);
    CHECK(got->checkpoint_id == 1);
    CHECK(got->size_bytes == *bytes);
    // The savepoint restores alone.
    checkpoint::store_options so;
    so.dir = path;
    so.read_only = true;
    auto sp = checkpoint::lmdb_checkpoint_store::open(so);
    REQUIRE(sp);
    auto latest = (*sp)->read_latest();
    REQUIRE(latest);
    REQUIRE(latest->manifest);
    CHECK(latest->manifest->checkpoint_id == 1);

    // The subtasks finish once they saw checkpoint 1 complete; the job ends
    // without restarting, stopped rather than failed.
    f.end_all();
    f.master->on_state_writer_drained(drain_purpose::finish);
    CHECK(f.env.finished_calls == 1);
    CHECK_FALSE(f.ctx->failure());
    CHECK(f.ctx->result.last_checkpoint_id == 1);
  }
}

TEST_CASE("job master: a failure while stopping does not restart; a cancel stops every "
          "subtask at once") {
  SUBCASE("stop, then a failure") {
    fixture f(/*restarts=*/3);
    f.master->start();
    f.master->on_stop();
    CHECK(f.env.of_kind(subtask_message::stop_source).size() == 1);
    f.master->on_subtask_ended(f.sink_tasks()[0], "operator 'out' failed: boom");
    CHECK(f.master->failed());
    CHECK_FALSE(f.master->restarting());
  }
  SUBCASE("cancel") {
    fixture f(/*restarts=*/3);
    f.master->start();
    f.master->on_cancel();
    CHECK(f.master->failed());
    CHECK(f.ctx->failure() == std::optional<std::string>{"canceled"});
    CHECK(f.env.of_kind(subtask_message::stop).size() == 3);
    f.end_all("user_shutdown");
    CHECK_FALSE(f.env.scheduled(job_master_timer::redeploy));
    CHECK(f.env.drains == std::vector<drain_purpose>{drain_purpose::finish});
  }
}

TEST_CASE("job master: a savepoint waits for the checkpoint in flight, then is taken") {
  fixture f;
  f.master->start();
  f.master->on_checkpoint_timer(); // checkpoint 1 in flight
  auto path = (f.dir.path() / "savepoint").string();
  savepoint_request r{path, false, std::make_shared<reply_slot<savepoint_result>>()};
  auto answer = r.reply->future();
  f.master->on_savepoint_request(std::move(r));
  // At most one checkpoint in flight: the request comes back shortly.
  REQUIRE(f.env.savepoint_retries.size() == 1);
  CHECK(f.master->coordinator()->latest_id() == 1);
  for (auto t : f.sink_tasks())
    f.ack(t, 1);
  f.ack(f.source_task(), 1);
  f.commit_all();
  CHECK(f.env.savepoint_writes.empty()); // checkpoint 1 is not the savepoint
  f.env.sent.clear();
  auto retry = std::move(f.env.savepoint_retries[0]);
  f.env.savepoint_retries.clear();
  f.master->on_savepoint_request(std::move(retry));
  CHECK(f.env.savepoint_retries.empty());
  auto triggers = f.env.of_kind(subtask_message::trigger);
  REQUIRE(triggers.size() == 1);
  CHECK(triggers[0].checkpoint_id == 2);
  for (auto t : f.sink_tasks())
    f.ack(t, 2);
  f.ack(f.source_task(), 2);
  REQUIRE(f.env.savepoint_writes.size() == 1);
  CHECK(f.env.savepoint_writes[0].second.checkpoint_id == 2);
  SUBCASE("written") {
    f.commit_all();
    auto [req, m] = std::move(f.env.savepoint_writes[0]);
    f.master->on_savepoint_written(req, m.checkpoint_id, {true, "", 0});
    auto got = answer.get();
    REQUIRE(got);
    CHECK(got->checkpoint_id == 2);
    CHECK_FALSE(f.master->stopping()); // a savepoint alone does not stop the job
  }
  SUBCASE("the copy failed") {
    auto [req, m] = std::move(f.env.savepoint_writes[0]);
    f.master->on_savepoint_written(req, m.checkpoint_id, {false, "no space left", 0});
    auto got = answer.get();
    REQUIRE_FALSE(got);
    CHECK(got.error().code == errc::io_error);
    CHECK(got.error().message == "no space left");
  }
}

TEST_CASE("job master: a state query goes to the subtask owning the key's key group, or is "
          "answered at once") {
  fixture f(/*restarts=*/1, /*tolerable_failures=*/0, /*keyed=*/true);
  f.master->start();
  auto ask = [&](std::string op, std::vector<std::string> key) {
    state_query q{std::move(op), std::move(key),
                  std::make_shared<reply_slot<state_query_result>>()};
    auto answer = q.reply->future();
    f.master->on_state_query(std::move(q));
    return answer;
  };
  for (std::string key : {"1", "2", "42", "-7"}) {
    CAPTURE(key);
    f.env.queries.clear();
    ask("out", {key});
    REQUIRE(f.env.queries.size() == 1);
    const auto& [task, q] = f.env.queries[0];
    CHECK(q.member == 0);
    CHECK(q.result.operator_name == "out");
    CHECK(q.result.key == std::vector<std::string>{key});
    CHECK(q.result.parallelism == 2);
    CHECK(q.result.subtask
          == operator_index_for_key_group(q.result.key_group, 128, 2));
    CHECK(f.master->vertex_subtask(task).second == q.result.subtask);
    CHECK_FALSE(f.master->is_source(task));
  }
  auto error_of = [](auto answer) {
    auto got = answer.get();
    REQUIRE_FALSE(got);
    return got.error();
  };
  f.env.queries.clear();
  CHECK(error_of(ask("nope", {"1"})).code == errc::not_found);
  CHECK(error_of(ask("src", {"1"})).code == errc::invalid_argument); // not keyed
  CHECK(error_of(ask("out", {"1", "2"})).code == errc::invalid_argument);
  CHECK(error_of(ask("out", {"one"})).message == "key field 'v' is int64, got 'one'");
  CHECK(f.env.queries.empty());
  // The owning subtask has ended: it cannot answer.
  ask("out", {"42"});
  REQUIRE(f.env.queries.size() == 1);
  f.master->on_subtask_ended(f.env.queries[0].first, std::nullopt);
  f.env.queries.clear();
  auto e = error_of(ask("out", {"42"}));
  CHECK(e.code == errc::runtime_error);
  CHECK(e.message.find("is not running") != std::string::npos);
  CHECK(f.env.queries.empty());
}

TEST_CASE("job master: the state writer stopping fails the job") {
  fixture f(/*restarts=*/3);
  f.master->start();
  f.master->on_state_writer_down(false, "MDB_PANIC");
  CHECK(f.master->failed());
  CHECK(f.ctx->failure() == std::optional<std::string>{"the state writer stopped: MDB_PANIC"});
  CHECK(f.env.of_kind(subtask_message::stop).size() == 3);
  CHECK(f.env.finished_calls == 0); // subtasks still run
  f.end_all("user_shutdown");
  CHECK_FALSE(f.env.scheduled(job_master_timer::redeploy));
}

} // TEST_SUITE
