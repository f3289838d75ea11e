// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "internal/window_operator_base.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weir::window {

/// Aggregates each (key, window) on its own, as triggers and evictors say:
/// Flink's `WindowOperator`, and its `EvictingWindowOperator` when an
/// evictor is set (Akidau et al., "The Dataflow Model", VLDB 2015).
///
/// Handles every window assigner whose windows do not merge (tumbling and
/// sliding in event or processing time, global windows) with any trigger,
/// allowed lateness (late firings with the full updated result), evictors,
/// and the windows sliced aggregation does not take. Each record is added
/// to every window the assigner gives it that is not past its cleanup time
/// (`end - 1 + allowed_lateness` in event time); the trigger then decides.
/// A record whose windows are all past their cleanup time is late: counted
/// and emitted on side output port 1. A record the assigner gives no window
/// at all (sliding windows whose slide exceeds their size leave gaps) is not
/// late: it is dropped and counted in `between_windows()`, as Flink's
/// `WindowOperator` drops it.
///
/// State, keyed by the record's key with the window as namespace (see
/// `internal::encode_window`): "window-contents" (one accumulator per
/// aggregate) or, with an evictor, "window-rows" (the buffered records);
/// "window-trigger" (the trigger's value); "window-fires" (firing numbers of
/// global windows); and the timers: the trigger's and one cleanup timer per
/// window (event time, or processing time for processing-time windows; none
/// for global windows) that drops all of the window's state.
///
/// Cost per record: one state lookup per window it belongs to, and the
/// trigger's timers unless the window already held contents and the
/// trigger only registers the end-of-window timer; per watermark: O(log
/// timers) per fired timer, timers firing in (time, key bytes, window) order.
class per_window_operator : public internal::window_operator_base {
public:
  explicit per_window_operator(std::shared_ptr<const window_plan::impl> plan);

  /// Throws `std::logic_error` for a non-empty batch without timestamps
  /// when the windows are in event time.
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;
  void process_watermark(event_time wm, output_collector& out) override;
  void on_processing_time(event_time now, output_collector& out) override;
  /// Logs how many records fell between windows, if any.
  void finish(output_collector& out) override;

  /// Records the assigner gave no window (event time only; see above).
  std::uint64_t between_windows() const noexcept { return between_windows_; }

protected:
  /// `may_skip_trigger`: a record added to a window that already has
  /// contents, and is not yet due, need not call a trigger that only
  /// registers the end-of-window timer (see `add_to_window`).
  per_window_operator(std::shared_ptr<const window_plan::impl> plan,
                      bool may_skip_trigger);

  void register_states() override;

  /// Flink's `WindowOperator.processElement` for one row (the current key
  /// is set). `at` places the row (event or processing time), `ts` is its
  /// event time. Returns false when the row was late for every window.
  virtual bool process_row(const record_batch& in, const std::vector<column>& args,
                           std::uint32_t row, std::uint64_t seq, event_time at,
                           event_time ts);

  /// Flink's `WindowOperator.onEventTime` / `onProcessingTime`; the backend
  /// set the timer's key and namespace.
  virtual void on_timer(event_time t, bool event_time_timer);

  /// The trigger's decision on timer `t` of window `w` (contents in
  /// `state_window`), then the window's cleanup when `t` is its cleanup
  /// time. Returns whether it cleaned up.
  bool fire_timer(event_time t, bool event_time_timer, const time_window& w,
                  const time_window& state_window);

  /// Adds the row to `state_window`'s contents and asks the trigger about
  /// `actual` (the two differ for merged session windows).
  void add_to_window(const record_batch& in, const std::vector<column>& args,
                     std::uint32_t row, std::uint64_t seq, event_time ts,
                     const time_window& state_window, const time_window& actual);

  void set_namespace(const time_window& w) {
    // Reuses the buffer: no allocation per call.
    internal::encode_window_into(ns_scratch_, w);
    backend_->set_current_namespace(ns_scratch_);
  }

  // Flink's WindowOperator.cleanupTime: for event time, max_timestamp +
  // allowed_lateness (saturating); otherwise max_timestamp.
  event_time cleanup_time(const time_window& w) const noexcept {
    if (plan_->assigner->is_event_time())
      return internal::saturating_add(w.max_timestamp(), plan_->allowed_lateness);
    return w.max_timestamp();
  }

  bool is_window_late(const time_window& w) const noexcept {
    return plan_->assigner->is_event_time()
           && cleanup_time(w) <= backend_->current_watermark();
  }
  void delete_cleanup_timer(const time_window& w);

  // -- trigger context ----------------------------------------------------------

  class context final : public on_merge_context {
  public:
    context(per_window_operator& op, const time_window& w,
            const std::vector<time_window>* merged = nullptr)
      : op_(op), window_(w), merged_(merged) {}

    event_time current_watermark() const override;
    event_time current_processing_time() const override;
    void register_event_time_timer(event_time t) override;
    void delete_event_time_timer(event_time t) override;
    void register_processing_time_timer(event_time t) override;
    void delete_processing_time_timer(event_time t) override;
    std::optional<std::int64_t> state() const override;
    void set_state(std::int64_t v) override;
    void clear_state() override;
    void merge_state(std::int64_t (*combine)(std::int64_t, std::int64_t)) override;

  private:
    per_window_operator& op_;
    time_window window_;
    const std::vector<time_window>* merged_;
  };

  state::list_state<internal::buffered_row> rows_;
  state::value_state<std::int64_t> trigger_state_;
  state::value_state<std::int64_t> fires_;
  std::vector<time_window> assigned_; ///< process_row's scratch

private:
  void register_cleanup_timer(const time_window& w);
  void apply(trigger_result r, const time_window& actual,
             const time_window& state_window);
  void clear_all_state(const time_window& w, const time_window& state_window);
  void emit(const time_window& actual, const time_window& state_window);
  bool fold_buffered(const time_window& w);

  const bool may_skip_trigger_;

  // Scratch reused across rows and batches.
  std::string ns_scratch_;
  std::vector<std::uint32_t> late_rows_;
  std::vector<event_time> stamps_;
  std::vector<internal::accumulator> fold_;

private:
  std::uint64_t between_windows_ = 0;
};

} // namespace weir::window
