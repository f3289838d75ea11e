// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/remote_checkpoints.hpp"

#include "weir/core/test_fault.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <sstream>

namespace weir::checkpoint {

namespace {

constexpr const char* state_object = "data.mdb";
constexpr const char* manifest_object = "_metadata";

/// The id of `chk-<12 digits>/...`, or nullopt.
std::optional<std::uint64_t> id_of_key(const std::string& key, std::string& file) {
  if (key.size() < 17 || key.compare(0, 4, "chk-") != 0 || key[16] != '/')
    return std::nullopt;
  std::uint64_t id = 0;
  for (std::size_t i = 4; i < 16; ++i) {
    if (key[i] < '0' || key[i] > '9')
      return std::nullopt;
    id = id * 10 + static_cast<std::uint64_t>(key[i] - '0');
  }
  file = key.substr(17);
  return id;
}

expected<std::string> read_file(const std::filesystem::path& p) {
  std::ifstream in{p, std::ios::binary};
  if (!in)
    return make_error(errc::io_error, "cannot read " + p.string());
  std::string s{std::istreambuf_iterator<char>{in}, std::istreambuf_iterator<char>{}};
  if (in.bad())
    return make_error(errc::io_error, "cannot read " + p.string());
  return s;
}

} // namespace

remote_checkpoints::remote_checkpoints(std::shared_ptr<object_store> store, std::string uri)
  : store_(std::move(store)), uri_(std::move(uri)) {}

std::string remote_checkpoints::folder(std::uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "chk-%012llu", static_cast<unsigned long long>(id));
  return buf;
}

expected<upload_stats> remote_checkpoints::upload(const lmdb_checkpoint_store& local,
                                                  const snapshot_manifest& m,
                                                  const std::string& scratch_dir) {
  namespace fs = std::filesystem;
  auto started = std::chrono::steady_clock::now();
  std::error_code ec;
  fs::remove_all(scratch_dir, ec);
  struct cleanup {
    std::string dir;
    ~cleanup() {
      std::error_code e;
      fs::remove_all(dir, e);
    }
  } guard{scratch_dir};
  auto copied = local.export_checkpoint(m, scratch_dir);
  if (!copied)
    return copied.error();
  auto bytes = read_file(fs::path{scratch_dir} / state_object);
  if (!bytes)
    return bytes.error();
  const auto dir = folder(m.checkpoint_id) + "/";
  if (auto r = store_->put(dir + state_object, *bytes); !r)
    return r.error();
  // Test-only: a kill with the checkpoint's state uploaded, its manifest not.
  weir::internal::test_fault_kill("kill_in_upload");
  auto manifest = encode_manifest(m);
  if (auto r = store_->put(dir + manifest_object, manifest); !r)
    return r.error();
  upload_stats st;
  st.bytes = bytes->size() + manifest.size();
  st.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::steady_clock::now() - started);
  return st;
}

expected<std::vector<std::uint64_t>> remote_checkpoints::complete_ids() {
  auto keys = store_->list("chk-");
  if (!keys)
    return keys.error();
  std::set<std::uint64_t> ids;
  for (const auto& k : *keys) {
    std::string file;
    if (auto id = id_of_key(k, file); id && file == manifest_object)
      ids.insert(*id);
  }
  return std::vector<std::uint64_t>{ids.begin(), ids.end()};
}

expected<std::uint64_t> remote_checkpoints::download(std::uint64_t id, const std::string& dir) {
  namespace fs = std::filesystem;
  const auto key = folder(id) + "/" + state_object;
  auto bytes = store_->get(key);
  if (!bytes)
    return bytes.error();
  if (!*bytes)
    return make_error(errc::io_error, store_->describe(key) + " is missing (checkpoint "
                                        + std::to_string(id) + " has a _metadata but no state)");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return make_error(errc::io_error, "cannot create " + dir + ": " + ec.message());
  const auto target = fs::path{dir} / state_object;
  if (fs::exists(target, ec))
    return make_error(errc::invalid_argument, dir + " holds checkpoints already");
  // Written beside and renamed: a kill leaves no partial data.mdb.
  const auto part = fs::path{dir} / "data.mdb.download";
  {
    std::ofstream out{part, std::ios::binary | std::ios::trunc};
    out.write((*bytes)->data(), static_cast<std::streamsize>((*bytes)->size()));
    out.flush();
    if (!out)
      return make_error(errc::io_error, "cannot write " + part.string());
  }
  fs::rename(part, target, ec);
  if (ec)
    return make_error(errc::io_error, "cannot rename " + part.string() + ": " + ec.message());
  return static_cast<std::uint64_t>((*bytes)->size());
}

expected<std::vector<checkpoint_listing>> remote_checkpoints::list() {
  auto ids = complete_ids();
  if (!ids)
    return ids.error();
  std::vector<checkpoint_listing> out;
  for (auto id : *ids) {
    const auto key = folder(id) + "/" + manifest_object;
    auto bytes = store_->get(key);
    if (!bytes)
      return bytes.error();
    checkpoint_listing l;
    l.checkpoint_id = id;
    if (!*bytes) {
      l.problem = store_->describe(key) + " vanished while listing";
    } else if (auto m = decode_manifest(**bytes); !m) {
      l.problem = "its manifest is damaged (" + m.error().message + ")";
    } else {
      l.restorable = m->status == checkpoint_status::completed && m->checkpoint_id == id;
      if (!l.restorable)
        l.problem = "its manifest is not that of a completed checkpoint " + std::to_string(id);
      l.manifest = std::move(*m);
    }
    out.push_back(std::move(l));
  }
  return out;
}

expected<std::vector<std::uint64_t>> remote_checkpoints::apply_retention(std::size_t retain) {
  auto keys = store_->list("chk-");
  if (!keys)
    return keys.error();
  std::set<std::uint64_t> complete, all;
  for (const auto& k : *keys) {
    std::string file;
    if (auto id = id_of_key(k, file)) {
      all.insert(*id);
      if (file == manifest_object)
        complete.insert(*id);
    }
  }
  if (complete.size() <= retain)
    return std::vector<std::uint64_t>{};
  auto keep_from = *std::next(complete.rbegin(), static_cast<std::ptrdiff_t>(retain - 1));
  std::vector<std::uint64_t> deleted;
  for (auto id : all) {
    if (id >= keep_from)
      break;
    const auto dir = folder(id) + "/";
    if (auto r = store_->remove(dir + manifest_object); !r)
      return r.error();
    if (auto r = store_->remove(dir + state_object); !r)
      return r.error();
    if (complete.count(id))
      deleted.push_back(id);
  }
  return deleted;
}

expected<std::shared_ptr<remote_checkpoints>>
open_remote_checkpoints(const object_store_options& opts) {
  auto store = open_s3_store(opts);
  if (!store)
    return store.error();
  return std::make_shared<remote_checkpoints>(std::move(*store), opts.uri);
}

} // namespace weir::checkpoint
