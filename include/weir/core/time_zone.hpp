// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace weir {

/// The zone a source reads timestamps written without one in (a source's
/// `time_zone` key): UTC, a fixed offset, or an IANA zone read from the
/// system's tz database.
///
/// libstdc++ 12 has no `std::chrono::locate_zone`, so an IANA zone is read
/// from its TZif file (RFC 8536, version 2+ 64-bit data) under `$TZDIR` or
/// /usr/share/zoneinfo: its transitions, and after the last one the POSIX TZ
/// rule of the file's footer (`CET-1CEST,M3.5.0,M10.5.0/3`). Leap seconds are
/// ignored (times are POSIX time, as everywhere in weir).
///
/// A local time that happens twice (the hour after a switch back to standard
/// time) takes the earlier offset, i.e. the first of the two instants; a local
/// time that does not exist (skipped by a switch to summer time) is moved
/// later by the length of the gap: java.time's `ZonedDateTime.ofLocal` rules,
/// which Flink's SQL time functions follow.
///
/// Copies are cheap (the rules are shared and immutable); thread-safe.
class time_zone {
public:
  /// UTC.
  time_zone() = default;

  /// Parses `UTC`, `Z`, a fixed offset (`+02:00`, `-0530`, `+02`; at most
  /// ±23:59), or an IANA name (`Europe/Berlin`).
  /// Errors: `errc::invalid_argument` for text that is none of these, or an
  /// IANA name whose file is missing or not TZif (the message says which).
  [[nodiscard]] static expected<time_zone> parse(std::string_view name);

  /// As written to `parse` ("UTC" for the default).
  const std::string& name() const noexcept { return name_; }
  bool is_utc() const noexcept { return !rules_ && fixed_ms_ == 0; }

  /// UTC offset in ms in effect at the UTC instant `utc_ms`.
  std::int64_t offset_at(event_time utc_ms) const noexcept;

  /// The UTC instant (ms) of the local wall-clock time `local_ms` (ms since
  /// 1970-01-01T00:00 local), with the overlap and gap rules above.
  event_time to_utc(event_time local_ms) const noexcept;

  struct rules; ///< the transitions and footer rule of an IANA zone

private:
  static std::string quote_name(std::string_view name);
  std::string name_ = "UTC";
  std::int64_t fixed_ms_ = 0;
  std::shared_ptr<const rules> rules_;
};

} // namespace weir
