// SPDX-License-Identifier: Apache-2.0
#pragma once
// The enrich kind's runtime operator (enrich_operator.cpp).

#include "weir/core/schema.hpp"
#include "weir/operators/enrich.hpp"
#include "weir/operators/two_input_stream_operator.hpp"

#include <cstddef>
#include <cstdint>
#include <chrono>
#include <memory>
#include <optional>
#include <vector>

namespace weir::internal {

/// What an enrich subtask needs, resolved against both schemas.
struct enrich_plan {
  std::vector<std::size_t> stream_keys; ///< key fields of input 1 (the stream)
  std::vector<std::size_t> table_keys;  ///< key fields of input 2 (the table)
  std::vector<std::size_t> table_fields; ///< table fields added, in output order
  schema_ptr output;                     ///< stream fields, then the added ones
  enrich_missing on_missing = enrich_missing::wait;
  event_time max_wait = 0; ///< ms
  bool emit_on_timeout = true;
  std::optional<std::chrono::milliseconds> state_ttl; ///< of the table row
};

/// Makes one subtask's enrich operator (see `enrich_spec` for the
/// semantics). Keyed state per key: the table row in effect ("row"), table
/// rows and records not yet reached by the watermark ("pending_table",
/// "pending"), and records waiting for a first row ("waiting"); an event-time
/// timer per pending timestamp and waiting deadline. With `wait` and a
/// positive `max_wait` the output watermark is the input's minus `max_wait`,
/// so that a record emitted when its wait ends is not late downstream.
/// Records that found no row (emitted with nulls or dropped) are counted
/// and logged per subtask at the end.
std::unique_ptr<two_input_stream_operator> make_enrich_operator(enrich_plan plan);

} // namespace weir::internal
