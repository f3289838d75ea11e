// SPDX-License-Identifier: Apache-2.0
#include "weir/state/key_group_range.hpp"

namespace weir::state {

key_group_range key_group_range_for_subtask(std::size_t max_parallelism,
                                            std::size_t parallelism,
                                            std::size_t index) noexcept {
  if (parallelism == 0 || parallelism > max_parallelism || max_parallelism > 32768 ||
      index >= parallelism)
    return {};
  // Rounding both ends up makes group g land in subtask
  // g * parallelism / max_parallelism (Flink proves the same identity).
  auto start = (index * max_parallelism + parallelism - 1) / parallelism;
  auto end = ((index + 1) * max_parallelism + parallelism - 1) / parallelism - 1;
  return key_group_range{static_cast<std::uint16_t>(start), static_cast<std::uint16_t>(end)};
}

} // namespace weir::state
