// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/window/time_window.hpp"
#include "weir/window/trigger.hpp"

#include <memory>
#include <string>
#include <vector>

namespace weir::window {

class merging_window_assigner;

/// Assigns each record to the windows that contain it (Flink's
/// `WindowAssigner`).
///
/// An event-time assigner places a record by its event timestamp; its
/// windows are subject to watermarks and allowed lateness. A processing-time
/// assigner places a record by the job clock's processing time when the
/// record arrives; its windows are never late. Global windows are neither
/// (Flink's `GlobalWindows.isEventTime()` is false).
class window_assigner {
public:
  virtual ~window_assigner() = default;

  /// Appends every window containing `ts` to `out` (in no particular order):
  /// `ts` is the record's event time (ms) for an event-time assigner and the
  /// current processing time (ms) for the others.
  virtual void assign(event_time ts, std::vector<time_window>& out) const = 0;

  /// True when windows live in event time (lateness, watermark cleanup).
  virtual bool is_event_time() const noexcept { return true; }

  /// True for `global_windows`: results are numbered firings
  /// (`{keys..., fire, aggregates...}`) rather than time ranges.
  virtual bool is_global() const noexcept { return false; }

  /// The trigger used when the operator names none (Flink's
  /// `getDefaultTrigger`): event time, processing time, or never.
  virtual std::shared_ptr<const trigger> default_trigger() const = 0;

  /// Non-null for an assigner whose windows merge (session windows).
  virtual const merging_window_assigner* as_merging() const noexcept { return nullptr; }

  /// A short description for messages, e.g. "tumbling_event_time_windows(10000ms)".
  virtual std::string describe() const = 0;
};

/// An assigner whose windows merge when they intersect (Flink's
/// `MergingWindowAssigner`; the window operator tracks merges per key like
/// Flink's `MergingWindowSet`).
class merging_window_assigner : public window_assigner {
public:
  /// One merge: `merged` (two or more windows of the input) become `result`.
  struct merge_group {
    time_window result;
    std::vector<time_window> merged;
  };

  /// Groups `windows` into merges; only groups of two or more are appended
  /// to `out`. Every window appears in at most one group.
  virtual void merge_windows(std::vector<time_window> windows,
                             std::vector<merge_group>& out) const = 0;

  const merging_window_assigner* as_merging() const noexcept override { return this; }
};

} // namespace weir::window
