// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/timestamp.hpp"
#include "weir/format/format.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::format::internal {

/// Parses all of `s` as a decimal int64 (an optional '-', digits); false if
/// anything is left over, the text is empty, or the value overflows. `out` is
/// written only on success. Up to 18 digits (below 10^18: no overflow) are
/// summed in one loop; longer text goes to std::from_chars, which this
/// matches (no '+', no blanks). The loop is a third of the CPU time of
/// from_chars<long> on CSV cells of 4-13 digits (libstdc++ 12).
inline bool parse_int64(std::string_view s, std::int64_t& out) noexcept {
  const bool negative = !s.empty() && s[0] == '-';
  const std::string_view digits = s.substr(negative ? 1 : 0);
  if (digits.empty())
    return false;
  if (digits.size() <= 18) {
    std::uint64_t v = 0;
    for (const char c : digits) {
      const unsigned d = static_cast<unsigned>(static_cast<unsigned char>(c)) - '0';
      if (d > 9)
        return false;
      v = v * 10 + d;
    }
    out = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
    return true;
  }
  // from_chars writes what it parsed of a prefix ("123456789012345678901x").
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc{} || p != s.data() + s.size())
    return false;
  out = v;
  return true;
}

/// Parses all of `s` as a double (std::from_chars, general format, which
/// also accepts "inf" and "nan"); false if anything is left over.
inline bool parse_double(std::string_view s, double& out) noexcept {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

/// True if `s` is an optional sign and one or more digits (an integer
/// literal, whatever its size).
inline bool is_integer_text(std::string_view s) noexcept {
  if (!s.empty() && (s[0] == '-' || s[0] == '+'))
    s.remove_prefix(1);
  if (s.empty())
    return false;
  for (char c : s)
    if (c < '0' || c > '9')
      return false;
  return true;
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

/// Replaces each maximal subpart of an ill-formed UTF-8 sequence in `s` with
/// U+FFFD (Unicode §3.9 "U+FFFD substitution of maximal subparts", as the
/// WHATWG decoder does), writing the result to `out`.
void replace_invalid_utf8(std::string_view s, std::string& out);

/// 0-based offset of the first byte of `s` that starts an ill-formed UTF-8
/// sequence; `s.size()` if `s` is valid UTF-8.
std::size_t first_invalid_utf8(std::string_view s) noexcept;

/// The record contract's text check (docs/concepts/bad-input.md), run on every record
/// before it is decoded: a NUL byte makes the record bad; invalid UTF-8 makes
/// it bad under `invalid_utf8_policy::error` and is replaced by U+FFFD (per
/// maximal subpart) under `replace`, the replaced text living in `scratch`.
/// Returns the text to decode, or nullopt with `reason` set. O(length), fast
/// path simdjson::validate_utf8.
std::optional<std::string_view> check_text(std::string_view record, invalid_utf8_policy p,
                                           std::string& scratch, std::string& reason);

/// Remembers how far `next_line` / a CSV scan got into a record that was not
/// complete yet, so that a record growing over many chunks (a line of several
/// MiB) is scanned once, not once per chunk. Valid while the caller passes the
/// same record start with more bytes appended (record_decoder::next_record's
/// contract); reset when a record is returned.
struct scan_resume {
  std::size_t scanned = 0; ///< bytes of the pending record already scanned
  std::size_t newlines = 0;
  int state = 0;           ///< scanner-specific
  void reset() noexcept { *this = scan_resume{}; }
};

/// Length of the first '\n'-terminated line of `buffer` (newline included);
/// at EOF the rest of a non-empty buffer; 0 if incomplete.
inline std::size_t next_line(std::string_view buffer, bool at_eof,
                             std::size_t& lines, scan_resume& resume) noexcept {
  std::size_t from = resume.scanned <= buffer.size() ? resume.scanned : 0;
  if (const void* nl = std::memchr(buffer.data() + from, '\n', buffer.size() - from)) {
    resume.reset();
    lines = 1;
    return static_cast<std::size_t>(static_cast<const char*>(nl) - buffer.data()) + 1;
  }
  lines = 0;
  if (at_eof) {
    resume.reset();
    return buffer.size();
  }
  resume.scanned = buffer.size();
  return 0;
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

/// What every decoder gets besides its format's own options.
struct common_options {
  row_committer rc;
  invalid_utf8_policy invalid_utf8 = invalid_utf8_policy::error;
  time_zone zone; ///< for timestamps written without a zone
  /// Per schema field (exactly the schema's size), whether it is decoded:
  /// decoder_options::read_fields completed with `true`, the event-time
  /// field always `true`.
  std::vector<bool> read;
};

/// The common options of a decoder of `opts` over schema `s` (what
/// `make_decoder` gives every format). Errors: `errc::invalid_argument` when
/// the event-time field is not a timestamp or int64 field of `s`.
expected<common_options> make_common_options(const decoder_options& opts, const schema_ptr& s);

/// Appends a row to a column nothing reads (decoder_options::read_fields):
/// null, and no value (`column::has_values` stays false).
inline void append_unread(column& c) { c.validity.push_back(0); }

std::unique_ptr<record_decoder> make_jsonl_decoder(schema_ptr s, common_options co,
                                                   bool control_lines = false,
                                                   std::size_t batch_window = 0);
/// How a jsonl decoder's `decode_many` calls went (tests, benchmarks):
/// lines decoded from simdjson's stream, lines decoded per line, streams
/// started, streams dropped after a failure. nullopt for other decoders.
struct jsonl_batch_counters {
  std::uint64_t batched = 0, per_line = 0, streams = 0, failures = 0;
};
std::optional<jsonl_batch_counters> jsonl_counters(const record_decoder& d);

std::unique_ptr<record_decoder> make_csv_decoder(schema_ptr s, bool header,
                                                 char delimiter, common_options co);
std::unique_ptr<record_decoder> make_apache_combined_decoder(common_options co);

/// One record of a `decode_many` call decoded with `d.decode` (the record
/// already counted in `progress`; `rec` without its line end, at byte
/// `offset` and 0-based `line` of the call's text): a control line sets
/// `progress.control` and returns false (the call stops after it); a bad
/// record goes to `on_bad`. Shared by the default loop and jsonl's per-line
/// fallback, so the two treat a record alike.
inline bool decode_one(record_decoder& d, std::string_view rec, std::size_t offset,
                       std::size_t line, batch_builder& out, std::string& reason,
                       record_decoder::batch_progress& progress,
                       const record_decoder::bad_record_sink& on_bad) {
  reason.clear();
  const auto st = d.decode(rec, out, reason);
  if (st == record_decoder::status::control) {
    progress.control = true;
    return false;
  }
  if (st == record_decoder::status::bad && on_bad)
    on_bad(offset, line, rec, reason);
  return true;
}


/// The first `n` bytes of `raw` as lowercase hex: a binary record's bytes in
/// its dead letter (`raw`), 2n characters at most.
inline std::string hex_prefix(std::string_view raw, std::size_t n = 1024) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * std::min(raw.size(), n));
  for (std::size_t i = 0; i < raw.size() && i < n; ++i) {
    const auto b = static_cast<unsigned char>(raw[i]);
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  return out;
}

} // namespace weir::format::internal
