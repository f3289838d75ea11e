// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "kinds/sources/generator/generator.hpp"
#include "kinds/sources/nexmark/nexmark.hpp"
#include "weir/connectors/source_reader.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"

#include <chrono>
#include <cstddef>

namespace weir {

/// The schema a generator's field expressions are compiled against: one
/// int64 field, `seq`.
schema_ptr generator_input_schema();

/// The output schema of a generator source: its fields in order with the
/// types of their expressions (a bare `null` is a string), then the
/// generation-time field if named (int64). Errors as `generator::add_source` (`job::from`)
/// documents (field expressions compiled with `spec.seed`).
[[nodiscard]] expected<schema_ptr> generator_output_schema(const generator::source& spec);

/// The output schema of a Nexmark source: the stream's schema
/// (`nexmark::schema_of`) plus the generation-time field if named (int64).
/// Errors: `errc::invalid_argument` when that field clashes with a column.
[[nodiscard]] expected<schema_ptr> nexmark_output_schema(const nexmark::source& spec);

/// The reader of subtask `subtask` (0-based) of `parallelism` of a
/// generator source: it produces the seqs `subtask + k * parallelism` below
/// `spec.count` in order, evaluating every field a batch at a time.
///
/// Batches: `poll_next(max_rows)` returns `max_rows` rows (fewer at the
/// end); with a rate (split evenly over the subtasks) it returns them when
/// `max_rows` rows are due or when the oldest due row has waited
/// `buffer_timeout`, else a batch of 0 rows, and `next_poll_delay()` then
/// says when to poll again. Event time: the value of `event_time_field`
/// (ms); a null there throws std::runtime_error, failing the job.
/// `position()` is the next seq this subtask will generate. `needed` (one
/// flag per field, empty = all): fields flagged false are not evaluated and
/// come out all null, as columns without values (`column::has_values`;
/// projection push-down; the event-time field is always evaluated).
/// Errors: as `generator_output_schema`.
[[nodiscard]] expected<source_reader_ptr>
make_generator_reader(const generator::source& spec, std::size_t subtask,
                      std::size_t parallelism, std::chrono::milliseconds buffer_timeout,
                      std::vector<bool> needed = {});

/// The reader of subtask `subtask` of `parallelism` of a Nexmark source: it
/// walks the event numbers `subtask + k * parallelism` below `spec.events`,
/// emitting those of `spec.stream` with event time `date_time`; batching,
/// rate and `position()` (the next event number) as for the generator,
/// the rate counted in events. `needed` (one flag per column, empty = all):
/// text columns flagged false are not generated and come out null
/// (projection push-down, `nexmark::field_mask`).
[[nodiscard]] expected<source_reader_ptr>
make_nexmark_reader(const nexmark::source& spec, std::size_t subtask,
                    std::size_t parallelism, std::chrono::milliseconds buffer_timeout,
                    const std::vector<bool>& needed = {});

} // namespace weir
