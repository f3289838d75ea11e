// SPDX-License-Identifier: Apache-2.0
#include "weir/window/evictor.hpp"
#include "weir/window/triggers.hpp"

#include <string>

namespace weir::window {

// -- event time -------------------------------------------------------------------

trigger_result event_time_trigger::on_element(event_time, const time_window& w,
                                              trigger_context& ctx) const {
  if (w.max_timestamp() <= ctx.current_watermark())
    return trigger_result::fire; // late, but within allowed lateness
  ctx.register_event_time_timer(w.max_timestamp());
  return trigger_result::continue_;
}

trigger_result event_time_trigger::on_event_time(event_time time, const time_window& w,
                                                 trigger_context&) const {
  return time == w.max_timestamp() ? trigger_result::fire : trigger_result::continue_;
}

trigger_result event_time_trigger::on_processing_time(event_time, const time_window&,
                                                      trigger_context&) const {
  return trigger_result::continue_;
}

void event_time_trigger::on_merge(const time_window& w, on_merge_context& ctx) const {
  if (w.max_timestamp() > ctx.current_watermark())
    ctx.register_event_time_timer(w.max_timestamp());
}

void event_time_trigger::clear(const time_window& w, trigger_context& ctx) const {
  ctx.delete_event_time_timer(w.max_timestamp());
}

// -- processing time ----------------------------------------------------------------

trigger_result processing_time_trigger::on_element(event_time, const time_window& w,
                                                   trigger_context& ctx) const {
  ctx.register_processing_time_timer(w.max_timestamp());
  return trigger_result::continue_;
}

trigger_result processing_time_trigger::on_event_time(event_time, const time_window&,
                                                      trigger_context&) const {
  return trigger_result::continue_;
}

trigger_result processing_time_trigger::on_processing_time(event_time, const time_window&,
                                                           trigger_context&) const {
  return trigger_result::fire;
}

void processing_time_trigger::on_merge(const time_window& w, on_merge_context& ctx) const {
  if (w.max_timestamp() > ctx.current_processing_time())
    ctx.register_processing_time_timer(w.max_timestamp());
}

void processing_time_trigger::clear(const time_window& w, trigger_context& ctx) const {
  ctx.delete_processing_time_timer(w.max_timestamp());
}

// -- count ----------------------------------------------------------------------------

expected<count_trigger> count_trigger::make(std::int64_t count) {
  if (count < 1)
    return make_error(errc::invalid_argument,
                      "count trigger needs a count of at least 1, got " + std::to_string(count));
  return count_trigger{count};
}

trigger_result count_trigger::on_element(event_time, const time_window&,
                                         trigger_context& ctx) const {
  const auto n = ctx.state().value_or(0) + 1;
  if (n >= count_) {
    ctx.clear_state();
    return trigger_result::fire;
  }
  ctx.set_state(n);
  return trigger_result::continue_;
}

trigger_result count_trigger::on_event_time(event_time, const time_window&,
                                            trigger_context&) const {
  return trigger_result::continue_;
}

trigger_result count_trigger::on_processing_time(event_time, const time_window&,
                                                 trigger_context&) const {
  return trigger_result::continue_;
}

void count_trigger::on_merge(const time_window&, on_merge_context& ctx) const {
  ctx.merge_state([](std::int64_t a, std::int64_t b) { return a + b; });
}

void count_trigger::clear(const time_window&, trigger_context& ctx) const {
  ctx.clear_state();
}

std::string count_trigger::describe() const {
  return "count_trigger(" + std::to_string(count_) + ")";
}

// -- purging --------------------------------------------------------------------------

namespace {

trigger_result purged(trigger_result r) noexcept {
  return is_fire(r) ? trigger_result::fire_and_purge : r;
}

} // namespace

trigger_result purging_trigger::on_element(event_time ts, const time_window& w,
                                           trigger_context& ctx) const {
  return purged(nested_->on_element(ts, w, ctx));
}

trigger_result purging_trigger::on_event_time(event_time time, const time_window& w,
                                              trigger_context& ctx) const {
  return purged(nested_->on_event_time(time, w, ctx));
}

trigger_result purging_trigger::on_processing_time(event_time time, const time_window& w,
                                                   trigger_context& ctx) const {
  return purged(nested_->on_processing_time(time, w, ctx));
}

void purging_trigger::on_merge(const time_window& w, on_merge_context& ctx) const {
  nested_->on_merge(w, ctx);
}

void purging_trigger::clear(const time_window& w, trigger_context& ctx) const {
  nested_->clear(w, ctx);
}

std::string purging_trigger::describe() const {
  return "purging_trigger(" + nested_->describe() + ")";
}

// -- count evictor ----------------------------------------------------------------------

expected<count_evictor> count_evictor::make(std::int64_t max_count, bool do_evict_after) {
  if (max_count < 1)
    return make_error(errc::invalid_argument,
                      "count evictor needs a count of at least 1, got "
                        + std::to_string(max_count));
  return count_evictor{max_count, do_evict_after};
}

void count_evictor::evict(std::span<const event_time> timestamps,
                          std::vector<bool>& evict) const {
  const auto n = static_cast<std::int64_t>(timestamps.size());
  for (std::int64_t i = 0; i < n - max_count_; ++i)
    evict[static_cast<std::size_t>(i)] = true;
}

void count_evictor::evict_before(std::span<const event_time> timestamps, const time_window&,
                                 std::vector<bool>& out) const {
  if (!after_)
    evict(timestamps, out);
}

void count_evictor::evict_after(std::span<const event_time> timestamps, const time_window&,
                                std::vector<bool>& out) const {
  if (after_)
    evict(timestamps, out);
}

std::string count_evictor::describe() const {
  return "count_evictor(" + std::to_string(max_count_) + ")";
}

} // namespace weir::window
