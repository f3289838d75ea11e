// SPDX-License-Identifier: Apache-2.0
#include "weir/core/timestamp.hpp"

#include "weir/core/time_zone.hpp"

#include <cstdint>

namespace weir {

namespace {

constexpr std::int64_t ms_per_day = 86'400'000;

// Howard Hinnant's civil_from_days (proleptic Gregorian); days_from_civil is in the header.

struct civil {
  std::int64_t year;
  unsigned month;
  unsigned day;
};

constexpr civil civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t y = static_cast<std::int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp < 10 ? mp + 3 : mp - 9;
  return {y + (m <= 2 ? 1 : 0), m, d};
}

// Reads exactly `n` digits at `pos`.
bool digits(std::string_view s, std::size_t& pos, std::size_t n, unsigned& out) {
  if (s.size() - pos < n)
    return false;
  unsigned v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const char c = s[pos + i];
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  pos += n;
  out = v;
  return true;
}

bool expect(std::string_view s, std::size_t& pos, char c) {
  if (pos < s.size() && s[pos] == c) {
    ++pos;
    return true;
  }
  return false;
}

void append_digits(std::string& out, std::int64_t v, int width) {
  char buf[24];
  int n = 0;
  auto u = static_cast<std::uint64_t>(v);
  do {
    buf[n++] = static_cast<char>('0' + u % 10);
    u /= 10;
  } while (u != 0);
  for (int i = n; i < width; ++i)
    out.push_back('0');
  while (n > 0)
    out.push_back(buf[--n]);
}

} // namespace

namespace {

// `zone` (null: UTC) applies when the text names no zone.
std::optional<event_time> parse_iso8601_in(std::string_view s, const time_zone* zone) noexcept {
  auto local = [zone](std::int64_t ms) { return zone ? zone->to_utc(ms) : ms; };
  std::size_t pos = 0;
  unsigned year = 0, month = 0, day = 0;
  if (!digits(s, pos, 4, year) || !expect(s, pos, '-')
      || !digits(s, pos, 2, month) || !expect(s, pos, '-')
      || !digits(s, pos, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month))
    return std::nullopt;
  std::int64_t ms = days_from_civil(year, month, day) * ms_per_day;
  if (pos == s.size())
    return local(ms);
  if (s[pos] != 'T' && s[pos] != 't' && s[pos] != ' ')
    return std::nullopt;
  ++pos;
  unsigned hour = 0, minute = 0, second = 0;
  if (!digits(s, pos, 2, hour) || !expect(s, pos, ':')
      || !digits(s, pos, 2, minute))
    return std::nullopt;
  if (expect(s, pos, ':')) {
    if (!digits(s, pos, 2, second))
      return std::nullopt;
    if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
      ++pos;
      std::size_t n = 0;
      unsigned frac_ms = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (n < 3)
          frac_ms = frac_ms * 10 + static_cast<unsigned>(s[pos] - '0');
        ++n;
        ++pos;
      }
      if (n == 0 || n > 9)
        return std::nullopt;
      for (std::size_t i = n; i < 3; ++i)
        frac_ms *= 10;
      ms += frac_ms;
    }
  }
  if (hour > 23 || minute > 59 || second > 59)
    return std::nullopt;
  ms += (static_cast<std::int64_t>(hour) * 3600 + minute * 60 + second) * 1000;
  if (pos == s.size())
    return local(ms);
  if (s[pos] == 'Z' || s[pos] == 'z')
    return pos + 1 == s.size() ? std::optional<event_time>{ms} : std::nullopt;
  if (s[pos] != '+' && s[pos] != '-')
    return std::nullopt;
  const bool negative = s[pos] == '-';
  ++pos;
  unsigned off_h = 0, off_m = 0;
  if (!digits(s, pos, 2, off_h))
    return std::nullopt;
  if (pos < s.size()) {
    expect(s, pos, ':');
    if (!digits(s, pos, 2, off_m))
      return std::nullopt;
  }
  if (pos != s.size() || off_h > 23 || off_m > 59)
    return std::nullopt;
  const std::int64_t offset_ms = (off_h * 60 + off_m) * 60'000LL;
  // Local time = UTC + offset, so UTC = local - offset.
  return negative ? ms + offset_ms : ms - offset_ms;
}

} // namespace

std::optional<event_time> parse_iso8601(std::string_view s) noexcept {
  return parse_iso8601_in(s, nullptr);
}

std::optional<event_time> parse_iso8601(std::string_view s, const time_zone& zone) noexcept {
  return parse_iso8601_in(s, zone.is_utc() ? nullptr : &zone);
}

void append_iso8601(std::string& out, event_time ms) {
  // Floored division keeps pre-epoch instants on the right day.
  std::int64_t days = ms / ms_per_day;
  std::int64_t rem = ms % ms_per_day;
  if (rem < 0) {
    rem += ms_per_day;
    --days;
  }
  const civil c = civil_from_days(days);
  if (c.year < 0) {
    out.push_back('-');
    append_digits(out, -c.year, 4);
  } else {
    append_digits(out, c.year, 4);
  }
  out.push_back('-');
  append_digits(out, c.month, 2);
  out.push_back('-');
  append_digits(out, c.day, 2);
  out.push_back('T');
  append_digits(out, rem / 3'600'000, 2);
  out.push_back(':');
  append_digits(out, rem / 60'000 % 60, 2);
  out.push_back(':');
  append_digits(out, rem / 1000 % 60, 2);
  out.push_back('.');
  append_digits(out, rem % 1000, 3);
  out.push_back('Z');
}

std::string format_iso8601(event_time ms) {
  std::string out;
  out.reserve(24);
  append_iso8601(out, ms);
  return out;
}

} // namespace weir
