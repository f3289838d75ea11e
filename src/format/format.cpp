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
      return internal::make_jsonl_decoder(std::move(s), std::move(rc), opts.control_lines);
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

} // namespace weir::format
