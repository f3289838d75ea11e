// SPDX-License-Identifier: Apache-2.0
#pragma once
// The options every source spec shares (job.hpp includes it; a kind's spec
// header includes it instead of job.hpp).

#include <chrono>

namespace weir {

/// Event-time settings of a source (docs/concepts/event-time.md).
struct watermark_options {
  /// Flink's `BoundedOutOfOrdernessWatermarks`: after each batch the
  /// watermark becomes `max_ts_seen - bound - 1` ms, never decreasing.
  std::chrono::milliseconds max_out_of_orderness{0};
  std::chrono::milliseconds idle_timeout{0}; ///< 0 = never idle
};

} // namespace weir
