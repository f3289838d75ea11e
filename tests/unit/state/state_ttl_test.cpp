// SPDX-License-Identifier: Apache-2.0
// State TTL (Flink's StateTtlConfig): expired entries are never returned,
// are dropped on access, by the amortized sweep and before a snapshot, so
// state stays bounded while new keys keep arriving, and a restored backend
// does not return what expired meanwhile.
#include "weir/state/keyed_state_backend.hpp"

#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <string>

using weir::state::key_group_range;
using weir::state::keyed_state_backend;
using weir::state::state_ttl_config;
using weir::test::string_key;

namespace {

const key_group_range all{0, 127};
using std::chrono::milliseconds;

// Serializes every key group of `b`'s snapshot and restores it into `into`.
void copy_state(keyed_state_backend& b, keyed_state_backend& into) {
  auto snap = b.snapshot();
  for (std::uint16_t g = 0; g < 128; ++g) {
    std::string bytes;
    snap->serialize_key_group(g, bytes);
    REQUIRE(into.restore_key_group(g, bytes));
  }
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("a value with a ttl is gone ttl ms after its last write, not after a read") {
  keyed_state_backend b(all, 128);
  weir::event_time now = 1000;
  b.set_ttl_time_provider([&now] { return now; });
  auto v = b.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{100}}).value();
  auto plain = b.get_value_state<std::int64_t>("plain").value();
  b.set_current_key(string_key("k"));
  v.update(1);
  plain.update(1);
  now = 1099;
  CHECK(v.value() == 1); // a read does not extend it (OnCreateAndWrite)
  now = 1100;
  CHECK_FALSE(v.value().has_value()); // written @1000 + 100 <= 1100: expired
  CHECK(v.value_or(7) == 7);
  CHECK(b.num_entries("v") == 0); // dropped on access
  CHECK(plain.value() == 1);      // no ttl: kept
  v.update(2);
  now = 1150;
  v.update(3); // a write restarts the clock
  now = 1249;
  CHECK(v.value() == 3);
  now = 1250;
  CHECK_FALSE(v.get());
}

TEST_CASE("update on read and write: a read extends the life of an entry") {
  keyed_state_backend b(all, 128);
  weir::event_time now = 0;
  b.set_ttl_time_provider([&now] { return now; });
  state_ttl_config ttl{milliseconds{100}};
  ttl.update = state_ttl_config::update_type::on_read_and_write;
  auto v = b.get_value_state<std::string>("v", ttl).value();
  b.set_current_key(string_key("k"));
  v.update("x");
  for (now = 50; now < 1000; now += 50)
    REQUIRE(v.value() == "x");
  now += 100;
  CHECK_FALSE(v.value().has_value());
}

TEST_CASE("list and map state with a ttl expire as a whole per key") {
  keyed_state_backend b(all, 128);
  weir::event_time now = 0;
  b.set_ttl_time_provider([&now] { return now; });
  auto l = b.get_list_state<std::int64_t>("l", state_ttl_config{milliseconds{10}}).value();
  auto m = b.get_map_state<std::string, std::int64_t>("m", state_ttl_config{milliseconds{10}})
             .value();
  b.set_current_key(string_key("k"));
  l.add(1);
  m.put("a", 1);
  now = 5;
  l.add(2); // a write: the list lives until 15
  CHECK(l.get().size() == 2);
  CHECK(m.get("a") == 1);
  now = 10;
  CHECK(m.entries().empty());
  CHECK_FALSE(m.contains("a"));
  CHECK(l.get().size() == 2);
  now = 15;
  CHECK(l.get().empty());
  l.add(3); // a fresh list, not the expired one plus 3
  CHECK(l.get().size() == 1);
}

TEST_CASE("registering a state again with another ttl is an error") {
  keyed_state_backend b(all, 128);
  REQUIRE(b.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{10}}));
  CHECK(b.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{10}}));
  auto other = b.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{20}});
  REQUIRE_FALSE(other);
  CHECK(other.error().code == weir::errc::invalid_argument);
  CHECK_FALSE(b.get_value_state<std::int64_t>("v"));
  CHECK_FALSE(b.get_value_state<std::int64_t>("w", state_ttl_config{milliseconds{0}}));
}

TEST_CASE("state with a ttl stays bounded while new keys keep arriving") {
  // 100,000 keys, each written once, one new key per ms, ttl 1 s: without
  // expiry the state would hold 100,000 entries; with it, the amortized
  // sweep keeps it near the live 1,000 (at most about twice that plus the
  // sweep's minimum batch), without any key being read again.
  keyed_state_backend b(all, 128);
  weir::event_time now = 0;
  b.set_ttl_time_provider([&now] { return now; });
  auto v = b.get_value_state<std::int64_t>("seen", state_ttl_config{milliseconds{1000}}).value();
  std::size_t most = 0;
  for (std::int64_t i = 0; i < 100000; ++i) {
    now = i;
    b.set_current_key(string_key("key-" + std::to_string(i)));
    v.update(i);
    most = std::max(most, b.num_entries("seen"));
  }
  CHECK(most <= 2 * 1000 + state_ttl_config::min_sweep_writes + 1);
  // The snapshot holds only live entries: those written in the last second.
  auto snap = b.snapshot();
  CHECK(b.num_entries("seen") == 1000);
  keyed_state_backend restored(all, 128);
  restored.set_ttl_time_provider([&now] { return now; });
  auto r = restored.get_value_state<std::int64_t>("seen", state_ttl_config{milliseconds{1000}})
             .value();
  copy_state(b, restored);
  CHECK(restored.num_entries("seen") == 1000);
  restored.set_current_key(string_key("key-99999"));
  CHECK(r.value() == 99999);
}

TEST_CASE("values that expired are absent after a restore, and from the next snapshot") {
  keyed_state_backend b(all, 128);
  weir::event_time now = 0;
  b.set_ttl_time_provider([&now] { return now; });
  auto v = b.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{100}}).value();
  for (int i = 0; i < 10; ++i) {
    now = i * 10; // key i written at i * 10: expires at i * 10 + 100
    b.set_current_key(string_key("k" + std::to_string(i)));
    v.update(i);
  }
  now = 95; // nothing expired yet: the snapshot holds all ten
  keyed_state_backend restored(all, 128);
  weir::event_time later = 150; // restored 55 ms later: k0..k5 are gone
  restored.set_ttl_time_provider([&later] { return later; });
  auto r = restored.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{100}})
             .value();
  copy_state(b, restored);
  for (int i = 0; i < 10; ++i) {
    CAPTURE(i);
    restored.set_current_key(string_key("k" + std::to_string(i)));
    if (i <= 5)
      CHECK_FALSE(r.value().has_value()); // i * 10 + 100 <= 150
    else
      CHECK(r.value() == i); // the write time came with the checkpoint
  }
  // Restored then snapshotted without reading: the expired ones are not
  // carried into the next checkpoint.
  keyed_state_backend again(all, 128);
  again.set_ttl_time_provider([&later] { return later; });
  REQUIRE(again.get_value_state<std::int64_t>("v", state_ttl_config{milliseconds{100}}));
  copy_state(b, again);
  CHECK(again.num_entries("v") == 10);
  CHECK(again.snapshot()->num_entries() == 4 + 4); // k6..k9, values and write times
  CHECK(again.num_entries("v") == 4);
}
} // TEST_SUITE
