// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/window/window_assigner.hpp"

#include <chrono>

namespace weir::window {

/// Event-time session windows with a static gap (Flink's
/// `EventTimeSessionWindows.withGap`). A record at `ts` opens the window
/// `[ts, ts + gap)`; windows of one key that intersect or touch
/// (`a.start <= b.end && a.end >= b.start`, Flink's `TimeWindow.intersects`)
/// merge into their cover, so records exactly `gap` apart share a session
/// (case 09). A session's end is its last record + gap; it fires when the
/// watermark reaches `end - 1`. A record that is late on its own but merges
/// into a live session (within allowed lateness) is accepted and, if the
/// merged session is already past the watermark, re-fires it at once.
class event_time_session_windows final : public merging_window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `gap > 0`.
  [[nodiscard]] static expected<event_time_session_windows>
  make(std::chrono::milliseconds gap);

  /// Appends `[ts, ts + gap)` (the end saturates at `max_watermark`).
  void assign(event_time ts, std::vector<time_window>& out) const override;
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;
  void merge_windows(std::vector<time_window> windows,
                     std::vector<merge_group>& out) const override;

  std::chrono::milliseconds gap() const noexcept { return gap_; }

private:
  explicit event_time_session_windows(std::chrono::milliseconds gap) noexcept : gap_(gap) {}
  std::chrono::milliseconds gap_;
};

/// Processing-time session windows with a static gap (Flink's
/// `ProcessingTimeSessionWindows.withGap`): as `event_time_session_windows`
/// with the job clock's time at arrival in place of the event time.
class processing_time_session_windows final : public merging_window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `gap > 0`.
  [[nodiscard]] static expected<processing_time_session_windows>
  make(std::chrono::milliseconds gap);

  void assign(event_time now, std::vector<time_window>& out) const override;
  bool is_event_time() const noexcept override { return false; }
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;
  void merge_windows(std::vector<time_window> windows,
                     std::vector<merge_group>& out) const override;

  std::chrono::milliseconds gap() const noexcept { return gap_; }

private:
  explicit processing_time_session_windows(std::chrono::milliseconds gap) noexcept
    : gap_(gap) {}
  std::chrono::milliseconds gap_;
};

/// Flink's `TimeWindow.mergeWindows`: sorts `windows` by start and merges
/// runs of intersecting (or touching) windows into their cover; appends each
/// run of two or more to `out`.
void merge_intersecting_windows(std::vector<time_window> windows,
                                std::vector<merging_window_assigner::merge_group>& out);

} // namespace weir::window
