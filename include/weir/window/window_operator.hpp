// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/window/evictor.hpp"
#include "weir/window/global_windows.hpp"
#include "weir/window/session_windows.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/time_window.hpp"
#include "weir/window/trigger.hpp"
#include "weir/window/triggers.hpp"
#include "weir/window/tumbling_windows.hpp"
#include "weir/window/window_assigner.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::window {

/// One named aggregate of a window result, e.g. {"bytes", "sum(bytes)"}.
struct aggregate_spec {
  std::string name;
  /// count(*), count(x), sum(x), min(x), max(x), avg(x), first(x), last(x),
  /// count_distinct(x) or reduce(expr, init); see `check_aggregate`.
  std::string call;
};

/// Checks one aggregate call against `input` and returns its result type.
///
/// Grammar: `fn(expr)`, `count(*)` or `reduce(expr, init)`; `fn` one of
/// count, sum, min, max, avg, first, last, count_distinct (case-insensitive,
/// whitespace allowed around every token); `expr` is an expression
/// (docs/concepts/records.md) compiled with `weir::expr::compile`. Every aggregate but
/// count(*) ignores nulls.
///
/// - count int64; sum int64 over int64 and float64 over float64; min and
///   max the input type (int64, float64, timestamp or string); avg float64.
/// - first(x) / last(x): the first / last non-null x in arrival order within
///   the window (any type; Flink SQL's FIRST_VALUE / LAST_VALUE).
/// - count_distinct(x): int64, the number of distinct non-null x (any type;
///   -0.0 and 0.0 are one value).
/// - reduce(expr, init): a fold. The accumulator `acc` starts as `init` (a
///   constant expression of type T: int64, float64, bool, string or
///   timestamp; e.g. 0, 0.0, '', false) and becomes `expr` for each record
///   in arrival order; `expr` sees the record's fields and `acc` (of type
///   T) and must have type T. The result has type T; a null `expr` makes
///   `acc` null (use coalesce). Example: `reduce(acc + value, 0)` sums;
///   `reduce(acc * 2 + 1, 0)` depends on the order. Costs one expression
///   evaluation over a one-row batch per record.
///
/// Errors: `errc::parse_error` (bad call syntax, unknown function, bad
/// argument, reduce without exactly two arguments) or `errc::type_error`
/// (e.g. "sum needs a number, got string", "reduce: expr has type float64
/// but init has type int64"), with `offset` = byte offset into `call` (for
/// an argument error: argument start + the expression's own offset).
[[nodiscard]] expected<type_id> check_aggregate(std::string_view call,
                                                const schema& input);

/// Everything a window operator needs, resolved against its input schema.
struct window_operator_spec {
  std::vector<std::string> key_by;            ///< key field names, may be empty
  std::shared_ptr<const window_assigner> assigner;
  std::vector<aggregate_spec> aggregates;
  /// Event-time windows only: how long (ms) a window is kept after it fired
  /// for late records, which re-fire it. Ignored by other windows.
  std::chrono::milliseconds allowed_lateness{0};
  /// Null: the assigner's default trigger.
  std::shared_ptr<const window::trigger> trigger;
  /// Null: no evictor. With one, the operator buffers the records of each
  /// window and aggregates them when it fires.
  std::shared_ptr<const window::evictor> evictor;
  /// Event-time tumbling and sliding windows with the event-time trigger, no
  /// allowed lateness and no evictor are aggregated by slices (one
  /// accumulator update per record, no timer per key and window; Flink
  /// SQL's slicing window aggregation) unless this is false. The results
  /// are the same either way; tests turn it off to compare.
  bool allow_slicing = true;
};

/// The operator a `window_plan` makes (Flink's `WindowOperator`, and its
/// `EvictingWindowOperator` when an evictor is set): the calls of
/// `stream_operator` plus counters for the runtime's metrics. Single
/// threaded like every operator.
///
/// State: everything lives in a `state::keyed_state_backend` scoped to the
/// record's key and the window (namespace): the aggregates ("window-contents",
/// or the buffered records, "window-rows"), the trigger's state, firing
/// numbers of global windows, the per-key merging window set of session
/// windows, and every timer. `snapshot_state` freezes it (O(key groups));
/// `restore_state` loads it by key group, so a job may restore with another
/// parallelism. The operator state is the arrival counter that orders
/// first/last.
///
/// `process_batch` throws `std::logic_error` for a non-empty batch without
/// timestamps when the windows are in event time. `process_watermark`
/// ignores (and does not forward) a watermark that is not above the current
/// one. Timers fire in (time, key bytes, window) order, so one watermark's
/// results come out ordered by window end, then key. Cost per record: one
/// state lookup per window it belongs to (plus the merging set for
/// sessions); per watermark: O(log timers) per fired timer.
class window_operator : public stream_operator {
public:
  /// Rows that were late for every window they belong to; each was also
  /// emitted on side output port 1.
  virtual std::uint64_t late_records() const noexcept = 0;
  /// Result rows emitted on the main output, first and late firings.
  virtual std::uint64_t emitted_results() const noexcept = 0;
  /// (key, window) states currently held.
  virtual std::size_t active_states() const noexcept = 0;
  /// The watermark the operator last processed (ms; `min_watermark` at first).
  virtual event_time current_watermark() const noexcept = 0;
};

/// A window operator checked against an input schema, able to make one
/// operator instance per subtask.
///
/// Output rows: the key fields (input types), then `window_start` and
/// `window_end` (timestamp, ms, end exclusive; event time `window_end - 1`)
/// for time windows, or `fire` (int64, the 1-based firing number of the key)
/// for global windows (event time `max_watermark`), then each aggregate in
/// spec order (types as `check_aggregate` says). Nulls are ignored by every
/// aggregate but count(*); an aggregate over no non-null value is null (0 for
/// count and count_distinct, the start value for reduce).
///
/// Semantics, per record in arrival order (Flink's `WindowOperator`): the
/// assigner places the record (event-time assigners by its timestamp,
/// others by the processing time of the job's clock); session windows merge
/// first (Flink's `MergingWindowSet`); a window past its cleanup time
/// (`end - 1 + allowed_lateness`, event time only) is skipped; otherwise the
/// record is added and the trigger decides (fire, purge). A record skipped
/// by every window is late: counted and emitted unchanged on side output
/// port 1. Each window has a cleanup timer at its cleanup time (processing
/// time: `end - 1`; global windows: none) that drops all its state. With the
/// default event-time trigger a window fires when the watermark reaches
/// `end - 1` and re-fires with the full updated result for every record that
/// arrives within allowed lateness; processing-time windows fire when the
/// clock reaches `end - 1` (`on_processing_time`) and are not flushed at the
/// end of input; global windows fire only as their trigger says (never by
/// default) and are never flushed.
///
/// Processing time: `operator_context::clock` when the operator was opened
/// with one, else (tests) the last time passed to `on_processing_time`, 0
/// before that.
///
/// Batches: all rows of a batch see the watermark current before it and are
/// processed one at a time; the results they cause leave as one batch on
/// the main output after the batch, and its late rows as one batch on port
/// 1. With one row per batch this is exactly Flink's record-at-a-time
/// output; with larger batches only the watermark is coarser.
class window_plan {
public:
  /// Checks the spec: an assigner is set; lateness is not negative; the
  /// trigger (the assigner's default when null) can merge if the assigner's
  /// windows do; key fields exist; each aggregate call parses and its
  /// argument type-checks (`check_aggregate`); names are unique and don't
  /// clash with key or window fields (`window_start`, `window_end`, or
  /// `fire` for global windows). All errors are `errc::invalid_argument`
  /// except the aggregates' own; those carry `offset` into the aggregate's
  /// call text where applicable and name the aggregate in the message.
  [[nodiscard]] static expected<window_plan> make(const schema_ptr& input,
                                                  window_operator_spec spec);

  const schema_ptr& output_schema() const noexcept;
  const std::vector<std::size_t>& key_fields() const noexcept;

  /// What the operator's snapshot layout depends on, as one line: the
  /// assigner's kind (not its sizes), the key types, each aggregate's
  /// function with its argument type in order (not its name), the
  /// trigger's and evictor's kinds and how windows are kept (sliced,
  /// buffered, merging or per window). E.g. "window
  /// tumbling_event_time_windows; keys (int64); aggregates count(*),
  /// sum(float64); trigger event_time_trigger; sliced". Two plans whose
  /// descriptors are equal read each other's snapshots
  /// (`runtime::stream_node::state_descriptor`).
  std::string state_descriptor() const;

  /// A fresh operator for one subtask; it is a `window_operator` (see there
  /// for its counters). Its class is chosen by the spec when the plan is
  /// made, not per record (src/window/README.md): sliced aggregation for the
  /// event-time windows it can take (see `allow_slicing`), merging windows
  /// for session assigners, else per-window aggregation.
  stream_operator_ptr make_operator() const;

  /// Whether the aggregation can run in two phases (Flink SQL's local/global
  /// "two-phase aggregation" of slicing windows): sliced event-time windows
  /// (see `window_operator_spec::allow_slicing`) whose aggregates merge
  /// independently of how rows are split and ordered: count, count_distinct,
  /// and min/max/sum/avg over non-float inputs (not first, last, reduce, or
  /// float sum/avg/min/max: rounding and NaN depend on the grouping).
  bool supports_local_aggregation() const noexcept;

  /// The partial rows between the phases: the key fields, then `rows`
  /// (int64, records folded) and `partial` (string, the encoded
  /// accumulators); event time = the slice's last ms. Null without
  /// `supports_local_aggregation`.
  const schema_ptr& partial_schema() const noexcept;

  /// Input columns the local phase reads (key fields, aggregate arguments).
  const std::vector<std::size_t>& local_reads() const noexcept;

  /// The local phase for one subtask, chained before the key-by exchange:
  /// folds its input into partial rows per key and slice, emitted when the
  /// watermark passes the slice, at a checkpoint barrier and at the end of
  /// input. Throws `std::logic_error` without `supports_local_aggregation`.
  stream_operator_ptr make_local_operator() const;

  /// The global phase for one subtask: a `window_operator` whose input is
  /// partial rows (hash-partitioned by their key fields); it merges them
  /// into slices and fires as `make_operator`'s would. Late partials count
  /// their `rows` as late records (`output_collector::count_late`). Throws
  /// `std::logic_error` without
  /// `supports_local_aggregation`.
  stream_operator_ptr make_global_operator() const;

  struct impl;

private:
  explicit window_plan(std::shared_ptr<const impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<const impl> impl_;
};

} // namespace weir::window
