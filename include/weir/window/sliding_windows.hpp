// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/window/window_assigner.hpp"

#include <chrono>

namespace weir::window {

/// Puts each record into every event-time window of length `size` that
/// starts every `slide` (shifted by `offset` from the epoch) and contains it:
/// `ceil(size / slide)` windows when `slide` divides `size`, some of which
/// may start before the epoch (case 02). Flink's `SlidingEventTimeWindows`:
/// the last start is `window_start(ts, offset, slide)`, then step back by
/// `slide` while `start > ts - size`; windows are appended newest first.
class sliding_event_time_windows final : public window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `size > 0`,
  /// `slide > 0` and `|offset| < size`. (Flink asks `|offset| < slide`; an
  /// offset in `[slide, size)` aligns the windows exactly as `offset % slide`
  /// does, so weir accepts it.)
  [[nodiscard]] static expected<sliding_event_time_windows>
  make(std::chrono::milliseconds size, std::chrono::milliseconds slide,
       std::chrono::milliseconds offset = {});

  /// Appends the windows containing `ts`, newest first. O(size / slide).
  void assign(event_time ts, std::vector<time_window>& out) const override;
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;

  std::chrono::milliseconds size() const noexcept { return size_; }
  std::chrono::milliseconds slide() const noexcept { return slide_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }

private:
  sliding_event_time_windows(std::chrono::milliseconds size, std::chrono::milliseconds slide,
                             std::chrono::milliseconds offset) noexcept
    : size_(size), slide_(slide), offset_(offset) {}

  std::chrono::milliseconds size_;
  std::chrono::milliseconds slide_;
  std::chrono::milliseconds offset_;
};

/// As `sliding_event_time_windows`, in processing time (Flink's
/// `SlidingProcessingTimeWindows`): placed by the job clock's time at
/// arrival, fired when that clock reaches `end - 1`, never late, not flushed
/// at the end of input.
class sliding_processing_time_windows final : public window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `size > 0`,
  /// `slide > 0` and `|offset| < size` (see `sliding_event_time_windows`).
  [[nodiscard]] static expected<sliding_processing_time_windows>
  make(std::chrono::milliseconds size, std::chrono::milliseconds slide,
       std::chrono::milliseconds offset = {});

  void assign(event_time now, std::vector<time_window>& out) const override;
  bool is_event_time() const noexcept override { return false; }
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;

  std::chrono::milliseconds size() const noexcept { return size_; }
  std::chrono::milliseconds slide() const noexcept { return slide_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }

private:
  sliding_processing_time_windows(std::chrono::milliseconds size,
                                  std::chrono::milliseconds slide,
                                  std::chrono::milliseconds offset) noexcept
    : size_(size), slide_(slide), offset_(offset) {}

  std::chrono::milliseconds size_;
  std::chrono::milliseconds slide_;
  std::chrono::milliseconds offset_;
};

} // namespace weir::window
