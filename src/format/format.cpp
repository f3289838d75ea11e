// SPDX-License-Identifier: Apache-2.0
#include "weir/format/format.hpp"

#include "internal/decoder_common.hpp"

namespace weir::format {

std::optional<format_kind> parse_format(std::string_view name) noexcept {
  if (name == "jsonl")
    return format_kind::jsonl;
  if (name == "csv")
    return format_kind::csv;
  if (name == "apache_combined")
    return format_kind::apache_combined;
  return std::nullopt;
}

std::string_view to_string(format_kind k) noexcept {
  switch (k) {
    case format_kind::jsonl:
      return "jsonl";
    case format_kind::csv:
      return "csv";
    case format_kind::apache_combined:
      return "apache_combined";
  }
  return "unknown";
}

schema_ptr apache_combined_schema() {
  static const schema_ptr s = make_schema({
    {"client", type_id::string},
    {"ident", type_id::string},
    {"user", type_id::string},
    {"ts", type_id::timestamp},
    {"method", type_id::string},
    {"path", type_id::string},
    {"protocol", type_id::string},
    {"status", type_id::int64},
    {"bytes", type_id::int64},
    {"referrer", type_id::string},
    {"agent", type_id::string},
  });
  return s;
}

expected<std::unique_ptr<record_decoder>> make_decoder(const decoder_options& opts) {
  schema_ptr s = opts.kind == format_kind::apache_combined ? apache_combined_schema()
                                                           : opts.schema;
  if (!s)
    return make_error(errc::invalid_argument,
                      std::string{"format "} + std::string{to_string(opts.kind)}
                        + " needs a schema");
  internal::row_committer rc;
  if (!opts.event_time_field.empty()) {
    auto idx = s->index_of(opts.event_time_field);
    if (!idx)
      return make_error(errc::invalid_argument,
                        "event time field '" + opts.event_time_field
                          + "' is not in the schema (" + s->to_string() + ")");
    auto t = s->at(*idx).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return make_error(errc::invalid_argument,
                        "event time field '" + opts.event_time_field
                          + "' must be a timestamp or int64, not "
                          + std::string{to_string(t)});
    rc.event_time_index = *idx;
    rc.event_time_name = opts.event_time_field;
  }
  switch (opts.kind) {
    case format_kind::jsonl:
      return internal::make_jsonl_decoder(std::move(s), std::move(rc));
    case format_kind::csv:
      if (opts.csv_delimiter == '"' || opts.csv_delimiter == '\r'
          || opts.csv_delimiter == '\n')
        return make_error(errc::invalid_argument,
                          "csv delimiter must not be a quote or a line break");
      return internal::make_csv_decoder(std::move(s), opts.csv_header,
                                        opts.csv_delimiter, std::move(rc));
    case format_kind::apache_combined:
      return internal::make_apache_combined_decoder(std::move(rc));
  }
  return make_error(errc::invalid_argument, "unknown format");
}

namespace {

// Reads exactly `n` digits at `pos`; advances `pos`.
bool read_digits(std::string_view s, std::size_t& pos, std::size_t n,
                 unsigned& out) noexcept {
  if (pos + n > s.size())
    return false;
  unsigned v = 0;
  for (std::size_t i = 0; i < n; ++i) {
    char c = s[pos + i];
    if (c < '0' || c > '9')
      return false;
    v = v * 10 + static_cast<unsigned>(c - '0');
  }
  pos += n;
  out = v;
  return true;
}

} // namespace

std::optional<event_time> parse_iso8601(std::string_view s) noexcept {
  std::size_t pos = 0;
  unsigned year = 0, month = 0, day = 0;
  if (!read_digits(s, pos, 4, year) || pos >= s.size() || s[pos++] != '-'
      || !read_digits(s, pos, 2, month) || pos >= s.size() || s[pos++] != '-'
      || !read_digits(s, pos, 2, day))
    return std::nullopt;
  if (month < 1 || month > 12 || day < 1 || day > internal::days_in_month(year, month))
    return std::nullopt;
  const std::int64_t days = internal::days_from_civil(year, month, day);
  constexpr std::int64_t ms_per_day = 86'400'000;
  if (pos == s.size())
    return days * ms_per_day;
  char sep = s[pos++];
  if (sep != 'T' && sep != 't' && sep != ' ')
    return std::nullopt;
  unsigned hh = 0, mi = 0, ss = 0, ms = 0;
  if (!read_digits(s, pos, 2, hh) || pos >= s.size() || s[pos++] != ':'
      || !read_digits(s, pos, 2, mi))
    return std::nullopt;
  if (pos < s.size() && s[pos] == ':') {
    ++pos;
    if (!read_digits(s, pos, 2, ss))
      return std::nullopt;
    if (pos < s.size() && (s[pos] == '.' || s[pos] == ',')) {
      ++pos;
      std::size_t digits = 0;
      while (pos < s.size() && s[pos] >= '0' && s[pos] <= '9') {
        if (digits < 3)
          ms = ms * 10 + static_cast<unsigned>(s[pos] - '0');
        ++digits;
        ++pos;
      }
      if (digits == 0)
        return std::nullopt;
      for (std::size_t i = digits; i < 3; ++i)
        ms *= 10;
    }
  }
  if (hh > 23 || mi > 59 || ss > 59)
    return std::nullopt;
  std::int64_t offset_min = 0;
  if (pos < s.size()) {
    char z = s[pos++];
    if (z == 'Z' || z == 'z') {
      // UTC
    } else if (z == '+' || z == '-') {
      unsigned oh = 0, om = 0;
      if (!read_digits(s, pos, 2, oh))
        return std::nullopt;
      if (pos < s.size()) {
        if (s[pos] == ':')
          ++pos;
        if (!read_digits(s, pos, 2, om))
          return std::nullopt;
      }
      if (oh > 23 || om > 59)
        return std::nullopt;
      offset_min = static_cast<std::int64_t>(oh * 60 + om);
      if (z == '-')
        offset_min = -offset_min;
    } else {
      return std::nullopt;
    }
    if (pos != s.size())
      return std::nullopt;
  }
  const std::int64_t local = days * ms_per_day
                             + ((std::int64_t{hh} * 60 + mi) * 60 + ss) * 1000 + ms;
  // An offset says how far local time is ahead of UTC.
  return local - offset_min * 60'000;
}

} // namespace weir::format
