// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <cstddef>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace weir {
class row_view; // include/weir/api/job.hpp
} // namespace weir

namespace weir::state {

/// Where a `keyed_process_function` emits rows of its declared output
/// schema.
class row_collector {
public:
  virtual ~row_collector() = default;

  /// Emits one row: one value per output field, in schema order (monostate
  /// = null; int64 for timestamps). Its event time is the element's
  /// timestamp, or the timer's for an event-time timer; rows from a
  /// processing-time timer or from elements without event time carry none.
  /// Throws std::invalid_argument when the values do not match the schema
  /// (a bug in the function; fails the subtask).
  void emit(std::vector<value> row) { emit_row(std::move(row), std::nullopt); }
  void emit(std::initializer_list<value> row) { emit_row(std::vector<value>(row), std::nullopt); }

  /// Emits one row with event time `ts` (ms).
  void emit_at(event_time ts, std::vector<value> row) { emit_row(std::move(row), ts); }

protected:
  /// `ts` = nullopt: the default timestamp described at `emit`.
  virtual void emit_row(std::vector<value> row, std::optional<event_time> ts) = 0;
};

/// A user function over a keyed stream with keyed state and timers (Flink's
/// `KeyedProcessFunction`). One instance per subtask; its calls come from
/// the subtask's thread, in order: `open`, then `process_element` per row
/// and `on_timer` per fired timer, then `close`. State lives in the global
/// namespace of the subtask's `keyed_state_backend`; register handles in
/// `open` and keep them as members. A function may throw to fail its
/// subtask.
class keyed_process_function {
public:
  /// What a function sees besides the row: key, time, state and timers
  /// (Flink's `KeyedProcessFunction.Context` / `OnTimerContext`).
  class context {
  public:
    virtual ~context() = default;

    /// The current key as `weir::encode_key` bytes (empty in `open`).
    virtual std::string_view current_key() const = 0;
    /// The current key's field values, in `key_by` order (empty in `open`).
    virtual const std::vector<value>& key() const = 0;
    /// Event time (ms) of the element being processed, or the timestamp
    /// of the firing timer (both domains); nullopt for an element without
    /// event time and in `open`.
    virtual std::optional<event_time> timestamp() const = 0;
    /// The time domain of the firing timer (in `on_timer` only).
    virtual std::optional<time_domain> timer_domain() const = 0;
    /// The subtask's current event-time watermark (ms).
    virtual event_time current_watermark() const = 0;
    /// The subtask's last known processing time (ms), min_watermark before any.
    virtual event_time current_processing_time() const = 0;
    /// The backend: obtain state handles here (`get_value_state<T>(...)`).
    virtual keyed_state_backend& state() = 0;
    /// Operator name, subtask index and parallelism.
    virtual const operator_context& operator_info() const = 0;

    /// Registers an event-time timer at `ts` for the current key; it fires
    /// once the watermark reaches `ts` (deduplicated per key and `ts`).
    void register_event_time_timer(event_time ts) { state().register_event_time_timer(ts); }
    void delete_event_time_timer(event_time ts) { state().delete_event_time_timer(ts); }
    /// Registers a processing-time timer at `ts` for the current key.
    void register_processing_time_timer(event_time ts) {
      state().register_processing_time_timer(ts);
    }
    void delete_processing_time_timer(event_time ts) {
      state().delete_processing_time_timer(ts);
    }
  };

  virtual ~keyed_process_function() = default;

  /// Called once before any element and before state is restored;
  /// register state handles here.
  virtual void open(context& ctx) { (void) ctx; }

  /// Called for each input row with the current key set to the row's key.
  virtual void process_element(const row_view& row, context& ctx, row_collector& out) = 0;

  /// Called for each fired timer with the current key set to the timer's.
  virtual void on_timer(event_time ts, time_domain domain, context& ctx, row_collector& out) {
    (void) ts;
    (void) domain;
    (void) ctx;
    (void) out;
  }

  /// Called once after the end of input (after the final watermark's timers).
  virtual void close() {}
};

using keyed_process_function_factory = std::function<std::unique_ptr<keyed_process_function>()>;

/// The operator that runs a `keyed_process_function` for one subtask
/// (Flink's `KeyedProcessOperator`): it owns a `keyed_state_backend` for the
/// subtask's key-group range (from `operator_context`), keys each input row
/// by `key_fields` (indices into the input schema), fires event-time timers
/// on `process_watermark` before forwarding the watermark, processing-time
/// timers on `on_processing_time`, and snapshots / restores its backend
/// (`operator_snapshot::keyed_state`; restored blobs by key group).
/// `restore_state` fails the subtask (throws std::runtime_error) on corrupt
/// state. Output batches have `output_schema`.
stream_operator_ptr make_keyed_process_operator(std::vector<std::size_t> key_fields,
                                                schema_ptr output_schema,
                                                std::unique_ptr<keyed_process_function> fn);

/// Decodes bytes of `weir::encode_key` back into values (int64 for int64
/// and timestamp keys). Errors: `errc::parse_error` for malformed bytes.
[[nodiscard]] expected<std::vector<value>> decode_key(std::string_view encoded_key);

} // namespace weir::state
