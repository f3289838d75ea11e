// SPDX-License-Identifier: Apache-2.0
#pragma once

// What `window_plan::make` resolved from a spec: shared, read only, by every
// operator instance the plan makes. Private to src/window/.

#include "weir/core/schema.hpp"
#include "weir/window/window_operator.hpp"

#include "window_state.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace weir::window {

namespace internal {

/// Sliced aggregation (Flink SQL's `SliceAssigners` / `SlicingWindowOperator`;
/// Carbone et al., "Cutty: Aggregate Sharing for User-Defined Windows",
/// CIKM 2016): event-time tumbling and sliding windows cut into slices of
/// gcd(size, slide) ms; each record updates the accumulator of its one slice
/// (not of every window holding it), and a window's result is the merge of
/// its slices when the watermark passes its end. The operator keeps, per
/// slice, the keys with contents there, so firing needs no timer per key and
/// window. Used when nothing can observe the difference: the event-time
/// trigger, no allowed lateness, no evictor, mergeable aggregates (or one
/// slice per window), and no gaps between windows (slide <= size: a record
/// between two windows counts as late, which needs the per-window path).
/// All times in ms.
struct slicing_plan {
  std::int64_t size = 0;
  std::int64_t slide = 0;  ///< = size for tumbling windows
  std::int64_t offset = 0;
  std::int64_t slice = 0;  ///< gcd(size, slide)
  std::int64_t end_offset = 0; ///< window ends are congruent to it modulo slide
};

} // namespace internal

struct window_plan::impl {
  schema_ptr input;
  schema_ptr output;
  std::vector<std::size_t> key_fields;
  std::shared_ptr<const window_assigner> assigner;
  std::shared_ptr<const window::trigger> trigger;
  std::shared_ptr<const window::evictor> evictor;
  internal::aggregate_set aggregates;
  std::int64_t allowed_lateness = 0; // ms
  bool buffered = false;             // keep records, aggregate when firing
  /// Set when the windows are aggregated by slices (see `slicing_plan`).
  std::optional<internal::slicing_plan> slicing;
  /// Set when the aggregation can be split into a local and a global phase
  /// (see `window_plan::supports_local_aggregation`): the partial rows'
  /// schema.
  schema_ptr partial;
  /// The input columns the local phase reads (keys, aggregate arguments).
  std::vector<std::size_t> local_reads;
};

} // namespace weir::window
