// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/input_gate.hpp"

#include <doctest/doctest.h>

using weir::max_watermark;
using weir::runtime::input_gate;

TEST_SUITE("runtime") {
TEST_CASE("the combined watermark is the minimum over channels") {
  input_gate gate{2};
  CHECK_FALSE(gate.on_watermark(0, 100).has_value()); // channel 1 still at -inf
  CHECK(gate.on_watermark(1, 50) == 50);
  CHECK(gate.on_watermark(1, 200) == 100);
  CHECK(gate.current() == 100);
}

TEST_CASE("a watermark never goes backwards, per channel or combined") {
  input_gate gate{2};
  gate.on_watermark(0, 10);
  gate.on_watermark(1, 10);
  CHECK_FALSE(gate.on_watermark(0, 5).has_value());
  CHECK(gate.on_watermark(1, 20) == std::nullopt); // channel 0 still 10
  CHECK(gate.current() == 10);
}

TEST_CASE("an ended channel stops holding back the minimum") {
  input_gate gate{3};
  gate.on_watermark(0, 30);
  gate.on_watermark(1, 40);
  CHECK(gate.on_end_of_input(2) == 30);
  CHECK_FALSE(gate.all_ended());
  CHECK(gate.on_end_of_input(0) == 40);
  CHECK(gate.on_end_of_input(1) == max_watermark);
  CHECK(gate.all_ended());
}
}

TEST_SUITE("runtime") {
TEST_CASE("an idle channel stops holding back the minimum and rejoins with its next watermark") {
  input_gate gate{2};
  gate.on_watermark(0, 100);
  CHECK(gate.current() == weir::min_watermark);
  CHECK(gate.on_idle(1, true) == 100);
  CHECK(gate.on_watermark(0, 150) == 150);
  // Channel 1 rejoins behind: the combined watermark never goes back.
  CHECK_FALSE(gate.on_watermark(1, 120).has_value());
  CHECK(gate.current() == 150);
  CHECK(gate.on_watermark(0, 300) == std::nullopt); // channel 1 holds at 120
  CHECK(gate.on_watermark(1, 200) == 200);
}

TEST_CASE("when every live channel is idle the gate is idle and nothing advances") {
  input_gate gate{2};
  gate.on_watermark(0, 10);
  gate.on_watermark(1, 20);
  CHECK_FALSE(gate.on_idle(0, true) == std::nullopt); // min over {20}
  CHECK_FALSE(gate.on_idle(1, true).has_value());
  CHECK(gate.all_idle());
  CHECK(gate.current() == 20);
}

TEST_CASE("when the last active channel goes idle the gate advances to the largest watermark") {
  // A Kafka source subtask whose partitions all went idle at once never
  // emitted its watermark; another went idle first with 28999 (Flink's
  // StatusWatermarkValve: findAndOutputMaxWatermarkAcrossAllChannels).
  input_gate gate{2};
  gate.on_watermark(0, 28999);
  CHECK_FALSE(gate.on_idle(0, true).has_value()); // channel 1 holds at -inf
  CHECK(gate.on_idle(1, true) == 28999);
  CHECK(gate.all_idle());
  CHECK_FALSE(gate.on_watermark(1, 100).has_value()); // never back
}
}
