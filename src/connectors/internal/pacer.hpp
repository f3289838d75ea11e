// SPDX-License-Identifier: Apache-2.0
// Private to src/connectors: rate limiting and batch forming of the
// generated sources.
#pragma once

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>

namespace weir::internal {

/// Nanoseconds of the steady clock since its epoch: the clock of generation
/// times, which the blackhole sink reads to measure latency in-process.
inline std::int64_t steady_now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
           std::chrono::steady_clock::now().time_since_epoch())
    .count();
}

/// Decides how many rows a rate-limited source may emit at a given moment.
///
/// Row k (0-based) is scheduled at `start + k / rate`. A batch is emitted
/// once `max_rows` rows are due, or once the oldest due row has waited
/// `buffer_timeout` (Flink's buffer timeout, applied where the batch is
/// formed). Without a rate every row is due at once.
class emission_pacer {
public:
  emission_pacer(double rows_per_second, std::chrono::nanoseconds buffer_timeout) noexcept
    : ns_per_row_(rows_per_second > 0 ? 1e9 / rows_per_second : 0.0),
      timeout_ns_(buffer_timeout.count()) {}

  bool limited() const noexcept { return ns_per_row_ > 0; }

  void start(std::int64_t now_ns) noexcept { start_ns_ = now_ns; }

  /// Scheduled time (steady ns) of row k.
  std::int64_t scheduled_ns(std::uint64_t k) const noexcept {
    return start_ns_ + static_cast<std::int64_t>(static_cast<double>(k) * ns_per_row_);
  }

  /// Rows that may be emitted at `now_ns`, at most `max_rows`; 0 = wait.
  std::uint64_t allowance(std::int64_t now_ns, std::uint64_t max_rows) const noexcept {
    if (!limited())
      return max_rows;
    const std::uint64_t due = due_count(now_ns);
    if (due <= emitted_)
      return 0;
    const std::uint64_t ready = due - emitted_;
    if (ready >= max_rows)
      return max_rows;
    if (now_ns - scheduled_ns(emitted_) >= timeout_ns_)
      return ready;
    return 0;
  }

  /// How long to wait at `now_ns` before `allowance` may be positive.
  std::chrono::nanoseconds delay(std::int64_t now_ns, std::uint64_t max_rows) const noexcept {
    if (!limited() || max_rows == 0)
      return std::chrono::nanoseconds{0};
    const std::int64_t full = scheduled_ns(emitted_ + max_rows - 1);
    const std::int64_t timed_out = scheduled_ns(emitted_) + timeout_ns_;
    return std::chrono::nanoseconds{std::max<std::int64_t>(0, std::min(full, timed_out) - now_ns)};
  }

  void emitted(std::uint64_t rows) noexcept { emitted_ += rows; }
  std::uint64_t emitted() const noexcept { return emitted_; }

private:
  // Rows 0 .. due_count-1 are due at now_ns.
  std::uint64_t due_count(std::int64_t now_ns) const noexcept {
    if (now_ns < start_ns_)
      return 0;
    return static_cast<std::uint64_t>(static_cast<double>(now_ns - start_ns_) / ns_per_row_)
           + 1;
  }

  double ns_per_row_;
  std::int64_t timeout_ns_;
  std::int64_t start_ns_ = 0;
  std::uint64_t emitted_ = 0;
};

} // namespace weir::internal
