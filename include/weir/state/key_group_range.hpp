// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>

namespace weir::state {

/// A contiguous, inclusive range of key groups `[start, end]` (Flink's
/// `KeyGroupRange`). A range with `end < start` is empty; the canonical empty
/// range is `{1, 0}`.
struct key_group_range {
  std::uint16_t start = 1;
  std::uint16_t end = 0;

  /// Number of key groups in the range (0 when empty).
  constexpr std::size_t size() const noexcept {
    return end < start ? 0 : static_cast<std::size_t>(end - start) + 1;
  }
  constexpr bool empty() const noexcept { return end < start; }
  constexpr bool contains(std::uint16_t group) const noexcept {
    return start <= group && group <= end;
  }
  /// Position of `group` inside the range, `group - start`. Precondition:
  /// `contains(group)`.
  constexpr std::size_t local_index(std::uint16_t group) const noexcept {
    return static_cast<std::size_t>(group - start);
  }

  friend constexpr bool operator==(const key_group_range& a, const key_group_range& b) noexcept {
    return (a.empty() && b.empty()) || (a.start == b.start && a.end == b.end);
  }
};

/// The key groups owned by subtask `index` of `parallelism` subtasks when a
/// job has `max_parallelism` key groups (Flink's
/// `KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex`):
/// `start = ceil(index * max_parallelism / parallelism)`,
/// `end = ceil((index + 1) * max_parallelism / parallelism) - 1`.
///
/// Consistent with `weir::operator_index_for_key_group`: group g lies in the
/// range of subtask `g * parallelism / max_parallelism`. The ranges of
/// subtasks 0..parallelism-1 partition `[0, max_parallelism - 1]`.
/// Preconditions: `0 < parallelism <= max_parallelism <= 32768`,
/// `index < parallelism`; otherwise the empty range is returned.
key_group_range key_group_range_for_subtask(std::size_t max_parallelism,
                                            std::size_t parallelism,
                                            std::size_t index) noexcept;

} // namespace weir::state
