// SPDX-License-Identifier: Apache-2.0
#include "window/aggregates.hpp"

#include <doctest/doctest.h>

#include <utility>
#include <vector>

namespace {

using weir::internal::accumulator;
using weir::internal::accumulator_list;

// Distinct, non-default contents for accumulator k, with heap-held parts
// (a long string, a set) so that a shallow copy would show.
accumulator filled(int k) {
  accumulator a;
  a.count = k + 1;
  a.i = 100 * k;
  a.f = 0.5 * k;
  a.s = std::string(40, static_cast<char>('a' + k));
  a.seq = static_cast<std::uint64_t>(7 * k);
  a.null = k % 2 == 1;
  a.distinct = {"x" + std::to_string(k), "y" + std::to_string(k)};
  return a;
}

accumulator_list make(std::size_t n) {
  accumulator_list l(n);
  for (std::size_t k = 0; k < n; ++k)
    l[k] = filled(static_cast<int>(k));
  return l;
}

} // namespace

TEST_CASE("accumulator_list copies and moves inline and heap contents by value") {
  for (std::size_t n : {0U, 1U, 2U, 3U, 5U}) {
    CAPTURE(n);
    accumulator_list a = make(n);
    REQUIRE(a.size() == n);
    for (std::size_t k = 0; k < n; ++k)
      CHECK(a[k] == filled(static_cast<int>(k)));

    accumulator_list copy = a;
    CHECK(copy == a);
    if (n > 0) {
      CHECK(copy.data() != a.data());
      copy[0].s += "!";
      copy[0].distinct.insert("z");
      CHECK(a[0] == filled(0)); // the original is untouched
      CHECK_FALSE(copy == a);
    }

    accumulator_list assigned = make(4); // heap, then overwritten
    assigned = a;
    CHECK(assigned == a);
    accumulator_list small = make(1);
    small = make(n);
    CHECK(small == a);

    accumulator_list moved = std::move(copy);
    CHECK(moved.size() == n);
    CHECK(copy.size() == 0); // NOLINT(bugprone-use-after-move): documented state
    accumulator_list target = make(3);
    target = std::move(assigned);
    CHECK(target == a);
  }
}

TEST_CASE("accumulator_list resize gives empty accumulators") {
  accumulator_list l = make(3);
  l.resize(2);
  REQUIRE(l.size() == 2);
  CHECK(l[0] == accumulator{});
  CHECK(l[1] == accumulator{});
  l = make(2);
  l.resize(4);
  REQUIRE(l.size() == 4);
  for (const auto& a : l)
    CHECK(a == accumulator{});
}

TEST_CASE("accumulator_list encodes as a vector of accumulators") {
  for (std::size_t n : {0U, 2U, 3U}) {
    CAPTURE(n);
    const accumulator_list l = make(n);
    std::vector<accumulator> v(l.begin(), l.end());
    std::string from_list;
    std::string from_vector;
    weir::state::codec<accumulator_list>::encode(l, from_list);
    weir::state::codec<std::vector<accumulator>>::encode(v, from_vector);
    CHECK(from_list == from_vector);

    std::string_view in = from_vector;
    accumulator_list back = make(5);
    REQUIRE(weir::state::codec<accumulator_list>::decode(in, back));
    CHECK(in.empty());
    CHECK(back == l);

    // Truncated bytes fail instead of reading past the end.
    if (!from_list.empty()) {
      std::string_view cut = std::string_view{from_list}.substr(0, from_list.size() - 1);
      accumulator_list junk;
      CHECK_FALSE(weir::state::codec<accumulator_list>::decode(cut, junk));
    }
  }
}
