// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/checkpoint/object_store.hpp"
#include "weir/checkpoint/snapshot_manifest.hpp"
#include "weir/core/expected.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir::checkpoint {

/// What one upload cost.
struct upload_stats {
  std::uint64_t bytes = 0;            ///< bytes sent (state environment + manifest)
  std::chrono::milliseconds duration{0};
};

/// The durable copy of a job's checkpoints in object storage, beside the
/// local LMDB working copy (Flink's `state.checkpoints.dir = s3://...`).
///
/// Layout under the store's prefix, one folder per checkpoint:
/// `chk-<id, 12 digits>/data.mdb`, an LMDB environment holding that
/// checkpoint alone (`lmdb_checkpoint_store::export_checkpoint`: its
/// manifest and every state value it points to, as a savepoint), then
/// `chk-<id>/_metadata`, the manifest's bytes (`encode_manifest`), written
/// last. A checkpoint exists remotely only once its `_metadata` is there, so
/// an upload cut short leaves nothing that a restore or a listing takes.
class remote_checkpoints {
public:
  remote_checkpoints(std::shared_ptr<object_store> store, std::string uri);

  /// The `s3://` URI, for messages.
  const std::string& uri() const noexcept { return uri_; }

  /// Uploads checkpoint `m` (its state written to `local`, its manifest
  /// committed or not) through a copy in `scratch_dir` (created and removed
  /// again; must not exist), `data.mdb` first and `_metadata` last.
  ///
  /// Errors: `errc::io_error` from the copy or the store, naming the URL.
  [[nodiscard]] expected<upload_stats> upload(const lmdb_checkpoint_store& local,
                                              const snapshot_manifest& m,
                                              const std::string& scratch_dir);

  /// Ids of the checkpoints whose `_metadata` is stored, ascending.
  [[nodiscard]] expected<std::vector<std::uint64_t>> complete_ids();

  /// Downloads checkpoint `id`'s environment into `dir` (created; it must
  /// hold no `data.mdb`), making `dir` a store that holds checkpoint `id`.
  /// Returns the bytes downloaded.
  ///
  /// Errors: `errc::io_error` (the store; the object missing; writing `dir`).
  [[nodiscard]] expected<std::uint64_t> download(std::uint64_t id, const std::string& dir);

  /// Every stored checkpoint as `list` of a local store shows it: decoded
  /// from its `_metadata` (state values not read; restorable when the
  /// manifest decodes and says completed).
  [[nodiscard]] expected<std::vector<checkpoint_listing>> list();

  /// Deletes every checkpoint but the newest `retain` (each `_metadata`
  /// first, so that a deletion cut short leaves no half checkpoint).
  /// Returns the ids deleted.
  [[nodiscard]] expected<std::vector<std::uint64_t>> apply_retention(std::size_t retain);

  /// The folder of checkpoint `id`: `chk-000000000042`.
  static std::string folder(std::uint64_t id);

private:
  std::shared_ptr<object_store> store_;
  std::string uri_;
};

/// Opens the remote copy at `opts.uri` (`open_s3_store`).
[[nodiscard]] expected<std::shared_ptr<remote_checkpoints>>
open_remote_checkpoints(const object_store_options& opts);

} // namespace weir::checkpoint
