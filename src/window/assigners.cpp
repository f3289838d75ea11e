// SPDX-License-Identifier: Apache-2.0
#include "weir/window/global_windows.hpp"
#include "weir/window/session_windows.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/triggers.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <algorithm>
#include <string>

namespace weir::window {

event_time window_start(event_time ts, std::int64_t offset, std::int64_t size) noexcept {
  // Floored modulo keeps pre-epoch timestamps in the right window (C++'s %
  // truncates towards zero: -1 % 10 == -1). Reducing both operands first
  // keeps `ts - offset` from overflowing near the ends of the int64 range.
  std::int64_t r = (ts % size - offset % size) % size;
  if (r < 0)
    r += size;
  return ts - r;
}

namespace {

using std::chrono::milliseconds;

std::string ms(milliseconds d) {
  return std::to_string(d.count()) + "ms";
}

error check_size_offset(std::string_view what, milliseconds size, milliseconds offset) {
  if (size.count() <= 0)
    return make_error(errc::invalid_argument,
                      std::string{what} + " window size must be positive, got " + ms(size));
  if (offset.count() <= -size.count() || offset.count() >= size.count())
    return make_error(errc::invalid_argument,
                      std::string{what} + " window offset must satisfy |offset| < size, got offset "
                        + ms(offset) + " for size " + ms(size));
  return error{};
}

error check_sliding(std::string_view what, milliseconds size, milliseconds slide,
                    milliseconds offset) {
  if (size.count() <= 0)
    return make_error(errc::invalid_argument,
                      std::string{what} + " window size must be positive, got " + ms(size));
  if (slide.count() <= 0)
    return make_error(errc::invalid_argument,
                      std::string{what} + " window slide must be positive, got " + ms(slide));
  return check_size_offset(what, size, offset);
}

bool failed(const error& e) {
  return !e.message.empty();
}

event_time saturating_add(event_time a, std::int64_t b) noexcept {
  event_time out;
  if (__builtin_add_overflow(a, b, &out))
    return b > 0 ? max_watermark : min_watermark;
  return out;
}

void assign_tumbling(event_time ts, std::int64_t size, std::int64_t offset,
                     std::vector<time_window>& out) {
  auto start = window_start(ts, offset, size);
  out.push_back(time_window{start, saturating_add(start, size)});
}

// Flink's SlidingEventTimeWindows.assignWindows: from the last window start
// at or before `ts`, step back by `slide` while the window still holds ts.
void assign_sliding(event_time ts, std::int64_t size, std::int64_t slide,
                    std::int64_t offset, std::vector<time_window>& out) {
  const auto last_start = window_start(ts, offset, slide);
  for (auto start = last_start; start > ts - size; start -= slide)
    out.push_back(time_window{start, saturating_add(start, size)});
}

template <class Self>
std::shared_ptr<const trigger> shared_trigger() {
  static const auto t = std::make_shared<const Self>();
  return t;
}

} // namespace

// -- tumbling -------------------------------------------------------------------

expected<tumbling_event_time_windows>
tumbling_event_time_windows::make(milliseconds size, milliseconds offset) {
  if (auto e = check_size_offset("tumbling", size, offset); failed(e))
    return e;
  return tumbling_event_time_windows{size, offset};
}

void tumbling_event_time_windows::assign(event_time ts, std::vector<time_window>& out) const {
  assign_tumbling(ts, size_.count(), offset_.count(), out);
}

std::shared_ptr<const trigger> tumbling_event_time_windows::default_trigger() const {
  return shared_trigger<event_time_trigger>();
}

std::string tumbling_event_time_windows::describe() const {
  return "tumbling_event_time_windows(" + ms(size_) + ", offset " + ms(offset_) + ")";
}

expected<tumbling_processing_time_windows>
tumbling_processing_time_windows::make(milliseconds size, milliseconds offset) {
  if (auto e = check_size_offset("tumbling", size, offset); failed(e))
    return e;
  return tumbling_processing_time_windows{size, offset};
}

void tumbling_processing_time_windows::assign(event_time now,
                                              std::vector<time_window>& out) const {
  assign_tumbling(now, size_.count(), offset_.count(), out);
}

std::shared_ptr<const trigger> tumbling_processing_time_windows::default_trigger() const {
  return shared_trigger<processing_time_trigger>();
}

std::string tumbling_processing_time_windows::describe() const {
  return "tumbling_processing_time_windows(" + ms(size_) + ", offset " + ms(offset_) + ")";
}

// -- sliding --------------------------------------------------------------------

expected<sliding_event_time_windows>
sliding_event_time_windows::make(milliseconds size, milliseconds slide, milliseconds offset) {
  if (auto e = check_sliding("sliding", size, slide, offset); failed(e))
    return e;
  return sliding_event_time_windows{size, slide, offset};
}

void sliding_event_time_windows::assign(event_time ts, std::vector<time_window>& out) const {
  assign_sliding(ts, size_.count(), slide_.count(), offset_.count(), out);
}

std::shared_ptr<const trigger> sliding_event_time_windows::default_trigger() const {
  return shared_trigger<event_time_trigger>();
}

std::string sliding_event_time_windows::describe() const {
  return "sliding_event_time_windows(" + ms(size_) + ", slide " + ms(slide_) + ", offset "
         + ms(offset_) + ")";
}

expected<sliding_processing_time_windows>
sliding_processing_time_windows::make(milliseconds size, milliseconds slide,
                                      milliseconds offset) {
  if (auto e = check_sliding("sliding", size, slide, offset); failed(e))
    return e;
  return sliding_processing_time_windows{size, slide, offset};
}

void sliding_processing_time_windows::assign(event_time now,
                                             std::vector<time_window>& out) const {
  assign_sliding(now, size_.count(), slide_.count(), offset_.count(), out);
}

std::shared_ptr<const trigger> sliding_processing_time_windows::default_trigger() const {
  return shared_trigger<processing_time_trigger>();
}

std::string sliding_processing_time_windows::describe() const {
  return "sliding_processing_time_windows(" + ms(size_) + ", slide " + ms(slide_)
         + ", offset " + ms(offset_) + ")";
}

// -- sessions -------------------------------------------------------------------

void merge_intersecting_windows(std::vector<time_window> windows,
                                std::vector<merging_window_assigner::merge_group>& out) {
  std::sort(windows.begin(), windows.end());
  merging_window_assigner::merge_group current;
  auto flush = [&] {
    if (current.merged.size() > 1)
      out.push_back(std::move(current));
    current = {};
  };
  for (const auto& w : windows) {
    if (!current.merged.empty() && current.result.intersects(w)) {
      current.result = current.result.cover(w);
      current.merged.push_back(w);
      continue;
    }
    flush();
    current.result = w;
    current.merged.push_back(w);
  }
  flush();
}

expected<event_time_session_windows> event_time_session_windows::make(milliseconds gap) {
  if (gap.count() <= 0)
    return make_error(errc::invalid_argument,
                      "session window gap must be positive, got " + ms(gap));
  return event_time_session_windows{gap};
}

void event_time_session_windows::assign(event_time ts, std::vector<time_window>& out) const {
  out.push_back(time_window{ts, saturating_add(ts, gap_.count())});
}

std::shared_ptr<const trigger> event_time_session_windows::default_trigger() const {
  return shared_trigger<event_time_trigger>();
}

std::string event_time_session_windows::describe() const {
  return "event_time_session_windows(gap " + ms(gap_) + ")";
}

void event_time_session_windows::merge_windows(std::vector<time_window> windows,
                                               std::vector<merge_group>& out) const {
  merge_intersecting_windows(std::move(windows), out);
}

expected<processing_time_session_windows>
processing_time_session_windows::make(milliseconds gap) {
  if (gap.count() <= 0)
    return make_error(errc::invalid_argument,
                      "session window gap must be positive, got " + ms(gap));
  return processing_time_session_windows{gap};
}

void processing_time_session_windows::assign(event_time now,
                                             std::vector<time_window>& out) const {
  out.push_back(time_window{now, saturating_add(now, gap_.count())});
}

std::shared_ptr<const trigger> processing_time_session_windows::default_trigger() const {
  return shared_trigger<processing_time_trigger>();
}

std::string processing_time_session_windows::describe() const {
  return "processing_time_session_windows(gap " + ms(gap_) + ")";
}

void processing_time_session_windows::merge_windows(std::vector<time_window> windows,
                                                    std::vector<merge_group>& out) const {
  merge_intersecting_windows(std::move(windows), out);
}

// -- global ---------------------------------------------------------------------

void global_windows::assign(event_time, std::vector<time_window>& out) const {
  out.push_back(global_window());
}

std::shared_ptr<const trigger> global_windows::default_trigger() const {
  return shared_trigger<never_trigger>();
}

} // namespace weir::window
