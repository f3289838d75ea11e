// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pattern kind's runtime operator (pattern_operator.cpp).

#include "nfa.hpp"

#include "weir/core/schema.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <memory>
#include <string>
#include <vector>

namespace weir::internal::cep {

/// What a pattern operator subtask needs, shared by its instances.
struct pattern_plan {
  std::shared_ptr<const compiled_pattern> pattern;
  std::vector<std::size_t> key_fields; ///< indices into the input schema
  schema_ptr input;
  /// keys..., match_start, match_end, selected fields.
  schema_ptr output;
  /// keys..., match_start, match_end, timed_out_at, selected fields.
  schema_ptr timeout;
  /// The selected fields, compiled against `pattern->match_schema()`.
  std::vector<expr::compiled_expression> select;
  bool emit_timeouts = false;
};

/// Flink's `CepOperator` in event time, for one subtask: records above the
/// watermark are buffered per key; when the watermark passes them they are
/// matched in (event time, arrival) order, then time advances to the
/// watermark (timing out partial matches). Records at or behind the
/// watermark are late: emitted on side output 1 (counted as late either
/// way). Matches go to the main output (event time = their last event's),
/// timed-out partial matches to side output 2 (event time = first event +
/// within) when `emit_timeouts`. All per-key state is one value state,
/// snapshotted with checkpoints and restored by key group. State TTL
/// (processing time) drops keys idle longer than `state_ttl`.
/// Records without event time fail the subtask (std::runtime_error).
class pattern_operator final : public stream_operator {
public:
  explicit pattern_operator(pattern_plan plan) : plan_(std::move(plan)) {}
  void open(const operator_context& ctx) override;
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;
  void process_watermark(event_time wm, output_collector& out) override;
  void on_processing_time(event_time now, output_collector& out) override;
  std::optional<event_time> next_processing_timer() const override;
  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override;
  void restore_state(const operator_restore& in) override;

private:
  void on_watermark_timer(event_time wm);
  void emit(const key_state& ks, const partial_match& pm, bool timed_out);
  void flush(output_collector& out);

  pattern_plan plan_;
  operator_context info_;
  std::unique_ptr<state::keyed_state_backend> backend_;
  state::value_state<key_state> state_;
  std::string key_scratch_;
  std::unique_ptr<batch_builder> matches_;
  std::unique_ptr<batch_builder> timeouts_;
  std::uint64_t dropped_ = 0;
  std::vector<std::uint32_t> late_rows_;
};

} // namespace weir::internal::cep
