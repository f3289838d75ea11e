// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"

#include "weir/core/key_group.hpp"
#include "weir/core/test_fault.hpp"

#include "internal/lmdb_file_check.hpp"

#include <fcntl.h>
#include <lmdb.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <exception>
#include <filesystem>
#include <memory>
#include <set>
#include <system_error>
#include <utility>

namespace weir::checkpoint {

namespace {

constexpr std::size_t max_uid_bytes = 256;

void append_be(std::string& out, std::uint64_t x, int bytes) {
  for (int i = bytes - 1; i >= 0; --i)
    out.push_back(static_cast<char>((x >> (8 * i)) & 0xff));
}

std::uint64_t read_be64(const void* p) {
  auto* b = static_cast<const unsigned char*>(p);
  std::uint64_t x = 0;
  for (int i = 0; i < 8; ++i)
    x = (x << 8) | b[i];
  return x;
}

MDB_val as_val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}

std::string_view as_view(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

/// Aborts the transaction unless it was committed: every early return of a
/// member leaves LMDB as it found it.
class txn_guard {
public:
  txn_guard() = default;
  txn_guard(const txn_guard&) = delete;
  txn_guard& operator=(const txn_guard&) = delete;
  ~txn_guard() {
    if (txn_)
      mdb_txn_abort(txn_);
  }

  MDB_txn** out() { return &txn_; }
  MDB_txn* get() const { return txn_; }

  /// Commits; LMDB frees the transaction whether or not that succeeds.
  int commit() {
    auto* t = txn_;
    txn_ = nullptr;
    return mdb_txn_commit(t);
  }

private:
  MDB_txn* txn_ = nullptr;
};

/// Closes a cursor before its transaction ends.
class cursor_guard {
public:
  cursor_guard() = default;
  cursor_guard(const cursor_guard&) = delete;
  cursor_guard& operator=(const cursor_guard&) = delete;
  ~cursor_guard() {
    if (cur_)
      mdb_cursor_close(cur_);
  }

  MDB_cursor** out() { return &cur_; }
  MDB_cursor* get() const { return cur_; }

private:
  MDB_cursor* cur_ = nullptr;
};

std::string describe(const operator_state_handle& h) {
  return "operator '" + h.operator_uid + "' subtask " + std::to_string(h.subtask);
}

/// The refusal of a damaged data.mdb; "is truncated ... --fresh" is what
/// scripts and docs/concepts/recovery.md quote.
std::string describe_damage(const std::string& dir, const internal::lmdb_file_check& c) {
  using v = internal::lmdb_file_check::verdict;
  std::string what = dir + "/data.mdb ";
  if (c.result == v::truncated)
    what += "is truncated: " + std::to_string(c.file_bytes) + " bytes"
            + (c.needed_bytes ? ", its last page ends at byte " + std::to_string(c.needed_bytes)
                              : std::string{})
            + "; " + c.problem;
  else
    what += "is damaged: " + c.problem;
  return what + " (the checkpoint storage is damaged; start over with --fresh)";
}

/// The `manifests` key of the start-over record (`begin_new_start`): one
/// NUL byte, which sorts before every 8-byte checkpoint id, so scans from
/// the last manifest never meet it and scans by id skip it by its length.
const std::string new_start_key(1, '\0');

std::string encode_new_start(const pending_new_start& n) {
  std::string out = "WRST";
  out.push_back(static_cast<char>(n.kind));
  append_be(out, n.superseded_through, 8);
  out += n.savepoint;
  return out;
}

std::optional<pending_new_start> decode_new_start(std::string_view v) {
  if (v.size() < 13 || v.substr(0, 4) != "WRST")
    return std::nullopt;
  pending_new_start n;
  n.kind = static_cast<new_start_kind>(v[4]);
  if (n.kind != new_start_kind::fresh && n.kind != new_start_kind::savepoint)
    return std::nullopt;
  n.superseded_through = read_be64(v.data() + 5);
  n.savepoint = std::string{v.substr(13)};
  return n;
}

std::string flag_of(const pending_new_start& n) {
  return n.kind == new_start_kind::fresh ? std::string{"--fresh"}
                                         : "--from-savepoint " + n.savepoint;
}

} // namespace

struct lmdb_checkpoint_store::impl {
  MDB_env* env = nullptr;
  MDB_dbi manifests = 0;
  MDB_dbi state = 0;
  bool has_dbs = false; // false only for a read-only store on an empty env
  std::string dir;
  std::size_t map_size = 0;

  ~impl() {
    if (env)
      mdb_env_close(env);
  }

  error fail(std::string_view what, int rc) const {
    std::string msg = "checkpoint storage " + dir + ": " + std::string{what} + ": "
                      + mdb_strerror(rc);
    if (rc == MDB_MAP_FULL)
      msg += " (the LMDB map of " + std::to_string(map_size >> 20)
             + " MiB is full; raise [checkpoint] max_size or retain fewer checkpoints)";
    else if (rc == ENOSPC || rc == EFBIG || rc == EDQUOT || rc == EIO)
      // LMDB turns a short write (the disk filled up midway) into EIO.
      msg += " (writing " + dir + "/data.mdb failed: is the disk full?)";
    return make_error(errc::io_error, std::move(msg));
  }

  error fail_plain(std::string what) const {
    return make_error(errc::io_error, "checkpoint storage " + dir + ": " + std::move(what));
  }

  /// Makes a new store in `opts.dir` when it holds none (neither data.mdb nor
  /// lock.mdb). LMDB creates lock.mdb, then data.mdb, then writes data.mdb's
  /// meta pages: a process killed in between would leave what looks like a
  /// store whose data was lost (a lock.mdb alone, or an empty data.mdb), which
  /// open() refuses. So the store is made whole, with its two databases, in a
  /// staging directory beside it and its data.mdb renamed into place (atomic);
  /// a staging directory left by a kill is removed. Errors: the LMDB call or
  /// the file operation that failed.
  expected<std::monostate> create_if_new(const store_options& opts) const {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path root{opts.dir};
    const auto staging = root / ".new-store";
    fs::remove_all(staging, ec);
    if (fs::exists(root / "data.mdb", ec) || fs::exists(root / "lock.mdb", ec))
      return std::monostate{};
    fs::create_directories(staging, ec);
    if (ec)
      return fail_plain("cannot create " + staging.string() + ": " + ec.message());
    MDB_env* raw = nullptr;
    if (int rc = mdb_env_create(&raw); rc != 0)
      return fail("mdb_env_create", rc);
    std::unique_ptr<MDB_env, decltype(&mdb_env_close)> owned{raw, &mdb_env_close};
    MDB_env* fresh = owned.get();
    if (int rc = mdb_env_set_maxdbs(fresh, 2); rc != 0)
      return fail("mdb_env_set_maxdbs", rc);
    if (int rc = mdb_env_set_mapsize(fresh, opts.map_size); rc != 0)
      return fail("mdb_env_set_mapsize", rc);
    if (int rc = mdb_env_open(fresh, staging.c_str(), MDB_NOTLS, 0644); rc != 0)
      return fail("mdb_env_open (a new store)", rc);
    MDB_txn* txn = nullptr;
    if (int rc = mdb_txn_begin(fresh, nullptr, 0, &txn); rc != 0)
      return fail("beginning a transaction", rc);
    MDB_dbi dbi{};
    for (const char* name : {"manifests", "state"})
      if (int rc = mdb_dbi_open(txn, name, MDB_CREATE, &dbi); rc != 0) {
        mdb_txn_abort(txn);
        return fail("creating the databases", rc);
      }
    if (int rc = mdb_txn_commit(txn); rc != 0)
      return fail("committing the databases", rc);
    if (int rc = mdb_env_sync(fresh, 1); rc != 0)
      return fail("syncing a new store", rc);
    owned.reset();
    weir::internal::test_fault_kill("kill_in_store_create");
    fs::rename(staging / "data.mdb", root / "data.mdb", ec);
    if (ec)
      return fail_plain("cannot move the new store into place: " + ec.message());
    if (int fd = ::open(opts.dir.c_str(), O_RDONLY | O_DIRECTORY); fd >= 0) {
      ::fsync(fd);
      ::close(fd);
    }
    fs::remove_all(staging, ec);
    return std::monostate{};
  }

  /// Checks every value `m` points to; returns the first problem, if any.
  std::optional<std::string> verify(MDB_txn* txn, const snapshot_manifest& m) const {
    auto check = [&](const std::string& key, std::uint64_t bytes, std::uint64_t sum,
                     const std::string& what) -> std::optional<std::string> {
      MDB_val k = as_val(key), v{};
      int rc = mdb_get(txn, state, &k, &v);
      if (rc == MDB_NOTFOUND)
        return what + " is missing";
      if (rc != 0)
        return what + " cannot be read: " + mdb_strerror(rc);
      if (v.mv_size != bytes)
        return what + " has " + std::to_string(v.mv_size) + " bytes, the manifest says "
               + std::to_string(bytes);
      if (state_checksum(as_view(v)) != sum)
        return what + " fails its checksum";
      return std::nullopt;
    };
    for (const auto& h : m.handles) {
      for (const auto& g : h.key_groups) {
        auto p = check(keyed_state_key(m.checkpoint_id, h.operator_uid, g.key_group),
                       g.bytes, g.checksum,
                       "state of " + describe(h) + " key group "
                         + std::to_string(g.key_group));
        if (p)
          return p;
      }
      if (h.has_operator_state) {
        auto p = check(operator_state_key(m.checkpoint_id, h.operator_uid, h.subtask),
                       h.operator_state_bytes, h.operator_state_checksum,
                       "operator state of " + describe(h));
        if (p)
          return p;
      }
    }
    return std::nullopt;
  }

  /// The start-over record, if any.
  expected<std::optional<pending_new_start>> read_new_start(MDB_txn* txn) const {
    MDB_val k = as_val(new_start_key), v{};
    int rc = mdb_get(txn, manifests, &k, &v);
    if (rc == MDB_NOTFOUND)
      return std::optional<pending_new_start>{};
    if (rc != 0)
      return fail("reading the start-over record", rc);
    auto n = decode_new_start(as_view(v));
    if (!n)
      return fail_plain("the start-over record is damaged (start over with --fresh)");
    return n;
  }

  /// Deletes every `state` value of checkpoint `id` inside `txn`.
  expected<std::size_t> delete_state(MDB_txn* txn, std::uint64_t id) const {
    cursor_guard cur;
    if (int rc = mdb_cursor_open(txn, state, cur.out()); rc != 0)
      return fail("opening a cursor on state", rc);
    std::string prefix;
    append_be(prefix, id, 8);
    MDB_val k = as_val(prefix), v{};
    std::size_t n = 0;
    int rc = mdb_cursor_get(cur.get(), &k, &v, MDB_SET_RANGE);
    while (rc == 0 && as_view(k).substr(0, 8) == prefix) {
      if (int d = mdb_cursor_del(cur.get(), 0); d != 0)
        return fail("deleting state of checkpoint " + std::to_string(id), d);
      ++n;
      // After a delete LMDB leaves the cursor on the following item, and
      // MDB_NEXT returns that item rather than skipping it.
      rc = mdb_cursor_get(cur.get(), &k, &v, MDB_NEXT);
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
      return fail("scanning state of checkpoint " + std::to_string(id), rc);
    return n;
  }
};

lmdb_checkpoint_store::lmdb_checkpoint_store(std::unique_ptr<impl> p, store_options opts)
  : impl_(std::move(p)), opts_(std::move(opts)) {
}

lmdb_checkpoint_store::~lmdb_checkpoint_store() = default;

std::string lmdb_checkpoint_store::manifest_key(std::uint64_t checkpoint_id) {
  std::string k;
  append_be(k, checkpoint_id, 8);
  return k;
}

std::string lmdb_checkpoint_store::keyed_state_key(std::uint64_t checkpoint_id,
                                                   std::string_view operator_uid,
                                                   std::uint16_t key_group) {
  std::string k;
  k.reserve(8 + operator_uid.size() + 4);
  append_be(k, checkpoint_id, 8);
  k.append(operator_uid);
  k.push_back('\0');
  k.push_back('k');
  append_be(k, key_group, 2);
  return k;
}

std::string lmdb_checkpoint_store::operator_state_key(std::uint64_t checkpoint_id,
                                                      std::string_view operator_uid,
                                                      std::uint32_t subtask) {
  std::string k;
  k.reserve(8 + operator_uid.size() + 6);
  append_be(k, checkpoint_id, 8);
  k.append(operator_uid);
  k.push_back('\0');
  k.push_back('o');
  append_be(k, subtask, 4);
  return k;
}

expected<std::shared_ptr<lmdb_checkpoint_store>>
lmdb_checkpoint_store::open(store_options opts) {
  if (opts.dir.empty())
    return make_error(errc::invalid_argument, "checkpoint storage needs a directory");
  if (opts.retain == 0)
    return make_error(errc::invalid_argument, "checkpoint retain must be at least 1");
  auto p = std::make_unique<impl>();
  p->dir = opts.dir;
  p->map_size = opts.map_size;
  std::error_code ec;
  if (opts.read_only) {
    if (!std::filesystem::exists(std::filesystem::path{opts.dir} / "data.mdb", ec))
      return p->fail_plain("no checkpoints here (no data.mdb)");
  } else {
    std::filesystem::create_directories(opts.dir, ec);
    if (ec)
      return p->fail_plain("cannot create the directory: " + ec.message());
  }
  const auto data_file = std::filesystem::path{opts.dir} / "data.mdb";
  if (!opts.read_only) {
    if (auto made = p->create_if_new(opts); !made)
      return made.error();
  }
  internal::lmdb_file_check checked;
  if (std::filesystem::exists(data_file, ec)) {
    checked = internal::check_lmdb_file(data_file.string());
    // An empty data.mdb would be taken by LMDB for a new environment.
    if (checked.file_bytes == 0) {
      checked.result = internal::lmdb_file_check::verdict::truncated;
      checked.problem = "nothing is left of it";
    }
    // Too short for its meta pages: LMDB would not open it either.
    if (checked.file_bytes < 2 * 4096 && !checked.ok())
      return p->fail_plain(describe_damage(opts.dir, checked));
  } else if (std::filesystem::exists(std::filesystem::path{opts.dir} / "lock.mdb", ec)) {
    // LMDB creates both files; a lock.mdb alone means data.mdb was lost,
    // and LMDB would quietly start a new, empty one.
    return p->fail_plain(opts.dir + "/data.mdb is missing (lock.mdb is there: checkpoints "
                         "were stored here; the checkpoint storage is damaged; start over "
                         "with --fresh)");
  }
  if (int rc = mdb_env_create(&p->env); rc != 0) {
    p->env = nullptr;
    return p->fail("mdb_env_create", rc);
  }
  if (int rc = mdb_env_set_maxdbs(p->env, 2); rc != 0)
    return p->fail("mdb_env_set_maxdbs", rc);
  if (int rc = mdb_env_set_mapsize(p->env, opts.map_size); rc != 0)
    return p->fail("mdb_env_set_mapsize", rc);
  // NOTLS: actors may resume on another thread between handlers. NOMETASYNC:
  // data pages are synced at every commit, the meta page only by the explicit
  // sync after a manifest commit; a crash of the machine can then lose the
  // last state writes but never damages a committed checkpoint.
  unsigned flags = MDB_NOTLS | MDB_NOMETASYNC | (opts.read_only ? MDB_RDONLY : 0u);
  if (int rc = mdb_env_open(p->env, opts.dir.c_str(), flags, 0644); rc != 0) {
    if (!checked.ok())
      return p->fail_plain(describe_damage(opts.dir, checked));
    return p->fail("mdb_env_open", rc);
  }
  // LMDB maps the file and trusts it: a page past a truncated file's end
  // is a SIGBUS, a damaged page number or size a wild read. Its structure
  // was checked before the map was read (above); a writer in another
  // process (`weir checkpoints list` of a running job) may have committed
  // meanwhile, which the check then sees again.
  std::size_t last_txnid = 0;
  for (int attempt = 0;; ++attempt) {
    MDB_envinfo info{};
    if (int rc = mdb_env_info(p->env, &info); rc != 0)
      return p->fail("mdb_env_info", rc);
    last_txnid = info.me_last_txnid;
    if (checked.txnid == info.me_last_txnid || attempt == 3) {
      if (!checked.ok())
        return p->fail_plain(describe_damage(opts.dir, checked));
      break;
    }
    checked = internal::check_lmdb_file(data_file.string());
  }
  int dead = 0;
  if (int rc = mdb_reader_check(p->env, &dead); rc != 0)
    return p->fail("mdb_reader_check", rc);
  txn_guard txn;
  if (int rc = mdb_txn_begin(p->env, nullptr, opts.read_only ? MDB_RDONLY : 0u, txn.out());
      rc != 0)
    return p->fail("beginning a transaction", rc);
  // The databases are created in a new store only. In one that holds
  // commits a missing database is damage (a flipped byte in its name):
  // creating it anew would put an empty database in its place and change a
  // store that weir then refuses to restore from.
  const bool fresh_env = last_txnid == 0;
  unsigned dbi_flags = opts.read_only || !fresh_env ? 0u : MDB_CREATE;
  auto missing = [&](const char* name) {
    return p->fail_plain((std::filesystem::path{opts.dir} / "data.mdb").string()
                         + " is damaged: its '" + name
                         + "' database is missing (the checkpoint storage is damaged; start "
                           "over with --fresh)");
  };
  int rc = mdb_dbi_open(txn.get(), "manifests", dbi_flags, &p->manifests);
  if (rc == MDB_NOTFOUND && opts.read_only && fresh_env)
    return std::shared_ptr<lmdb_checkpoint_store>{
      new lmdb_checkpoint_store(std::move(p), std::move(opts))};
  if (rc == MDB_NOTFOUND)
    return missing("manifests");
  if (rc != 0)
    return p->fail("opening the manifests database", rc);
  rc = mdb_dbi_open(txn.get(), "state", dbi_flags, &p->state);
  if (rc == MDB_NOTFOUND)
    return missing("state");
  if (rc != 0)
    return p->fail("opening the state database", rc);
  if (rc = txn.commit(); rc != 0)
    return p->fail("committing the database handles", rc);
  p->has_dbs = true;
  return std::shared_ptr<lmdb_checkpoint_store>{
    new lmdb_checkpoint_store(std::move(p), std::move(opts))};
}

expected<std::vector<operator_state_handle>>
lmdb_checkpoint_store::write_state(std::uint64_t checkpoint_id,
                                   std::span<const operator_state_write> ops) {
  auto& d = *impl_;
  const auto cp = "checkpoint " + std::to_string(checkpoint_id);
  if (opts_.read_only)
    return make_error(errc::invalid_argument, "checkpoint storage " + d.dir
                                                + " is open read-only");
  for (const auto& op : ops) {
    if (op.operator_uid.empty() || op.operator_uid.size() > max_uid_bytes
        || op.operator_uid.find('\0') != std::string::npos)
      return make_error(errc::invalid_argument,
                        cp + ": operator uid '" + op.operator_uid
                          + "' must be 1 to 256 bytes without NUL");
    if (op.first_key_group > op.last_key_group)
      return make_error(errc::invalid_argument,
                        cp + ": operator '" + op.operator_uid + "' has key groups ["
                          + std::to_string(op.first_key_group) + ", "
                          + std::to_string(op.last_key_group) + "]");
  }
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, 0, txn.out()); rc != 0)
    return d.fail(cp + ": beginning the state write", rc);
  std::vector<operator_state_handle> handles;
  handles.reserve(ops.size());
  std::string buf;
  for (const auto& op : ops) {
    operator_state_handle h;
    h.operator_uid = op.operator_uid;
    h.subtask = op.subtask;
    h.parallelism = op.parallelism;
    h.source_position = op.source_position;
    auto put = [&](const std::string& key, std::string_view value,
                   const std::string& what) -> std::optional<error> {
      MDB_val k = as_val(key), v = as_val(value);
      if (int rc = mdb_put(txn.get(), d.state, &k, &v, 0); rc != 0)
        return d.fail(cp + ": writing " + what, rc);
      return std::nullopt;
    };
    if (op.serialize_key_group) {
      for (std::uint32_t g = op.first_key_group; g <= op.last_key_group; ++g) {
        const auto group = static_cast<std::uint16_t>(g);
        buf.clear();
        try {
          op.serialize_key_group(group, buf);
        } catch (const std::exception& e) {
          return make_error(errc::runtime_error,
                            cp + ": serializing key group " + std::to_string(g)
                              + " of " + describe(h) + ": " + e.what());
        }
        if (buf.empty())
          continue;
        if (auto e = put(keyed_state_key(checkpoint_id, h.operator_uid, group), buf,
                         "key group " + std::to_string(g) + " of " + describe(h)))
          return *e;
        h.key_groups.push_back(key_group_handle{group, buf.size(), state_checksum(buf)});
      }
    }
    if (op.operator_state) {
      if (auto e = put(operator_state_key(checkpoint_id, h.operator_uid, h.subtask),
                       *op.operator_state, "operator state of " + describe(h)))
        return *e;
      h.has_operator_state = true;
      h.operator_state_bytes = op.operator_state->size();
      h.operator_state_checksum = state_checksum(*op.operator_state);
    }
    handles.push_back(std::move(h));
  }
  if (int rc = txn.commit(); rc != 0)
    return d.fail(cp + ": committing the state write", rc);
  return handles;
}

expected<std::vector<std::uint64_t>>
lmdb_checkpoint_store::commit_manifest(const snapshot_manifest& m) {
  auto& d = *impl_;
  const auto cp = "checkpoint " + std::to_string(m.checkpoint_id);
  if (opts_.read_only)
    return make_error(errc::invalid_argument, "checkpoint storage " + d.dir
                                                + " is open read-only");
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, 0, txn.out()); rc != 0)
    return d.fail(cp + ": beginning the manifest commit", rc);
  // Cheap existence check of what the manifest points to (no checksums:
  // they were computed from the very bytes written).
  for (const auto& h : m.handles) {
    auto exists = [&](const std::string& key) {
      MDB_val k = as_val(key), v{};
      return mdb_get(txn.get(), d.state, &k, &v);
    };
    for (const auto& g : h.key_groups)
      if (int rc = exists(keyed_state_key(m.checkpoint_id, h.operator_uid, g.key_group));
          rc != 0)
        return d.fail(cp + ": key group " + std::to_string(g.key_group) + " of "
                        + describe(h) + " was not written",
                      rc);
    if (h.has_operator_state)
      if (int rc = exists(operator_state_key(m.checkpoint_id, h.operator_uid, h.subtask));
          rc != 0)
        return d.fail(cp + ": operator state of " + describe(h) + " was not written", rc);
  }
  auto key = manifest_key(m.checkpoint_id);
  auto bytes = encode_manifest(m);
  MDB_val k = as_val(key), v = as_val(bytes);
  if (int rc = mdb_put(txn.get(), d.manifests, &k, &v, 0); rc != 0)
    return d.fail(cp + ": writing the manifest", rc);
  // The first checkpoint of a start over supersedes the run before it.
  std::uint64_t superseded = 0;
  {
    auto pending = d.read_new_start(txn.get());
    if (!pending)
      return pending.error();
    if (*pending && m.checkpoint_id > (*pending)->superseded_through) {
      superseded = (*pending)->superseded_through;
      MDB_val nk = as_val(new_start_key);
      if (int rc = mdb_del(txn.get(), d.manifests, &nk, nullptr); rc != 0)
        return d.fail(cp + ": deleting the start-over record", rc);
    }
  }

  // Retention: keep the newest `retain` complete checkpoints up to this one.
  std::set<std::uint64_t> kept;
  std::vector<std::uint64_t> dropped;
  {
    cursor_guard cur;
    if (int rc = mdb_cursor_open(txn.get(), d.manifests, cur.out()); rc != 0)
      return d.fail(cp + ": opening a cursor on manifests", rc);
    MDB_val mk{}, mv{};
    int rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_LAST);
    for (; rc == 0; rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_PREV)) {
      if (mk.mv_size != 8)
        continue;
      auto id = read_be64(mk.mv_data);
      if (id > m.checkpoint_id)
        continue;
      auto decoded = decode_manifest(as_view(mv));
      if (id > superseded && kept.size() < opts_.retain && decoded
          && decoded->status == checkpoint_status::completed)
        kept.insert(id);
      else
        dropped.push_back(id);
    }
    if (rc != MDB_NOTFOUND)
      return d.fail(cp + ": scanning manifests", rc);
  }
  for (auto id : dropped) {
    auto dk = manifest_key(id);
    MDB_val k2 = as_val(dk);
    if (int rc = mdb_del(txn.get(), d.manifests, &k2, nullptr); rc != 0)
      return d.fail(cp + ": deleting the manifest of checkpoint " + std::to_string(id), rc);
  }
  // State of dropped checkpoints, and of failed ones older than this one.
  std::vector<std::uint64_t> doomed;
  {
    cursor_guard cur;
    if (int rc = mdb_cursor_open(txn.get(), d.state, cur.out()); rc != 0)
      return d.fail(cp + ": opening a cursor on state", rc);
    MDB_val sk{}, sv{};
    int rc = mdb_cursor_get(cur.get(), &sk, &sv, MDB_FIRST);
    while (rc == 0 && sk.mv_size >= 8) {
      auto id = read_be64(sk.mv_data);
      if (id >= m.checkpoint_id)
        break;
      if (!kept.count(id))
        doomed.push_back(id);
      auto next = manifest_key(id + 1);
      sk = as_val(next);
      rc = mdb_cursor_get(cur.get(), &sk, &sv, MDB_SET_RANGE);
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
      return d.fail(cp + ": scanning state", rc);
  }
  for (auto id : doomed)
    if (auto n = d.delete_state(txn.get(), id); !n)
      return n.error();
  if (int rc = txn.commit(); rc != 0)
    return d.fail(cp + ": committing the manifest", rc);
  if (int rc = mdb_env_sync(d.env, 1); rc != 0)
    return d.fail(cp + ": syncing the manifest to disk", rc);
  std::sort(dropped.begin(), dropped.end());
  return dropped;
}

expected<std::size_t> lmdb_checkpoint_store::discard(std::uint64_t checkpoint_id) {
  auto& d = *impl_;
  const auto cp = "checkpoint " + std::to_string(checkpoint_id);
  if (opts_.read_only)
    return make_error(errc::invalid_argument, "checkpoint storage " + d.dir
                                                + " is open read-only");
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, 0, txn.out()); rc != 0)
    return d.fail(cp + ": beginning the discard", rc);
  auto n = d.delete_state(txn.get(), checkpoint_id);
  if (!n)
    return n.error();
  if (int rc = txn.commit(); rc != 0)
    return d.fail(cp + ": committing the discard", rc);
  return *n;
}

expected<latest_checkpoint> lmdb_checkpoint_store::read_latest(bool allow_rollback) const {
  auto& d = *impl_;
  latest_checkpoint out;
  if (!d.has_dbs)
    return out;
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, MDB_RDONLY, txn.out()); rc != 0)
    return d.fail("beginning a read", rc);
  auto pending = d.read_new_start(txn.get());
  if (!pending)
    return pending.error();
  cursor_guard cur;
  if (int rc = mdb_cursor_open(txn.get(), d.manifests, cur.out()); rc != 0)
    return d.fail("opening a cursor on manifests", rc);
  std::optional<std::uint64_t> newest;
  std::vector<std::pair<std::uint64_t, std::string>> unusable; // newest first
  MDB_val mk{}, mv{};
  int rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_LAST);
  for (; rc == 0; rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_PREV)) {
    if (mk.mv_size != 8)
      continue;
    auto id = read_be64(mk.mv_data);
    if (!newest)
      newest = id;
    auto m = decode_manifest(as_view(mv));
    std::optional<std::string> problem;
    if (!m)
      problem = "its manifest is damaged (" + m.error().message + ")";
    else if (m->checkpoint_id != id)
      problem = "its manifest names checkpoint " + std::to_string(m->checkpoint_id);
    else if (m->status != checkpoint_status::completed)
      problem = "its manifest is incomplete";
    else
      problem = d.verify(txn.get(), *m);
    if (problem) {
      unusable.emplace_back(id, std::move(*problem));
      continue;
    }
    out.manifest = std::move(*m);
    break;
  }
  if (rc != 0 && rc != MDB_NOTFOUND)
    return d.fail("scanning manifests", rc);
  if (!newest)
    return out; // nothing was ever completed here
  const bool has_found = out.manifest.has_value();
  const std::uint64_t found = has_found ? out.manifest->checkpoint_id : 0;
  const std::uint64_t newest_id = *newest;
  auto cp = [](std::uint64_t id) { return "checkpoint " + std::to_string(id); };
  const std::string after_fresh =
    "--fresh to start over from no state (the checkpoints here are deleted once its first "
    "checkpoint completes)";
  if (*pending && !allow_rollback && (*pending)->kind == new_start_kind::fresh) {
    // The --fresh start asked for continues: still from no state.
    out.manifest.reset();
    out.warnings.push_back("the start over with --fresh after " + cp((*pending)->superseded_through)
                           + " has not completed a checkpoint yet: starting from no state "
                             "again (--allow-rollback restores the checkpoints before it)");
    return out;
  }
  if (*pending && !allow_rollback) {
    const auto& n = **pending;
    std::string msg = "the job was started over with " + flag_of(n) + " after "
                      + cp(n.superseded_through)
                      + " and that start has not completed a checkpoint yet; resuming from "
                        "the checkpoints before it would undo the start over. Rerun with "
                      + flag_of(n) + " again";
    if (has_found)
      msg += ", or with --allow-rollback to restore " + cp(found) + " from before it";
    return make_error(errc::invalid_argument, std::move(msg));
  }
  if (has_found && found == newest_id)
    return out;
  std::string why = cp(newest_id) + ", the newest, cannot be restored: " + unusable.front().second;
  for (std::size_t i = 1; i < unusable.size() && i < 4; ++i)
    why += "; " + cp(unusable[i].first) + " neither: " + unusable[i].second;
  if (unusable.size() > 4)
    why += "; and " + std::to_string(unusable.size() - 4) + " more";
  if (!has_found)
    return make_error(errc::invalid_argument,
                      why + ". No checkpoint here can be restored: starting from no state "
                            "would take back all output the sinks committed and all input "
                            "the sources acknowledged. Run with "
                        + after_fresh);
  std::string positions;
  for (const auto& h : out.manifest->handles)
    if (!h.source_position.empty())
      positions += (positions.empty() ? "" : ", ") + h.operator_uid + ": " + h.source_position;
  if (!positions.empty())
    positions = " (its sources at " + positions + ")";
  if (!allow_rollback)
    return make_error(errc::invalid_argument,
                      why + ". The newest restorable one is " + cp(found) + positions
                        + "; restoring it would take back what the job did after it (output "
                          "the sinks committed and input the sources acknowledged with "
                        + (unusable.size() == 1 ? cp(newest_id)
                                                : "checkpoints " + std::to_string(found + 1)
                                                    + " to " + std::to_string(newest_id))
                        + " would be lost or written again). Run with --allow-rollback to "
                          "restore "
                        + cp(found) + ", or with " + after_fresh);
  for (const auto& [id, problem] : unusable)
    out.warnings.push_back(cp(id) + ": " + problem + "; rolling back to " + cp(found)
                           + " (--allow-rollback)");
  return out;
}

expected<bool> lmdb_checkpoint_store::begin_new_start(new_start_kind kind,
                                                      const std::string& savepoint) {
  auto& d = *impl_;
  if (opts_.read_only)
    return make_error(errc::invalid_argument, "checkpoint storage " + d.dir
                                                + " is open read-only");
  auto highest = highest_id();
  if (!highest)
    return highest.error();
  if (*highest == 0)
    return false;
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, 0, txn.out()); rc != 0)
    return d.fail("beginning the start-over record", rc);
  auto bytes = encode_new_start(pending_new_start{kind, *highest, savepoint});
  MDB_val k = as_val(new_start_key), v = as_val(bytes);
  if (int rc = mdb_put(txn.get(), d.manifests, &k, &v, 0); rc != 0)
    return d.fail("writing the start-over record", rc);
  if (int rc = txn.commit(); rc != 0)
    return d.fail("committing the start-over record", rc);
  if (int rc = mdb_env_sync(d.env, 1); rc != 0)
    return d.fail("syncing the start-over record to disk", rc);
  return true;
}

expected<bool> lmdb_checkpoint_store::finish_new_start() {
  auto& d = *impl_;
  if (opts_.read_only || !d.has_dbs)
    return false;
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, 0, txn.out()); rc != 0)
    return d.fail("beginning the end of a start over", rc);
  auto pending = d.read_new_start(txn.get());
  if (!pending)
    return pending.error();
  if (!*pending)
    return false;
  const auto through = (*pending)->superseded_through;
  std::set<std::uint64_t> ids;
  for (auto dbi : {d.manifests, d.state}) {
    cursor_guard cur;
    if (int rc = mdb_cursor_open(txn.get(), dbi, cur.out()); rc != 0)
      return d.fail("opening a cursor", rc);
    MDB_val k{}, v{};
    int rc = mdb_cursor_get(cur.get(), &k, &v, MDB_FIRST);
    for (; rc == 0; rc = mdb_cursor_get(cur.get(), &k, &v, MDB_NEXT)) {
      if (k.mv_size < 8)
        continue;
      auto id = read_be64(k.mv_data);
      if (id > through)
        break;
      ids.insert(id);
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
      return d.fail("scanning for superseded checkpoints", rc);
  }
  for (auto id : ids) {
    auto key = manifest_key(id);
    MDB_val k = as_val(key);
    if (int rc = mdb_del(txn.get(), d.manifests, &k, nullptr); rc != 0 && rc != MDB_NOTFOUND)
      return d.fail("deleting the manifest of checkpoint " + std::to_string(id), rc);
    if (auto n = d.delete_state(txn.get(), id); !n)
      return n.error();
  }
  MDB_val nk = as_val(new_start_key);
  if (int rc = mdb_del(txn.get(), d.manifests, &nk, nullptr); rc != 0)
    return d.fail("deleting the start-over record", rc);
  if (int rc = txn.commit(); rc != 0)
    return d.fail("committing the end of a start over", rc);
  if (int rc = mdb_env_sync(d.env, 1); rc != 0)
    return d.fail("syncing the end of a start over to disk", rc);
  return true;
}

expected<std::optional<pending_new_start>> lmdb_checkpoint_store::new_start() const {
  auto& d = *impl_;
  if (!d.has_dbs)
    return std::optional<pending_new_start>{};
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, MDB_RDONLY, txn.out()); rc != 0)
    return d.fail("beginning a read", rc);
  return d.read_new_start(txn.get());
}

expected<std::uint64_t> lmdb_checkpoint_store::highest_id() const {
  auto& d = *impl_;
  if (!d.has_dbs)
    return std::uint64_t{0};
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, MDB_RDONLY, txn.out()); rc != 0)
    return d.fail("beginning a read", rc);
  std::uint64_t highest = 0;
  for (auto dbi : {d.manifests, d.state}) {
    cursor_guard cur;
    if (int rc = mdb_cursor_open(txn.get(), dbi, cur.out()); rc != 0)
      return d.fail("opening a cursor", rc);
    MDB_val k{}, v{};
    int rc = mdb_cursor_get(cur.get(), &k, &v, MDB_LAST);
    if (rc == 0 && k.mv_size >= 8)
      highest = std::max(highest, read_be64(k.mv_data));
    else if (rc != 0 && rc != MDB_NOTFOUND)
      return d.fail("reading the last key", rc);
  }
  return highest;
}

expected<operator_restore>
lmdb_checkpoint_store::read_restore(const snapshot_manifest& m,
                                    std::string_view operator_uid, std::uint32_t subtask,
                                    std::uint32_t parallelism,
                                    std::size_t max_parallelism) const {
  auto& d = *impl_;
  const auto cp = "checkpoint " + std::to_string(m.checkpoint_id);
  operator_restore out;
  out.checkpoint_id = m.checkpoint_id;
  if (parallelism == 0 || subtask >= parallelism)
    return make_error(errc::invalid_argument,
                      cp + ": subtask " + std::to_string(subtask) + " of parallelism "
                        + std::to_string(parallelism));
  if (!d.has_dbs)
    return d.fail_plain(cp + " does not exist");
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, MDB_RDONLY, txn.out()); rc != 0)
    return d.fail(cp + ": beginning a read", rc);
  auto fetch = [&](const std::string& key, std::uint64_t bytes, std::uint64_t sum,
                   const std::string& what) -> expected<std::string> {
    MDB_val k = as_val(key), v{};
    if (int rc = mdb_get(txn.get(), d.state, &k, &v); rc != 0)
      return d.fail(cp + ": reading " + what, rc);
    auto value = as_view(v);
    if (value.size() != bytes || state_checksum(value) != sum)
      return d.fail_plain(cp + ": " + what + " fails its checksum");
    return std::string{value};
  };
  std::vector<std::pair<std::uint32_t, std::string>> op_states;
  std::vector<const operator_state_handle*> with_operator_state;
  for (const auto& h : m.handles) {
    if (h.operator_uid != operator_uid)
      continue;
    for (const auto& g : h.key_groups) {
      if (g.key_group >= max_parallelism)
        return make_error(errc::invalid_argument,
                          cp + ": " + describe(h) + " stored key group "
                            + std::to_string(g.key_group) + ", beyond max_parallelism "
                            + std::to_string(max_parallelism)
                            + " (max_parallelism must not change across restores)");
      if (operator_index_for_key_group(g.key_group, max_parallelism, parallelism)
          != subtask)
        continue;
      auto v = fetch(keyed_state_key(m.checkpoint_id, h.operator_uid, g.key_group),
                     g.bytes, g.checksum,
                     "key group " + std::to_string(g.key_group) + " of " + describe(h));
      if (!v)
        return v.error();
      out.key_groups.emplace_back(g.key_group, std::move(*v));
    }
    out.previous_parallelism = h.parallelism;
    if (h.has_operator_state)
      with_operator_state.push_back(&h);
    if (h.has_operator_state && h.subtask % parallelism == subtask) {
      auto v = fetch(operator_state_key(m.checkpoint_id, h.operator_uid, h.subtask),
                     h.operator_state_bytes, h.operator_state_checksum,
                     "operator state of " + describe(h));
      if (!v)
        return v.error();
      op_states.emplace_back(h.subtask, std::move(*v));
    }
  }
  std::sort(out.key_groups.begin(), out.key_groups.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::sort(op_states.begin(), op_states.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [s, bytes] : op_states)
    out.operator_states.push_back(std::move(bytes));
  if (out.operator_states.empty() && !with_operator_state.empty()) {
    // Scaled up: this subtask inherits no one's operator state; it may read
    // everyone's (union list state).
    std::sort(with_operator_state.begin(), with_operator_state.end(),
              [](const auto* a, const auto* b) { return a->subtask < b->subtask; });
    for (const auto* h : with_operator_state) {
      auto v = fetch(operator_state_key(m.checkpoint_id, h->operator_uid, h->subtask),
                     h->operator_state_bytes, h->operator_state_checksum,
                     "operator state of " + describe(*h));
      if (!v)
        return v.error();
      out.union_operator_states.push_back(std::move(*v));
    }
  }
  return out;
}

expected<std::vector<checkpoint_listing>> lmdb_checkpoint_store::list(bool verify) const {
  auto& d = *impl_;
  std::vector<checkpoint_listing> out;
  if (!d.has_dbs)
    return out;
  txn_guard txn;
  if (int rc = mdb_txn_begin(d.env, nullptr, MDB_RDONLY, txn.out()); rc != 0)
    return d.fail("beginning a read", rc);
  auto pending = d.read_new_start(txn.get());
  if (!pending)
    return pending.error();
  const std::uint64_t superseded = *pending ? (*pending)->superseded_through : 0;
  cursor_guard cur;
  if (int rc = mdb_cursor_open(txn.get(), d.manifests, cur.out()); rc != 0)
    return d.fail("opening a cursor on manifests", rc);
  MDB_val mk{}, mv{};
  int rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_FIRST);
  for (; rc == 0; rc = mdb_cursor_get(cur.get(), &mk, &mv, MDB_NEXT)) {
    if (mk.mv_size != 8)
      continue;
    checkpoint_listing l;
    l.checkpoint_id = read_be64(mk.mv_data);
    l.superseded = l.checkpoint_id <= superseded;
    auto m = decode_manifest(as_view(mv));
    if (!m) {
      l.problem = m.error().message;
    } else if (m->status != checkpoint_status::completed) {
      l.problem = "manifest is incomplete";
      l.manifest = std::move(*m);
    } else {
      if (verify)
        if (auto p = d.verify(txn.get(), *m))
          l.problem = *p;
      l.restorable = l.problem.empty() && !l.superseded;
      l.manifest = std::move(*m);
    }
    out.push_back(std::move(l));
  }
  if (rc != MDB_NOTFOUND)
    return d.fail("scanning manifests", rc);
  return out;
}

expected<std::uint64_t> lmdb_checkpoint_store::export_checkpoint(const snapshot_manifest& m,
                                                                 const std::string& dir) const {
  const auto cp = "savepoint of checkpoint " + std::to_string(m.checkpoint_id);
  {
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::path{dir} / "data.mdb", ec))
      return make_error(errc::invalid_argument,
                        cp + ": " + dir + " holds checkpoints or a savepoint already");
  }
  store_options so;
  so.dir = dir;
  so.retain = 1;
  so.map_size = opts_.map_size;
  auto target = open(so);
  if (!target)
    return target.error();
  auto& src = *impl_;
  auto& dst = *(*target)->impl_;
  txn_guard rtxn;
  if (int rc = mdb_txn_begin(src.env, nullptr, MDB_RDONLY, rtxn.out()); rc != 0)
    return src.fail(cp + ": beginning the read", rc);
  txn_guard wtxn;
  if (int rc = mdb_txn_begin(dst.env, nullptr, 0, wtxn.out()); rc != 0)
    return dst.fail(cp + ": beginning the write", rc);
  std::uint64_t bytes = 0;
  auto copy = [&](const std::string& key, const std::string& what) -> std::optional<error> {
    MDB_val k = as_val(key), v{};
    if (int rc = mdb_get(rtxn.get(), src.state, &k, &v); rc != 0)
      return src.fail(cp + ": reading " + what, rc);
    bytes += v.mv_size;
    if (int rc = mdb_put(wtxn.get(), dst.state, &k, &v, 0); rc != 0)
      return dst.fail(cp + ": writing " + what, rc);
    return std::nullopt;
  };
  for (const auto& h : m.handles) {
    for (const auto& g : h.key_groups)
      if (auto e = copy(keyed_state_key(m.checkpoint_id, h.operator_uid, g.key_group),
                        "key group " + std::to_string(g.key_group) + " of " + describe(h)))
        return *e;
    if (h.has_operator_state)
      if (auto e = copy(operator_state_key(m.checkpoint_id, h.operator_uid, h.subtask),
                        "operator state of " + describe(h)))
        return *e;
  }
  if (int rc = wtxn.commit(); rc != 0)
    return dst.fail(cp + ": committing the state", rc);
  // Test-only: a kill with the savepoint's state written, its manifest not.
  internal::test_fault_kill("kill_in_savepoint");
  if (auto r = (*target)->commit_manifest(m); !r)
    return r.error();
  return bytes;
}

} // namespace weir::checkpoint
