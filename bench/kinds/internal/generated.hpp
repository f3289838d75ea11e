// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the generated sources (generator, nexmark) share: their count, seed,
// rate, generation-time field, parallelism, watermark and projection_push_down keys.
#include "config/kind.hpp"

#include "weir/api/source_options.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace weir::kinds::internal {

struct generated_common {
  std::optional<std::uint64_t> count;
  std::uint64_t seed = 0;
  double rate = 0;
  std::string generation_time_field;
  std::size_t parallelism = 0;
  watermark_options watermark;
  bool projection_push_down = true;
};

/// Reads the shared keys; `count_key` is "count" or "events".
generated_common parse_generated_common(config::parse_context& c, std::string_view count_key);

} // namespace weir::kinds::internal
