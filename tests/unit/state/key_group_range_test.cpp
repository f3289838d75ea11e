// SPDX-License-Identifier: Apache-2.0
#include "weir/state/key_group_range.hpp"

#include "weir/core/key_group.hpp"

#include <doctest/doctest.h>

using weir::state::key_group_range;
using weir::state::key_group_range_for_subtask;

TEST_SUITE("state") {
TEST_CASE("subtask ranges partition the key groups and agree with operator_index_for_key_group") {
  const std::size_t maxps[] = {1, 2, 7, 128, 1000, 32768};
  const std::size_t ps[] = {1, 2, 3, 4, 5, 7, 16, 127, 128};
  for (auto maxp : maxps) {
    for (auto p : ps) {
      if (p > maxp)
        continue;
      CAPTURE(maxp);
      CAPTURE(p);
      std::size_t next = 0;
      for (std::size_t i = 0; i < p; ++i) {
        auto r = key_group_range_for_subtask(maxp, p, i);
        REQUIRE_FALSE(r.empty());
        CHECK(r.start == next); // contiguous, no gap, no overlap
        next = static_cast<std::size_t>(r.end) + 1;
        for (std::size_t g = r.start; g <= r.end; ++g)
          REQUIRE(weir::operator_index_for_key_group(g, maxp, p) == i);
      }
      CHECK(next == maxp);
    }
  }
}

TEST_CASE("ranges for invalid arguments are empty") {
  CHECK(key_group_range_for_subtask(128, 0, 0).empty());
  CHECK(key_group_range_for_subtask(128, 4, 4).empty());
  CHECK(key_group_range_for_subtask(4, 8, 0).empty());
  CHECK(key_group_range_for_subtask(40000, 1, 0).empty());
}

TEST_CASE("a key group range is inclusive at both ends") {
  key_group_range r{10, 19};
  CHECK(r.size() == 10);
  CHECK(r.contains(10));
  CHECK(r.contains(19));
  CHECK_FALSE(r.contains(9));
  CHECK_FALSE(r.contains(20));
  CHECK(r.local_index(19) == 9);
  CHECK(key_group_range{}.empty());
  CHECK(key_group_range{}.size() == 0);
  CHECK(key_group_range{5, 5}.size() == 1);
  CHECK(key_group_range{3, 2} == key_group_range{});
}
}
