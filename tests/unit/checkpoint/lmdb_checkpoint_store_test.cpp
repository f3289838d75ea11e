// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"

#include "weir/checkpoint/checkpoint_report.hpp"

#include "checkpoint_test_util.hpp"

#include <doctest/doctest.h>
#include <lmdb.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <stdexcept>

using namespace weir;
using namespace weir::checkpoint;
using weir::checkpoint::test::temp_dir;

namespace {

std::shared_ptr<lmdb_checkpoint_store> open_store(const std::string& dir,
                                                  std::size_t retain = 3,
                                                  std::size_t map_size = std::size_t{1}
                                                                         << 30) {
  store_options o;
  o.dir = dir;
  o.retain = retain;
  o.map_size = map_size;
  auto s = lmdb_checkpoint_store::open(o);
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  return *s;
}

/// Keyed state of a fake operator: key group -> bytes.
using groups_t = std::map<std::uint16_t, std::string>;

operator_state_write keyed(std::string uid, std::uint32_t subtask, std::uint32_t p,
                           std::uint16_t first, std::uint16_t last, groups_t groups) {
  operator_state_write w;
  w.operator_uid = std::move(uid);
  w.subtask = subtask;
  w.parallelism = p;
  w.first_key_group = first;
  w.last_key_group = last;
  w.serialize_key_group = [groups = std::move(groups)](std::uint16_t g, std::string& out) {
    if (auto it = groups.find(g); it != groups.end())
      out += it->second;
  };
  return w;
}

operator_state_write op_state(std::string uid, std::uint32_t subtask, std::string bytes,
                              std::string position = {}) {
  operator_state_write w;
  w.operator_uid = std::move(uid);
  w.subtask = subtask;
  w.operator_state = std::move(bytes);
  w.source_position = std::move(position);
  return w;
}

/// Writes one checkpoint (one subtask's write per entry of `writes`) and
/// commits its manifest; returns the manifest.
snapshot_manifest take_checkpoint(lmdb_checkpoint_store& s, std::uint64_t id,
                             const std::vector<std::vector<operator_state_write>>& writes) {
  snapshot_manifest m;
  m.checkpoint_id = id;
  m.trigger_ms = static_cast<std::int64_t>(id) * 1000;
  m.completion_ms = m.trigger_ms + 30;
  for (const auto& w : writes) {
    auto h = s.write_state(id, w);
    REQUIRE_MESSAGE(h, (h ? "" : h.error().message));
    m.handles.insert(m.handles.end(), h->begin(), h->end());
  }
  auto c = s.commit_manifest(m);
  REQUIRE_MESSAGE(c, (c ? "" : c.error().message));
  return m;
}

/// A --fresh start over begun on a store whose newest checkpoint is
/// `newest`: a plain restart goes on from no state (with a warning naming
/// it), and a bounded job that finishes without a checkpoint ends the start
/// over all the same, leaving no checkpoint.
void check_fresh_start_over(lmdb_checkpoint_store& s, std::uint64_t newest) {
  REQUIRE(s.begin_new_start(new_start_kind::fresh).value());
  auto again = s.read_latest().value();
  CHECK_FALSE(again.manifest);
  REQUIRE(again.warnings.size() == 1);
  CHECK(again.warnings[0].find("--fresh after checkpoint " + std::to_string(newest))
        != std::string::npos);
  CHECK(s.read_latest(true).value().manifest->checkpoint_id == newest);
  CHECK(s.finish_new_start().value());
  CHECK(s.list(false).value().empty());
  CHECK_FALSE(s.new_start().value());
  CHECK_FALSE(s.finish_new_start().value());
}

/// Runs `f` in a write transaction of the raw environment in `dir`, with
/// the store closed: how a test damages what the store wrote.
void with_raw_lmdb(const std::string& dir,
                   const std::function<void(MDB_txn*, MDB_dbi manifests, MDB_dbi state)>& f) {
  MDB_env* env = nullptr;
  REQUIRE(mdb_env_create(&env) == 0);
  REQUIRE(mdb_env_set_maxdbs(env, 2) == 0);
  REQUIRE(mdb_env_set_mapsize(env, std::size_t{1} << 30) == 0);
  REQUIRE(mdb_env_open(env, dir.c_str(), MDB_NOTLS, 0644) == 0);
  MDB_txn* txn = nullptr;
  REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
  MDB_dbi manifests = 0, state = 0;
  REQUIRE(mdb_dbi_open(txn, "manifests", 0, &manifests) == 0);
  REQUIRE(mdb_dbi_open(txn, "state", 0, &state) == 0);
  f(txn, manifests, state);
  REQUIRE(mdb_txn_commit(txn) == 0);
  mdb_env_close(env);
}

void put(MDB_txn* txn, MDB_dbi dbi, const std::string& key, const std::string& value) {
  MDB_val k{key.size(), const_cast<char*>(key.data())};
  MDB_val v{value.size(), const_cast<char*>(value.data())};
  REQUIRE(mdb_put(txn, dbi, &k, &v, 0) == 0);
}

std::string get(MDB_txn* txn, MDB_dbi dbi, const std::string& key) {
  MDB_val k{key.size(), const_cast<char*>(key.data())}, v{};
  REQUIRE(mdb_get(txn, dbi, &k, &v) == 0);
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

bool contains(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos)
      return true;
  return false;
}

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("state and manifest written to lmdb read back unchanged after reopening") {
  temp_dir dir{"roundtrip"};
  snapshot_manifest written;
  {
    auto s = open_store(dir.str());
    written = take_checkpoint(
      *s, 1,
      {{op_state("logs", 0, "offset=1234", "byte 1234 of a.log")},
       {keyed("views", 0, 2, 0, 63, {{3, "g3"}, {40, std::string(5000, 'x')}})},
       {keyed("views", 1, 2, 64, 127, {{64, "g64"}, {127, "g127"}}),
        op_state("sink", 1, "pending 1")}});
    REQUIRE(written.handles.size() == 4);
    const auto& v0 = written.handles[1];
    REQUIRE(v0.key_groups.size() == 2); // empty groups store nothing
    CHECK(v0.key_groups[0] == key_group_handle{3, 2, state_checksum("g3")});
    CHECK(v0.key_groups[1].bytes == 5000);
    CHECK_FALSE(v0.has_operator_state);
    CHECK(written.handles[0].source_position == "byte 1234 of a.log");
    CHECK(written.handles[3].operator_state_bytes == 9);
  }
  auto s = open_store(dir.str());
  auto latest = s->read_latest();
  REQUIRE(latest);
  CHECK(latest->warnings.empty());
  REQUIRE(latest->manifest);
  CHECK(*latest->manifest == written);
  CHECK(s->highest_id().value() == 1);

  SUBCASE("same parallelism") {
    auto r = s->read_restore(*latest->manifest, "views", 1, 2, 128);
    REQUIRE(r);
    CHECK(r->checkpoint_id == 1);
    REQUIRE(r->key_groups.size() == 2);
    CHECK(r->key_groups[0] == std::pair<std::uint16_t, std::string>{64, "g64"});
    CHECK(r->key_groups[1] == std::pair<std::uint16_t, std::string>{127, "g127"});
    CHECK(r->operator_states.empty());
    auto src = s->read_restore(*latest->manifest, "logs", 0, 1, 128);
    REQUIRE(src);
    CHECK(src->operator_states == std::vector<std::string>{"offset=1234"});
  }
  SUBCASE("rescaled to one subtask: it takes every key group and all operator state") {
    auto r = s->read_restore(*latest->manifest, "views", 0, 1, 128);
    REQUIRE(r);
    REQUIRE(r->key_groups.size() == 4);
    CHECK(r->key_groups[0].first == 3);
    CHECK(r->key_groups[1].second == std::string(5000, 'x'));
    CHECK(r->key_groups[3].first == 127);
    auto sink = s->read_restore(*latest->manifest, "sink", 0, 1, 128);
    REQUIRE(sink);
    CHECK(sink->operator_states == std::vector<std::string>{"pending 1"});
  }
  SUBCASE("rescaled to four subtasks: each gets the key groups it owns") {
    std::size_t total = 0;
    for (std::uint32_t i = 0; i < 4; ++i) {
      auto r = s->read_restore(*latest->manifest, "views", i, 4, 128);
      REQUIRE(r);
      for (auto& [g, bytes] : r->key_groups) {
        CHECK(g >= i * 32);
        CHECK(g < (i + 1) * 32);
      }
      total += r->key_groups.size();
    }
    CHECK(total == 4);
    auto sink3 = s->read_restore(*latest->manifest, "sink", 3, 4, 128);
    REQUIRE(sink3);
    CHECK(sink3->operator_states.empty()); // old subtask 1 went to new subtask 1
    // ... and subtask 3, owning none, may read every old subtask's.
    CHECK(sink3->union_operator_states == std::vector<std::string>{"pending 1"});
    auto sink1 = s->read_restore(*latest->manifest, "sink", 1, 4, 128);
    REQUIRE(sink1);
    CHECK(sink1->operator_states == std::vector<std::string>{"pending 1"});
    CHECK(sink1->union_operator_states.empty());
  }
  SUBCASE("a smaller max_parallelism than the stored key groups is refused") {
    auto r = s->read_restore(*latest->manifest, "views", 0, 1, 64);
    REQUIRE_FALSE(r);
    CHECK(r.error().code == errc::invalid_argument);
  }
}

TEST_CASE("an empty checkpoint directory has nothing to restore") {
  temp_dir dir{"empty"};
  auto s = open_store((dir.path() / "new").string());
  auto latest = s->read_latest();
  REQUIRE(latest);
  CHECK_FALSE(latest->manifest);
  CHECK(latest->warnings.empty());
  CHECK(s->highest_id().value() == 0);
  CHECK(s->list(true).value().empty());
}

TEST_CASE("retain keeps the newest complete checkpoints and deletes older state") {
  temp_dir dir{"retain"};
  auto s = open_store(dir.str(), 2);
  std::vector<snapshot_manifest> ms;
  for (std::uint64_t id = 1; id <= 4; ++id)
    ms.push_back(take_checkpoint(*s, id, {{keyed("op", 0, 1, 0, 7, {{1, "v" + std::to_string(id)}}),
                                      op_state("op", 0, "o" + std::to_string(id))}}));
  auto all = s->list(true);
  REQUIRE(all);
  REQUIRE(all->size() == 2);
  CHECK((*all)[0].checkpoint_id == 3);
  CHECK((*all)[1].checkpoint_id == 4);
  CHECK((*all)[0].restorable);
  // State of checkpoints 1 and 2 is gone, that of 3 is still there.
  CHECK_FALSE(s->read_restore(ms[1], "op", 0, 1, 128));
  auto r3 = s->read_restore(ms[2], "op", 0, 1, 128);
  REQUIRE(r3);
  CHECK(r3->key_groups.at(0).second == "v3");
  CHECK(r3->operator_states.at(0) == "o3");
}

TEST_CASE("retain also deletes the state of failed checkpoints left behind") {
  temp_dir dir{"orphans"};
  auto s = open_store(dir.str(), 1);
  take_checkpoint(*s, 1, {{op_state("op", 0, "a")}});
  // Checkpoint 2 wrote state but never got its manifest (the job crashed).
  REQUIRE(s->write_state(2, std::vector{op_state("op", 0, "orphan")}));
  CHECK(s->highest_id().value() == 2);
  take_checkpoint(*s, 3, {{op_state("op", 0, "c")}});
  CHECK(s->highest_id().value() == 3);
  snapshot_manifest orphan;
  orphan.checkpoint_id = 2;
  operator_state_handle h;
  h.operator_uid = "op";
  h.has_operator_state = true;
  h.operator_state_bytes = 6;
  h.operator_state_checksum = state_checksum("orphan");
  orphan.handles = {h};
  CHECK_FALSE(s->read_restore(orphan, "op", 0, 1, 128));
}

TEST_CASE("discard deletes the state of an aborted checkpoint") {
  temp_dir dir{"discard"};
  auto s = open_store(dir.str());
  take_checkpoint(*s, 1, {{op_state("op", 0, "a")}});
  REQUIRE(s->write_state(2, std::vector{keyed("op", 0, 1, 0, 3, {{0, "x"}, {2, "y"}}),
                                        op_state("op", 0, "b")}));
  CHECK(s->highest_id().value() == 2);
  auto n = s->discard(2);
  REQUIRE(n);
  CHECK(*n == 3);
  CHECK(s->highest_id().value() == 1);
  CHECK(s->discard(2).value() == 0);
  CHECK(s->read_latest().value().manifest->checkpoint_id == 1);
}

TEST_CASE("a damaged newest checkpoint is refused, and restored past only with allow_rollback") {
  temp_dir dir{"corrupt"};
  {
    auto s = open_store(dir.str());
    take_checkpoint(*s, 1, {{keyed("views", 0, 1, 0, 127, {{9, "nine-one"}})}});
    take_checkpoint(*s, 2, {{keyed("views", 0, 1, 0, 127, {{9, "nine-two"}})}});
  }
  SUBCASE("keyed state byte flipped") {
    with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi, MDB_dbi state) {
      auto key = lmdb_checkpoint_store::keyed_state_key(2, "views", 9);
      auto v = get(txn, state, key);
      v[0] = static_cast<char>(v[0] ^ 0x01);
      put(txn, state, key, v);
    });
  }
  SUBCASE("keyed state value missing") {
    with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi, MDB_dbi state) {
      auto key = lmdb_checkpoint_store::keyed_state_key(2, "views", 9);
      MDB_val k{key.size(), key.data()};
      REQUIRE(mdb_del(txn, state, &k, nullptr) == 0);
    });
  }
  SUBCASE("manifest truncated") {
    with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi manifests, MDB_dbi) {
      auto key = lmdb_checkpoint_store::manifest_key(2);
      auto v = get(txn, manifests, key);
      put(txn, manifests, key, v.substr(0, v.size() / 2));
    });
  }
  SUBCASE("manifest incomplete") {
    with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi manifests, MDB_dbi) {
      auto key = lmdb_checkpoint_store::manifest_key(2);
      auto m = decode_manifest(get(txn, manifests, key));
      REQUIRE(m);
      m->status = checkpoint_status::in_progress;
      put(txn, manifests, key, encode_manifest(*m));
    });
  }
  auto s = open_store(dir.str());
  // Restoring checkpoint 1 would take back what the job committed with 2.
  auto refused = s->read_latest();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().code == errc::invalid_argument);
  const auto& msg = refused.error().message;
  CHECK(msg.rfind("checkpoint 2, the newest, cannot be restored: ", 0) == 0);
  CHECK(msg.find("The newest restorable one is checkpoint 1") != std::string::npos);
  CHECK(msg.find("Run with --allow-rollback to restore checkpoint 1, or with --fresh")
        != std::string::npos);
  auto latest = s->read_latest(true);
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);
  REQUIRE(latest->warnings.size() == 1);
  CHECK(latest->warnings[0].rfind("checkpoint 2: ", 0) == 0);
  CHECK(contains(latest->warnings, "rolling back to checkpoint 1 (--allow-rollback)"));
  auto r = s->read_restore(*latest->manifest, "views", 0, 1, 128);
  REQUIRE(r);
  CHECK(r->key_groups.at(0).second == "nine-one");
  // The listing says what is wrong with checkpoint 2.
  auto all = s->list(true).value();
  REQUIRE(all.size() == 2);
  CHECK(all[0].restorable);
  CHECK_FALSE(all[1].restorable);
  CHECK_FALSE(all[1].problem.empty());
  // Ids continue after the damaged checkpoint, never reusing it.
  CHECK(s->highest_id().value() == 2);
}

TEST_CASE("a corrupted value is named in the warning") {
  temp_dir dir{"warn"};
  {
    auto s = open_store(dir.str());
    take_checkpoint(*s, 1, {{op_state("sink", 0, "a")}});
    take_checkpoint(*s, 2, {{op_state("sink", 0, "b")}});
  }
  with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi, MDB_dbi state) {
    put(txn, state, lmdb_checkpoint_store::operator_state_key(2, "sink", 0), "c");
  });
  auto latest = open_store(dir.str())->read_latest(true).value();
  REQUIRE(latest.warnings.size() == 1);
  CHECK(latest.warnings[0]
        == "checkpoint 2: operator state of operator 'sink' subtask 0 fails its checksum; "
           "rolling back to checkpoint 1 (--allow-rollback)");
}

TEST_CASE("every manifest damaged is refused even with allow_rollback, never a fresh start") {
  temp_dir dir{"all-damaged"};
  {
    auto s = open_store(dir.str());
    take_checkpoint(*s, 1, {{op_state("sink", 0, "a")}});
    take_checkpoint(*s, 2, {{op_state("sink", 0, "b")}});
  }
  with_raw_lmdb(dir.str(), [](MDB_txn* txn, MDB_dbi manifests, MDB_dbi) {
    for (std::uint64_t id : {1, 2})
      put(txn, manifests, lmdb_checkpoint_store::manifest_key(id), "not a manifest");
  });
  auto s = open_store(dir.str());
  for (bool rollback : {false, true}) {
    auto latest = s->read_latest(rollback);
    REQUIRE_FALSE(latest);
    CHECK(latest.error().message.find("No checkpoint here can be restored")
          != std::string::npos);
    CHECK(latest.error().message.find("Run with --fresh") != std::string::npos);
  }
}

TEST_CASE("a start over keeps the old checkpoints until its first checkpoint completes") {
  temp_dir dir{"start-over"};
  auto s = open_store(dir.str());
  CHECK_FALSE(s->begin_new_start(new_start_kind::fresh).value()); // nothing to supersede
  take_checkpoint(*s, 1, {{op_state("sink", 0, "a")}});
  take_checkpoint(*s, 2, {{op_state("sink", 0, "b")}});
  REQUIRE(s->begin_new_start(new_start_kind::savepoint, "sp/1").value());
  auto pending = s->new_start().value();
  REQUIRE(pending);
  CHECK(pending->superseded_through == 2);
  CHECK(pending->savepoint == "sp/1");
  // A crash now: a plain restart must not resume the run before the start over.
  auto refused = s->read_latest();
  REQUIRE_FALSE(refused);
  CHECK(refused.error().message.find("started over with --from-savepoint sp/1 after "
                                     "checkpoint 2")
        != std::string::npos);
  CHECK(refused.error().message.find("--allow-rollback to restore checkpoint 2")
        != std::string::npos);
  auto listed = s->list(true).value();
  REQUIRE(listed.size() == 2);
  for (const auto& l : listed) {
    CHECK(l.superseded);
    CHECK_FALSE(l.restorable);
    CHECK(l.problem.empty());
  }
  CHECK(format_checkpoint_list(listed).find("superseded: 1, 2 (") != std::string::npos);
  CHECK(s->read_latest(true).value().manifest->checkpoint_id == 2);
  // The first checkpoint after it supersedes both, in one transaction.
  take_checkpoint(*s, 3, {{op_state("sink", 0, "c")}});
  CHECK_FALSE(s->new_start().value());
  auto all = s->list(true).value();
  REQUIRE(all.size() == 1);
  CHECK(all[0].checkpoint_id == 3);
  CHECK(s->read_latest().value().manifest->checkpoint_id == 3);
  check_fresh_start_over(*s, 3);
}

TEST_CASE("a data.mdb short by 1 to 16 pages is refused as truncated or is whole") {
  temp_dir dir{"short"};
  {
    auto s = open_store(dir.str());
    for (std::uint64_t id = 1; id <= 4; ++id)
      take_checkpoint(*s, id, {{keyed("views", 0, 1, 0, 127,
                                      {{5, std::string(9000, 'v')}, {7, "seven"}})}});
  }
  const auto file = dir.path() / "data.mdb";
  const auto full = std::filesystem::file_size(file);
  const auto copy = dir.path() / "data.mdb.full";
  std::filesystem::copy_file(file, copy);
  int refused = 0;
  for (std::uintmax_t pages = 1; pages <= 16 && pages * 4096 < full; ++pages) {
    CAPTURE(pages);
    std::filesystem::copy_file(copy, file, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(file, full - pages * 4096);
    for (bool read_only : {false, true}) {
      store_options o;
      o.dir = dir.str();
      o.read_only = read_only;
      auto s = lmdb_checkpoint_store::open(o);
      if (!s) {
        CHECK(s.error().message.find("data.mdb is truncated") != std::string::npos);
        CHECK(s.error().message.find("start over with --fresh") != std::string::npos);
        ++refused;
        continue;
      }
      // Only pages LMDB never reads were cut: everything is there.
      auto latest = (*s)->read_latest();
      REQUIRE(latest);
      REQUIRE(latest->manifest);
      CHECK(latest->manifest->checkpoint_id == 4);
      CHECK((*s)->read_restore(*latest->manifest, "views", 0, 1, 128)->key_groups.size() == 2);
    }
  }
  CHECK(refused > 0);
}

TEST_CASE("a data.mdb with a lock.mdb but no data is refused, not taken for a new store") {
  temp_dir dir{"lost"};
  {
    auto s = open_store(dir.str());
    take_checkpoint(*s, 1, {{op_state("sink", 0, "a")}});
  }
  SUBCASE("missing") { std::filesystem::remove(dir.path() / "data.mdb"); }
  SUBCASE("empty") { std::filesystem::resize_file(dir.path() / "data.mdb", 0); }
  store_options o;
  o.dir = dir.str();
  auto s = lmdb_checkpoint_store::open(o);
  REQUIRE_FALSE(s);
  CHECK(s.error().message.find("start over with --fresh") != std::string::npos);
}

TEST_CASE("a new store is made whole beside its directory and moved in; a leftover is removed") {
  temp_dir dir{"staging"};
  // What a process killed while it made the store leaves: a staging
  // directory with LMDB's lock.mdb and an empty data.mdb.
  std::filesystem::create_directories(dir.path() / ".new-store");
  std::ofstream{dir.path() / ".new-store" / "lock.mdb"} << "x";
  std::ofstream{dir.path() / ".new-store" / "data.mdb"};
  auto s = open_store(dir.str());
  CHECK_FALSE(std::filesystem::exists(dir.path() / ".new-store"));
  CHECK(std::filesystem::file_size(dir.path() / "data.mdb") > 0);
  take_checkpoint(*s, 1, {{op_state("sink", 0, "a")}});
  auto latest = s->read_latest();
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);
}

TEST_CASE("a full lmdb map fails that checkpoint and leaves the previous one readable") {
  temp_dir dir{"mapfull"};
  auto s = open_store(dir.str(), 3, std::size_t{1} << 20);
  take_checkpoint(*s, 1, {{keyed("views", 0, 1, 0, 127, {{1, "small"}})}});
  auto big = s->write_state(2, std::vector{keyed("views", 0, 1, 0, 127,
                                                 {{1, std::string(4 << 20, 'z')}})});
  REQUIRE_FALSE(big);
  CHECK(big.error().code == errc::io_error);
  CHECK(big.error().message.find("checkpoint 2") != std::string::npos);
  CHECK(big.error().message.find("MDB_MAP_FULL") != std::string::npos);
  CHECK(big.error().message.find("map of 1 MiB is full") != std::string::npos);
  auto latest = s->read_latest();
  REQUIRE(latest);
  REQUIRE(latest->manifest);
  CHECK(latest->manifest->checkpoint_id == 1);
  CHECK(s->read_restore(*latest->manifest, "views", 0, 1, 128).value().key_groups.at(0).second
        == "small");
  // The failed checkpoint stored nothing; the next small one still works.
  CHECK(s->highest_id().value() == 1);
  take_checkpoint(*s, 3, {{keyed("views", 0, 1, 0, 127, {{1, "again"}})}});
  CHECK(s->read_latest().value().manifest->checkpoint_id == 3);
  check_fresh_start_over(*s, 3);
}

TEST_CASE("committing a manifest whose state was not written fails and stores nothing") {
  temp_dir dir{"nostate"};
  auto s = open_store(dir.str());
  snapshot_manifest m;
  m.checkpoint_id = 5;
  operator_state_handle h;
  h.operator_uid = "op";
  h.key_groups = {{3, 1, 0}};
  m.handles = {h};
  auto r = s->commit_manifest(m);
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("key group 3 of operator 'op' subtask 0 was not written")
        != std::string::npos);
  CHECK(s->list(false).value().empty());
}

TEST_CASE("write_state rejects bad operator uids and key-group ranges") {
  temp_dir dir{"badargs"};
  auto s = open_store(dir.str());
  auto empty_uid = s->write_state(1, std::vector{op_state("", 0, "x")});
  REQUIRE_FALSE(empty_uid);
  CHECK(empty_uid.error().code == errc::invalid_argument);
  auto nul = s->write_state(1, std::vector{op_state(std::string("a\0b", 3), 0, "x")});
  CHECK_FALSE(nul);
  auto long_uid = s->write_state(1, std::vector{op_state(std::string(300, 'u'), 0, "x")});
  CHECK_FALSE(long_uid);
  auto range = s->write_state(1, std::vector{keyed("op", 0, 1, 9, 3, {})});
  REQUIRE_FALSE(range);
  CHECK(range.error().message.find("[9, 3]") != std::string::npos);
}

TEST_CASE("a throwing serializer fails the write and stores nothing") {
  temp_dir dir{"throws"};
  auto s = open_store(dir.str());
  auto w = keyed("op", 0, 1, 0, 9, {{0, "fine"}});
  w.serialize_key_group = [](std::uint16_t g, std::string& out) {
    if (g == 5)
      throw std::runtime_error("boom");
    out = "g";
  };
  auto r = s->write_state(7, std::vector{w});
  REQUIRE_FALSE(r);
  CHECK(r.error().code == errc::runtime_error);
  CHECK(r.error().message
        == "checkpoint 7: serializing key group 5 of operator 'op' subtask 0: boom");
  CHECK(s->highest_id().value() == 0);
}

TEST_CASE("a read-only store refuses writes and needs an existing environment") {
  temp_dir dir{"ro"};
  store_options o;
  o.dir = (dir.path() / "missing").string();
  o.read_only = true;
  auto missing = lmdb_checkpoint_store::open(o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::io_error);
  CHECK(missing.error().message.find("no checkpoints here") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(o.dir));
  {
    auto rw = open_store(dir.str());
    take_checkpoint(*rw, 1, {{op_state("op", 0, "a")}});
  }
  o.dir = dir.str();
  auto ro = lmdb_checkpoint_store::open(o);
  REQUIRE(ro);
  CHECK((*ro)->read_latest().value().manifest->checkpoint_id == 1);
  auto w = (*ro)->write_state(2, std::vector{op_state("op", 0, "b")});
  REQUIRE_FALSE(w);
  CHECK(w.error().message.find("read-only") != std::string::npos);
}

TEST_CASE("a truncated data.mdb is an error on open, not a crash on read") {
  temp_dir dir{"truncated"};
  {
    auto s = open_store(dir.str());
    for (std::uint64_t id = 1; id <= 3; ++id)
      take_checkpoint(*s, id, {{keyed("views", 0, 1, 0, 127, {{5, std::string(200000, 'v')}})}});
  }
  const auto file = dir.path() / "data.mdb";
  const auto full = std::filesystem::file_size(file);
  REQUIRE(full > 3 * 200000);
  std::filesystem::resize_file(file, full / 2);
  for (bool read_only : {false, true}) {
    store_options o;
    o.dir = dir.str();
    o.read_only = read_only;
    auto s = lmdb_checkpoint_store::open(o);
    REQUIRE_FALSE(s);
    CHECK(s.error().message.find("data.mdb is truncated") != std::string::npos);
  }
}

TEST_CASE("open rejects an empty directory name and retain of zero") {
  store_options o;
  CHECK(lmdb_checkpoint_store::open(o).error().code == errc::invalid_argument);
  o.dir = "x";
  o.retain = 0;
  CHECK(lmdb_checkpoint_store::open(o).error().code == errc::invalid_argument);
}

TEST_CASE("state keys follow the documented big-endian layout") {
  auto k = lmdb_checkpoint_store::keyed_state_key(0x0102030405060708, "ab", 0x0a0b);
  CHECK(k == std::string("\x01\x02\x03\x04\x05\x06\x07\x08" "ab\0k\x0a\x0b", 14));
  auto o = lmdb_checkpoint_store::operator_state_key(1, "ab", 0x01020304);
  CHECK(o == std::string("\0\0\0\0\0\0\0\x01" "ab\0o\x01\x02\x03\x04", 16));
  // Checkpoint 256 sorts after checkpoint 255 (big-endian).
  CHECK(lmdb_checkpoint_store::manifest_key(255) < lmdb_checkpoint_store::manifest_key(256));
}
}
