// SPDX-License-Identifier: Apache-2.0
// The bounded ring behind the server's metric history (src/server/served_job.hpp):
// the last `capacity` values, oldest first, never more.
#include "served_job.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

using namespace weir::server::internal;

namespace {

std::vector<int> contents(const bounded_ring<int>& r) {
  std::vector<int> out;
  for (std::size_t i = 0; i < r.size(); ++i)
    out.push_back(r[i]);
  return out;
}

} // namespace

TEST_SUITE("server") {
  TEST_CASE("a bounded ring keeps the last values pushed, oldest first") {
    bounded_ring<int> r{3};
    CHECK(r.size() == 0);
    r.push(1);
    r.push(2);
    CHECK(contents(r) == std::vector<int>{1, 2});
    CHECK(r.back() == 2);
    for (int v = 3; v <= 10; ++v) {
      r.push(v);
      CHECK(r.size() == std::min(v, 3));
      CHECK(r.back() == v);
    }
    CHECK(contents(r) == std::vector<int>{8, 9, 10});
  }

  TEST_CASE("a bounded ring of capacity 0 keeps nothing") {
    bounded_ring<int> r{0};
    r.push(1);
    CHECK(r.size() == 0);
  }

  TEST_CASE("a metric history point is 64 bytes and says when it has no watermark") {
    CHECK(sizeof(subtask_point) == 64);
    subtask_point p;
    CHECK(p.watermark == subtask_point::no_value);
    CHECK(p.source_lag == subtask_point::no_value);
  }
}
