// SPDX-License-Identifier: Apache-2.0
#include "weir/time/source_watermarks.hpp"

#include <doctest/doctest.h>

using namespace std::chrono_literals;
using weir::min_watermark;
using weir::time::source_watermarks;

TEST_SUITE("time") {
TEST_CASE("the watermark is max_ts - bound - 1 and never decreases") {
  source_watermarks gen{{2000ms, 0ms, {}}};
  CHECK_FALSE(gen.poll().has_value());
  gen.on_record("", 1000, 0);
  CHECK(gen.poll() == -1001);
  gen.on_record("", 11999, 0);
  CHECK(gen.poll() == 9998);
  gen.on_record("", 9999, 0); // out of order: no change
  CHECK_FALSE(gen.poll().has_value());
  CHECK(gen.current() == 9998);
}

TEST_CASE("declared partitions hold the watermark back until each has produced") {
  // Case 17's trace: A and B, bound 0.
  source_watermarks gen{{0ms, 0ms, {"A", "B"}}};
  gen.on_record("A", 1000, 0);
  gen.on_record("A", 15000, 0);
  CHECK_FALSE(gen.poll().has_value()); // B silent: -inf
  gen.on_record("B", 2000, 0);
  CHECK(gen.poll() == 1999);
  gen.on_record("A", 25000, 0);
  gen.on_record("B", 16000, 0);
  CHECK(gen.poll() == 15999);
}

TEST_CASE("discovered partitions join the minimum when first seen") {
  source_watermarks gen{{0ms, 0ms, {}}};
  gen.on_record("A", 5000, 0);
  CHECK(gen.poll() == 4999);
  gen.on_record("B", 1000, 0); // behind, but the watermark never goes back
  CHECK_FALSE(gen.poll().has_value());
  gen.on_record("A", 9000, 0);
  CHECK_FALSE(gen.poll().has_value()); // B at 999 holds it
  gen.on_record("B", 7000, 0);
  CHECK(gen.poll() == 6999);
}

TEST_CASE("an idle partition stops holding back the minimum and rejoins with its next record") {
  source_watermarks gen{{0ms, 1000ms, {"A", "B"}}};
  gen.on_record("A", 100, 0);
  gen.on_record("B", 50, 0);
  CHECK(gen.poll() == 49);
  gen.on_record("A", 5000, 1500); // B silent since t=0
  gen.on_processing_time(1500);
  CHECK(gen.poll() == 4999);
  CHECK_FALSE(gen.all_idle());
  gen.on_record("B", 6000, 1600); // B active again
  gen.on_record("A", 9000, 1600);
  CHECK(gen.poll() == 5999);
  gen.on_processing_time(5000);
  CHECK(gen.all_idle());
}

TEST_CASE("a declared partition that never produces goes idle after the timeout") {
  source_watermarks gen{{0ms, 100ms, {"A", "B"}}};
  gen.on_processing_time(0);
  gen.on_record("A", 500, 10);
  CHECK_FALSE(gen.poll().has_value());
  gen.on_processing_time(101);
  CHECK(gen.poll() == 499);
}

TEST_CASE("the bound does not overflow for timestamps near the minimum") {
  source_watermarks gen{{5000ms, 0ms, {}}};
  gen.on_record("", min_watermark + 10, 0);
  CHECK_FALSE(gen.poll().has_value());
}

TEST_CASE("partitions a reader declares late hold the watermark back from their declaration") {
  // Kafka: partitions come from metadata, some while the job runs.
  source_watermarks gen{{0ms, 1000ms, {}}};
  gen.set_partitions({"t/0", "t/1"}, 0);
  gen.on_record("t/0", 5000, 0);
  CHECK_FALSE(gen.poll().has_value()); // t/1 silent: -inf
  gen.on_record("t/1", 3000, 100);
  CHECK(gen.poll() == 2999);
  gen.set_partitions({"t/0", "t/1", "t/2"}, 2000); // discovered at t = 2000
  gen.on_record("t/1", 6000, 2500);
  gen.on_processing_time(2500);
  CHECK_FALSE(gen.poll().has_value()); // t/2 holds it, not idle before 3000
  gen.on_record("t/0", 7000, 2900);
  gen.on_record("t/1", 7000, 2900);
  gen.on_processing_time(3001);
  CHECK(gen.poll() == 6999); // t/2 idle 1 s after its declaration
}

TEST_CASE("a partition the reader no longer declares stops holding the watermark back") {
  source_watermarks gen{{0ms, 0ms, {}}};
  gen.set_partitions({"a", "b"}, 0);
  gen.on_record("a", 1000, 0);
  gen.on_record("b", 9000, 0);
  CHECK(gen.poll() == 999);
  gen.set_partitions({"b"}, 10); // a reached its end (bounded)
  CHECK(gen.poll() == 8999);
  gen.set_partitions({}, 20);
  CHECK_FALSE(gen.all_idle()); // no partitions is not "all idle": the driver decides
}

TEST_CASE("a restored partition counts its idleness from the restart, not from time 0") {
  source_watermarks first{{0ms, 1000ms, {"A", "B"}}};
  first.on_record("A", 5000, 100);
  first.on_record("B", 4000, 100);
  CHECK(first.poll() == 3999);
  source_watermarks gen{{0ms, 1000ms, {"A", "B"}}};
  gen.restore(first.snapshot());
  gen.on_processing_time(1'000'000); // the restarted job's first tick
  gen.on_record("A", 8000, 1'000'100);
  gen.on_processing_time(1'000'200);
  CHECK_FALSE(gen.poll().has_value()); // B is not idle yet: it holds 3999
  gen.on_processing_time(1'001'001);
  CHECK(gen.poll() == 7999);
}
}
