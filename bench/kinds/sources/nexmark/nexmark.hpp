// SPDX-License-Identifier: Apache-2.0
#pragma once
// The spec of a Nexmark source (`type = "nexmark"`), for `nexmark::add_source` (`job::from`)
// (defined in nexmark.cpp, in weir_bench_kinds).

#include "weir/api/job.hpp"
#include "kinds/sources/nexmark/nexmark_generator.hpp"
#include "weir/api/source_options.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace weir {

/// Which Nexmark stream a `nexmark` source emits.
enum class nexmark_stream { person, auction, bid };

} // namespace weir

namespace weir::nexmark {

/// A Nexmark source (`type = "nexmark"`): events 0 .. events-1 of
/// `nexmark::generator` (persons, auctions and bids in proportion 1:3:46 by
/// default), of which it emits those of `stream`, with event time
/// `date_time`. With parallelism p, subtask i generates the events
/// congruent to i mod p. `rate` and `generation_time_field` as for
/// `generator::source`, counted in events.
struct source {
  nexmark::generator_config generator;
  std::optional<std::uint64_t> events; ///< none = unbounded
  nexmark_stream stream = nexmark_stream::bid;
  double rate = 0; ///< events/s over all subtasks; 0 = as fast as possible
  std::string generation_time_field;
  watermark_options watermark;
  /// Projection push-down (Flink's `SupportsProjectionPushDown`): true
  /// generates only the fields some operator reads (the others stay null,
  /// see `runtime::prune_generated_fields`); false generates whole events,
  /// for benchmarks against engines that do. Results are the same.
  bool projection_push_down = true;
};

/// Adds a Nexmark source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, a negative rate, or a non-positive event_rate,
/// proportion, hot ratio or average size. A benchmark kind (weir_bench_kinds).
[[nodiscard]] expected<data_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::nexmark

