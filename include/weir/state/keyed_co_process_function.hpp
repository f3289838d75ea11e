// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/state/keyed_process_function.hpp"

#include <cstddef>
#include <functional>
#include <memory>
#include <vector>

namespace weir::state {

/// A user function over two connected keyed streams with keyed state and
/// timers shared by both inputs (Flink's `KeyedCoProcessFunction`): rows of
/// either input with equal keys reach the same instance with the same
/// current key, so state written for a key by `process_element2` is read by
/// `process_element1`, and a timer registered from either input fires in
/// `on_timer` with that key. One instance per subtask; calls come from the
/// subtask's thread, in order: `open`, then `process_element1/2` per row and
/// `on_timer` per fired timer, then `close`. Event-time timers fire as the
/// operator's watermark (the minimum of the two inputs') passes them, before
/// the watermark is forwarded. State lives in the global namespace of the
/// subtask's `keyed_state_backend`, is snapshotted with each checkpoint and
/// restored by key group (at any parallelism); register handles in `open`.
/// A function may throw to fail its subtask.
///
/// The context is the one-input function's (`keyed_process_function::
/// context`): `key()`, `timestamp()`, `current_watermark()`, `state()`,
/// timer registration.
class keyed_co_process_function {
public:
  using context = keyed_process_function::context;

  virtual ~keyed_co_process_function() = default;

  /// Called once before any element and before state is restored;
  /// register state handles here.
  virtual void open(context& ctx) { (void) ctx; }

  /// A row of input 1, with the current key set to its key (input 1's key
  /// fields).
  virtual void process_element1(const row_view& row, context& ctx, row_collector& out) = 0;

  /// A row of input 2, with the current key set to its key (input 2's key
  /// fields).
  virtual void process_element2(const row_view& row, context& ctx, row_collector& out) = 0;

  /// A fired timer (registered from either input), with the current key set
  /// to the timer's; rows emitted here carry the timer's time for an
  /// event-time timer and none for a processing-time one.
  virtual void on_timer(event_time ts, time_domain domain, context& ctx, row_collector& out) {
    (void) ts;
    (void) domain;
    (void) ctx;
    (void) out;
  }

  /// Called once after the end of both inputs (after the final watermark's
  /// timers).
  virtual void close() {}
};

using keyed_co_process_function_factory =
  std::function<std::unique_ptr<keyed_co_process_function>()>;

/// The operator that runs a `keyed_co_process_function` for one subtask
/// (Flink's `KeyedCoProcessOperator`): keys rows of input 1 by `key_fields1`
/// and rows of input 2 by `key_fields2` (indices into each input's schema,
/// pairwise of the same types, as `connected_streams::key_by` checks) into
/// one `keyed_state_backend` for the subtask's key groups; fires timers as
/// the keyed process operator does; snapshots and restores the backend.
/// `restore_state` throws std::runtime_error on corrupt state. Output
/// batches have `output_schema`.
std::unique_ptr<two_input_stream_operator>
make_keyed_co_process_operator(std::vector<std::size_t> key_fields1,
                               std::vector<std::size_t> key_fields2, schema_ptr output_schema,
                               std::unique_ptr<keyed_co_process_function> fn);

} // namespace weir::state
