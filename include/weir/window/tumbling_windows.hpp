// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/window/window_assigner.hpp"

#include <chrono>

namespace weir::window {

/// Puts each record into exactly one fixed-size, non-overlapping event-time
/// window `[k*size + offset, (k+1)*size + offset)`, aligned to the Unix epoch
/// shifted by `offset` (negative allowed: `-8h` gives UTC+8 days; case 04).
/// The default trigger fires a window when the watermark reaches `end - 1`.
/// Flink's `TumblingEventTimeWindows` (Akidau et al., "The Dataflow Model",
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
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;

  std::chrono::milliseconds size() const noexcept { return size_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }

private:
  tumbling_event_time_windows(std::chrono::milliseconds size,
                              std::chrono::milliseconds offset) noexcept
    : size_(size), offset_(offset) {}

  std::chrono::milliseconds size_;
  std::chrono::milliseconds offset_;
};

/// As `tumbling_event_time_windows`, in processing time: a record goes to the
/// window containing the job clock's time when it arrives, and the default
/// trigger fires when that clock reaches `end - 1`. Windows are never late
/// and are not flushed at the end of input. Flink's
/// `TumblingProcessingTimeWindows`.
class tumbling_processing_time_windows final : public window_assigner {
public:
  /// Returns an assigner, or `errc::invalid_argument` unless `size > 0` and
  /// `|offset| < size`.
  [[nodiscard]] static expected<tumbling_processing_time_windows>
  make(std::chrono::milliseconds size, std::chrono::milliseconds offset = {});

  void assign(event_time now, std::vector<time_window>& out) const override;
  bool is_event_time() const noexcept override { return false; }
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override;

  std::chrono::milliseconds size() const noexcept { return size_; }
  std::chrono::milliseconds offset() const noexcept { return offset_; }

private:
  tumbling_processing_time_windows(std::chrono::milliseconds size,
                                   std::chrono::milliseconds offset) noexcept
    : size_(size), offset_(offset) {}

  std::chrono::milliseconds size_;
  std::chrono::milliseconds offset_;
};

} // namespace weir::window
