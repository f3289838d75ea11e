// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/format/format.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace weir::format::internal {

/// Days since 1970-01-01 of the proleptic Gregorian date y-m-d (Howard
/// Hinnant, "chrono-Compatible Low-Level Date Algorithms", days_from_civil).
/// Valid for any y; m in 1..12, d in 1..31.
constexpr std::int64_t days_from_civil(std::int64_t y, unsigned m,
                                       unsigned d) noexcept {
  y -= m <= 2 ? 1 : 0;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);            // [0, 399]
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1; // [0, 365]
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;       // [0, 146096]
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

constexpr bool is_leap_year(std::int64_t y) noexcept {
  return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

constexpr unsigned days_in_month(std::int64_t y, unsigned m) noexcept {
  constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap_year(y) ? 29 : days[m - 1];
}

/// Parses all of `s` as a decimal int64 (an optional '-', digits); false if
/// anything is left over, the text is empty, or the value overflows.
inline bool parse_int64(std::string_view s, std::int64_t& out) noexcept {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

/// Parses all of `s` as a double (std::from_chars, general format, which
/// also accepts "inf" and "nan"); false if anything is left over.
inline bool parse_double(std::string_view s, double& out) noexcept {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

/// Parses "true"/"false" in any case, and "1"/"0".
inline bool parse_bool(std::string_view s, bool& out) noexcept {
  auto iequals = [](std::string_view a, std::string_view b) {
    if (a.size() != b.size())
      return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      char c = a[i];
      if (c >= 'A' && c <= 'Z')
        c = static_cast<char>(c - 'A' + 'a');
      if (c != b[i])
        return false;
    }
    return true;
  };
  if (s == "1" || iequals(s, "true")) {
    out = true;
    return true;
  }
  if (s == "0" || iequals(s, "false")) {
    out = false;
    return true;
  }
  return false;
}

/// `"text"` for an error message, cut to 64 bytes with "..." so that a huge
/// cell does not make a huge reason.
inline std::string quote_for_reason(std::string_view s) {
  std::string out = "\"";
  if (s.size() > 64) {
    out.append(s.substr(0, 64));
    out += "...";
  } else {
    out.append(s);
  }
  out += '"';
  return out;
}

/// True if `s` holds only spaces, tabs and carriage returns (or nothing).
inline bool is_blank(std::string_view s) noexcept {
  for (char c : s)
    if (c != ' ' && c != '\t' && c != '\r')
      return false;
  return true;
}

/// Length of the first '\n'-terminated line of `buffer` (newline included);
/// at EOF the rest of a non-empty buffer; 0 if incomplete.
inline std::size_t next_line(std::string_view buffer, bool at_eof,
                             std::size_t& lines) noexcept {
  if (const void* nl = std::memchr(buffer.data(), '\n', buffer.size())) {
    lines = 1;
    return static_cast<std::size_t>(static_cast<const char*>(nl) - buffer.data()) + 1;
  }
  lines = 0;
  return at_eof ? buffer.size() : 0;
}

/// The event-time column of a decoder, if any, and the rule that completes a
/// row: a null or missing event time rolls the row back and makes it bad;
/// otherwise the value joins `timestamps()` and the row is committed.
struct row_committer {
  std::optional<std::size_t> event_time_index;
  std::string event_time_name;

  record_decoder::status commit(batch_builder& out, std::string& reason) const {
    if (event_time_index) {
      auto& c = out.col(*event_time_index);
      const auto row = out.rows();
      if (c.size() <= row || c.is_null(row)) {
        out.rollback_row();
        reason = "event time field '" + event_time_name + "' is null";
        return record_decoder::status::bad;
      }
      out.timestamps().push_back(c.ints[row]);
    }
    out.commit_row();
    return record_decoder::status::ok;
  }
};

std::unique_ptr<record_decoder> make_jsonl_decoder(schema_ptr s, row_committer rc);
std::unique_ptr<record_decoder> make_csv_decoder(schema_ptr s, bool header,
                                                 char delimiter, row_committer rc);
std::unique_ptr<record_decoder> make_apache_combined_decoder(row_committer rc);

} // namespace weir::format::internal
