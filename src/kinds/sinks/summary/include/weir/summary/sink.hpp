// SPDX-License-Identifier: Apache-2.0
#pragma once
// The summary sink (`type = "summary"`): its spec `weir::summary::sink`
// and `weir::summary::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/summary/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/window/window_operator.hpp"

#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace weir::summary {

/// A summary table printed on stdout at the end of the job: rows of the
/// input re-aggregated by `group_by`, sorted by `order_by` (an aggregate
/// name, descending unless `ascending`), at most `limit` rows, each with its
/// share of the total of the first aggregate. `highlight_where`, if set,
/// adds a line with the share of that total over rows matching it (e.g. an
/// error rate: "status >= 400").
struct sink {
  std::string title;
  std::vector<std::string> group_by;
  std::vector<window::aggregate_spec> aggregates;
  std::string order_by;
  bool ascending = false;
  std::size_t limit = 10;
  std::string highlight_label;
  std::string highlight_where;
};

/// Adds a summary sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, and those of `make_summary_sink_factory`.
/// Parallelism 1: one instance sees every group.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::summary

namespace weir {

/// Makes the factory of a summary sink: an operator that re-aggregates every
/// row it receives by `spec.group_by` with `spec.aggregates` (same calls and
/// result types as a window's aggregates, e.g. "sum(views)") and, in
/// `finish()`, writes one text table to `out` (stdout by default).
///
/// Table layout (columns separated by two spaces, text left-aligned, numbers
/// right-aligned, floats with 2 decimals, timestamps as ISO-8601 UTC):
/// ```
/// <title>
/// <group fields> <aggregates> share
/// ---------------------------------
/// <at most `limit` rows>
/// (N more rows)                      -- only when rows were cut ("1 more row")
/// <label>: X.X% (<matched> of <total>) -- only with highlight_where
/// ```
/// Rows are sorted by `order_by` (an aggregate or group field; empty = the
/// first aggregate), descending unless `ascending`, nulls last, ties by the
/// group's display text ascending. `limit` 0 means no limit. `share` is the
/// row's first-aggregate value over the total of that aggregate across all
/// groups, as a percentage with one decimal; it is shown only when the first
/// aggregate is a count or a sum. The highlight line gives the first
/// aggregate over the input rows where `highlight_where` is true (matched)
/// against the same aggregate over all rows (total); the label defaults to
/// the condition text. With no input rows the table has no rows.
///
/// Errors (`errc::invalid_argument` unless stated): no input schema, no
/// aggregate, an unknown or repeated group_by field, an aggregate that does
/// not parse or type-check (its `errc` and `offset` into the call are kept,
/// and the message names the aggregate), an aggregate named like a group
/// field, `order_by` naming neither an aggregate nor a group field,
/// `highlight_where` that does not compile (`offset` into it is kept) or is
/// not boolean (`errc::type_error`), or a highlight whose first aggregate is
/// not a count or sum.
///
/// The sink needs a single instance (parallelism 1) to see every group.
/// Output goes to `out` only in `finish()`, so it appears once, at the end.
///
/// Checkpoints: the groups and their accumulators (and the highlight's
/// totals) are the sink's operator state, serialized at the barrier, so a
/// job restored from a checkpoint prints the table of an uninterrupted run
/// (docs/concepts/checkpoints.md). A subtask handed several states (a change of
/// parallelism) merges them group by group, as `AggregateFunction.merge` would. Restoring
/// a state written by a summary with other columns, column types or
/// aggregate functions throws `std::runtime_error` (as does a malformed one).
[[nodiscard]] expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec);

/// As above, writing to `out`, which must outlive every operator made.
[[nodiscard]] expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec,
                          std::ostream& out);

/// As above, handing the rendered table (text with newlines) to `write`
/// once, from `finish()` on the sink's thread.
[[nodiscard]] expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec,
                          std::function<void(const std::string&)> write);

} // namespace weir
