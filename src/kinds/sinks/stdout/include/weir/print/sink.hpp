// SPDX-License-Identifier: Apache-2.0
#pragma once
// The spec of the stdout sink (`type = "stdout"`), for `data_stream::sink_to`
// (src/kinds/sinks/stdout/); `data_stream::print()` is the same sink with
// the default spec.

#include "weir/api/job.hpp"
#include "weir/format/format.hpp"

namespace weir::print {

/// The stdout sink (Flink's `PrintSink`): every row as one JSON line on
/// stdout, written and flushed batch by batch; parallelism 1 (one writer,
/// so lines never interleave).
struct sink {
  /// Timestamp fields (window_start and window_end too) as integer ms or
  /// ISO-8601 UTC text.
  format::timestamp_format timestamp_format = format::timestamp_format::epoch_ms;
};

/// Adds the stdout sink fed by `in` (what `data_stream::sink_to` calls).
/// Errors: `errc::invalid_argument` for a duplicate `opts.name`.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::print
