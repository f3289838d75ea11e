// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/window/time_window.hpp"

#include <cstdint>
#include <optional>
#include <string>

namespace weir::window {

/// What a trigger decides for one (key, window) (Flink's `TriggerResult`).
enum class trigger_result : std::uint8_t {
  continue_,      ///< do nothing
  fire,           ///< emit the window's result, keep its contents
  purge,          ///< drop the contents without emitting
  fire_and_purge, ///< emit, then drop the contents
};

constexpr bool is_fire(trigger_result r) noexcept {
  return r == trigger_result::fire || r == trigger_result::fire_and_purge;
}
constexpr bool is_purge(trigger_result r) noexcept {
  return r == trigger_result::purge || r == trigger_result::fire_and_purge;
}

/// What a trigger may see and do for the (key, window) it is called for
/// (Flink's `Trigger.TriggerContext`). Timers are scoped to that key and
/// window; registering a timer that already exists is a no-op, and a timer
/// fires once, when the watermark (event time) or the job's processing-time
/// clock reaches its time (ms, inclusive).
///
/// Trigger state is one int64 per (key, window), absent until set (Flink's
/// partitioned state, restricted to what the built-in triggers need: a
/// counter). It lives in the window operator's keyed state and is
/// checkpointed with it.
class trigger_context {
public:
  virtual ~trigger_context() = default;

  /// The operator's current event-time watermark (ms; `min_watermark` at first).
  virtual event_time current_watermark() const = 0;
  /// The job clock's current processing time (ms).
  virtual event_time current_processing_time() const = 0;

  virtual void register_event_time_timer(event_time t) = 0;
  virtual void delete_event_time_timer(event_time t) = 0;
  virtual void register_processing_time_timer(event_time t) = 0;
  virtual void delete_processing_time_timer(event_time t) = 0;

  virtual std::optional<std::int64_t> state() const = 0;
  virtual void set_state(std::int64_t v) = 0;
  virtual void clear_state() = 0;
};

/// The context of `trigger::on_merge`: the window is the merge result, and
/// `merge_state` folds the trigger state of the windows merged into it
/// (Flink's `OnMergeContext.mergePartitionedState` on a reducing state).
class on_merge_context : public trigger_context {
public:
  /// Sets this window's state to the fold with `combine` of the present
  /// states of the merged windows and of this window, if any is present.
  virtual void merge_state(std::int64_t (*combine)(std::int64_t, std::int64_t)) = 0;
};

/// Decides when a window fires and when its contents are purged (Flink's
/// `Trigger`; Akidau et al., "The Dataflow Model", VLDB 2015, §2.3).
///
/// A trigger object holds no per-window state: it is shared by every key,
/// window and subtask, and keeps what it needs in its context. The window
/// operator calls `on_element` for every record added to a window (after the
/// record is added), `on_event_time` / `on_processing_time` when one of the
/// window's timers fires, `on_merge` when session windows merge, and `clear`
/// when the window is removed (the trigger must delete its timers and state).
class trigger {
public:
  virtual ~trigger() = default;

  /// A record with timestamp `ts` (ms; event time) was added to `w`.
  virtual trigger_result on_element(event_time ts, const time_window& w,
                                    trigger_context& ctx) const = 0;

  /// An event-time timer of `w` for `time` fired.
  virtual trigger_result on_event_time(event_time time, const time_window& w,
                                       trigger_context& ctx) const = 0;

  /// A processing-time timer of `w` for `time` fired.
  virtual trigger_result on_processing_time(event_time time, const time_window& w,
                                            trigger_context& ctx) const = 0;

  /// True when `on_element` does nothing but fire a window whose
  /// `max_timestamp()` the watermark has passed, or else register an
  /// event-time timer at `max_timestamp()` (Flink's `EventTimeTrigger`). The
  /// window operator then skips the call for later records of a window that
  /// already has contents and is not yet due: the timer is registered.
  virtual bool only_registers_window_end_timer() const noexcept { return false; }

  /// True when the trigger supports merging windows (`on_merge`).
  virtual bool can_merge() const noexcept { return false; }

  /// Windows were merged into `w`. Only called when `can_merge()`.
  virtual void on_merge(const time_window& w, on_merge_context& ctx) const {
    (void) w;
    (void) ctx;
  }

  /// `w` is being removed: delete its timers and trigger state.
  virtual void clear(const time_window& w, trigger_context& ctx) const = 0;

  /// A short description for messages, e.g. "count_trigger(3)".
  virtual std::string describe() const = 0;
};

} // namespace weir::window
