// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/barrier_tracker.hpp"

#include <doctest/doctest.h>

#include <vector>

using weir::checkpoint::barrier_tracker;

using ids = std::vector<std::uint64_t>;

TEST_SUITE("checkpoint") {
TEST_CASE("the at-least-once tracker snapshots once a barrier was seen on every channel") {
  barrier_tracker t{2};
  auto d = t.on_barrier(0, 1);
  CHECK(d.started == 1u);
  CHECK_FALSE(d.snapshot);
  CHECK_FALSE(t.is_blocked(0)); // records keep flowing on channel 0
  d = t.on_barrier(1, 1);
  CHECK(d.snapshot == 1u);
  CHECK_FALSE(d.released);
  CHECK(t.in_flight() == 0);
}

TEST_CASE("the tracker handles several checkpoints in flight on three channels") {
  barrier_tracker t{3};
  t.on_barrier(0, 1);
  t.on_barrier(0, 2);
  t.on_barrier(1, 1);
  t.on_barrier(1, 2);
  CHECK(t.in_flight() == 2);
  auto d = t.on_barrier(2, 1);
  CHECK(d.snapshot == 1u);
  CHECK(d.aborted.empty());
  d = t.on_barrier(2, 2);
  CHECK(d.snapshot == 2u);
  CHECK(t.in_flight() == 0);
}

TEST_CASE("a tracked checkpoint completing subsumes older ones still in flight") {
  barrier_tracker t{2};
  t.on_barrier(0, 1); // channel 1 never delivers barrier 1
  t.on_barrier(0, 2);
  auto d = t.on_barrier(1, 2);
  CHECK(d.snapshot == 2u);
  CHECK(d.aborted == ids{1});
  CHECK(t.on_barrier(1, 1).is_noop()); // stale
}

TEST_CASE("end of input completes checkpoints waiting only for that channel") {
  barrier_tracker t{3};
  t.on_barrier(0, 1);
  t.on_barrier(1, 1);
  t.on_barrier(0, 2);
  t.on_barrier(1, 2);
  auto d = t.on_end_of_input(2);
  CHECK(d.snapshot == 2u);
  CHECK(d.aborted == ids{1});
  CHECK(t.in_flight() == 0);
}

TEST_CASE("a channel that ended after its barrier is not counted twice") {
  barrier_tracker t{3};
  t.on_barrier(0, 1);
  t.on_end_of_input(0);
  auto d = t.on_barrier(1, 1);
  CHECK_FALSE(d.snapshot); // channel 2 has not delivered barrier 1 yet
  CHECK(t.on_barrier(2, 1).snapshot == 1u);
}

TEST_CASE("the tracker ignores duplicates and aborts cancelled checkpoints") {
  barrier_tracker t{2};
  t.on_barrier(0, 3);
  CHECK_FALSE(t.on_barrier(0, 3).snapshot);
  t.on_barrier(0, 4);
  auto d = t.on_cancel(3);
  CHECK(d.aborted == ids{3});
  CHECK(t.on_barrier(1, 3).is_noop());
  CHECK(t.on_barrier(1, 4).snapshot == 4u);
}
}
