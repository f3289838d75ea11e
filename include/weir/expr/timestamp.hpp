// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace weir::expr {

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

/// Renders ms since the epoch as `YYYY-MM-DDThh:mm:ss.sssZ` (UTC), the
/// inverse of `parse_iso8601` for years 0000 to 9999; other years are
/// written with as many digits as they need and a leading '-' when negative.
std::string format_iso8601(event_time ms);

/// As `format_iso8601`, appending to `out` (no temporary string).
void append_iso8601(std::string& out, event_time ms);

} // namespace weir::expr
