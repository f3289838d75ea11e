// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_state_backend.hpp"

#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <xxhash.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>

using weir::errc;
using weir::event_time;
using weir::state::key_group_range;
using weir::state::key_group_range_for_subtask;
using weir::state::keyed_state_backend;
using weir::state::keyed_state_snapshot;
using weir::test::string_key;
using weir::test::user_key;

namespace {

constexpr std::size_t max_par = 128;
const key_group_range all{0, max_par - 1};

using blobs = std::map<std::uint16_t, std::string>;

blobs serialize_all(const keyed_state_snapshot& s) {
  blobs out;
  for (auto g = s.range().start; g <= s.range().end; ++g) {
    std::string bytes;
    s.serialize_key_group(g, bytes);
    if (!bytes.empty())
      out.emplace(g, std::move(bytes));
    if (g == s.range().end)
      break;
  }
  return out;
}

// Restores every blob of `in` whose group lies in `b`'s range.
void restore_into(keyed_state_backend& b, const blobs& in) {
  for (const auto& [g, bytes] : in)
    if (b.range().contains(g))
      REQUIRE(b.restore_key_group(g, bytes).has_value());
}

// A backend with every kind of state for keys user-0 .. user-(n-1).
struct populated {
  explicit populated(key_group_range range = all) : b(range, max_par) {
    count = b.get_value_state<std::int64_t>("count").value();
    names = b.get_list_state<std::string>("names").value();
    paths = b.get_map_state<std::string, std::int64_t>("paths").value();
    total = b.get_reducing_state<std::int64_t>(
                "total", [](const std::int64_t& a, const std::int64_t& v) { return a + v; })
              .value();
  }
  keyed_state_backend b;
  weir::state::value_state<std::int64_t> count;
  weir::state::list_state<std::string> names;
  weir::state::map_state<std::string, std::int64_t> paths;
  weir::state::reducing_state<std::int64_t> total;

  void write(std::size_t i, std::int64_t x) {
    b.set_current_key(user_key(i));
    b.set_current_namespace("");
    count.update(x);
    names.add("n" + std::to_string(x));
    paths.put("/p" + std::to_string(i % 3), x);
    total.add(x);
    b.set_current_namespace("w");
    count.update(-x);
    b.register_event_time_timer(x);
  }
};

std::string blob_with_checksum(std::string body) {
  weir::state::wire::put_u64(body, XXH64(body.data(), body.size(), 0));
  return body;
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("a snapshot serializes the values before later writes while the live state has the new ones") {
  populated p;
  for (std::size_t i = 0; i < 200; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  auto snap = p.b.snapshot();
  for (std::size_t i = 0; i < 200; ++i)
    p.write(i, 1000);
  p.b.set_current_key(user_key(5));
  p.b.set_current_namespace("");
  p.paths.clear();
  CHECK(p.count.value() == 1000);

  populated r;
  restore_into(r.b, serialize_all(*snap));
  for (std::size_t i = 0; i < 200; ++i) {
    r.b.set_current_key(user_key(i));
    r.b.set_current_namespace("");
    CHECK(r.count.value() == static_cast<std::int64_t>(i));
    REQUIRE(r.names.get().size() == 1);
    CHECK(r.names.get()[0] == "n" + std::to_string(i));
    CHECK(r.paths.get("/p" + std::to_string(i % 3)) == static_cast<std::int64_t>(i));
    CHECK(r.total.get() == static_cast<std::int64_t>(i));
    r.b.set_current_namespace("w");
    CHECK(r.count.value() == -static_cast<std::int64_t>(i));
  }
  CHECK(r.b.num_event_timers() == 200);
  CHECK(snap->num_entries() == 200 * 4 + 200 + 200);
  CHECK(snap->approximate_bytes() > 0);
}

TEST_CASE("a snapshot round-trips every state kind and aggregating state into a fresh backend") {
  keyed_state_backend b(all, max_par);
  struct sum_fn final
    : weir::state::aggregate_function<std::int64_t, std::vector<weir::value>, std::int64_t> {
    std::vector<weir::value> create_accumulator() const override { return {weir::value{std::int64_t{0}}}; }
    void add(const std::int64_t& v, std::vector<weir::value>& acc) const override {
      acc[0] = std::get<std::int64_t>(acc[0]) + v;
    }
    std::int64_t get_result(const std::vector<weir::value>& acc) const override {
      return std::get<std::int64_t>(acc[0]);
    }
    void merge(std::vector<weir::value>& into, const std::vector<weir::value>& from) const override {
      into[0] = std::get<std::int64_t>(into[0]) + std::get<std::int64_t>(from[0]);
    }
  };
  auto fn = std::make_shared<const sum_fn>();
  auto agg = b.get_aggregating_state<std::int64_t, std::vector<weir::value>, std::int64_t>("agg", fn)
               .value();
  b.set_current_key(string_key("k"));
  b.set_current_namespace("ns");
  agg.add(4);
  agg.add(5);
  auto bytes = serialize_all(*b.snapshot());
  keyed_state_backend r(all, max_par);
  restore_into(r, bytes);
  auto ragg = r.get_aggregating_state<std::int64_t, std::vector<weir::value>, std::int64_t>("agg", fn)
                .value();
  r.set_current_key(string_key("k"));
  r.set_current_namespace("ns");
  CHECK(ragg.get() == 9);
}

TEST_CASE("a key group without state serializes to zero bytes, which restore accepts") {
  keyed_state_backend b(all, max_par);
  auto v = b.get_value_state<std::int64_t>("v").value();
  b.set_current_key(string_key("only"));
  v.update(1);
  auto g = b.current_key_group();
  auto snap = b.snapshot();
  std::string bytes;
  snap->serialize_key_group(static_cast<std::uint16_t>((g + 1) % max_par), bytes);
  CHECK(bytes.empty());
  CHECK_FALSE(snap->has_key_group(static_cast<std::uint16_t>((g + 1) % max_par)));
  CHECK(snap->has_key_group(g));
  snap->serialize_key_group(g, bytes);
  CHECK_FALSE(bytes.empty());
  keyed_state_backend r(all, max_par);
  CHECK(r.restore_key_group(3, "").has_value());
  // Removing the last entry empties the group again.
  v.clear();
  std::string after;
  b.snapshot()->serialize_key_group(g, after);
  CHECK(after.empty());
}

TEST_CASE("state of parallelism 4 restores into parallelism 2 with every key in exactly one subtask") {
  constexpr std::size_t n = 1000;
  blobs all_blobs;
  for (std::size_t s = 0; s < 4; ++s) {
    populated p(key_group_range_for_subtask(max_par, 4, s));
    for (std::size_t i = 0; i < n; ++i) {
      auto g = weir::assign_key_group(user_key(i), max_par);
      if (weir::operator_index_for_key_group(g, max_par, 4) == s)
        p.write(i, static_cast<std::int64_t>(i));
    }
    for (auto& [g, bytes] : serialize_all(*p.b.snapshot()))
      REQUIRE(all_blobs.emplace(g, std::move(bytes)).second);
  }
  std::vector<std::unique_ptr<populated>> targets;
  for (std::size_t s = 0; s < 2; ++s) {
    targets.push_back(std::make_unique<populated>(key_group_range_for_subtask(max_par, 2, s)));
    restore_into(targets.back()->b, all_blobs);
  }
  CHECK(targets[0]->b.num_entries("count") + targets[1]->b.num_entries("count") == 2 * n);
  CHECK(targets[0]->b.num_event_timers() + targets[1]->b.num_event_timers() == n);
  for (std::size_t i = 0; i < n; ++i) {
    auto g = weir::assign_key_group(user_key(i), max_par);
    std::size_t owners = 0;
    for (auto& t : targets) {
      if (!t->b.range().contains(g))
        continue;
      ++owners;
      t->b.set_current_key(user_key(i));
      t->b.set_current_namespace("");
      CHECK(t->count.value() == static_cast<std::int64_t>(i));
      CHECK(t->total.get() == static_cast<std::int64_t>(i));
    }
    CHECK(owners == 1);
  }
}

TEST_CASE("restored state of an unregistered name is kept until registration and in later snapshots") {
  populated p;
  for (std::size_t i = 0; i < 20; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  auto bytes = serialize_all(*p.b.snapshot());

  keyed_state_backend r(all, max_par);
  restore_into(r, bytes); // nothing registered yet
  CHECK(r.state_names().empty());
  // A snapshot taken now still carries the unregistered sections.
  auto again = serialize_all(*r.snapshot());
  REQUIRE(again.size() == bytes.size());
  for (const auto& [g, blob] : bytes)
    CHECK(again[g].size() == blob.size());

  keyed_state_backend r2(all, max_par);
  restore_into(r2, again);
  auto wrong = r2.get_value_state<std::string>("count");
  REQUIRE_FALSE(wrong.has_value()); // int64 bytes do not decode as strings
  CHECK(wrong.error().code == errc::parse_error);
  auto wrong_kind = r2.get_list_state<std::int64_t>("count");
  REQUIRE_FALSE(wrong_kind.has_value());
  CHECK(wrong_kind.error().code == errc::invalid_argument);
  auto count = r2.get_value_state<std::int64_t>("count");
  REQUIRE(count.has_value());
  r2.set_current_key(user_key(7));
  CHECK(count->value() == 7);
  CHECK(r2.num_entries("count") == 40);
}

TEST_CASE("a snapshot taken between restores of an unregistered state keeps the sections it saw") {
  populated p;
  for (std::size_t i = 0; i < 200; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  auto bytes = serialize_all(*p.b.snapshot());
  REQUIRE(bytes.size() > 2);
  blobs first, rest;
  for (const auto& [g, blob] : bytes)
    (first.size() < bytes.size() / 2 ? first : rest).emplace(g, blob);

  keyed_state_backend r(all, max_par);
  restore_into(r, first); // nothing registered: every section stays pending
  auto between = r.snapshot();
  restore_into(r, rest);
  restore_into(r, first); // again: replaces those groups' pending sections
  // Same groups and sizes (timers are re-serialized, maybe in another order).
  auto sizes = [](const blobs& b) {
    std::map<std::uint16_t, std::size_t> out;
    for (const auto& [g, blob] : b)
      out.emplace(g, blob.size());
    return out;
  };
  CHECK(sizes(serialize_all(*between)) == sizes(first));
  CHECK(sizes(serialize_all(*r.snapshot())) == sizes(bytes));
  auto count = r.get_value_state<std::int64_t>("count");
  REQUIRE(count.has_value());
  CHECK(r.num_entries("count") == 400);
}

TEST_CASE("corrupt key-group bytes are rejected with an error and change nothing") {
  populated p;
  for (std::size_t i = 0; i < 30; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  p.b.set_current_key(user_key(3));
  const auto g = p.b.current_key_group();
  std::string good;
  p.b.snapshot()->serialize_key_group(g, good);
  REQUIRE(good.size() > 20);

  populated r;
  auto rejected = [&](std::string_view bytes, std::uint16_t group) {
    auto res = r.b.restore_key_group(group, bytes);
    REQUIRE_FALSE(res.has_value());
    CHECK(res.error().code == errc::parse_error);
    CHECK(r.b.num_entries("count") == 0);
    CHECK(r.b.num_event_timers() == 0);
    return res.error().message;
  };

  SUBCASE("a flipped byte fails the checksum") {
    for (std::size_t i = 0; i < good.size(); i += 7) {
      auto bad = good;
      bad[i] = static_cast<char>(bad[i] ^ 0x20);
      rejected(bad, g);
    }
  }
  SUBCASE("every truncation") {
    for (std::size_t n = 1; n < good.size(); ++n)
      rejected(std::string_view{good}.substr(0, n), g);
  }
  SUBCASE("bytes of another key group") {
    auto other = static_cast<std::uint16_t>((g + 1) % max_par);
    CHECK(rejected(good, other).find("belong to key group") != std::string::npos);
  }
  SUBCASE("another format version with a valid checksum") {
    auto body = good.substr(0, good.size() - 8);
    body[3] = 9;
    CHECK(rejected(blob_with_checksum(body), g).find("version") != std::string::npos);
  }
  SUBCASE("a section whose kind differs from the registration") {
    std::string body = "WKG";
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_u16(body, g);
    weir::state::wire::put_u32(body, 1);
    weir::state::wire::put_u8(body, 2); // list ...
    weir::state::wire::put_bytes(body, "count"); // ... but "count" is value state
    weir::state::wire::put_bytes(body, std::string(4, '\0'));
    CHECK(rejected(blob_with_checksum(body), g).find("count") != std::string::npos);
  }
  SUBCASE("a value that does not decode, behind a valid checksum") {
    std::string payload;
    weir::state::wire::put_u32(payload, 1);
    weir::state::wire::put_bytes(payload, user_key(3));
    weir::state::wire::put_bytes(payload, "");
    weir::state::wire::put_bytes(payload, "abc"); // 3 bytes, not an int64
    std::string body = "WKG";
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_u16(body, g);
    weir::state::wire::put_u32(body, 2);
    weir::state::wire::put_u8(body, 2);
    weir::state::wire::put_bytes(body, "names");
    weir::state::wire::put_bytes(body, std::string(4, '\0')); // fine: no entries
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_bytes(body, "count");
    weir::state::wire::put_bytes(body, payload);
    rejected(blob_with_checksum(body), g);
  }
  SUBCASE("a key that belongs to another key group") {
    std::size_t other = 0;
    while (weir::assign_key_group(user_key(other), max_par) == g)
      ++other;
    std::string payload;
    weir::state::wire::put_u32(payload, 1);
    weir::state::wire::put_bytes(payload, user_key(other));
    weir::state::wire::put_bytes(payload, "");
    weir::state::wire::put_bytes(payload, weir::state::encode_to_string<std::int64_t>(1));
    std::string body = "WKG";
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_u16(body, g);
    weir::state::wire::put_u32(body, 1);
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_bytes(body, "count");
    weir::state::wire::put_bytes(body, payload);
    CHECK(rejected(blob_with_checksum(body), g).find("another key group") != std::string::npos);
  }
  SUBCASE("timestamps out of order") {
    std::string payload;
    weir::state::wire::put_u32(payload, 1);
    weir::state::wire::put_bytes(payload, user_key(3));
    weir::state::wire::put_bytes(payload, "");
    weir::state::wire::put_bytes(payload,
                                 weir::state::encode_to_string(std::vector<event_time>{5, 2}));
    std::string body = "WKG";
    weir::state::wire::put_u8(body, 1);
    weir::state::wire::put_u16(body, g);
    weir::state::wire::put_u32(body, 1);
    weir::state::wire::put_u8(body, 6);
    weir::state::wire::put_bytes(body, "");
    weir::state::wire::put_bytes(body, payload);
    rejected(blob_with_checksum(body), g);
  }
  SUBCASE("random garbage") {
    std::mt19937_64 rng(42);
    for (int i = 0; i < 200; ++i) {
      std::string junk(1 + rng() % 64, '\0');
      for (auto& c : junk)
        c = static_cast<char>(rng());
      rejected(junk, g);
    }
  }
  // And the good bytes still restore afterwards.
  REQUIRE(r.b.restore_key_group(g, good).has_value());
  r.b.set_current_key(user_key(3));
  CHECK(r.count.value() == 3);
}

TEST_CASE("restoring a key group outside the range is an invalid argument") {
  keyed_state_backend b(key_group_range{0, 63}, max_par);
  auto res = b.restore_key_group(64, "");
  REQUIRE_FALSE(res.has_value());
  CHECK(res.error().code == errc::invalid_argument);
}

TEST_CASE("restoring under another max_parallelism is detected") {
  populated p;
  constexpr std::size_t n = 50;
  for (std::size_t i = 0; i < n; ++i)
    p.write(i, 1);
  auto bytes = serialize_all(*p.b.snapshot());
  constexpr std::size_t other = 127;
  keyed_state_backend r(key_group_range{0, other - 1}, other);
  std::size_t rejected = 0;
  for (const auto& [g, blob] : bytes) {
    if (g >= other)
      continue;
    // A blob is acceptable only if all its keys also hash to g under 127.
    bool fits = true;
    for (std::size_t i = 0; i < n; ++i)
      if (weir::assign_key_group(user_key(i), max_par) == g &&
          weir::assign_key_group(user_key(i), other) != g)
        fits = false;
    auto res = r.restore_key_group(g, blob);
    CHECK(res.has_value() == fits);
    if (!res)
      ++rejected;
  }
  CHECK(rejected > 0);
}

TEST_CASE("randomly mutated snapshot bytes never crash the decoder") {
  populated p;
  for (std::size_t i = 0; i < 30; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  p.b.set_current_key(user_key(0));
  auto g = p.b.current_key_group();
  std::string good;
  p.b.snapshot()->serialize_key_group(g, good);
  std::mt19937_64 rng(7);
  std::size_t accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    auto body = good.substr(0, good.size() - 8);
    auto edits = 1 + rng() % 4;
    for (std::size_t e = 0; e < edits; ++e) {
      auto pos = rng() % body.size();
      switch (rng() % 3) {
        case 0: body[pos] = static_cast<char>(rng()); break;
        case 1: body.erase(pos, 1 + rng() % 8); break;
        default: body.insert(pos, std::string(1 + rng() % 8, static_cast<char>(rng()))); break;
      }
      if (body.empty())
        body = "W";
    }
    // Re-seal so that the parser, not just the checksum, sees the damage.
    populated r;
    if (r.b.restore_key_group(g, blob_with_checksum(body)))
      ++accepted;
  }
  CHECK(accepted < 2000);
}

TEST_CASE("a snapshot can be serialized on another thread while the backend keeps changing") {
  populated p;
  constexpr std::size_t n = 3000;
  for (std::size_t i = 0; i < n; ++i)
    p.write(i, static_cast<std::int64_t>(i));
  auto snap = p.b.snapshot();
  blobs from_thread;
  std::thread writer([&] { from_thread = serialize_all(*snap); });
  for (std::size_t i = 0; i < n; ++i)
    p.write(i, 7);
  for (std::size_t i = n; i < 2 * n; ++i)
    p.write(i, 7);
  writer.join();
  CHECK(from_thread == serialize_all(*snap));
  populated r;
  restore_into(r.b, from_thread);
  CHECK(r.b.num_entries("count") == 2 * n);
  r.b.set_current_key(user_key(17));
  CHECK(r.count.value() == 17);
}
}
