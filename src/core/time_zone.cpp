// SPDX-License-Identifier: Apache-2.0
#include "weir/core/time_zone.hpp"

#include "weir/core/timestamp.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <vector>

namespace weir {

namespace {

constexpr std::int64_t ms_per_day = 86'400'000;
constexpr std::int64_t max_offset_ms = (24 * 60 - 1) * 60'000LL;

// Floored division (pre-epoch instants round down).
constexpr std::int64_t floor_div(std::int64_t a, std::int64_t b) noexcept {
  return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0);
}

// `+hh:mm`, `+hhmm`, `+hh` (and '-'): the offset in ms, or nullopt.
std::optional<std::int64_t> parse_fixed_offset(std::string_view s) {
  if (s.size() < 3 || (s[0] != '+' && s[0] != '-'))
    return std::nullopt;
  auto two = [&](std::size_t at, int& v) {
    if (at + 2 > s.size() || s[at] < '0' || s[at] > '9' || s[at + 1] < '0' || s[at + 1] > '9')
      return false;
    v = (s[at] - '0') * 10 + (s[at + 1] - '0');
    return true;
  };
  int h = 0, m = 0;
  if (!two(1, h))
    return std::nullopt;
  std::size_t pos = 3;
  if (pos < s.size()) {
    if (s[pos] == ':')
      ++pos;
    if (!two(pos, m) || pos + 2 != s.size())
      return std::nullopt;
  }
  if (h > 23 || m > 59)
    return std::nullopt;
  const std::int64_t ms = (h * 60 + m) * 60'000LL;
  return s[0] == '-' ? -ms : ms;
}

// A POSIX TZ rule's date: Mm.w.d, Jn or n, and the time of day (s) it applies.
struct rule_date {
  enum { month_week_day, julian_no_leap, julian_zero } kind = month_week_day;
  int month = 0, week = 0, day = 0; // day: weekday (0 = Sunday) or day of year
  std::int64_t time_s = 7200;
};

// Day (since the epoch) of `d` in year `y`.
std::int64_t day_of(const rule_date& d, std::int64_t y) {
  switch (d.kind) {
    case rule_date::julian_no_leap: {
      std::int64_t n = days_from_civil(y, 1, 1) + d.day - 1;
      return n + (is_leap_year(y) && d.day >= 60 ? 1 : 0);
    }
    case rule_date::julian_zero:
      return days_from_civil(y, 1, 1) + d.day;
    case rule_date::month_week_day:
      break;
  }
  const std::int64_t first = days_from_civil(y, static_cast<unsigned>(d.month), 1);
  const std::int64_t wd = ((first + 4) % 7 + 7) % 7; // 1970-01-01 was a Thursday
  std::int64_t day = 1 + (d.day - wd + 7) % 7 + (d.week - 1) * 7;
  if (day > days_in_month(y, static_cast<unsigned>(d.month)))
    day -= 7;
  return first + day - 1;
}

} // namespace

struct time_zone::rules {
  std::vector<std::int64_t> transitions_s; ///< UTC seconds, ascending
  std::vector<std::int64_t> offsets_ms;    ///< in effect from each transition on
  std::int64_t initial_ms = 0;             ///< before the first transition
  // The footer rule, for instants after the last transition.
  bool has_footer = false;
  std::int64_t std_ms = 0, dst_ms = 0;
  bool has_dst = false;
  rule_date start, end;

  std::int64_t footer_offset(std::int64_t utc_ms) const {
    if (!has_dst)
      return std_ms;
    const std::int64_t y0 = [&] {
      // The year of the instant in standard time (the rule's years are local).
      const std::int64_t days = floor_div(utc_ms + std_ms, ms_per_day);
      std::int64_t z = days + 719468;
      const std::int64_t era = floor_div(z, 146097);
      const std::int64_t doe = z - era * 146097;
      const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
      const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
      const std::int64_t mp = (5 * doy + 2) / 153;
      return yoe + era * 400 + (mp >= 10 ? 1 : 0);
    }();
    // Summer time starts at start.time in standard time and ends at
    // end.time in summer time.
    const std::int64_t s = day_of(start, y0) * ms_per_day + start.time_s * 1000 - std_ms;
    const std::int64_t e = day_of(end, y0) * ms_per_day + end.time_s * 1000 - dst_ms;
    if (s < e)
      return utc_ms >= s && utc_ms < e ? dst_ms : std_ms;
    return utc_ms >= e && utc_ms < s ? std_ms : dst_ms; // southern hemisphere
  }

  std::int64_t offset_at(std::int64_t utc_ms) const {
    const std::int64_t t = floor_div(utc_ms, 1000);
    auto it = std::upper_bound(transitions_s.begin(), transitions_s.end(), t);
    if (it == transitions_s.begin())
      return transitions_s.empty() && has_footer ? footer_offset(utc_ms) : initial_ms;
    if (it == transitions_s.end() && has_footer)
      return footer_offset(utc_ms);
    return offsets_ms[static_cast<std::size_t>(it - transitions_s.begin()) - 1];
  }
};

namespace {

// Parses a POSIX TZ string (the TZif footer): std offset [dst [offset]
// [,start[/time],end[/time]]]. False if it is not one.
bool parse_posix_tz(std::string_view s, time_zone::rules& r) {
  std::size_t pos = 0;
  auto name = [&] {
    if (pos < s.size() && s[pos] == '<') {
      auto close = s.find('>', pos);
      if (close == std::string_view::npos)
        return false;
      pos = close + 1;
      return true;
    }
    const std::size_t b = pos;
    while (pos < s.size() && ((s[pos] >= 'A' && s[pos] <= 'Z') || (s[pos] >= 'a' && s[pos] <= 'z')))
      ++pos;
    return pos - b >= 3;
  };
  auto number = [&](std::int64_t& v) {
    const std::size_t b = pos;
    v = 0;
    while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9' && pos - b < 4)
      v = v * 10 + (s[pos++] - '0');
    return pos > b;
  };
  // [+-]hh[:mm[:ss]] in seconds.
  auto hms = [&](std::int64_t& out) {
    bool neg = false;
    if (pos < s.size() && (s[pos] == '+' || s[pos] == '-'))
      neg = s[pos++] == '-';
    std::int64_t h = 0, m = 0, sec = 0;
    if (!number(h))
      return false;
    if (pos < s.size() && s[pos] == ':') {
      ++pos;
      if (!number(m))
        return false;
      if (pos < s.size() && s[pos] == ':') {
        ++pos;
        if (!number(sec))
          return false;
      }
    }
    out = (h * 3600 + m * 60 + sec) * (neg ? -1 : 1);
    return true;
  };
  auto date = [&](rule_date& d) {
    std::int64_t a = 0, b = 0, c = 0;
    if (pos < s.size() && s[pos] == 'M') {
      ++pos;
      if (!number(a) || pos >= s.size() || s[pos++] != '.' || !number(b) || pos >= s.size()
          || s[pos++] != '.' || !number(c) || a < 1 || a > 12 || b < 1 || b > 5 || c > 6)
        return false;
      d.kind = rule_date::month_week_day;
      d.month = static_cast<int>(a);
      d.week = static_cast<int>(b);
      d.day = static_cast<int>(c);
    } else if (pos < s.size() && s[pos] == 'J') {
      ++pos;
      if (!number(a) || a < 1 || a > 365)
        return false;
      d.kind = rule_date::julian_no_leap;
      d.day = static_cast<int>(a);
    } else {
      if (!number(a) || a > 365)
        return false;
      d.kind = rule_date::julian_zero;
      d.day = static_cast<int>(a);
    }
    d.time_s = 7200;
    if (pos < s.size() && s[pos] == '/') {
      ++pos;
      if (!hms(d.time_s))
        return false;
    }
    return true;
  };
  std::int64_t std_s = 0;
  if (!name() || !hms(std_s))
    return false;
  r.std_ms = -std_s * 1000; // POSIX offsets count west of Greenwich
  r.has_footer = true;
  if (pos == s.size())
    return true;
  if (!name())
    return false;
  r.has_dst = true;
  r.dst_ms = r.std_ms + 3'600'000;
  if (pos < s.size() && s[pos] != ',') {
    std::int64_t dst_s = 0;
    if (!hms(dst_s))
      return false;
    r.dst_ms = -dst_s * 1000;
  }
  if (pos == s.size()) {
    // No rule: the US rules, as POSIX leaves it to the implementation.
    r.start = {rule_date::month_week_day, 3, 2, 0, 7200};
    r.end = {rule_date::month_week_day, 11, 1, 0, 7200};
    return true;
  }
  if (s[pos++] != ',' || !date(r.start) || pos >= s.size() || s[pos++] != ',' || !date(r.end))
    return false;
  return pos == s.size();
}

std::uint64_t be(const unsigned char* p, int n) {
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v = (v << 8) | p[i];
  return v;
}

// Reads a TZif file (RFC 8536): the version 2+ data block and footer.
expected<std::shared_ptr<time_zone::rules>> read_tzif(const std::string& path,
                                                      std::string_view name) {
  auto bad = [&](const std::string& why) {
    return make_error(errc::invalid_argument,
                      "time zone " + std::string{name} + ": " + path + " " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return bad("cannot be read (is it an IANA zone name like \"Europe/Berlin\"?)");
  std::string data{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (data.size() > (1u << 20))
    return bad("is too large for a TZif file");
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  std::size_t size = data.size();
  struct header {
    std::uint64_t isut, isstd, leap, time, type, chars;
  };
  auto read_header = [&](std::size_t at, header& h) {
    if (at + 44 > size || data.compare(at, 4, "TZif") != 0)
      return false;
    const unsigned char* c = p + at + 20;
    h = {be(c, 4), be(c + 4, 4), be(c + 8, 4), be(c + 12, 4), be(c + 16, 4), be(c + 20, 4)};
    return h.type >= 1 && h.type <= 256 && h.time <= 100000 && h.leap <= 100000
           && h.chars <= 100000 && h.isut <= 256 && h.isstd <= 256;
  };
  header h1{};
  if (!read_header(0, h1))
    return bad("is not a TZif file");
  if (data[4] < '2')
    return bad("is a version 1 TZif file (64-bit data needed)");
  const std::size_t v1 = 44 + h1.time * 5 + h1.type * 6 + h1.chars + h1.leap * 8 + h1.isstd
                         + h1.isut;
  header h{};
  if (!read_header(v1, h))
    return bad("has no version 2 data");
  std::size_t at = v1 + 44;
  const std::size_t body = h.time * 9 + h.type * 6 + h.chars + h.leap * 12 + h.isstd + h.isut;
  if (at + body > size)
    return bad("is truncated");
  auto r = std::make_shared<time_zone::rules>();
  const unsigned char* times = p + at;
  const unsigned char* idx = times + h.time * 8;
  const unsigned char* types = idx + h.time;
  std::vector<std::int64_t> type_off(h.type);
  for (std::size_t i = 0; i < h.type; ++i) {
    const auto u = static_cast<std::uint32_t>(be(types + i * 6, 4));
    type_off[i] = static_cast<std::int64_t>(static_cast<std::int32_t>(u)) * 1000;
    if (type_off[i] > max_offset_ms + 60'000 || type_off[i] < -max_offset_ms - 60'000)
      return bad("has an offset beyond ±24h");
  }
  r->initial_ms = type_off[0];
  for (std::size_t i = 0; i < h.time; ++i) {
    const auto t = static_cast<std::int64_t>(be(times + i * 8, 8));
    const unsigned k = idx[i];
    if (k >= h.type)
      return bad("has a transition to an unknown type");
    if (!r->transitions_s.empty() && t <= r->transitions_s.back())
      return bad("has transitions out of order");
    r->transitions_s.push_back(t);
    r->offsets_ms.push_back(type_off[k]);
  }
  at += body;
  if (at < size && data[at] == '\n') {
    const auto nl = data.find('\n', at + 1);
    if (nl != std::string::npos && nl > at + 1) {
      time_zone::rules footer;
      if (parse_posix_tz(std::string_view{data}.substr(at + 1, nl - at - 1), footer)) {
        r->has_footer = true;
        r->std_ms = footer.std_ms;
        r->dst_ms = footer.dst_ms;
        r->has_dst = footer.has_dst;
        r->start = footer.start;
        r->end = footer.end;
      }
    }
  }
  return r;
}

} // namespace

expected<time_zone> time_zone::parse(std::string_view name) {
  time_zone z;
  z.name_ = std::string{name};
  if (name == "UTC" || name == "Z" || name == "Etc/UTC")
    return z;
  if (!name.empty() && (name[0] == '+' || name[0] == '-')) {
    auto off = parse_fixed_offset(name);
    if (!off)
      return make_error(errc::invalid_argument,
                        "time zone " + quote_name(name)
                          + " is not a fixed offset like \"+02:00\" (at most ±23:59)");
    z.fixed_ms_ = *off;
    return z;
  }
  // An IANA name: letters, digits, '_', '-', '+' and '/' between parts;
  // never "..", so that it stays inside the zoneinfo directory.
  bool ok = !name.empty() && name.front() != '/' && name.find("..") == std::string_view::npos;
  for (char c : name)
    ok = ok && ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
                || c == '_' || c == '-' || c == '+' || c == '/');
  if (!ok)
    return make_error(errc::invalid_argument,
                      "time zone " + quote_name(name)
                        + " is neither UTC, a fixed offset like \"+02:00\" nor an IANA "
                          "name like \"Europe/Berlin\"");
  const char* dir = std::getenv("TZDIR");
  const std::string base = dir != nullptr && *dir != '\0' ? dir : "/usr/share/zoneinfo";
  auto r = read_tzif(base + "/" + std::string{name}, name);
  if (!r)
    return r.error();
  z.rules_ = std::move(*r);
  return z;
}

std::string time_zone::quote_name(std::string_view name) {
  return "\"" + std::string{name} + "\"";
}

std::int64_t time_zone::offset_at(event_time utc_ms) const noexcept {
  return rules_ ? rules_->offset_at(utc_ms) : fixed_ms_;
}

event_time time_zone::to_utc(event_time local_ms) const noexcept {
  if (!rules_)
    return local_ms - fixed_ms_;
  // Transitions are far more than a day apart: the offsets a day before
  // and a day after are the only candidates.
  const std::int64_t before = offset_at(local_ms - ms_per_day);
  const std::int64_t after = offset_at(local_ms + ms_per_day);
  const event_time u1 = local_ms - before, u2 = local_ms - after;
  const bool ok1 = offset_at(u1) == before, ok2 = offset_at(u2) == after;
  if (ok1 && ok2)
    return std::min(u1, u2); // overlap: the earlier instant
  if (ok1)
    return u1;
  if (ok2)
    return u2;
  return u1; // gap: later by the gap's length
}

} // namespace weir
