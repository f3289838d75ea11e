// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace weir {

class time_zone; // weir/core/time_zone.hpp

/// Days since 1970-01-01 of the proleptic Gregorian date y-m-d (Howard
/// Hinnant, "chrono-Compatible Low-Level Date Algorithms", days_from_civil).
/// Valid for any y; m in 1..12, d in 1..31.
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);                // [0, 399]
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; // [0, 365]
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;           // [0, 146096]
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

constexpr bool is_leap_year(std::int64_t y) noexcept {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

/// Days in month m (1..12) of year y.
constexpr unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap_year(y) ? 29 : days[m - 1];
}


/// Parses an ISO-8601 date or date-time into ms since the Unix epoch (UTC).
///
/// Accepts `YYYY-MM-DD`, then optionally `T` (or `t`, or one space) and
/// `hh:mm`, `hh:mm:ss` or `hh:mm:ss.f` (1 to 9 fraction digits, truncated to
/// ms; `,` also accepted as the decimal mark), then optionally a zone: `Z`,
/// `z`, `+hh:mm`, `-hh:mm`, `+hhmm` or `+hh`. No zone means UTC. Fields are
/// range-checked (day against the month, leap years included; no leap
/// seconds). Returns nullopt for anything else, including trailing text.
/// Years 0000 to 9999. O(length); never allocates.
std::optional<event_time> parse_iso8601(std::string_view text) noexcept;

/// As `parse_iso8601`, but a date or date-time without a zone is local time
/// in `zone` (time_zone::to_utc: overlaps take the earlier offset, gaps move
/// later). A zone in the text wins.
std::optional<event_time> parse_iso8601(std::string_view text, const time_zone& zone) noexcept;

/// Renders ms since the epoch as `YYYY-MM-DDThh:mm:ss.sssZ` (UTC), the
/// inverse of `parse_iso8601` for years 0000 to 9999; other years are
/// written with as many digits as they need and a leading '-' when negative.
std::string format_iso8601(event_time ms);

/// As `format_iso8601`, appending to `out` (no temporary string).
void append_iso8601(std::string& out, event_time ms);

} // namespace weir
