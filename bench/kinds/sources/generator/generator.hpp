// SPDX-License-Identifier: Apache-2.0
#pragma once
// The spec of a generator source (`type = "generator"`), for
// `generator::add_source` (`job::from`) (defined in generator.cpp, in weir_bench_kinds).

#include "weir/api/job.hpp"
#include "weir/api/source_options.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::generator {

/// A generator source (`type = "generator"`): row `seq` = 0, 1, 2, ... gets
/// one value per field, each an expression (docs/concepts/records.md) over the int64
/// field `seq` with the seeded rand_int / rand_float / rand_string functions
/// (weir/expr/expression.hpp), so a row is a pure function of (seed, seq).
/// With parallelism p, subtask i generates the seqs congruent to i mod p.
struct source {
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

/// Adds a generator source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, no fields, a duplicate field, a negative rate, an
/// event-time field that is absent or not a timestamp/int64, or a
/// generation_time_field that clashes with a field; a field expression that
/// does not compile keeps its `errc` and `offset`, and the message names the
/// field ("field 'x': ..."). A benchmark kind (weir_bench_kinds).
[[nodiscard]] expected<data_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::generator

