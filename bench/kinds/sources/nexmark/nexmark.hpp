// SPDX-License-Identifier: Apache-2.0
#pragma once
// The spec of a Nexmark source (`type = "nexmark"`), for `job::from_nexmark`
// (defined in nexmark.cpp, in weir_bench_kinds).

#include "kinds/sources/nexmark/nexmark_generator.hpp"
#include "weir/api/source_options.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace weir {

/// Which Nexmark stream a `nexmark` source emits.
enum class nexmark_stream { person, auction, bid };

/// A Nexmark source (`type = "nexmark"`): events 0 .. events-1 of
/// `nexmark::generator` (persons, auctions and bids in proportion 1:3:46 by
/// default), of which it emits those of `stream`, with event time
/// `date_time`. With parallelism p, subtask i generates the events
/// congruent to i mod p. `rate` and `generation_time_field` as for
/// `generator_source_spec`, counted in events.
struct nexmark_source_spec {
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

} // namespace weir
