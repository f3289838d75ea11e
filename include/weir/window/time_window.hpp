// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <algorithm>
#include <cstdint>

namespace weir::window {

/// A half-open window `[start, end)` in ms (Flink's `TimeWindow`); its last
/// instant, `max_timestamp()`, is `end - 1`. Event-time and processing-time
/// windows use the same type; the global window (Flink's `GlobalWindow`) is
/// `global_window()`, spanning the whole int64 range.
struct time_window {
  event_time start = 0;
  event_time end = 0;

  /// The largest timestamp inside the window, `end - 1` (the global window's
  /// is `max_watermark - 1`, which nothing relies on: global windows never
  /// fire or clean up on time).
  event_time max_timestamp() const noexcept { return end - 1; }

  /// True when the two windows overlap or merely touch: `start <= o.end &&
  /// end >= o.start` (Flink's `TimeWindow.intersects`, inclusive at the
  /// boundary, so session windows exactly one gap apart merge; case 09).
  bool intersects(const time_window& o) const noexcept {
    return start <= o.end && end >= o.start;
  }

  /// The smallest window covering both (Flink's `TimeWindow.cover`).
  time_window cover(const time_window& o) const noexcept {
    return time_window{std::min(start, o.start), std::max(end, o.end)};
  }

  friend auto operator<=>(const time_window&, const time_window&) = default;
};

/// The one window of `global_windows`: `[min_watermark, max_watermark)`.
constexpr time_window global_window() noexcept {
  return time_window{min_watermark, max_watermark};
}

/// Start of the window of `size` (shifted by `offset`) containing `ts`:
/// `ts - floor_mod(ts - offset, size)` (Flink's
/// `TimeWindow.getWindowStartWithOffset`, with a floored modulo so that
/// pre-epoch timestamps land in the right window). Preconditions: `size > 0`,
/// `|offset| < size`, and `ts` at least `size` away from the ends of the
/// int64 range.
event_time window_start(event_time ts, std::int64_t offset, std::int64_t size) noexcept;

/// `window_start(ts, offset, size)` for a run of timestamps that mostly fall
/// in one window, as a batch's do: remembers the last window
/// `[start, start + size)` and takes the three divisions of `window_start`
/// only for a timestamp outside it. Same preconditions as `window_start`.
class window_start_cache {
public:
  window_start_cache(std::int64_t offset, std::int64_t size) noexcept
    : offset_(offset), size_(static_cast<std::uint64_t>(size)) {}

  event_time operator()(event_time ts) noexcept {
    // ts - start_ as unsigned: exact when ts >= start_, whatever their signs.
    if (known_ && ts >= start_
        && static_cast<std::uint64_t>(ts) - static_cast<std::uint64_t>(start_) < size_)
      return start_;
    start_ = window_start(ts, offset_, static_cast<std::int64_t>(size_));
    known_ = true;
    return start_;
  }

private:
  std::int64_t offset_;
  std::uint64_t size_;
  event_time start_ = 0;
  bool known_ = false;
};

} // namespace weir::window
