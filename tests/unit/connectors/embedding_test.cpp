// SPDX-License-Identifier: Apache-2.0
// The embedding API through real jobs on the actor system: a push source fed
// by the test's threads, callback sinks, queryable state and savepoints
// (push::add_source, sink_to_callback, query_state, trigger_savepoint).
#include "weir/api/job.hpp"
#include "weir/connectors/push_source.hpp"
#include "weir/state/keyed_process_function.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <vector>

namespace {

using namespace std::chrono_literals;

weir::job_options quiet_options(std::size_t parallelism = 1) {
  weir::job_options o;
  o.name = "embed";
  o.parallelism = parallelism;
  o.batch_size = 64;
  o.status_interval = std::chrono::milliseconds{0};
  o.quiet = true;
  return o;
}

weir::schema_ptr event_schema() {
  return weir::make_schema({{"user", weir::type_id::string},
                            {"ts", weir::type_id::timestamp},
                            {"amount", weir::type_id::int64}});
}

/// Rows a callback sink received, as JSON, and a way to wait for n of them.
struct collected {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<std::string> rows;

  void add(const weir::row_view& r) {
    std::lock_guard lock{mutex};
    rows.push_back(r.to_json());
    changed.notify_all();
  }
  /// Waits until `n` rows arrived (false after 60 s: the test fails then).
  bool wait_for(std::size_t n) {
    std::unique_lock lock{mutex};
    return changed.wait_for(lock, 60s, [&] { return rows.size() >= n; });
  }
  std::vector<std::string> snapshot() {
    std::lock_guard lock{mutex};
    return rows;
  }
};

std::string temp_dir(const std::string& what) {
  auto d = std::filesystem::temp_directory_path()
           / ("weir-embed-" + what + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

/// Queries until `pred` holds for the answer (the subtask has processed
/// what was pushed); at most 60 s.
weir::state_query_result query_until(weir::job& j, const std::string& op,
                                     std::vector<std::string> key,
                                     const std::function<bool(const weir::state_query_result&)>& pred) {
  auto until = std::chrono::steady_clock::now() + 60s;
  weir::state_query_result last;
  while (std::chrono::steady_clock::now() < until) {
    auto r = j.query_state(op, key).get();
    REQUIRE_MESSAGE(r.has_value(), (r ? std::string{} : r.error().message));
    last = *r;
    if (pred(last))
      return last;
    std::this_thread::sleep_for(5ms);
  }
  FAIL("the state never reached the expected value; last answer: " << last.to_json());
  return last;
}

} // namespace

TEST_SUITE("embedding") {

TEST_CASE("try_push refuses at capacity and push blocks until the source takes a record") {
  weir::push_source_handle h{2};
  CHECK(h.try_push(std::string{"{}"}) == 0u);
  CHECK(h.try_push(std::string{"{}"}) == 1u);
  CHECK_FALSE(h.try_push(std::string{"{}"}));
  CHECK(h.queued() == 2);
  std::optional<std::uint64_t> pushed;
  bool returned = false;
  std::mutex m;
  std::thread t{[&] {
    auto s = h.push(std::string{"{}"});
    std::lock_guard lock{m};
    pushed = s;
    returned = true;
  }};
  {
    // Full: the push cannot have returned.
    std::lock_guard lock{m};
    CHECK_FALSE(returned);
  }
  std::vector<weir::push_source_handle::item> out;
  CHECK(h.take(1, false, out) == 0u);
  t.join();
  CHECK(pushed == 2u);
  h.close();
  CHECK_FALSE(h.push(std::string{"{}"}));
  CHECK_FALSE(h.exhausted()); // two records still queued
  out.clear();
  h.take(10, false, out);
  CHECK(out.size() == 2);
  CHECK(h.exhausted());
}

TEST_CASE("a rewind replays kept records; a new handle renumbers from the restored position") {
  weir::push_source_handle h{10};
  for (int i = 0; i < 5; ++i)
    h.push(std::string{"{\"n\":"} + std::to_string(i) + "}");
  std::vector<weir::push_source_handle::item> out;
  h.take(3, true, out);
  h.complete(1, 2); // a checkpoint covered records 0 and 1
  h.rewind(2);      // a restart from it
  out.clear();
  CHECK(h.take(10, true, out) == 2u);
  REQUIRE(out.size() == 3);
  CHECK(out[0].text == "{\"n\":2}");

  weir::push_source_handle fresh{10};
  std::uint64_t restored = 0;
  fresh.on_restore([&](std::uint64_t s) { restored = s; });
  fresh.push(std::string{"{}"});
  fresh.rewind(40); // restoring a checkpoint of another process
  CHECK(restored == 40);
  CHECK(fresh.cursor() == 40);
  CHECK(fresh.push(std::string{"{}"}) == 41u);
}

TEST_CASE("records pushed from two threads all reach the callback sink; close ends the job") {
  weir::job j{quiet_options()};
  weir::push::source spec;
  spec.schema = event_schema();
  spec.event_time_field = "ts";
  spec.capacity = 16; // small: the pushing threads meet backpressure
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  collected got;
  REQUIRE(src->stream.sink_to_callback([&](const weir::row_view& r) { got.add(r); },
                                       {"out", 1}));
  weir::job_result result;
  std::thread runner{[&] { result = j.execute(); }};
  auto pusher = [&](std::string user, bool as_values) {
    for (int i = 0; i < 500; ++i) {
      std::optional<std::uint64_t> s;
      if (as_values)
        s = src->handle->push(std::vector<weir::value>{user, std::int64_t{i}, std::int64_t{i}});
      else
        s = src->handle->push("{\"user\":\"" + user + "\",\"ts\":" + std::to_string(i)
                              + ",\"amount\":" + std::to_string(i) + "}");
      REQUIRE(s);
    }
  };
  std::thread a{pusher, "alice", false};
  std::thread b{pusher, "bob", true};
  a.join();
  b.join();
  src->handle->close();
  runner.join();
  REQUIRE_MESSAGE(result.ok, result.error);
  CHECK(result.records_read == 1000);
  auto rows = got.snapshot();
  REQUIRE(rows.size() == 1000);
  std::set<std::string> distinct(rows.begin(), rows.end());
  CHECK(distinct.size() == 1000);
  CHECK(distinct.count("{\"user\":\"bob\",\"ts\":499,\"amount\":499}") == 1);
  CHECK(distinct.count("{\"user\":\"alice\",\"ts\":0,\"amount\":0}") == 1);
}

TEST_CASE("a record that does not decode is a bad record of the push source") {
  auto o = quiet_options();
  o.on_bad_record = weir::bad_record_policy::skip;
  weir::job j{o};
  weir::push::source spec;
  spec.schema = event_schema();
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  collected got;
  REQUIRE(src->stream.sink_to_callback([&](const weir::row_view& r) { got.add(r); }));
  src->handle->push(std::string{"{\"user\":\"a\",\"ts\":1,\"amount\":2}"});
  src->handle->push(std::string{"not json"});
  src->handle->push(std::vector<weir::value>{std::int64_t{5}});
  src->handle->close();
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(r.bad_records == 2);
  CHECK(got.snapshot().size() == 1);
}

TEST_CASE("a running count's queried state equals the count the sink emitted last") {
  weir::job j{quiet_options(2)};
  weir::push::source spec;
  spec.schema = event_schema();
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  auto keyed = src->stream.key_by({"user"});
  REQUIRE(keyed);
  auto counts = keyed->count("count", {"counts", 0});
  REQUIRE(counts);
  collected got;
  REQUIRE(counts->sink_to_callback([&](const weir::row_view& r) { got.add(r); }, {"out", 1}));
  weir::job_result result;
  std::thread runner{[&] { result = j.execute(); }};
  const std::vector<std::string> users = {"u0", "u1", "u2", "u3", "u4"};
  for (int i = 0; i < 103; ++i)
    src->handle->push(std::vector<weir::value>{users[static_cast<std::size_t>(i) % users.size()],
                                               std::int64_t{i}, std::int64_t{1}});
  REQUIRE(got.wait_for(103));
  for (const auto& u : users) {
    auto a = j.query_state("counts", {u}).get();
    REQUIRE_MESSAGE(a.has_value(), (a ? std::string{} : a.error().message));
    CHECK(a->found);
    CHECK(a->operator_name == "counts");
    CHECK(a->parallelism == 2);
    // The sink's last row for the key carries the same count.
    std::string last;
    for (const auto& row : got.snapshot())
      if (row.find("\"user\":\"" + u + "\"") != std::string::npos)
        last = row;
    auto expect = u == "u0" || u == "u1" || u == "u2" ? 21 : 20;
    CHECK(last == "{\"user\":\"" + u + "\",\"count\":" + std::to_string(expect) + "}");
    CHECK(a->state == "{\"count\":" + std::to_string(expect) + "}");
  }
  auto unseen = j.query_state("counts", {"nobody"}).get();
  REQUIRE(unseen);
  CHECK_FALSE(unseen->found);
  CHECK(unseen->state == "null");
  auto missing = j.query_state("no_such_operator", {"u0"}).get();
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == weir::errc::not_found);
  auto arity = j.query_state("counts", {"u0", "extra"}).get();
  REQUIRE_FALSE(arity);
  CHECK(arity.error().code == weir::errc::invalid_argument);
  auto unkeyed = j.query_state("events", {"u0"}).get();
  REQUIRE_FALSE(unkeyed);
  CHECK(unkeyed.error().code == weir::errc::invalid_argument);
  src->handle->close();
  runner.join();
  REQUIRE_MESSAGE(result.ok, result.error);
  auto after = j.query_state("counts", {"u0"}).get();
  REQUIRE_FALSE(after);
  CHECK(after.error().code == weir::errc::runtime_error);
}

/// Keeps per user the number of purchases (value state "n") and the last
/// amount (value state "last"), and emits {user, n} for each.
class purchase_tracker final : public weir::state::keyed_process_function {
public:
  void open(context& ctx) override {
    n_ = *ctx.state().get_value_state<std::int64_t>("n");
    last_ = *ctx.state().get_value_state<std::string>("last");
  }
  void process_element(const weir::row_view& row, context& ctx,
                       weir::state::row_collector& out) override {
    auto n = n_.value_or(0) + 1;
    n_.update(n);
    last_.update("amount " + std::to_string(*row.get_int("amount")));
    out.emit({ctx.key().front(), n});
  }

private:
  weir::state::value_state<std::int64_t> n_;
  weir::state::value_state<std::string> last_;
};

TEST_CASE("a keyed process function's queried value states equal what it emitted last") {
  weir::job j{quiet_options(2)};
  weir::push::source spec;
  spec.schema = event_schema();
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  auto tracked = src->stream.key_by({"user"})->process(
    "tracker", weir::make_schema({{"user", weir::type_id::string}, {"n", weir::type_id::int64}}),
    [] { return std::make_unique<purchase_tracker>(); });
  REQUIRE(tracked);
  collected got;
  REQUIRE(tracked->sink_to_callback([&](const weir::row_view& r) { got.add(r); }, {"out", 1}));
  weir::job_result result;
  std::thread runner{[&] { result = j.execute(); }};
  for (int i = 0; i < 10; ++i)
    src->handle->push(std::vector<weir::value>{std::string{i < 7 ? "ann" : "bo"}, std::int64_t{i},
                                               std::int64_t{i * 10}});
  REQUIRE(got.wait_for(10));
  auto a = j.query_state("tracker", {"ann"}).get();
  REQUIRE(a.has_value());
  CHECK(a->state == "{\"last\":\"amount 60\",\"n\":7}");
  auto rows = got.snapshot();
  CHECK(std::count(rows.begin(), rows.end(), std::string{"{\"user\":\"ann\",\"n\":7}"}) == 1);
  src->handle->close();
  runner.join();
  REQUIRE_MESSAGE(result.ok, result.error);
}

TEST_CASE("a window's queried open window equals the row the sink emits when it fires") {
  weir::job j{quiet_options(2)};
  weir::push::source spec;
  spec.schema = event_schema();
  spec.event_time_field = "ts";
  // Nothing fires before the input ends (watermark = max ts - 60 s - 1).
  spec.watermark.max_out_of_orderness = 60s;
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  auto keyed = src->stream.key_by({"user"});
  REQUIRE(keyed);
  auto win = keyed->window(std::make_shared<const weir::window::tumbling_event_time_windows>(
                             *weir::window::tumbling_event_time_windows::make(10s)),
                           {{"n", "count(*)"}, {"total", "sum(amount)"}}, {}, {"per_user", 0});
  REQUIRE(win);
  collected got;
  REQUIRE(win->sink_to_callback([&](const weir::row_view& r) { got.add(r); }, {"out", 1}));
  weir::job_result result;
  std::thread runner{[&] { result = j.execute(); }};
  // alice: 3 records in [0, 10s) and 1 in [10s, 20s); bob: 2 in [0, 10s).
  for (auto [user, ts, amount] : std::vector<std::tuple<std::string, std::int64_t, std::int64_t>>{
         {"alice", 1000, 5}, {"bob", 2000, 1}, {"alice", 3000, 7}, {"alice", 9999, 1},
         {"bob", 4000, 2}, {"alice", 12000, 100}})
    src->handle->push(std::vector<weir::value>{user, ts, amount});
  auto a = query_until(j, "per_user", {"alice"}, [](const weir::state_query_result& r) {
    return r.state.find("\"total\":100") != std::string::npos
           && r.state.find("\"total\":13") != std::string::npos;
  });
  CHECK(a.found);
  CHECK(a.watermark < 10000); // nothing fired yet
  CHECK(a.state
        == "{\"windows\":[{\"user\":\"alice\",\"window_start\":0,\"window_end\":10000,\"n\":3,"
           "\"total\":13},{\"user\":\"alice\",\"window_start\":10000,\"window_end\":20000,"
           "\"n\":1,\"total\":100}]}");
  auto b = query_until(j, "per_user", {"bob"}, [](const weir::state_query_result& r) {
    return r.state.find("\"n\":2") != std::string::npos;
  });
  src->handle->close();
  runner.join();
  REQUIRE_MESSAGE(result.ok, result.error);
  // What the sink emitted for the same keys and windows.
  auto rows = got.snapshot();
  std::set<std::string> emitted(rows.begin(), rows.end());
  CHECK(emitted.count("{\"user\":\"alice\",\"window_start\":0,\"window_end\":10000,\"n\":3,"
                      "\"total\":13}") == 1);
  CHECK(emitted.count("{\"user\":\"alice\",\"window_start\":10000,\"window_end\":20000,"
                      "\"n\":1,\"total\":100}") == 1);
  CHECK(b.state == "{\"windows\":[" + std::string{*std::find_if(rows.begin(), rows.end(), [](const std::string& r) {
          return r.find("bob") != std::string::npos;
        })} + "]}");
  CHECK(rows.size() == 3);
}

TEST_CASE("a savepoint of a running job restores into a new job at another parallelism") {
  auto dir = temp_dir("ckpt");
  auto sp = temp_dir("savepoint");
  std::map<std::string, std::string> first_counts;
  {
    auto o = quiet_options(2);
    o.checkpoint.enabled = true;
    o.checkpoint.dir = dir;
    o.checkpoint.interval = 100ms;
    weir::job j{o};
    weir::push::source spec;
    spec.schema = event_schema();
    auto src = j.from(spec, {"events", 0});
    REQUIRE(src);
    std::uint64_t covered = 0;
    std::mutex m;
    src->handle->on_checkpoint_complete([&](std::uint64_t, std::uint64_t c) {
      std::lock_guard lock{m};
      covered = c;
    });
    auto counts = src->stream.key_by({"user"})->count("count", {"counts", 0});
    REQUIRE(counts);
    collected got;
    REQUIRE(counts->sink_to_callback([&](const weir::row_view& r) { got.add(r); }, {"out", 1}));
    weir::job_result result;
    std::thread runner{[&] { result = j.execute(); }};
    for (int i = 0; i < 60; ++i)
      src->handle->push(std::vector<weir::value>{std::string{i % 2 ? "x" : "y"},
                                                 std::int64_t{i}, std::int64_t{1}});
    REQUIRE(got.wait_for(60));
    auto bad = j.trigger_savepoint(dir).get(); // the checkpoint dir itself
    REQUIRE_FALSE(bad);
    CHECK(bad.error().code == weir::errc::invalid_argument);
    auto saved = j.stop_with_savepoint(sp).get();
    REQUIRE_MESSAGE(saved.has_value(), (saved ? std::string{} : saved.error().message));
    CHECK(saved->path == sp);
    CHECK(saved->checkpoint_id > 0);
    runner.join();
    REQUIRE_MESSAGE(result.ok, result.error);
    CHECK(result.stopped);
    CHECK(result.stop_checkpoint_id == saved->checkpoint_id);
    std::lock_guard lock{m};
    CHECK(covered == 60); // the savepoint covers every record pushed
  }
  // Copied elsewhere, it restores on its own; the old checkpoint dir is gone.
  auto copy = temp_dir("savepoint-copy");
  std::filesystem::copy(sp, copy, std::filesystem::copy_options::recursive);
  std::filesystem::remove_all(sp);
  std::filesystem::remove_all(dir);
  auto o = quiet_options(3);
  o.checkpoint.enabled = true;
  o.checkpoint.dir = dir;
  o.checkpoint.from_savepoint = copy;
  weir::job j{o};
  weir::push::source spec;
  spec.schema = event_schema();
  auto src = j.from(spec, {"events", 0});
  REQUIRE(src);
  std::uint64_t restored_at = 0;
  src->handle->on_restore([&](std::uint64_t s) { restored_at = s; });
  auto counts = src->stream.key_by({"user"})->count("count", {"counts", 0});
  REQUIRE(counts);
  collected got;
  REQUIRE(counts->sink_to_callback([&](const weir::row_view& r) { got.add(r); }, {"out", 1}));
  src->handle->push(std::vector<weir::value>{std::string{"x"}, std::int64_t{0}, std::int64_t{1}});
  src->handle->close();
  auto r = j.execute();
  REQUIRE_MESSAGE(r.ok, r.error);
  CHECK(restored_at == 60);
  CHECK(r.restored_checkpoint_id > 0);
  // x was counted 30 times before the savepoint: the next one is the 31st.
  CHECK(got.snapshot() == std::vector<std::string>{"{\"user\":\"x\",\"count\":31}"});
  std::filesystem::remove_all(copy);
  std::filesystem::remove_all(dir);
}

}
