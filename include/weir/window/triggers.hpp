// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/window/trigger.hpp"

#include <cstdint>
#include <memory>
#include <string>

namespace weir::window {

/// Fires a window once the watermark reaches its `max_timestamp()` (`end - 1`),
/// and again at once for every record added while the watermark is already
/// past it (a late firing within allowed lateness). Flink's
/// `EventTimeTrigger`; the default trigger of event-time assigners.
class event_time_trigger final : public trigger {
public:
  trigger_result on_element(event_time ts, const time_window& w,
                            trigger_context& ctx) const override;
  trigger_result on_event_time(event_time time, const time_window& w,
                               trigger_context& ctx) const override;
  trigger_result on_processing_time(event_time time, const time_window& w,
                                    trigger_context& ctx) const override;
  bool only_registers_window_end_timer() const noexcept override { return true; }
  bool can_merge() const noexcept override { return true; }
  /// Registers a timer for the merged window's end - 1 unless the watermark
  /// is already past it (then `on_element` fires it, so a timer would fire
  /// twice).
  void on_merge(const time_window& w, on_merge_context& ctx) const override;
  void clear(const time_window& w, trigger_context& ctx) const override;
  std::string describe() const override { return "event_time_trigger"; }
};

/// Fires a window when the job's processing-time clock reaches its
/// `max_timestamp()` (`end - 1`). Flink's `ProcessingTimeTrigger`; the
/// default trigger of processing-time assigners.
class processing_time_trigger final : public trigger {
public:
  trigger_result on_element(event_time ts, const time_window& w,
                            trigger_context& ctx) const override;
  trigger_result on_event_time(event_time time, const time_window& w,
                               trigger_context& ctx) const override;
  trigger_result on_processing_time(event_time time, const time_window& w,
                                    trigger_context& ctx) const override;
  bool can_merge() const noexcept override { return true; }
  void on_merge(const time_window& w, on_merge_context& ctx) const override;
  void clear(const time_window& w, trigger_context& ctx) const override;
  std::string describe() const override { return "processing_time_trigger"; }
};

/// Fires (without purging) every `count`-th record of a (key, window): it
/// counts records in its state and resets the count when it fires, so a
/// window that is not purged re-emits its whole, growing contents (case 13).
/// Ignores time entirely. Flink's `CountTrigger`; merging windows add their
/// counts.
class count_trigger final : public trigger {
public:
  /// A trigger for `count >= 1`, else `errc::invalid_argument`.
  [[nodiscard]] static expected<count_trigger> make(std::int64_t count);

  trigger_result on_element(event_time ts, const time_window& w,
                            trigger_context& ctx) const override;
  trigger_result on_event_time(event_time time, const time_window& w,
                               trigger_context& ctx) const override;
  trigger_result on_processing_time(event_time time, const time_window& w,
                                    trigger_context& ctx) const override;
  bool can_merge() const noexcept override { return true; }
  void on_merge(const time_window& w, on_merge_context& ctx) const override;
  void clear(const time_window& w, trigger_context& ctx) const override;
  std::string describe() const override;

  std::int64_t count() const noexcept { return count_; }

private:
  explicit count_trigger(std::int64_t count) noexcept : count_(count) {}
  std::int64_t count_;
};

/// Turns every `fire` of the wrapped trigger into `fire_and_purge`, so each
/// firing emits only what arrived since the previous one (Flink's
/// `PurgingTrigger`; `countWindow(n)` is `PurgingTrigger.of(CountTrigger.of(n))`
/// on global windows).
class purging_trigger final : public trigger {
public:
  explicit purging_trigger(std::shared_ptr<const trigger> nested) noexcept
    : nested_(std::move(nested)) {}

  trigger_result on_element(event_time ts, const time_window& w,
                            trigger_context& ctx) const override;
  trigger_result on_event_time(event_time time, const time_window& w,
                               trigger_context& ctx) const override;
  trigger_result on_processing_time(event_time time, const time_window& w,
                                    trigger_context& ctx) const override;
  bool can_merge() const noexcept override { return nested_->can_merge(); }
  void on_merge(const time_window& w, on_merge_context& ctx) const override;
  void clear(const time_window& w, trigger_context& ctx) const override;
  std::string describe() const override;

  const std::shared_ptr<const trigger>& nested() const noexcept { return nested_; }

private:
  std::shared_ptr<const trigger> nested_;
};

/// Never fires (Flink's `GlobalWindows.NeverTrigger`): the default trigger of
/// global windows, which therefore need an explicit trigger to emit anything.
class never_trigger final : public trigger {
public:
  trigger_result on_element(event_time, const time_window&, trigger_context&) const override {
    return trigger_result::continue_;
  }
  trigger_result on_event_time(event_time, const time_window&, trigger_context&) const override {
    return trigger_result::continue_;
  }
  trigger_result on_processing_time(event_time, const time_window&,
                                    trigger_context&) const override {
    return trigger_result::continue_;
  }
  bool can_merge() const noexcept override { return true; }
  void clear(const time_window&, trigger_context&) const override {}
  std::string describe() const override { return "never_trigger"; }
};

} // namespace weir::window
