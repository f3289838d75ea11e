// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace weir {

/// Seed of the key hash. Fixed forever: snapshots store state by key group,
/// so changing it would scatter restored keys onto the wrong subtasks.
inline constexpr std::uint64_t key_hash_seed = 0x77656972'6b657931ULL;

/// Appends a binary, type-tagged encoding of row `row` of the columns
/// `key_fields` to `out`. Equal keys give equal bytes; the encoding is
/// stable across runs, builds and machines (little-endian, length-prefixed).
void encode_key(const record_batch& batch, std::span<const std::size_t> key_fields,
                std::size_t row, std::string& out);

/// Returns the key group of an encoded key: xxhash64(key, key_hash_seed) %
/// max_parallelism (Flink's `KeyGroupRangeAssignment.assignToKeyGroup`, with
/// xxhash64 in place of murmur). Precondition: 0 < max_parallelism <= 32768.
std::uint16_t assign_key_group(std::string_view encoded_key,
                               std::size_t max_parallelism) noexcept;

/// Returns the subtask that owns key group `group`:
/// `group * parallelism / max_parallelism` (Flink's
/// `computeOperatorIndexForKeyGroup`).
std::size_t operator_index_for_key_group(std::size_t group,
                                         std::size_t max_parallelism,
                                         std::size_t parallelism) noexcept;

} // namespace weir
