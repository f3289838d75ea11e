// SPDX-License-Identifier: Apache-2.0
#include "state_writer_actor.hpp"

#include "checkpoint_test_util.hpp"
#include "weir/state/key_group_range.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>

#include <doctest/doctest.h>

using namespace weir;
using namespace weir::runtime;
using weir::checkpoint::test::temp_dir;

namespace {

std::shared_ptr<checkpoint::lmdb_checkpoint_store> open_store(const std::string& dir) {
  checkpoint::store_options o;
  o.dir = dir;
  o.map_size = std::size_t{1} << 30;
  auto s = checkpoint::lmdb_checkpoint_store::open(o);
  REQUIRE(s);
  return *s;
}

std::string key(int i) {
  return "key-" + std::to_string(i);
}

/// Fills a backend covering all 128 key groups with counts 0..n-1.
void fill(state::keyed_state_backend& b, int n) {
  auto counts = b.get_value_state<std::int64_t>("count");
  REQUIRE(counts);
  for (int i = 0; i < n; ++i) {
    b.set_current_key(key(i));
    counts->update(i);
  }
}

/// Requests `msg...` from `a` and returns the reply of type R.
template <class R, class... Ts>
R ask(caf::scoped_actor& self, const caf::actor& a, Ts&&... msg) {
  R out;
  bool replied = false;
  self->request(a, caf::infinite, std::forward<Ts>(msg)...)
    .receive([&](R& r) {
      out = std::move(r);
      replied = true;
    },
             [&](caf::error& e) { FAIL("request failed: " << to_string(e)); });
  REQUIRE(replied);
  return out;
}

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("the state writer stores a frozen snapshot while the backend keeps changing") {
  temp_dir dir{"writer"};
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto writer = spawn_state_writer(sys, open_store(dir.str()));
  caf::scoped_actor self{sys};

  state::keyed_state_backend backend{state::key_group_range{0, 127}, 128};
  fill(backend, 1000);
  write_snapshot_request req;
  req.checkpoint_id = 1;
  req.task = 3;
  req.alignment = std::chrono::milliseconds{5};
  operator_snapshot_entry e;
  e.operator_uid = "counts";
  e.snapshot.keyed_state = backend.snapshot();
  e.snapshot.operator_state = "op-bytes";
  e.source_position = "";
  req.operators.push_back(std::move(e));
  // Changes after the snapshot must not reach checkpoint 1.
  {
    auto counts = backend.get_value_state<std::int64_t>("count");
    REQUIRE(counts);
    for (int i = 0; i < 1000; ++i) {
      backend.set_current_key(key(i));
      counts->update(-1);
    }
  }
  auto written = ask<write_snapshot_result>(self, writer, write_state_atom::value, req);
  REQUIRE_MESSAGE(written.ok, written.error);
  CHECK(written.checkpoint_id == 1);
  CHECK(written.task == 3);
  CHECK(written.ack.alignment == std::chrono::milliseconds{5});
  REQUIRE(written.ack.operators.size() == 1);
  const auto& h = written.ack.operators[0];
  CHECK(h.operator_uid == "counts");
  CHECK(h.key_groups.size() > 64); // 1000 keys over 128 groups
  CHECK(h.has_operator_state);

  checkpoint::snapshot_manifest m;
  m.checkpoint_id = 1;
  m.handles = written.ack.operators;
  auto committed = ask<commit_manifest_result>(self, writer, commit_ckpt_atom::value, m);
  REQUIRE_MESSAGE(committed.ok, committed.error);

  auto latest = ask<read_latest_result>(self, writer, read_latest_atom::value);
  REQUIRE(latest.ok);
  REQUIRE(latest.latest);
  REQUIRE(latest.latest->manifest);
  CHECK(latest.latest->manifest->checkpoint_id == 1);
  CHECK(latest.highest_id == 1);

  // Restore at parallelism 2 into two fresh backends: every key comes back
  // with its value as of the snapshot.
  auto manifest = std::make_shared<const checkpoint::snapshot_manifest>(*latest.latest->manifest);
  std::int64_t restored = 0;
  for (std::uint32_t s = 0; s < 2; ++s) {
    restore_request rr{manifest, "counts", s, 2, 128};
    auto r = ask<restore_result>(self, writer, restore_op_atom::value, rr);
    REQUIRE_MESSAGE(r.ok, r.error);
    REQUIRE(r.restore);
    CHECK(r.restore->operator_states == std::vector<std::string>(s == 0 ? 1 : 0, "op-bytes"));
    state::keyed_state_backend fresh{state::key_group_range_for_subtask(128, 2, s), 128};
    for (const auto& [g, bytes] : r.restore->key_groups)
      REQUIRE(fresh.restore_key_group(g, bytes));
    auto counts = fresh.get_value_state<std::int64_t>("count");
    REQUIRE(counts);
    restored += static_cast<std::int64_t>(fresh.num_entries("count"));
    fresh.for_each_key("count", [&](std::string_view k, std::string_view) {
      fresh.set_current_key(k);
      auto v = counts->value();
      REQUIRE(v);
      CHECK(key(static_cast<int>(*v)) == k);
    });
  }
  CHECK(restored == 1000);

  auto discarded = ask<discard_result>(self, writer, discard_ckpt_atom::value,
                                       std::uint64_t{9});
  CHECK(discarded.ok);
  CHECK(discarded.values_deleted == 0);
  self->send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_CASE("the state writer replies with an error instead of failing") {
  temp_dir dir{"writer-err"};
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto writer = spawn_state_writer(sys, open_store(dir.str()));
  caf::scoped_actor self{sys};

  write_snapshot_request bad;
  bad.checkpoint_id = 2;
  operator_snapshot_entry e;
  e.operator_uid = std::string(300, 'u');
  e.snapshot.operator_state = "x";
  bad.operators.push_back(e);
  auto w = ask<write_snapshot_result>(self, writer, write_state_atom::value, bad);
  CHECK_FALSE(w.ok);
  CHECK(w.error.find("operator uid") != std::string::npos);

  checkpoint::snapshot_manifest m;
  m.checkpoint_id = 2;
  checkpoint::operator_state_handle h;
  h.operator_uid = "ghost";
  h.has_operator_state = true;
  m.handles = {h};
  auto c = ask<commit_manifest_result>(self, writer, commit_ckpt_atom::value, m);
  CHECK_FALSE(c.ok);
  CHECK(c.error.find("was not written") != std::string::npos);

  auto r = ask<restore_result>(self, writer, restore_op_atom::value, restore_request{});
  CHECK_FALSE(r.ok);

  // An operator without any state stores nothing and still acknowledges.
  write_snapshot_request empty;
  empty.checkpoint_id = 3;
  empty.operators.push_back(operator_snapshot_entry{"map", 0, 1, {}, ""});
  auto ok = ask<write_snapshot_result>(self, writer, write_state_atom::value, empty);
  CHECK(ok.ok);
  CHECK(ok.ack.operators.empty());
  self->send_exit(writer, caf::exit_reason::user_shutdown);
}

TEST_CASE("the state writer ends with an error on an unexpected message") {
  temp_dir dir{"writer-unexpected"};
  caf::actor_system_config cfg;
  caf::actor_system sys{cfg};
  auto writer = spawn_state_writer(sys, open_store(dir.str()));
  caf::scoped_actor self{sys};
  self->monitor(writer);
  self->send(writer, std::string{"hello"});
  bool down = false;
  self->receive([&](caf::down_msg& dm) {
    down = true;
    CHECK(dm.reason == caf::sec::unexpected_message);
  });
  CHECK(down);
}
}
