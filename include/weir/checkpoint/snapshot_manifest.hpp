// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::checkpoint {

/// Seed of the checksums a manifest keeps of the values it points to. Fixed:
/// changing it makes every stored checkpoint fail verification.
inline constexpr std::uint64_t checksum_seed = 0x77656972'636b7074ULL;

/// xxhash64 of `bytes` with `checksum_seed`.
std::uint64_t state_checksum(std::string_view bytes) noexcept;

/// Where one key group's serialized keyed state went: its size (bytes) and
/// checksum. Only key groups that hold state have a handle.
struct key_group_handle {
  std::uint16_t key_group = 0;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;

  friend bool operator==(const key_group_handle&, const key_group_handle&) = default;
};

/// What one operator of one subtask stored for a checkpoint (Flink's
/// `OperatorSubtaskState`): its keyed state by key group and its operator
/// state, each with size and checksum.
struct operator_state_handle {
  /// Stable id of the operator across runs (the operator's name).
  std::string operator_uid;
  std::uint32_t subtask = 0;     ///< subtask index, 0-based
  std::uint32_t parallelism = 1; ///< the operator's parallelism when written
  std::vector<key_group_handle> key_groups; ///< ascending key groups
  bool has_operator_state = false;
  std::uint64_t operator_state_bytes = 0;
  std::uint64_t operator_state_checksum = 0;
  /// A source's position in readable form ("byte 1234 of logs.log");
  /// empty for every other operator.
  std::string source_position;
  /// What the operator's state layout depended on when it was written
  /// (`runtime::stream_node::state_descriptor`); empty in manifests of
  /// format version 1 and for operators that declare none.
  std::string state_descriptor;

  /// Bytes of keyed plus operator state.
  std::uint64_t size_bytes() const noexcept;

  friend bool operator==(const operator_state_handle&,
                         const operator_state_handle&) = default;
};

/// Whether a manifest describes a finished checkpoint. Only `completed`
/// manifests are restored from; the store never writes anything else, but a
/// reader must cope with one (a tool or an older version may have).
enum class checkpoint_status : std::uint8_t { in_progress = 0, completed = 1 };

/// Everything known about one checkpoint (docs/concepts/checkpoints.md): the `manifests`
/// value in LMDB. A checkpoint is complete only once its manifest is
/// committed with status `completed`.
struct snapshot_manifest {
  /// Version of the binary encoding written by `encode_manifest`.
  /// Version 2 added `operator_state_handle::state_descriptor`; version 1
  /// is still read (with empty descriptors).
  static constexpr std::uint16_t format_version = 2;

  checkpoint_status status = checkpoint_status::completed;
  std::uint64_t checkpoint_id = 0;
  std::int64_t trigger_ms = 0;    ///< wall clock, ms since the Unix epoch
  std::int64_t completion_ms = 0; ///< when the last subtask acknowledged (ms)
  std::int64_t alignment_ms = 0;  ///< longest barrier alignment of any subtask
  /// One per operator subtask that has state, in acknowledgement order.
  std::vector<operator_state_handle> handles;

  /// `completion_ms - trigger_ms`.
  std::int64_t duration_ms() const noexcept { return completion_ms - trigger_ms; }

  /// Sum of `size_bytes()` over all handles.
  std::uint64_t size_bytes() const noexcept;

  friend bool operator==(const snapshot_manifest&, const snapshot_manifest&) = default;
};

/// Encodes a manifest: magic "WMNF", u16 version, the fields little-endian
/// (strings and vectors length-prefixed), and a trailing xxhash64 of all
/// preceding bytes that `decode_manifest` checks.
std::string encode_manifest(const snapshot_manifest& m);

/// Decodes what `encode_manifest` wrote. Never reads past `bytes`.
///
/// Errors: `errc::parse_error` when the magic, version, checksum or any
/// length does not match (truncated or damaged bytes), naming what failed.
[[nodiscard]] expected<snapshot_manifest> decode_manifest(std::string_view bytes);

/// Compares the state descriptor a checkpoint holds for operator
/// `operator_uid` (`stored`) with the one the job's operator has now
/// (`current`), as Flink's `TypeSerializerSnapshot#resolveSchemaCompatibility`
/// does before any state is read. An empty `stored` (a checkpoint written
/// before descriptors existed) is compatible with anything.
///
/// Returns nullopt when compatible; else the refusal: a message naming the
/// operator, what `where` (e.g. "checkpoint 7 in state") holds, what the
/// pipeline has now, and the ways out (--fresh; or renaming the operator
/// with --allow-non-restored-state).
[[nodiscard]] std::optional<std::string> check_state_compatibility(std::string_view operator_uid,
                                                       std::string_view stored,
                                                       std::string_view current,
                                                       std::string_view where);

} // namespace weir::checkpoint
