// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the interval_join and window_join kinds share: the shape of a joined
// row (`join_rows`), the TOML keys both read (`join_spec`) and the base of
// both runtime operators (`keyed_join_operator`: keyed state for both
// inputs, late rows, the watermark across restores).

#include "config/kind.hpp"

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::internal {

/// One buffered row: its values in schema order (monostate = null, int64
/// for timestamps), as keyed state stores it.
using join_row = std::vector<value>;

/// Turns joined pairs into output rows (the shapes `join_select` in
/// weir/api/job.hpp documents). Pairs are appended to a scratch batch over
/// the *scope* schema (`left.<f>`..., `right.<f>`..., `timestamp`, and for
/// a window join `window_start`, `window_end`); `finish` evaluates the
/// select expressions over it, a column at a time, or picks the default
/// row's columns. Copyable: each operator instance takes a copy of the plan.
class join_rows {
public:
  /// Plans the rows of a join of `left` and `right`. `right_keys` are the
  /// right key fields (left out of the default row); `windowed` adds the
  /// window fields. Errors: `errc::type_error` for a select expression that
  /// does not compile (the message names the field; the offset is the
  /// expression's), `errc::invalid_argument` for a field named twice or a
  /// default row with a name clash that renaming does not resolve.
  static expected<join_rows> make(const schema_ptr& left, const schema_ptr& right,
                                  const std::vector<std::size_t>& right_keys,
                                  const join_select& select, bool windowed);

  const schema_ptr& output_schema() const noexcept { return output_; }
  /// The schema select expressions are compiled against.
  const schema_ptr& scope_schema() const noexcept { return scope_; }

  /// Appends the pair (`l`, `r`) with event time `ts` (ms) and, for a
  /// window join, its window `[start, end)`.
  void append(const join_row& l, const join_row& r, event_time ts, event_time window_start = 0,
              event_time window_end = 0);

  /// The rows appended since the last call, as one batch of
  /// `output_schema()`; null when there are none.
  record_batch_ptr finish();

private:
  schema_ptr scope_;
  schema_ptr output_;
  std::size_t left_fields_ = 0;
  std::size_t right_fields_ = 0;
  bool windowed_ = false;
  /// Per output column: the scope column it copies, or -1 to evaluate
  /// `exprs_[i]`.
  std::vector<int> sources_;
  std::vector<expr::compiled_expression> exprs_;
  std::optional<batch_builder> builder_;
};

/// The values of row `row` of `batch`.
join_row row_values(const record_batch& batch, std::size_t row);

/// Adds a join node fed by (node, port) `left` and `right`, each
/// hash-partitioned by its key fields, with the main output `rows` and two
/// side outputs for late rows (port 1 left, port 2 right; named or not,
/// their rows count as late). Returns the node's index. Errors:
/// `errc::invalid_argument` for a duplicate stream name.
expected<std::size_t> add_join_node(runtime::job_graph& g, const operator_options& opts,
                                    std::string_view kind, const schema_ptr& rows,
                                    std::pair<std::size_t, std::size_t> left,
                                    const schema_ptr& left_schema,
                                    std::vector<std::size_t> left_keys,
                                    std::pair<std::size_t, std::size_t> right,
                                    const schema_ptr& right_schema,
                                    std::vector<std::size_t> right_keys,
                                    const std::string& left_late, const std::string& right_late,
                                    runtime::operator_factory factory);

/// Checks that the key lists have equal length (at least one) and equal
/// types pairwise. Errors: `errc::invalid_argument`, `errc::type_error`.
expected<std::monostate> check_join_keys(const schema& left, const std::vector<std::size_t>& lk,
                                         const schema& right,
                                         const std::vector<std::size_t>& rk);

/// The base of the join operators: a keyed-state backend for the subtask's
/// key groups (open), both inputs' rows handed to `process_row` with their
/// key set, the rows it finds late emitted on port 1 (left) or 2 (right),
/// and snapshot and restore of the backend plus the
/// watermark at the barrier (operator state: one `wire` u64), so a restored
/// join judges lateness as the uninterrupted one did.
class keyed_join_operator : public two_input_stream_operator {
public:
  keyed_join_operator(join_rows rows, std::vector<std::size_t> left_keys,
                      std::vector<std::size_t> right_keys)
    : rows_(std::move(rows)), keys_{std::move(left_keys), std::move(right_keys)} {}

  void open(const operator_context& ctx) override;
  void process_batch1(const record_batch_ptr& batch, output_collector& out) override {
    process_input(0, batch, out);
  }
  void process_batch2(const record_batch_ptr& batch, output_collector& out) override {
    process_input(1, batch, out);
  }
  /// Advances the backend's watermark (firing the subclass's timers), emits
  /// the rows they produced, then forwards `wm`.
  void process_watermark(event_time wm, output_collector& out) override;
  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override;
  /// Throws std::runtime_error for state that does not decode.
  void restore_state(const operator_restore& in) override;

  std::uint64_t late_records() const noexcept { return late_; }
  const state::keyed_state_backend& backend() const noexcept { return *backend_; }

protected:
  /// Obtains the subclass's state handles from `backend_`.
  virtual void register_states() = 0;
  /// One row of input `side` (0 left, 1 right) at `ts` (ms), with the
  /// backend's current key set to its key and the global namespace; false
  /// if it is late (judged against the backend's watermark, which is the
  /// one the join had when the batch arrived).
  virtual bool process_row(std::size_t side, join_row row, event_time ts) = 0;
  /// An event-time timer of the current key and namespace fired at `ts`.
  virtual void on_timer(event_time ts) = 0;

  join_rows rows_;
  std::unique_ptr<state::keyed_state_backend> backend_;

private:
  void process_input(std::size_t side, const record_batch_ptr& batch, output_collector& out);
  void flush(output_collector& out);

  std::vector<std::size_t> keys_[2];
  std::uint64_t late_ = 0;
  std::string key_scratch_;
  std::vector<std::uint32_t> late_rows_;
};

} // namespace weir::internal

namespace weir::kinds::internal {

/// The TOML keys both joins read: the key fields of either side, `select`
/// and the late outputs.
struct join_spec : config::kind_spec {
  std::vector<config::located> key_by, left_key_by, right_key_by;
  const toml::node* key_node = nullptr;
  std::vector<config::named_text> select;
  const toml::node* select_node = nullptr;
  config::located left_late_output, right_late_output;

  std::vector<config::located> side_outputs() const override;
};

/// The key table entries of `join_spec`.
std::vector<config::key_spec> join_keys();

/// Reads the `join_spec` keys into `s`.
void parse_join(config::parse_context& c, join_spec& s);

/// Checks the key fields against the inputs and keys both; nullopt
/// (reported) on error.
std::optional<std::pair<keyed_stream, keyed_stream>> plan_join_inputs(config::plan_context& c,
                                                                     const join_spec& s);

/// The select as the API takes it.
join_select select_of(const join_spec& s);

/// Reports an error of the join's API method at the key it concerns: a
/// select expression at its text, else at the join's table.
void report_join_error(config::plan_context& c, const join_spec& s, const error& e);

} // namespace weir::kinds::internal
