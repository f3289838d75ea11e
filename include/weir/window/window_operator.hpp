// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::window {

/// A half-open event-time window `[start, end)` in ms; its last instant,
/// `max_timestamp()`, is `end - 1` (Flink's `TimeWindow`).
struct time_window {
  event_time start = 0;
  event_time end = 0;

  event_time max_timestamp() const noexcept { return end - 1; }
  friend auto operator<=>(const time_window&, const time_window&) = default;
};

/// Assigns each timestamp to the windows that contain it.
class window_assigner {
public:
  virtual ~window_assigner() = default;
  /// Appends every window containing `ts` to `out`.
  virtual void assign(event_time ts, std::vector<time_window>& out) const = 0;
};

/// Fixed-size, non-overlapping windows `[k*size + offset, (k+1)*size + offset)`
/// (Flink's `TumblingEventTimeWindows`; Akidau et al., "The Dataflow Model",
/// VLDB 2015). Alignment uses floored division, so pre-epoch timestamps land
/// in the right window.
class tumbling_event_time_windows final : public window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `size > 0` and
  /// `|offset| < size`.
  [[nodiscard]] static expected<tumbling_event_time_windows>
  make(std::chrono::milliseconds size, std::chrono::milliseconds offset = {});

  /// Appends the one window containing `ts`. O(1); never fails.
  void assign(event_time ts, std::vector<time_window>& out) const override;

  std::chrono::milliseconds size() const noexcept { return size_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }

private:
  tumbling_event_time_windows(std::chrono::milliseconds size,
                              std::chrono::milliseconds offset) noexcept
    : size_(size), offset_(offset) {}

  std::chrono::milliseconds size_;
  std::chrono::milliseconds offset_;
};

/// Start of the window of `size` (shifted by `offset`) containing `ts`:
/// `ts - floor_mod(ts - offset, size)` (Flink's
/// `TimeWindow.getWindowStartWithOffset`, with a floored modulo).
/// Preconditions: `size > 0`, `|offset| < size`, and `ts` at least `size`
/// away from the ends of the int64 range.
event_time window_start(event_time ts, std::int64_t offset, std::int64_t size) noexcept;

/// One named aggregate of a window result, e.g. {"bytes", "sum(bytes)"}.
struct aggregate_spec {
  std::string name;
  std::string call; ///< count(*), count(x), sum(x), min(x), max(x), avg(x)
};

/// Checks one aggregate call against `input` and returns its result type.
///
/// Grammar: `fn(expr)` or `count(*)`, `fn` one of count, sum, min, max, avg
/// (case-insensitive, whitespace allowed around every token); `expr` is an
/// expression (DESIGN.md §3) compiled with `weir::expr::compile`. Result
/// types: count int64; sum int64 over int64 and float64 over float64; min and
/// max the input type (int64, float64, timestamp or string); avg float64.
/// Errors: `errc::parse_error` (bad call syntax, unknown function, bad
/// argument) or `errc::type_error` (e.g. "sum needs a number, got string"),
/// with `offset` = byte offset into `call` (for an argument error: argument
/// start + the expression's own offset).
[[nodiscard]] expected<type_id> check_aggregate(std::string_view call,
                                                const schema& input);

/// Everything a window operator needs, resolved against its input schema.
struct window_operator_spec {
  std::vector<std::string> key_by;            ///< key field names, may be empty
  std::shared_ptr<const window_assigner> assigner;
  std::vector<aggregate_spec> aggregates;
  std::chrono::milliseconds allowed_lateness{0};
};

/// The operator a `window_plan` makes (Flink's `WindowOperator`): the calls
/// of `stream_operator` plus counters for the runtime's metrics. Single
/// threaded like every operator.
///
/// `process_batch` throws `std::logic_error` for a non-empty batch without
/// timestamps (a window needs event time). `process_watermark` ignores (and
/// does not forward) a watermark that is not above the current one. Firing
/// walks an end-ordered map of windows from the last fired end, so a
/// watermark costs O(log windows) plus sorting the keys of the windows it
/// fires and erasing the ones it cleans up, not a scan of all state.
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
/// Output rows: the key fields (input types), `window_start` and `window_end`
/// (timestamp, ms, end exclusive), then each aggregate in spec order. count
/// is int64; sum is int64 over int64 input and float64 over float64; min and
/// max keep the input type; avg is float64. Nulls are ignored by every
/// aggregate but count(*); an aggregate over no non-null value is null.
/// Each output row's event time is `window_end - 1`.
///
/// Semantics (Flink's `WindowOperator` with `EventTimeTrigger`): a window
/// fires when the watermark reaches `end - 1`; its state is dropped once the
/// watermark reaches `end - 1 + allowed_lateness`; a record for a window
/// already past that point is late for it; a record late for all its windows
/// is emitted unchanged on side output port 1 (the late stream); a record that
/// arrives for a window that has fired but is still within allowed lateness
/// re-fires that window with the full updated result. Results of one
/// watermark are emitted ordered by window end, then key bytes, as one batch
/// on the main output before the watermark is forwarded.
///
/// Batches: all rows of a batch see the watermark current before it. The
/// re-firings a batch causes are emitted after the whole batch is added, one
/// row per (key, window) with its final state, in the order of the rows that
/// first caused them; the batch's late rows go out as one batch on port 1.
/// With one row per batch this is exactly Flink's record-at-a-time output.
class window_plan {
public:
  /// Checks the spec: key fields exist; each aggregate call parses
  /// ("fn(expr)" or "count(*)") and its argument type-checks (sum and avg need
  /// a number); names are unique and don't clash with key or window fields.
  /// Errors carry `offset` into the aggregate's call text where applicable and
  /// name the aggregate in the message.
  [[nodiscard]] static expected<window_plan> make(const schema_ptr& input,
                                                  window_operator_spec spec);

  const schema_ptr& output_schema() const noexcept;
  const std::vector<std::size_t>& key_fields() const noexcept;

  /// A fresh operator for one subtask; it is a `window_operator` (see there
  /// for its counters).
  stream_operator_ptr make_operator() const;

  struct impl;

private:
  explicit window_plan(std::shared_ptr<const impl> p) : impl_(std::move(p)) {}
  std::shared_ptr<const impl> impl_;
};

} // namespace weir::window
