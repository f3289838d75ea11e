// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/timestamp.hpp"
#include "weir/format/format.hpp"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace weir::format::internal {

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

std::unique_ptr<record_decoder> make_jsonl_decoder(schema_ptr s, row_committer rc,
                                                   bool control_lines = false);
std::unique_ptr<record_decoder> make_csv_decoder(schema_ptr s, bool header,
                                                 char delimiter, row_committer rc);
std::unique_ptr<record_decoder> make_apache_combined_decoder(row_committer rc);

} // namespace weir::format::internal
