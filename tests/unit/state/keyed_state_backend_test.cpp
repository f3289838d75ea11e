// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_state_backend.hpp"

#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <set>

using weir::errc;
using weir::value;
using weir::state::aggregate_function;
using weir::state::key_group_range;
using weir::state::keyed_state_backend;
using weir::test::string_key;

namespace {

const key_group_range all{0, 127};

/// Average of int64 values: accumulator (sum, count).
class average final : public aggregate_function<std::int64_t, std::pair<std::int64_t, std::int64_t>,
                                                double> {
public:
  std::pair<std::int64_t, std::int64_t> create_accumulator() const override { return {0, 0}; }
  void add(const std::int64_t& v, std::pair<std::int64_t, std::int64_t>& acc) const override {
    acc.first += v;
    acc.second += 1;
  }
  double get_result(const std::pair<std::int64_t, std::int64_t>& acc) const override {
    return static_cast<double>(acc.first) / static_cast<double>(acc.second);
  }
  void merge(std::pair<std::int64_t, std::int64_t>& into,
             const std::pair<std::int64_t, std::int64_t>& from) const override {
    into.first += from.first;
    into.second += from.second;
  }
};

} // namespace

TEST_SUITE("state") {
TEST_CASE("value state is scoped to the current key and namespace") {
  keyed_state_backend b(all, 128);
  auto count = b.get_value_state<std::int64_t>("count").value();
  b.set_current_key(string_key("alice"));
  CHECK_FALSE(count.value().has_value());
  CHECK(count.value_or(5) == 5);
  count.update(1);
  b.set_current_key(string_key("bob"));
  CHECK_FALSE(count.value().has_value());
  count.update(7);
  b.set_current_namespace("window-1");
  CHECK_FALSE(count.value().has_value());
  count.update(100);
  b.set_current_namespace("");
  CHECK(count.value() == 7);
  b.set_current_key(string_key("alice"));
  CHECK(count.value() == 1);
  *count.get_mut() += 1;
  CHECK(count.value() == 2);
  count.clear();
  CHECK_FALSE(count.value().has_value());
  CHECK(count.get_mut() == nullptr);
  CHECK(b.num_entries("count") == 2); // bob global and bob window-1
}

TEST_CASE("list state appends, replaces and clears") {
  keyed_state_backend b(all, 128);
  auto l = b.get_list_state<std::string>("events").value();
  b.set_current_key(string_key("k"));
  CHECK(l.empty());
  l.add("a");
  l.add("b");
  std::vector<std::string> more{"c", "d"};
  l.add_all(more);
  CHECK(std::vector<std::string>(l.get().begin(), l.get().end()) ==
        std::vector<std::string>{"a", "b", "c", "d"});
  l.update({"z"});
  CHECK(l.get().size() == 1);
  CHECK(l.get()[0] == "z");
  l.update({});
  CHECK(l.empty());
  CHECK(b.num_entries("events") == 0);
  l.add("x");
  l.clear();
  CHECK(l.empty());
}

TEST_CASE("map state puts, gets, removes and lists entries in key order") {
  keyed_state_backend b(all, 128);
  auto m = b.get_map_state<std::string, std::int64_t>("per_path").value();
  b.set_current_key(string_key("k"));
  CHECK(m.empty());
  m.put("/b", 2);
  m.put("/a", 1);
  m.put("/b", 3);
  CHECK(m.get("/b") == 3);
  CHECK_FALSE(m.get("/c").has_value());
  CHECK(m.contains("/a"));
  std::vector<std::string> keys;
  for (const auto& [uk, uv] : m.entries())
    keys.push_back(uk);
  CHECK(keys == std::vector<std::string>{"/a", "/b"});
  CHECK(m.remove("/a"));
  CHECK_FALSE(m.remove("/a"));
  CHECK(m.remove("/b"));
  CHECK(m.empty());
  CHECK(b.num_entries("per_path") == 0); // an emptied map is not stored
  m.put("/x", 1);
  m.clear();
  CHECK(m.entries().empty());
}

TEST_CASE("reducing state folds every added value") {
  keyed_state_backend b(all, 128);
  auto maxv = b.get_reducing_state<std::int64_t>(
                 "max", [](const std::int64_t& a, const std::int64_t& v) { return std::max(a, v); })
                .value();
  b.set_current_key(string_key("k"));
  CHECK_FALSE(maxv.get().has_value());
  maxv.add(3);
  maxv.add(9);
  maxv.add(4);
  CHECK(maxv.get() == 9);
  maxv.clear();
  CHECK_FALSE(maxv.get().has_value());
}

TEST_CASE("aggregating state feeds an aggregate function") {
  keyed_state_backend b(all, 128);
  auto avg = b.get_aggregating_state<std::int64_t, std::pair<std::int64_t, std::int64_t>, double>(
                "avg", std::make_shared<const average>())
               .value();
  b.set_current_key(string_key("k"));
  CHECK_FALSE(avg.get().has_value());
  avg.add(1);
  avg.add(2);
  avg.add(6);
  CHECK(avg.get() == doctest::Approx(3.0));
  REQUIRE(avg.accumulator() != nullptr);
  CHECK(avg.accumulator()->second == 3);
  avg.clear();
  CHECK_FALSE(avg.get().has_value());
}

TEST_CASE("merging namespaces folds list, reducing and aggregating state into the target") {
  keyed_state_backend b(all, 128);
  auto l = b.get_list_state<std::int64_t>("l").value();
  auto sum = b.get_reducing_state<std::int64_t>(
               "sum", [](const std::int64_t& a, const std::int64_t& v) { return a + v; })
               .value();
  auto avg = b.get_aggregating_state<std::int64_t, std::pair<std::int64_t, std::int64_t>, double>(
                "avg", std::make_shared<const average>())
               .value();
  b.set_current_key(string_key("k"));
  auto fill = [&](std::string_view ns, std::int64_t v) {
    b.set_current_namespace(ns);
    l.add(v);
    sum.add(v);
    avg.add(v);
  };
  fill("w1", 1);
  fill("w2", 2);
  fill("w3", 6);
  fill("target", 3);
  // Another key's namespaces are not touched.
  b.set_current_key(string_key("other"));
  fill("w1", 1000);
  b.set_current_key(string_key("k"));

  std::vector<std::string> sources{"w1", "w2", "target", "absent"};
  l.merge_namespaces("target", sources);
  sum.merge_namespaces("target", sources);
  avg.merge_namespaces("target", sources);

  b.set_current_namespace("target");
  CHECK(std::vector<std::int64_t>(l.get().begin(), l.get().end()) ==
        std::vector<std::int64_t>{3, 1, 2});
  CHECK(sum.get() == 6);
  CHECK(avg.get() == doctest::Approx(2.0));
  for (auto ns : {"w1", "w2"}) {
    b.set_current_namespace(ns);
    CHECK(l.empty());
    CHECK_FALSE(sum.get().has_value());
    CHECK_FALSE(avg.get().has_value());
  }
  b.set_current_namespace("w3");
  CHECK(sum.get() == 6);

  SUBCASE("merging into an empty target moves the first source") {
    b.set_current_namespace("w3");
    std::vector<std::string> only{"w3"};
    sum.merge_namespaces("fresh", only);
    CHECK_FALSE(sum.get().has_value());
    b.set_current_namespace("fresh");
    CHECK(sum.get() == 6);
  }
  b.set_current_key(string_key("other"));
  b.set_current_namespace("w1");
  CHECK(sum.get() == 1000);
}

TEST_CASE("clear_namespace removes every state of the current key in that namespace only") {
  keyed_state_backend b(all, 128);
  auto v = b.get_value_state<std::int64_t>("v").value();
  auto l = b.get_list_state<std::int64_t>("l").value();
  b.set_current_key(string_key("k"));
  for (auto ns : {"", "w1", "w2"}) {
    b.set_current_namespace(ns);
    v.update(1);
    l.add(1);
  }
  b.set_current_key(string_key("j"));
  b.set_current_namespace("w1");
  v.update(2);
  b.set_current_key(string_key("k"));
  b.clear_namespace("w1");
  b.set_current_namespace("w1");
  CHECK_FALSE(v.value().has_value());
  CHECK(l.empty());
  b.set_current_namespace("w2");
  CHECK(v.value() == 1);
  b.set_current_namespace("");
  CHECK(l.get().size() == 1);
  b.set_current_key(string_key("j"));
  b.set_current_namespace("w1");
  CHECK(v.value() == 2);
}

TEST_CASE("registering a state twice returns the same state, with another type fails") {
  keyed_state_backend b(all, 128);
  auto a = b.get_value_state<std::int64_t>("s").value();
  auto again = b.get_value_state<std::int64_t>("s");
  REQUIRE(again.has_value());
  b.set_current_key(string_key("k"));
  a.update(4);
  CHECK(again->value() == 4);

  auto other_type = b.get_value_state<std::string>("s");
  REQUIRE_FALSE(other_type.has_value());
  CHECK(other_type.error().code == errc::invalid_argument);
  CHECK(other_type.error().message.find("'s'") != std::string::npos);
  auto other_kind = b.get_list_state<std::int64_t>("s");
  REQUIRE_FALSE(other_kind.has_value());
  CHECK(other_kind.error().code == errc::invalid_argument);

  auto no_reduce = b.get_reducing_state<std::int64_t>("r", {});
  REQUIRE_FALSE(no_reduce.has_value());
  CHECK(no_reduce.error().code == errc::invalid_argument);
  auto no_fn = b.get_aggregating_state<std::int64_t, std::pair<std::int64_t, std::int64_t>, double>(
    "a", nullptr);
  REQUIRE_FALSE(no_fn.has_value());
  CHECK(b.state_names() == std::vector<std::string>{"s"});
}

TEST_CASE("for_each_key visits every key and namespace of a state") {
  keyed_state_backend b(all, 128);
  auto v = b.get_value_state<std::int64_t>("v").value();
  std::set<std::pair<std::string, std::string>> expected;
  for (int i = 0; i < 50; ++i) {
    auto key = weir::test::user_key(static_cast<std::size_t>(i));
    b.set_current_key(key);
    b.set_current_namespace(i % 2 ? "odd" : "");
    v.update(i);
    expected.emplace(key, i % 2 ? "odd" : "");
  }
  std::set<std::pair<std::string, std::string>> seen;
  b.for_each_key("v", [&](std::string_view key, std::string_view ns) {
    seen.emplace(std::string{key}, std::string{ns});
  });
  CHECK(seen == expected);
  std::size_t none = 0;
  b.for_each_key("unknown", [&](std::string_view, std::string_view) { ++none; });
  CHECK(none == 0);
}

TEST_CASE("the current key determines the key group") {
  keyed_state_backend b(all, 128);
  auto key = string_key("alice");
  b.set_current_key(key);
  CHECK(b.current_key() == key);
  CHECK(b.current_key_group() == weir::assign_key_group(key, 128));
  CHECK(b.has_current_key());
}
}

TEST_CASE("a key set through its prefetch address reaches the same state") {
  keyed_state_backend b(all, 128);
  auto count = b.get_value_state<std::int64_t>("count").value();
  std::vector<std::string> keys;
  std::vector<weir::state::key_address> addresses;
  for (int i = 0; i < 300; ++i) {
    keys.push_back(weir::test::user_key(static_cast<std::size_t>(i)));
    addresses.push_back(b.address_of(keys.back(), ""));
  }
  // Written through addresses (with prefetch hints ahead, some for keys
  // not stored yet), read back through set_current_key(key).
  for (int round = 0; round < 2; ++round)
    weir::state::for_each_prefetched(count, addresses, [&](std::size_t i) {
      b.set_current_key(keys[i], addresses[i]);
      count.update(count.value_or(0) + static_cast<std::int64_t>(i));
    });
  for (std::size_t i = 0; i < keys.size(); ++i) {
    b.set_current_key(keys[i]);
    CHECK(b.current_key_group() == addresses[i].group);
    CHECK(count.value() == 2 * static_cast<std::int64_t>(i));
  }
  CHECK(b.num_entries("count") == keys.size());

  // A namespace is part of the address: the same key in another namespace
  // is another entry.
  b.set_current_namespace("window-1");
  const auto in_window = b.address_of(keys[0], "window-1");
  CHECK(in_window.group == addresses[0].group);
  CHECK(in_window.key_hash == addresses[0].key_hash);
  CHECK(in_window.hash != addresses[0].hash);
  b.set_current_key(keys[0], in_window);
  CHECK_FALSE(count.value().has_value());

  // Hints on an empty handle, or for a group outside the backend's range,
  // change nothing.
  weir::state::value_state<std::int64_t> empty;
  empty.prefetch_slot(addresses[0]);
  empty.prefetch_entry(addresses[0]);
  keyed_state_backend half(key_group_range{0, 63}, 128);
  auto other = half.get_value_state<std::int64_t>("count").value();
  for (const auto& a : addresses) {
    other.prefetch_slot(a);
    other.prefetch_entry(a);
  }
  CHECK(half.num_entries("count") == 0);
}
