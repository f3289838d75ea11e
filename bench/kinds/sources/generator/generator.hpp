// SPDX-License-Identifier: Apache-2.0
#pragma once
// The spec of a generator source (`type = "generator"`), for
// `job::from_generator` (defined in generator.cpp, in weir_bench_kinds).

#include "weir/api/source_options.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir {

/// A generator source (`type = "generator"`): row `seq` = 0, 1, 2, ... gets
/// one value per field, each an expression (docs/concepts/records.md) over the int64
/// field `seq` with the seeded rand_int / rand_float / rand_string functions
/// (weir/expr/expression.hpp), so a row is a pure function of (seed, seq).
/// With parallelism p, subtask i generates the seqs congruent to i mod p.
struct generator_source_spec {
  std::optional<std::uint64_t> count; ///< rows over all subtasks; none = unbounded
  double rate = 0;  ///< rows/s over all subtasks; 0 = as fast as possible
  /// (name, expression) in output order; the schema takes their types.
  std::vector<std::pair<std::string, std::string>> fields;
  std::uint64_t seed = 0;
  std::string event_time_field; ///< a timestamp or int64 field; empty: none
  /// Adds an int64 field of this name: the row's generation time in ns of
  /// the steady clock (its scheduled time when rate-limited), for the
  /// blackhole sink's latency measurement. Empty: none.
  std::string generation_time_field;
  watermark_options watermark;
  /// Projection push-down (Flink's `SupportsProjectionPushDown`): true
  /// generates only the fields some operator reads (the others stay null,
  /// see `runtime::prune_generated_fields`); false generates whole events,
  /// for benchmarks against engines that do. Results are the same.
  bool projection_push_down = true;
};

} // namespace weir
