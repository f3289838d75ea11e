// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/window/time_window.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace weir::window {

/// Removes records from a window's buffer when it fires (Flink's `Evictor`).
///
/// A window operator with an evictor keeps every record of a window in
/// arrival order instead of a running aggregate. When the trigger fires, it
/// calls `evict_before`, computes the aggregates over the records that are
/// left, then calls `evict_after`; evicted records are gone for good.
class evictor {
public:
  virtual ~evictor() = default;

  /// `timestamps` are the event times (ms) of the window's records, oldest
  /// arrival first; set `evict[i] = true` (the vector has the same size,
  /// all false on entry) for each record to drop before the aggregates run.
  virtual void evict_before(std::span<const event_time> timestamps, const time_window& w,
                            std::vector<bool>& evict) const = 0;

  /// As `evict_before`, after the aggregates ran.
  virtual void evict_after(std::span<const event_time> timestamps, const time_window& w,
                           std::vector<bool>& evict) const = 0;

  /// A short description for messages, e.g. "count_evictor(3)".
  virtual std::string describe() const = 0;
};

/// Keeps at most `max_count` records, dropping the oldest arrivals (Flink's
/// `CountEvictor`; `countWindow(size, slide)` is global windows with
/// `CountEvictor.of(size)` and `CountTrigger.of(slide)`). By default it
/// evicts before the aggregates run; `do_evict_after` moves that after.
class count_evictor final : public evictor {
public:
  /// An evictor for `max_count >= 1`, else `errc::invalid_argument`.
  [[nodiscard]] static expected<count_evictor> make(std::int64_t max_count,
                                                    bool do_evict_after = false);

  void evict_before(std::span<const event_time> timestamps, const time_window& w,
                    std::vector<bool>& evict) const override;
  void evict_after(std::span<const event_time> timestamps, const time_window& w,
                   std::vector<bool>& evict) const override;
  std::string describe() const override;

  std::int64_t max_count() const noexcept { return max_count_; }

private:
  count_evictor(std::int64_t max_count, bool after) noexcept
    : max_count_(max_count), after_(after) {}
  void evict(std::span<const event_time> timestamps, std::vector<bool>& evict) const;

  std::int64_t max_count_;
  bool after_;
};

} // namespace weir::window
