// SPDX-License-Identifier: Apache-2.0
// The remote copy's layout and rules (remote_checkpoints) over an in-memory
// object store; the S3 client itself is tested against a real server
// (tests/integration/object_storage_tests.py).
#include "weir/checkpoint/remote_checkpoints.hpp"

#include "checkpoint_test_util.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <map>

using namespace weir;
using namespace weir::checkpoint;
using weir::checkpoint::test::temp_dir;

namespace {

/// S3's model in a map: keys in byte order, PUT replaces.
class memory_store final : public object_store {
public:
  std::map<std::string, std::string> objects;
  bool down = false; ///< every call fails, as an unreachable store

  expected<bool> put(const std::string& key, std::string_view bytes) override {
    if (down)
      return make_error(errc::io_error, "PUT " + describe(key) + ": unreachable");
    objects[key] = std::string{bytes};
    return true;
  }
  expected<std::optional<std::string>> get(const std::string& key) override {
    if (down)
      return make_error(errc::io_error, "GET " + describe(key) + ": unreachable");
    auto it = objects.find(key);
    if (it == objects.end())
      return std::optional<std::string>{};
    return std::optional<std::string>{it->second};
  }
  expected<std::vector<std::string>> list(const std::string& prefix) override {
    if (down)
      return make_error(errc::io_error, "LIST " + describe(prefix) + ": unreachable");
    std::vector<std::string> keys;
    for (const auto& [k, v] : objects)
      if (k.rfind(prefix, 0) == 0)
        keys.push_back(k);
    return keys;
  }
  expected<bool> remove(const std::string& key) override {
    objects.erase(key);
    return true;
  }
  std::string describe(const std::string& key) const override { return "s3://b/p/" + key; }
};

std::shared_ptr<lmdb_checkpoint_store> open_store(const std::string& dir) {
  store_options o;
  o.dir = dir;
  o.retain = 3;
  o.map_size = std::size_t{1} << 30;
  auto s = lmdb_checkpoint_store::open(o);
  REQUIRE_MESSAGE(s, (s ? "" : s.error().message));
  return *s;
}

/// Checkpoint `id` of one operator holding `state` as its operator state,
/// written to `s` but not committed.
snapshot_manifest write_checkpoint(lmdb_checkpoint_store& s, std::uint64_t id,
                                   const std::string& state) {
  operator_state_write w;
  w.operator_uid = "counter";
  w.operator_state = state;
  w.source_position = "event " + std::to_string(id);
  auto h = s.write_state(id, std::vector<operator_state_write>{w});
  REQUIRE_MESSAGE(h, (h ? "" : h.error().message));
  snapshot_manifest m;
  m.checkpoint_id = id;
  m.trigger_ms = static_cast<std::int64_t>(id) * 1000;
  m.completion_ms = m.trigger_ms + 5;
  m.handles = *h;
  return m;
}

} // namespace

TEST_CASE("parse_s3_uri splits bucket and prefix and names what is wrong") {
  auto a = parse_s3_uri("s3://weir-ckpt/team/job/");
  REQUIRE(a);
  CHECK(a->bucket == "weir-ckpt");
  CHECK(a->prefix == "team/job");
  auto b = parse_s3_uri("s3://bucket");
  REQUIRE(b);
  CHECK(b->prefix.empty());
  auto c = parse_s3_uri("file:///tmp/x");
  REQUIRE_FALSE(c);
  CHECK(c.error().message.find("is not an s3:// URI") != std::string::npos);
  auto d = parse_s3_uri("s3://Upper/x");
  REQUIRE_FALSE(d);
  CHECK(d.error().message.find("bucket name") != std::string::npos);
  CHECK_FALSE(parse_s3_uri("s3://ab/x"));
}

TEST_CASE("an uploaded checkpoint is listed, downloaded and restored; a cut upload is not") {
  temp_dir local{"remote-local"}, standby{"remote-standby"};
  auto store = open_store(local.str());
  auto mem = std::make_shared<memory_store>();
  remote_checkpoints remote{mem, "s3://b/p"};

  auto m1 = write_checkpoint(*store, 1, "one");
  auto up = remote.upload(*store, m1, local.str() + "/.upload");
  REQUIRE_MESSAGE(up, (up ? "" : up.error().message));
  CHECK(up->bytes > 0);
  CHECK_FALSE(std::filesystem::exists(local.path() / ".upload"));
  REQUIRE(store->commit_manifest(m1));
  CHECK(mem->objects.count("chk-000000000001/data.mdb") == 1);
  CHECK(mem->objects.count("chk-000000000001/_metadata") == 1);

  // Checkpoint 2's state is uploaded, its _metadata not (a kill between).
  auto m2 = write_checkpoint(*store, 2, "two");
  REQUIRE(remote.upload(*store, m2, local.str() + "/.upload"));
  mem->objects.erase("chk-000000000002/_metadata");

  CHECK(remote.complete_ids().value() == std::vector<std::uint64_t>{1});
  auto listed = remote.list().value();
  REQUIRE(listed.size() == 1);
  CHECK(listed[0].restorable);
  CHECK(listed[0].manifest->handles.at(0).source_position == "event 1");

  auto bytes = remote.download(1, standby.str());
  REQUIRE_MESSAGE(bytes, (bytes ? "" : bytes.error().message));
  auto restored = open_store(standby.str());
  auto latest = restored->read_latest().value();
  REQUIRE(latest.manifest);
  CHECK(latest.manifest->checkpoint_id == 1);
  auto in = restored->read_restore(*latest.manifest, "counter", 0, 1, 128).value();
  REQUIRE(in.operator_states.size() == 1);
  CHECK(in.operator_states[0] == "one");
  // A second download into a store is refused.
  CHECK_FALSE(remote.download(1, standby.str()));
}

TEST_CASE("retention keeps the newest complete checkpoints and removes cut uploads before them") {
  temp_dir local{"remote-retain"};
  auto store = open_store(local.str());
  auto mem = std::make_shared<memory_store>();
  remote_checkpoints remote{mem, "s3://b/p"};
  for (std::uint64_t id = 1; id <= 5; ++id) {
    auto m = write_checkpoint(*store, id, "s" + std::to_string(id));
    REQUIRE(remote.upload(*store, m, local.str() + "/.upload"));
    REQUIRE(store->commit_manifest(m));
  }
  mem->objects.erase("chk-000000000002/_metadata"); // cut short
  auto gone = remote.apply_retention(2).value();
  CHECK(gone == std::vector<std::uint64_t>{1, 3});
  CHECK(remote.complete_ids().value() == std::vector<std::uint64_t>{4, 5});
  CHECK(mem->objects.count("chk-000000000002/data.mdb") == 0);
  CHECK(mem->objects.size() == 4);
}

TEST_CASE("an unreachable store fails the upload with its message") {
  temp_dir local{"remote-down"};
  auto store = open_store(local.str());
  auto mem = std::make_shared<memory_store>();
  mem->down = true;
  remote_checkpoints remote{mem, "s3://b/p"};
  auto m = write_checkpoint(*store, 1, "x");
  auto up = remote.upload(*store, m, local.str() + "/.upload");
  REQUIRE_FALSE(up);
  CHECK(up.error().message.find("PUT s3://b/p/chk-000000000001/data.mdb: unreachable")
        != std::string::npos);
  CHECK_FALSE(remote.complete_ids());
}
