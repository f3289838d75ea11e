// SPDX-License-Identifier: Apache-2.0
#include "weir/state/cow_state_map.hpp"

#include "weir/core/key_group.hpp"
#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <atomic>
#include <map>
#include <thread>

using weir::state::cow_state_map;
using weir::state::hash_state_key;
using weir::state::key_group_range;
using weir::state::state_key;

namespace {

constexpr std::size_t max_par = 16;

// Owns the bytes a state_key views.
struct owned_key {
  std::string key;
  std::string ns;
  state_key view() const {
    return state_key{weir::assign_key_group(key, max_par), hash_state_key(key, ns), key, ns};
  }
};

owned_key k(std::size_t i, std::string ns = "") { return {weir::test::user_key(i), std::move(ns)}; }

const key_group_range all{0, max_par - 1};

} // namespace

TEST_SUITE("state") {
TEST_CASE("a cow map stores, replaces and removes values per key and namespace") {
  cow_state_map<std::int64_t> m(all);
  CHECK(m.get(k(1).view()) == nullptr);
  m.put(k(1).view(), 10);
  m.put(k(1, "w1").view(), 11);
  m.put(k(2).view(), 20);
  REQUIRE(m.get(k(1).view()) != nullptr);
  CHECK(*m.get(k(1).view()) == 10);
  CHECK(*m.get(k(1, "w1").view()) == 11);
  CHECK(m.size() == 3);
  m.put(k(1).view(), 12);
  CHECK(*m.get(k(1).view()) == 12);
  CHECK(m.size() == 3);
  CHECK(m.remove(k(1).view()));
  CHECK_FALSE(m.remove(k(1).view()));
  CHECK(m.get(k(1).view()) == nullptr);
  CHECK(*m.get(k(1, "w1").view()) == 11);
  CHECK(m.size() == 2);
  std::int64_t taken = 0;
  CHECK(m.take(k(2).view(), taken));
  CHECK(taken == 20);
  CHECK(m.size() == 1);
}

TEST_CASE("a cow map grows a key group's buckets and keeps every entry") {
  cow_state_map<std::int64_t> m(all);
  for (std::size_t i = 0; i < 5000; ++i)
    m.put(k(i).view(), static_cast<std::int64_t>(i));
  std::size_t total = 0;
  for (std::uint16_t g = 0; g < max_par; ++g) {
    total += m.group_size(g);
    if (m.group_size(g) > 0)
      CHECK(m.bucket_count(g) * cow_state_map<std::int64_t>::max_load >= m.group_size(g));
  }
  CHECK(total == 5000);
  for (std::size_t i = 0; i < 5000; ++i) {
    auto* v = m.get(k(i).view());
    REQUIRE(v != nullptr);
    CHECK(*v == static_cast<std::int64_t>(i));
  }
}

TEST_CASE("a frozen view keeps the values of its snapshot while the live map changes") {
  cow_state_map<std::vector<std::int64_t>> m(all);
  for (std::size_t i = 0; i < 100; ++i)
    m.put(k(i).view(), {static_cast<std::int64_t>(i)});
  auto frozen = m.snapshot();
  CHECK(m.version() == 1);
  CHECK(frozen->version() == 0);
  // Update, append in place, remove, insert and grow after the snapshot.
  m.put(k(0).view(), {-1});
  m.get_mut(k(1).view())->push_back(99);
  m.remove(k(2).view());
  for (std::size_t i = 100; i < 3000; ++i)
    m.put(k(i).view(), {static_cast<std::int64_t>(i)});

  CHECK(frozen->size() == 100);
  CHECK(*frozen->get(k(0).view()) == std::vector<std::int64_t>{0});
  CHECK(*frozen->get(k(1).view()) == std::vector<std::int64_t>{1});
  REQUIRE(frozen->get(k(2).view()) != nullptr);
  CHECK(frozen->get(k(150).view()) == nullptr);
  std::size_t seen = 0;
  for (std::uint16_t g = 0; g < max_par; ++g)
    frozen->for_each_in_group(g, [&](const auto& e) {
      ++seen;
      CHECK(weir::assign_key_group(e.key, max_par) == g);
    });
  CHECK(seen == 100);

  CHECK(*m.get(k(0).view()) == std::vector<std::int64_t>{-1});
  CHECK(*m.get(k(1).view()) == std::vector<std::int64_t>{1, 99});
  CHECK(m.get(k(2).view()) == nullptr);
  CHECK(m.size() == 2999);
}

TEST_CASE("successive snapshots each see their own version") {
  cow_state_map<std::int64_t> m(all);
  m.put(k(7).view(), 1);
  auto s1 = m.snapshot();
  m.put(k(7).view(), 2);
  auto s2 = m.snapshot();
  m.put(k(7).view(), 3);
  auto s3 = m.snapshot();
  m.remove(k(7).view());
  CHECK(*s1->get(k(7).view()) == 1);
  CHECK(*s2->get(k(7).view()) == 2);
  CHECK(*s3->get(k(7).view()) == 3);
  CHECK(m.get(k(7).view()) == nullptr);
  s2.reset(); // releasing a middle snapshot leaves the others intact
  CHECK(*s1->get(k(7).view()) == 1);
  CHECK(*s3->get(k(7).view()) == 3);
}

TEST_CASE("a miss on get_mut after a snapshot copies nothing and changes nothing") {
  cow_state_map<std::int64_t> m(all);
  m.put(k(1).view(), 1);
  auto s = m.snapshot();
  CHECK(m.get_mut(k(2).view()) == nullptr);
  CHECK(m.size() == 1);
  CHECK(s->size() == 1);
}

TEST_CASE("a frozen view can be read on another thread while the live map is written") {
  cow_state_map<std::int64_t> m(all);
  constexpr std::size_t n = 20000;
  for (std::size_t i = 0; i < n; ++i)
    m.put(k(i).view(), static_cast<std::int64_t>(i));
  auto frozen = m.snapshot();
  std::atomic<bool> reader_ok{true};
  std::thread reader([&] {
    for (int round = 0; round < 3; ++round) {
      std::int64_t sum = 0;
      std::size_t count = 0;
      for (std::uint16_t g = 0; g < max_par; ++g)
        frozen->for_each_in_group(g, [&](const auto& e) {
          sum += e.value;
          ++count;
        });
      if (count != n || sum != static_cast<std::int64_t>(n * (n - 1) / 2))
        reader_ok = false;
    }
  });
  for (std::size_t i = 0; i < n; ++i) {
    m.put(k(i).view(), -1);
    if (i % 3 == 0)
      m.remove(k(i).view());
    m.put(k(n + i).view(), 5);
  }
  reader.join();
  CHECK(reader_ok.load());
  CHECK(*m.get(k(1).view()) == -1);
}
}
