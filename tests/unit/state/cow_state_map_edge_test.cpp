// SPDX-License-Identifier: Apache-2.0
// Edge cases for cow_state_map's paged layout: crafted colliding
// hashes (clusters, equal low 32 bits, equal full hashes, wrap-around), the
// documented iteration order, exception safety of writes on pages a
// snapshot shares, and over-aligned values.
#include "weir/state/cow_state_map.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using weir::state::cow_state_map;
using weir::state::key_group_range;
using weir::state::state_key;

namespace {

// A key with a caller-chosen hash (the map trusts `state_key::hash`).
struct crafted_key {
  std::uint16_t group = 0;
  std::uint64_t hash = 0;
  std::string key;
  std::string ns;
  state_key view() const { return state_key{group, hash, key, ns}; }
};

std::uint64_t xorshift(std::uint64_t& s) {
  s ^= s << 13;
  s ^= s >> 7;
  s ^= s << 17;
  return s;
}

// A value whose copy constructor throws while `arm_copy_throw` is set and
// the value equals `throw_on`.
struct fragile {
  static inline bool arm_copy_throw = false;
  static inline std::int64_t throw_on = -1;
  std::int64_t v = 0;
  fragile() = default;
  explicit fragile(std::int64_t x) : v(x) {}
  fragile(const fragile& o) : v(o.v) {
    if (arm_copy_throw && o.v == throw_on)
      throw std::runtime_error("copy failed");
  }
  fragile& operator=(const fragile&) = default;
  fragile(fragile&&) noexcept = default;
  fragile& operator=(fragile&&) noexcept = default;
};

// Every entry reachable by iteration is found by lookup with the same value,
// and size() agrees with iteration.
template <class V, class Get>
void check_consistent(const cow_state_map<V>& m, const key_group_range& r, Get value_of) {
  std::size_t n = 0;
  for (std::uint16_t g = r.start; g <= r.end; ++g) {
    std::size_t in_group = 0;
    m.for_each_in_group(g, [&](const auto& e) {
      ++n;
      ++in_group;
      const auto* v = m.get(state_key{g, e.hash, e.key, e.ns});
      CHECK_MESSAGE(v != nullptr, "iterated entry '" << e.key << "' is not found by get()");
      if (v != nullptr)
        CHECK(value_of(*v) == value_of(e.value));
    });
    CHECK(in_group == m.group_size(g));
  }
  CHECK(n == m.size());
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("a cow map: colliding hashes keep lookups, position order and frozen views right") {
  // Hashes from a tiny set of low bits (long clusters that wrap around the
  // index), many with equal low 32 bits but different high bits, and some
  // with equal full hashes. A model keeps each group's position order: an
  // insert appends, a removal moves the group's last entry into the hole.
  const key_group_range r{0, 2};
  cow_state_map<std::int64_t> m(r);
  using order_t = std::vector<std::vector<std::pair<std::string, std::int64_t>>>; // per group
  order_t order(3);
  std::vector<crafted_key> keys;
  std::uint64_t rng = 7;
  for (std::size_t i = 0; i < 300; ++i) {
    crafted_key c;
    c.group = static_cast<std::uint16_t>(i % 3);
    const std::uint64_t lo = (xorshift(rng) % 4) | (i % 5 == 0 ? 0xfffffff8u : 0u);
    const std::uint64_t hi = i % 7 == 0 ? 0 : (xorshift(rng) % 3);
    c.hash = (hi << 32) | lo;
    c.key = "k" + std::to_string(i);
    c.ns = i % 4 == 0 ? "n" : "";
    keys.push_back(std::move(c));
  }
  auto find_in = [&](const crafted_key& c) {
    auto& v = order[c.group];
    return std::find_if(v.begin(), v.end(),
                        [&](const auto& p) { return p.first == c.key + "/" + c.ns; });
  };
  auto check_order = [&](auto& view, const order_t& expect) {
    for (std::uint16_t g = 0; g < 3; ++g) {
      std::vector<std::pair<std::string, std::int64_t>> seen;
      view.for_each_in_group(g, [&](const auto& e) { seen.emplace_back(e.key + "/" + e.ns, e.value); });
      CHECK(seen == expect[g]);
      CHECK(view.group_size(g) == expect[g].size());
    }
    for (const auto& c : keys) {
      const auto& v = expect[c.group];
      auto it = std::find_if(v.begin(), v.end(),
                             [&](const auto& p) { return p.first == c.key + "/" + c.ns; });
      const auto* got = view.get(c.view());
      if (it == v.end()) {
        CHECK(got == nullptr);
      } else {
        REQUIRE(got != nullptr);
        CHECK(*got == it->second);
      }
    }
  };
  std::vector<std::pair<std::shared_ptr<const cow_state_map<std::int64_t>::frozen>, order_t>> views;
  for (int step = 0; step < 30000; ++step) {
    const auto& c = keys[xorshift(rng) % keys.size()];
    const auto op = xorshift(rng) % 10;
    const auto value = static_cast<std::int64_t>(xorshift(rng) % 1000);
    auto it = find_in(c);
    auto& v = order[c.group];
    if (op < 5) {
      m.put(c.view(), value);
      if (it == v.end())
        v.emplace_back(c.key + "/" + c.ns, value);
      else
        it->second = value;
    } else if (op < 6) {
      auto* p = m.get_mut(c.view());
      REQUIRE((p != nullptr) == (it != v.end()));
      if (p)
        *p = it->second = value;
    } else if (op < 9) {
      std::int64_t out = -1;
      const bool had = it != v.end();
      if (op == 8) {
        CHECK(m.take(c.view(), out) == had);
        if (had)
          CHECK(out == it->second);
      } else {
        CHECK(m.remove(c.view()) == had);
      }
      if (had) {
        *it = v.back();
        v.pop_back();
      }
    } else if (xorshift(rng) % 50 == 0) {
      views.emplace_back(m.snapshot(), order);
      if (views.size() > 6)
        views.erase(views.begin() + static_cast<std::ptrdiff_t>(xorshift(rng) % views.size()));
    }
    if (step % 1000 == 0)
      check_order(m, order);
  }
  REQUIRE(views.size() >= 2);
  for (const auto& [f, expect] : views)
    check_order(*f, expect);
  check_order(m, order);
}

TEST_CASE("a cow map: emptying groups and pages fully, across snapshots, then refilling") {
  const key_group_range r{0, 0};
  cow_state_map<std::int64_t> m(r);
  std::vector<crafted_key> keys;
  for (std::size_t i = 0; i < 40; ++i)
    keys.push_back({0, i % 3, "k" + std::to_string(i), ""});
  for (int round = 0; round < 4; ++round) {
    for (std::size_t i = 0; i < keys.size(); ++i)
      m.put(keys[i].view(), static_cast<std::int64_t>(i + 100 * round));
    auto full = m.snapshot();
    // Remove from the front (every removal moves the last entry), then the rest.
    for (std::size_t i = 0; i < keys.size(); ++i) {
      CHECK(m.remove(keys[i].view()));
      if (i % 16 == 3)
        (void)m.snapshot();
    }
    CHECK(m.size() == 0);
    CHECK(m.group_size(0) == 0);
    std::size_t n = 0;
    full->for_each_in_group(0, [&](const auto& e) {
      CHECK(e.value == static_cast<std::int64_t>(std::stoul(e.key.substr(1)) + 100 * round));
      ++n;
    });
    CHECK(n == keys.size());
    m.for_each([&](const auto&) { FAIL("an emptied map iterates nothing"); });
  }
}

TEST_CASE("a cow map: a removal whose tail-page copy throws leaves the map consistent") {
  // One group, 17 entries: positions 0..15 fill page 0, position 16 is
  // alone on page 1. After a snapshot both pages are shared. Removing the
  // entry at position 0 copies page 0 (fine), then the tail page, whose
  // copy throws. The map must be left either as it was (strong) or with the
  // key removed consistently (basic); never with an entry that iteration
  // shows and lookup cannot find.
  const key_group_range r{0, 0};
  cow_state_map<fragile> m(r);
  std::vector<crafted_key> keys;
  for (std::size_t i = 0; i < 17; ++i) {
    keys.push_back({0, i * 0x9e3779b97f4a7c15ULL, "k" + std::to_string(i), ""});
    m.put(keys.back().view(), fragile{static_cast<std::int64_t>(i)});
  }
  auto frozen = m.snapshot();
  fragile::throw_on = 16;
  fragile::arm_copy_throw = true;
  SUBCASE("remove") {
    CHECK_THROWS_AS(m.remove(keys[0].view()), std::runtime_error);
  }
  SUBCASE("take") {
    fragile out{-5};
    CHECK_THROWS_AS(m.take(keys[0].view(), out), std::runtime_error);
  }
  fragile::arm_copy_throw = false;
  const auto* v0 = m.get(keys[0].view());
  if (v0 != nullptr) {
    CHECK(v0->v == 0); // strong guarantee: value untouched
    CHECK(m.size() == 17);
  } else {
    CHECK(m.size() == 16);
  }
  check_consistent(m, r, [](const fragile& f) { return f.v; });
  // The snapshot is unaffected either way.
  std::size_t n = 0;
  frozen->for_each_in_group(0, [&](const auto& e) {
    CHECK(e.value.v == static_cast<std::int64_t>(n));
    ++n;
  });
  CHECK(n == 17);
}

TEST_CASE("a cow map: a get_or_insert whose page copy throws changes nothing") {
  const key_group_range r{0, 0};
  cow_state_map<fragile> m(r);
  std::vector<crafted_key> keys;
  for (std::size_t i = 0; i < 6; ++i)
    keys.push_back({0, i + 1, "k" + std::to_string(i), ""});
  for (std::size_t i = 0; i < 5; ++i)
    m.put(keys[i].view(), fragile{static_cast<std::int64_t>(i)});
  auto frozen = m.snapshot();
  fragile::throw_on = 3;
  fragile::arm_copy_throw = true;
  CHECK_THROWS_AS(m.put(keys[5].view(), fragile{5}), std::runtime_error);
  CHECK_THROWS_AS(m.get_mut(keys[1].view()), std::runtime_error);
  fragile::arm_copy_throw = false;
  CHECK(m.size() == 5);
  CHECK(m.get(keys[5].view()) == nullptr);
  check_consistent(m, r, [](const fragile& f) { return f.v; });
  m.put(keys[5].view(), fragile{5});
  CHECK(m.size() == 6);
  check_consistent(m, r, [](const fragile& f) { return f.v; });
  CHECK(frozen->size() == 5);
}

TEST_CASE("a cow map: over-aligned values are stored aligned") {
  struct alignas(64) wide {
    std::int64_t v = 0;
  };
  const key_group_range r{0, 0};
  cow_state_map<wide> m(r);
  std::vector<crafted_key> keys;
  for (std::size_t i = 0; i < 40; ++i) {
    keys.push_back({0, i * 11, "k" + std::to_string(i), ""});
    m.put(keys.back().view(), wide{static_cast<std::int64_t>(i)});
  }
  auto f = m.snapshot();
  for (std::size_t i = 0; i < 40; i += 3)
    m.remove(keys[i].view());
  for (const auto& c : keys) {
    if (const auto* p = m.get(c.view()))
      CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
    const auto* q = f->get(c.view());
    REQUIRE(q != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(q) % 64 == 0);
  }
}
}
