// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_failure_manager.hpp"

#include <doctest/doctest.h>

using namespace weir::checkpoint;

TEST_SUITE("checkpoint") {
TEST_CASE("with no tolerable failures the first failed checkpoint fails the job") {
  checkpoint_failure_manager f{0};
  f.completed(3);
  auto why = f.failed(4, "checkpoint storage /tmp/s: committing: File too large");
  REQUIRE(why);
  CHECK(why->find("checkpoint 4 failed: checkpoint storage /tmp/s: committing: File too large")
        == 0);
  CHECK(why->find("tolerable_failures = 0") != std::string::npos);
  CHECK(f.consecutive() == 1);
  CHECK(f.total() == 1);
}

TEST_CASE("failures in a row are tolerated up to the limit; a completion starts over") {
  checkpoint_failure_manager f{2};
  CHECK_FALSE(f.failed(1, "map full"));
  CHECK_FALSE(f.failed(2, "map full"));
  CHECK(f.consecutive() == 2);
  f.completed(3);
  CHECK(f.consecutive() == 0);
  CHECK_FALSE(f.failed(4, "map full"));
  CHECK_FALSE(f.failed(5, "map full"));
  auto why = f.failed(6, "map full");
  REQUIRE(why);
  CHECK(why->find("3 failed checkpoints in a row; [checkpoint] tolerable_failures = 2")
        != std::string::npos);
  CHECK(f.total() == 5);
}

TEST_CASE("a checkpoint is counted once, and never when older than the last completed one") {
  checkpoint_failure_manager f{1};
  CHECK_FALSE(f.failed(7, "subtask 1: write failed"));
  CHECK_FALSE(f.failed(7, "subtask 2: write failed")); // the same checkpoint
  CHECK(f.consecutive() == 1);
  f.completed(9);
  CHECK_FALSE(f.failed(8, "late report")); // before the completion
  CHECK(f.consecutive() == 0);
  CHECK(f.total() == 1);
}
}
