// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/snapshot_manifest.hpp"
#include "weir/core/expected.hpp"
#include "weir/operators/stream_operator.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace weir::checkpoint {

/// Where and how checkpoints are stored (`[checkpoint]` in TOML).
struct store_options {
  /// The LMDB environment's directory (`checkpoint.dir`); created if missing
  /// unless `read_only`.
  std::string dir;
  /// Size of the memory map in bytes: the most the environment can hold. The
  /// file grows only as used (sparse), so a generous size costs nothing.
  std::size_t map_size = std::size_t{64} << 30;
  /// Complete checkpoints kept; older ones (and their state) are deleted when
  /// a newer manifest is committed. At least 1.
  std::size_t retain = 1;
  /// Opens without creating anything and refuses writes (`weir checkpoints`).
  bool read_only = false;
};

/// What one operator of a subtask hands to `write_state` for a checkpoint.
struct operator_state_write {
  std::string operator_uid;     ///< stable across runs; at most 256 bytes, no NUL
  std::uint32_t subtask = 0;
  std::uint32_t parallelism = 1;
  /// The subtask's key groups, inclusive: `[first_key_group, last_key_group]`.
  std::uint16_t first_key_group = 0;
  std::uint16_t last_key_group = 0;
  /// Serializes key group g into `out` (empty on entry); leaving `out` empty
  /// means g holds no state and stores nothing. Called once per group of the
  /// range, in ascending order, inside the write transaction. Null when the
  /// operator has no keyed state. Throwing from it aborts the transaction
  /// and becomes an error.
  std::function<void(std::uint16_t group, std::string& out)> serialize_key_group;
  /// Operator (non-keyed) state, if any.
  std::optional<std::string> operator_state;
  /// A source's position, readable, for the manifest.
  std::string source_position;
};

/// The newest checkpoint that can be restored, and why newer ones cannot.
struct latest_checkpoint {
  std::optional<snapshot_manifest> manifest; ///< nullopt: nothing to restore
  /// One line per newer checkpoint skipped ("checkpoint 7: state of operator
  /// 'views' subtask 0 key group 12 fails its checksum; rolling back to an
  /// older checkpoint (--allow-rollback)"); only with `allow_rollback`.
  std::vector<std::string> warnings;
};

/// How a job starts over instead of resuming: recorded by `begin_new_start`
/// until the first checkpoint of the new start completes.
enum class new_start_kind : std::uint8_t {
  fresh = 1,     ///< `--fresh`: from no state
  savepoint = 2, ///< `--from-savepoint DIR`
};

/// A start over that has not completed a checkpoint yet: the checkpoints up
/// to `superseded_through` are of the run before it.
struct pending_new_start {
  new_start_kind kind = new_start_kind::fresh;
  std::uint64_t superseded_through = 0;
  std::string savepoint; ///< the savepoint directory (kind savepoint)
};

/// One manifest as `list` finds it.
struct checkpoint_listing {
  std::uint64_t checkpoint_id = 0;
  std::optional<snapshot_manifest> manifest; ///< nullopt when it cannot be decoded
  bool restorable = false; ///< completed, and (when verified) every value checks
  std::string problem;     ///< why not restorable
  /// Of the run before a start over that has not completed a checkpoint yet
  /// (`begin_new_start`): not restorable without `--allow-rollback`, deleted
  /// when the start over completes one. `restorable` is then false, and
  /// `problem` empty unless it is damaged too.
  bool superseded = false;
};

/// Checkpoint storage in one LMDB environment per job (docs/concepts/checkpoints.md).
///
/// Two named databases: `manifests` (checkpoint id, u64 big-endian →
/// `encode_manifest` bytes) and `state`, keyed
/// `checkpoint_id (u64 BE) | operator_uid | 0x00 | 'k' | key_group (u16 BE)`
/// for one key group's serialized keyed state (all its state names and user
/// keys in one value; see src/checkpoint/README.md for why), and
/// `... | 0x00 | 'o' | subtask (u32 BE)` for a subtask's operator state. All
/// values of one checkpoint are contiguous, so deleting one is a range scan.
///
/// The environment is opened with `MDB_NOTLS | MDB_NOMETASYNC`; every
/// transaction begins and ends inside one member call, on the caller's
/// thread. Reading members are const and may run on any thread, concurrently
/// with one writer; writing members must not run concurrently with each
/// other (the state writer actor owns them). Open one store per directory
/// per process (LMDB's rule); share it by pointer.
///
/// Every LMDB failure becomes `errc::io_error` carrying `mdb_strerror` text
/// and what was being done; a failed write aborts its transaction and leaves
/// every earlier checkpoint as it was. `MDB_MAP_FULL` says so plainly, with
/// the map size.
class lmdb_checkpoint_store {
public:
  /// Opens (or creates) the environment in `opts.dir`, clears reader slots
  /// left by killed processes and opens both databases.
  ///
  /// Before LMDB maps `data.mdb` its structure is checked with plain reads
  /// (`internal::check_lmdb_file`): LMDB trusts its file, and a page past
  /// the end of a truncated one is a SIGBUS, a damaged page a wild read.
  ///
  /// Errors: `errc::invalid_argument` for an empty dir or `retain == 0`;
  /// `errc::io_error` when the directory cannot be created or LMDB fails
  /// (read_only and no environment there: "no checkpoints here (no
  /// data.mdb)"); `errc::io_error` naming `data.mdb` when it "is
  /// truncated", "is damaged", or is missing beside a `lock.mdb` (each
  /// ending "start over with --fresh").
  [[nodiscard]] static expected<std::shared_ptr<lmdb_checkpoint_store>>
  open(store_options opts);

  ~lmdb_checkpoint_store();
  lmdb_checkpoint_store(const lmdb_checkpoint_store&) = delete;
  lmdb_checkpoint_store& operator=(const lmdb_checkpoint_store&) = delete;

  const store_options& options() const noexcept { return opts_; }

  /// Stores the state of every operator of one subtask for checkpoint
  /// `checkpoint_id` in one transaction and returns their handles (sizes and
  /// checksums) in the same order. Not visible to readers as a checkpoint
  /// until `commit_manifest`.
  ///
  /// Errors: `errc::invalid_argument` (bad uid or key-group range);
  /// `errc::io_error` (LMDB, map full); a throwing serializer's message as
  /// `errc::runtime_error`. Nothing is stored on error.
  [[nodiscard]] expected<std::vector<operator_state_handle>>
  write_state(std::uint64_t checkpoint_id, std::span<const operator_state_write> ops);

  /// Commits `m` to `manifests`, making its checkpoint complete, then (same
  /// transaction) deletes manifests and state of checkpoints older than the
  /// newest `retain` complete ones, and state of failed checkpoints older
  /// than `m`; then flushes the environment to disk. Returns the ids whose
  /// manifests were deleted.
  ///
  /// Errors: `errc::io_error` (LMDB, map full, fsync); the checkpoint is then
  /// not complete and nothing was deleted.
  [[nodiscard]] expected<std::vector<std::uint64_t>>
  commit_manifest(const snapshot_manifest& m);

  /// Deletes every state value of checkpoint `checkpoint_id` (aborted: no
  /// manifest will point to it). Returns the number of values deleted.
  [[nodiscard]] expected<std::size_t> discard(std::uint64_t checkpoint_id);

  /// The checkpoint a resuming job restores: the newest manifest in the
  /// store, which must decode, be complete and whose every value must exist
  /// with the recorded size and checksum. Reads every value once (xxhash64).
  ///
  /// Restoring anything older than the newest checkpoint would take back
  /// output the sinks committed and input the sources acknowledged after it,
  /// so when the newest cannot be restored (or a start over from a savepoint
  /// is pending, see `begin_new_start`) this refuses, naming the newest
  /// checkpoint, what is
  /// wrong with it, the newest restorable older one and the flags that
  /// proceed. With `allow_rollback` it returns the newest restorable one
  /// instead, with a warning per newer checkpoint skipped. An empty store
  /// (no manifest) has nothing to restore: no manifest; so has a store whose
  /// pending start over is a `--fresh` one (with a warning saying so).
  ///
  /// Errors: `errc::io_error` (LMDB); `errc::invalid_argument` for a
  /// refusal, its message ending in the flags to use.
  [[nodiscard]] expected<latest_checkpoint> read_latest(bool allow_rollback = false) const;

  /// Records that the job starts over (`--fresh` or `--from-savepoint`)
  /// instead of resuming from the checkpoints here, without deleting any:
  /// they are deleted by the `commit_manifest` of the new start's first
  /// checkpoint, in the same transaction. Until then `read_latest` does not
  /// resume the run before the start over (a crash before that first
  /// checkpoint must not): it restores nothing after `--fresh` and refuses
  /// after `--from-savepoint`. A store without checkpoints records nothing.
  /// Returns whether something was recorded.
  ///
  /// Errors: `errc::io_error` (LMDB).
  [[nodiscard]] expected<bool> begin_new_start(new_start_kind kind,
                                               const std::string& savepoint = {});

  /// Ends a start over that finished its input without a checkpoint (a
  /// bounded job whose sinks committed at the end): deletes the checkpoints
  /// it superseded and its record, as its first checkpoint would have.
  /// Returns whether there was one.
  ///
  /// Errors: `errc::io_error` (LMDB).
  [[nodiscard]] expected<bool> finish_new_start();

  /// The start over recorded by `begin_new_start`, if its first checkpoint
  /// has not completed.
  [[nodiscard]] expected<std::optional<pending_new_start>> new_start() const;

  /// The highest checkpoint id present in either database (0 if none): a
  /// restarted coordinator continues after it (`resume_after`), so no id is
  /// reused even when the newest checkpoint was damaged.
  [[nodiscard]] expected<std::uint64_t> highest_id() const;

  /// What subtask `subtask` of `parallelism` of operator `operator_uid`
  /// restores from checkpoint `m`: every stored key group g with
  /// `operator_index_for_key_group(g, max_parallelism, parallelism) ==
  /// subtask` (whichever old subtask wrote it) and the operator state of
  /// every old subtask s with `s % parallelism == subtask`. Checksums are
  /// verified again.
  ///
  /// Errors: `errc::io_error` (LMDB, missing value, checksum mismatch).
  [[nodiscard]] expected<operator_restore>
  read_restore(const snapshot_manifest& m, std::string_view operator_uid,
               std::uint32_t subtask, std::uint32_t parallelism,
               std::size_t max_parallelism) const;

  /// Copies checkpoint `m` (complete, in this store) into a new environment
  /// in directory `dir`: every value its manifest points to, then the
  /// manifest, so that `dir` alone restores it (a savepoint; Flink's
  /// self-contained savepoint directory). `dir` is created; it must not
  /// hold an environment already. Returns the bytes of state copied.
  ///
  /// Errors: `errc::invalid_argument` when `dir` holds an environment;
  /// `errc::io_error` (creating `dir`, LMDB, a value missing).
  [[nodiscard]] expected<std::uint64_t> export_checkpoint(const snapshot_manifest& m,
                                                          const std::string& dir) const;

  /// Every manifest, oldest first; with `verify`, also checks every value
  /// (as `read_latest` does).
  [[nodiscard]] expected<std::vector<checkpoint_listing>> list(bool verify) const;

  /// The `state` key of key group `key_group` of `operator_uid`.
  static std::string keyed_state_key(std::uint64_t checkpoint_id,
                                     std::string_view operator_uid,
                                     std::uint16_t key_group);
  /// The `state` key of the operator state of `operator_uid` subtask `subtask`.
  static std::string operator_state_key(std::uint64_t checkpoint_id,
                                        std::string_view operator_uid,
                                        std::uint32_t subtask);
  /// The `manifests` key of a checkpoint: its id, u64 big-endian.
  static std::string manifest_key(std::uint64_t checkpoint_id);

private:
  struct impl;
  explicit lmdb_checkpoint_store(std::unique_ptr<impl> p, store_options opts);

  std::unique_ptr<impl> impl_;
  store_options opts_;
};

} // namespace weir::checkpoint
