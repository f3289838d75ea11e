// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_coordinator.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using namespace weir::checkpoint;

namespace {

task_ack ack_with(const std::string& uid, std::uint32_t subtask, std::uint64_t bytes,
                  std::chrono::milliseconds alignment = 0ms) {
  operator_state_handle h;
  h.operator_uid = uid;
  h.subtask = subtask;
  h.has_operator_state = true;
  h.operator_state_bytes = bytes;
  return task_ack{{h}, alignment};
}

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("a checkpoint completes once every task acknowledged and its manifest is committed") {
  checkpoint_coordinator c{coordinator_options{}, 3};
  auto t = c.trigger(1000ms);
  REQUIRE(t.triggered());
  CHECK(t.checkpoint_id == 1);
  CHECK(c.is_in_flight(1));

  CHECK(c.acknowledge(1, 0, ack_with("src", 0, 10), 1010ms).status == ack_status::accepted);
  CHECK(c.acknowledge(1, 2, ack_with("views", 1, 200, 7ms), 1020ms).status
        == ack_status::accepted);
  auto last = c.acknowledge(1, 1, ack_with("views", 0, 300, 3ms), 1050ms);
  REQUIRE(last.status == ack_status::all_acked);
  REQUIRE(last.manifest);
  CHECK(last.manifest->checkpoint_id == 1);
  CHECK(last.manifest->status == checkpoint_status::completed);
  CHECK(last.manifest->trigger_ms == 1000);
  CHECK(last.manifest->completion_ms == 1050);
  CHECK(last.manifest->alignment_ms == 7);
  CHECK(last.manifest->handles.size() == 3);
  CHECK(last.manifest->size_bytes() == 510);
  // Not complete until the manifest is durable.
  CHECK_FALSE(c.last_completed());
  CHECK(c.is_in_flight(1));

  auto done = c.manifest_committed(1, 1100ms);
  REQUIRE(done);
  CHECK(done->stats.checkpoint_id == 1);
  CHECK(done->stats.duration_ms == 100);
  CHECK(done->stats.alignment_ms == 7);
  CHECK(done->stats.size_bytes == 510);
  CHECK(done->subsumed.empty());
  REQUIRE(c.last_completed());
  CHECK(c.last_completed()->checkpoint_id == 1);
  CHECK(c.completed_count() == 1);
  CHECK(c.in_flight() == 0);
}

TEST_CASE("only one checkpoint is in flight at a time by default") {
  checkpoint_coordinator c{coordinator_options{}, 1};
  REQUIRE(c.trigger(0ms).triggered());
  auto t = c.trigger(10ms);
  CHECK_FALSE(t.triggered());
  CHECK(t.refusal == trigger_refusal::too_many);
  CHECK(t.reason.find("in flight") != std::string::npos);

  SUBCASE("a configurable maximum allows more") {
    coordinator_options o;
    o.max_concurrent = 2;
    checkpoint_coordinator c2{o, 1};
    CHECK(c2.trigger(0ms).checkpoint_id == 1);
    CHECK(c2.trigger(1ms).checkpoint_id == 2);
    CHECK(c2.trigger(2ms).refusal == trigger_refusal::too_many);
  }
}

TEST_CASE("a declined checkpoint is aborted and the next one proceeds with a new id") {
  checkpoint_coordinator c{coordinator_options{}, 2};
  REQUIRE(c.trigger(0ms).checkpoint_id == 1);
  c.acknowledge(1, 0, ack_with("a", 0, 1), 5ms);
  auto a = c.decline(1, 1, "alignment aborted");
  REQUIRE(a);
  CHECK(a->checkpoint_id == 1);
  CHECK(a->reason.find("declined by task 1: alignment aborted") != std::string::npos);
  CHECK(c.aborted_count() == 1);
  CHECK_FALSE(c.is_in_flight(1));
  // Late acks of the aborted checkpoint are ignored.
  auto late = c.acknowledge(1, 1, ack_with("a", 1, 1), 6ms);
  CHECK(late.status == ack_status::ignored);
  CHECK(late.reason.find("not in flight") != std::string::npos);
  // A second decline of the same checkpoint changes nothing.
  CHECK_FALSE(c.decline(1, 0, "again"));
  auto t = c.trigger(7ms);
  CHECK(t.checkpoint_id == 2);
}

TEST_CASE("a checkpoint that is not acknowledged in time is aborted") {
  coordinator_options o;
  o.timeout = 100ms;
  checkpoint_coordinator c{o, 2};
  REQUIRE(c.trigger(1000ms).triggered());
  c.acknowledge(1, 0, ack_with("a", 0, 1), 1010ms);
  CHECK(c.next_timeout() == 1100ms);
  CHECK(c.expire(1099ms).empty());
  auto gone = c.expire(1100ms);
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].checkpoint_id == 1);
  CHECK(gone[0].reason == "timed out after 100 ms with 1 of 2 subtasks acknowledged");
  CHECK_FALSE(c.next_timeout());
  CHECK(c.trigger(1101ms).checkpoint_id == 2);
}

TEST_CASE("a checkpoint whose manifest is being committed does not time out") {
  coordinator_options o;
  o.timeout = 10ms;
  checkpoint_coordinator c{o, 1};
  c.trigger(0ms);
  REQUIRE(c.acknowledge(1, 0, ack_with("a", 0, 1), 5ms).status == ack_status::all_acked);
  CHECK(c.expire(50ms).empty());
  CHECK(c.manifest_committed(1, 60ms));
}

TEST_CASE("abort_waiting aborts and counts the checkpoints waiting for acknowledgements, "
          "not one whose manifest is being committed") {
  coordinator_options o;
  o.max_concurrent = 2;
  checkpoint_coordinator c{o, 1};
  REQUIRE(c.trigger(0ms).triggered());
  REQUIRE(c.trigger(1ms).triggered());
  REQUIRE(c.acknowledge(1, 0, ack_with("a", 0, 1), 2ms).status == ack_status::all_acked);
  auto gone = c.abort_waiting("the job ended before it completed");
  REQUIRE(gone.size() == 1);
  CHECK(gone[0].checkpoint_id == 2);
  CHECK(gone[0].reason == "the job ended before it completed");
  CHECK(c.aborted_count() == 1);
  CHECK(c.is_in_flight(1));
  CHECK_FALSE(c.is_in_flight(2));
  CHECK(c.manifest_committed(1, 3ms));
  CHECK(c.completed_count() == 1);
}

TEST_CASE("duplicate, unknown and out-of-range acknowledgements are ignored") {
  checkpoint_coordinator c{coordinator_options{}, 2};
  c.trigger(0ms);
  CHECK(c.acknowledge(7, 0, {}, 1ms).status == ack_status::ignored);
  CHECK(c.acknowledge(1, 2, {}, 1ms).status == ack_status::ignored);
  CHECK(c.acknowledge(1, 0, {}, 1ms).status == ack_status::accepted);
  auto dup = c.acknowledge(1, 0, {}, 2ms);
  CHECK(dup.status == ack_status::ignored);
  CHECK(dup.reason.find("already acknowledged") != std::string::npos);
  CHECK(c.acknowledge(1, 1, {}, 3ms).status == ack_status::all_acked);
}

TEST_CASE("min pause delays the next trigger after a completion") {
  coordinator_options o;
  o.min_pause = 500ms;
  checkpoint_coordinator c{o, 1};
  c.trigger(0ms);
  c.acknowledge(1, 0, {}, 10ms);
  REQUIRE(c.manifest_committed(1, 20ms));
  auto t = c.trigger(300ms);
  CHECK(t.refusal == trigger_refusal::min_pause);
  CHECK_FALSE(t.triggered());
  CHECK(c.trigger(520ms).checkpoint_id == 2);
}

TEST_CASE("a stop's final checkpoint is not held back by min pause, but by one in flight") {
  coordinator_options o;
  o.min_pause = 500ms;
  checkpoint_coordinator c{o, 1};
  c.trigger(0ms);
  c.acknowledge(1, 0, {}, 10ms);
  REQUIRE(c.manifest_committed(1, 20ms));
  CHECK(c.trigger(30ms, true).checkpoint_id == 2);
  CHECK(c.trigger(40ms, true).refusal == trigger_refusal::too_many);
}

TEST_CASE("ids resume after the highest stored id and never go back") {
  checkpoint_coordinator c{coordinator_options{}, 1};
  c.resume_after(41);
  CHECK(c.latest_id() == 41);
  CHECK(c.trigger(0ms).checkpoint_id == 42);
  c.decline(42, 0, "x");
  c.resume_after(10); // lower: ignored
  CHECK(c.trigger(1ms).checkpoint_id == 43);
}

TEST_CASE("a failed manifest commit aborts the checkpoint") {
  checkpoint_coordinator c{coordinator_options{}, 1};
  c.trigger(0ms);
  c.acknowledge(1, 0, {}, 1ms);
  auto a = c.manifest_failed(1, "MDB_MAP_FULL");
  REQUIRE(a);
  CHECK(a->reason == "MDB_MAP_FULL");
  CHECK_FALSE(c.manifest_committed(1, 2ms));
  CHECK(c.completed_count() == 0);
  CHECK(c.aborted_count() == 1);
}

TEST_CASE("completing a newer checkpoint subsumes older ones in flight") {
  coordinator_options o;
  o.max_concurrent = 3;
  checkpoint_coordinator c{o, 1};
  c.trigger(0ms);
  c.trigger(1ms);
  c.acknowledge(2, 0, {}, 2ms);
  auto done = c.manifest_committed(2, 3ms);
  REQUIRE(done);
  REQUIRE(done->subsumed.size() == 1);
  CHECK(done->subsumed[0].checkpoint_id == 1);
  CHECK(c.in_flight() == 0);
}

TEST_CASE("a task finished with its final state: checkpoints go on, acknowledged for it (FLIP-147)") {
  checkpoint_coordinator c{coordinator_options{}, 2};
  c.trigger(0ms);
  c.acknowledge(1, 0, {}, 1ms);
  // Task 1 ends before it acknowledged 1: the caller acknowledges 1 for it.
  auto waiting = c.task_finished_with_state(1);
  REQUIRE(waiting.size() == 1);
  CHECK(waiting[0] == 1);
  CHECK(c.finished_with_state(1));
  CHECK_FALSE(c.finished_with_state(0));
  CHECK(c.acknowledge(1, 1, {}, 2ms).status == ack_status::all_acked);
  REQUIRE(c.manifest_committed(1, 3ms));
  // Its exit afterwards aborts nothing and stops nothing.
  CHECK(c.task_finished(1).empty());
  auto t = c.trigger(10ms);
  REQUIRE(t.triggered());
  CHECK(c.task_finished_with_state(1).empty()); // once only
  CHECK(c.acknowledge(t.checkpoint_id, 0, {}, 11ms).status == ack_status::accepted);
  CHECK(c.acknowledge(t.checkpoint_id, 1, {}, 12ms).status == ack_status::all_acked);
}

TEST_CASE("a finished task stops further triggers and aborts checkpoints waiting for it") {
  checkpoint_coordinator c{coordinator_options{}, 2};
  c.trigger(0ms);
  c.acknowledge(1, 0, {}, 1ms);
  SUBCASE("the task had not acknowledged") {
    auto a = c.task_finished(1);
    REQUIRE(a.size() == 1);
    CHECK(a[0].checkpoint_id == 1);
  }
  SUBCASE("the task had acknowledged") {
    CHECK(c.task_finished(0).empty());
    CHECK(c.acknowledge(1, 1, {}, 2ms).status == ack_status::all_acked);
  }
  auto t = c.trigger(10ms);
  CHECK(t.refusal == trigger_refusal::task_finished);
}
}
