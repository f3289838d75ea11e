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

TEST_CASE("a cow map grows a key group's index and keeps every entry") {
  cow_state_map<std::int64_t> m(all);
  for (std::size_t i = 0; i < 5000; ++i)
    m.put(k(i).view(), static_cast<std::int64_t>(i));
  std::size_t total = 0;
  for (std::uint16_t g = 0; g < max_par; ++g) {
    total += m.group_size(g);
    if (m.group_size(g) > 0)
      CHECK(m.slot_count(g) >= cow_state_map<std::int64_t>::min_slots_per_entry * m.group_size(g));
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

TEST_CASE("random puts, updates, removals and snapshots agree with a model, live and frozen") {
  // A reference model (std::map) replayed against the map with snapshots
  // taken at random points: every frozen view must keep its model copy while
  // the live map is changed under it (page copy-on-write, index growth,
  // backward-shift deletion and the move of a group's last entry).
  using model_t = std::map<std::pair<std::string, std::string>, std::int64_t>;
  const key_group_range some{3, 9};
  cow_state_map<std::int64_t> m(some);
  model_t model;
  std::vector<std::pair<std::shared_ptr<const cow_state_map<std::int64_t>::frozen>, model_t>> views;
  std::uint64_t rng = 42;
  auto next = [&rng] {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
  };
  // Keys whose group falls in `some`.
  std::vector<owned_key> keys;
  for (std::size_t i = 0; keys.size() < 600; ++i) {
    auto key = k(i, i % 3 == 0 ? "w" + std::to_string(i % 7) : "");
    if (some.contains(key.view().group))
      keys.push_back(std::move(key));
  }
  auto check_frozen = [&](const cow_state_map<std::int64_t>::frozen& f, const model_t& expect) {
    CHECK(f.size() == expect.size());
    model_t seen;
    for (std::uint16_t g = 0; g < max_par; ++g)
      f.for_each_in_group(g, [&](const auto& e) {
        CHECK(some.contains(g));
        CHECK(seen.emplace(std::pair{e.key, e.ns}, e.value).second);
      });
    CHECK(seen == expect);
    for (const auto& key : keys) {
      auto it = expect.find({key.key, key.ns});
      const auto* v = f.get(key.view());
      if (it == expect.end()) {
        CHECK(v == nullptr);
      } else {
        REQUIRE(v != nullptr);
        CHECK(*v == it->second);
      }
    }
  };
  for (int step = 0; step < 40000; ++step) {
    const auto& key = keys[next() % keys.size()];
    const auto op = next() % 10;
    const auto value = static_cast<std::int64_t>(next() % 1000);
    if (op < 4) {
      m.put(key.view(), value);
      model[{key.key, key.ns}] = value;
    } else if (op < 6) {
      auto* v = m.get_mut(key.view());
      auto it = model.find({key.key, key.ns});
      REQUIRE((v != nullptr) == (it != model.end()));
      if (v != nullptr)
        *v = it->second = value;
    } else if (op < 8) {
      CHECK(m.remove(key.view()) == (model.erase({key.key, key.ns}) == 1));
    } else if (op < 9) {
      std::int64_t out = -1;
      auto it = model.find({key.key, key.ns});
      CHECK(m.take(key.view(), out) == (it != model.end()));
      if (it != model.end()) {
        CHECK(out == it->second);
        model.erase(it);
      }
    } else if (next() % 200 == 0) {
      views.emplace_back(m.snapshot(), model);
      if (views.size() > 4) // release an older one out of order now and then
        views.erase(views.begin() + static_cast<std::ptrdiff_t>(next() % views.size()));
    }
  }
  REQUIRE(views.size() >= 2);
  for (const auto& [f, expect] : views)
    check_frozen(*f, expect);
  auto last = m.snapshot();
  check_frozen(*last, model);
  CHECK(m.size() == model.size());
  for (std::uint16_t g = some.start; g <= some.end; ++g)
    CHECK(m.slot_count(g) >= cow_state_map<std::int64_t>::min_slots_per_entry * m.group_size(g));
}

TEST_CASE("prefetch hints change nothing, shared pages included") {
  cow_state_map<std::string> m(key_group_range{0, max_par / 2 - 1});
  std::vector<owned_key> keys;
  for (std::size_t i = 0; keys.size() < 500; ++i) {
    auto key = k(i, i % 3 == 0 ? "w" : "");
    if (m.range().contains(key.view().group))
      keys.push_back(std::move(key));
  }
  for (std::size_t i = 0; i < keys.size(); i += 2)
    m.put(keys[i].view(), "v" + std::to_string(i));
  auto frozen = m.snapshot();
  m.remove(keys[0].view());
  const auto hint_all = [&] {
    for (std::size_t i = 0; i < 2 * max_par * 40; ++i) { // in range or not
      const auto key = k(i, i % 3 == 0 ? "w" : "").view();
      m.prefetch_slot(key.group, key.hash);
      m.prefetch_entry(key.group, key.hash);
    }
  };
  hint_all();
  CHECK(m.size() == 249);
  CHECK(frozen->size() == 250);
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const auto* v = m.get(keys[i].view());
    if (i % 2 == 1 || i == 0) {
      CHECK(v == nullptr);
    } else {
      REQUIRE(v != nullptr);
      CHECK(*v == "v" + std::to_string(i));
    }
  }
  // An empty map (no group tables yet) takes hints too.
  cow_state_map<std::string> empty(all);
  for (const auto& key : keys)
    empty.prefetch_entry(key.view().group, key.view().hash);
  CHECK(empty.size() == 0);
}
}
