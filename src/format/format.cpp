// SPDX-License-Identifier: Apache-2.0
#include "weir/format/format.hpp"

#include "internal/decoder_common.hpp"
#ifdef WEIR_HAVE_AVRO
#include "avro.hpp"
#endif
#ifdef WEIR_HAVE_PROTOBUF
#include "protobuf.hpp"
#endif

#include <simdjson.h>

namespace weir::format {

namespace internal {

namespace {

// Length of the well-formed sequence at s[i], or, negated, the length of the
// maximal subpart of an ill-formed one (at least 1): Unicode Table 3-7.
std::ptrdiff_t utf8_step(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80)
    return 1;
  std::size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2;
    if (b0 == 0xE0)
      lo = 0xA0;
    else if (b0 == 0xED)
      hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3;
    if (b0 == 0xF0)
      lo = 0x90;
    else if (b0 == 0xF4)
      hi = 0x8F;
  } else {
    return -1;
  }
  std::size_t j = i + 1;
  for (std::size_t k = 0; k < need; ++k, ++j) {
    if (j >= s.size())
      return -static_cast<std::ptrdiff_t>(j - i);
    const auto b = static_cast<unsigned char>(s[j]);
    if (b < lo || b > hi)
      return -static_cast<std::ptrdiff_t>(j - i);
    lo = 0x80;
    hi = 0xBF;
  }
  return static_cast<std::ptrdiff_t>(j - i);
}

} // namespace

void replace_invalid_utf8(std::string_view s, std::string& out) {
  out.clear();
  out.reserve(s.size() + 16);
  std::size_t i = 0;
  while (i < s.size()) {
    const auto n = utf8_step(s, i);
    if (n > 0) {
      out.append(s.data() + i, static_cast<std::size_t>(n));
      i += static_cast<std::size_t>(n);
    } else {
      out += "\xEF\xBF\xBD";
      i += static_cast<std::size_t>(-n);
    }
  }
}

std::size_t first_invalid_utf8(std::string_view s) noexcept {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto n = utf8_step(s, i);
    if (n < 0)
      return i;
    i += static_cast<std::size_t>(n);
  }
  return s.size();
}

std::optional<std::string_view> check_text(std::string_view record, invalid_utf8_policy p,
                                           std::string& scratch, std::string& reason) {
  if (record.empty()) // its data() may be null, which memchr must not get
    return record;
  if (const void* nul = std::memchr(record.data(), '\0', record.size())) {
    reason = "NUL byte at byte "
             + std::to_string(static_cast<const char*>(nul) - record.data() + 1);
    return std::nullopt;
  }
  if (simdjson::validate_utf8(record.data(), record.size()))
    return record;
  if (p == invalid_utf8_policy::error) {
    reason = "invalid UTF-8 at byte " + std::to_string(first_invalid_utf8(record) + 1)
             + " (invalid_utf8 = \"replace\" reads it as U+FFFD)";
    return std::nullopt;
  }
  replace_invalid_utf8(record, scratch);
  return std::string_view{scratch};
}

} // namespace internal

std::optional<format_kind> parse_format(std::string_view name) noexcept {
  if (name == "jsonl")
    return format_kind::jsonl;
  if (name == "csv")
    return format_kind::csv;
  if (name == "apache_combined")
    return format_kind::apache_combined;
  if (name == "avro")
    return format_kind::avro;
  if (name == "protobuf")
    return format_kind::protobuf;
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
    case format_kind::avro:
      return "avro";
    case format_kind::protobuf:
      return "protobuf";
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

void record_decoder::decode_many(std::string_view text, bool at_eof, const batch_limits& lim,
                                 batch_builder& out, batch_progress& progress,
                                 const bad_record_sink& on_bad) {
  static_assert(decode_many_padding >= simdjson::SIMDJSON_PADDING);
  const std::size_t rows0 = out.rows();
  std::string reason;
  while (out.rows() - rows0 < lim.max_rows && progress.records < lim.max_records
         && progress.bytes < text.size() && progress.bytes <= lim.max_start) {
    std::size_t lines = 0;
    const std::size_t n = next_record(text.substr(progress.bytes), at_eof, lines);
    if (n == 0)
      return;
    std::string_view rec = text.substr(progress.bytes, n);
    if (lim.single_line && lines > (rec.back() == '\n' ? 1u : 0u))
      return;
    const std::size_t offset = progress.bytes;
    const std::size_t line = progress.lines;
    progress.bytes += n;
    progress.lines += lines;
    ++progress.records;
    if (rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);
    if (!internal::decode_one(*this, rec, offset, line, out, reason, progress, on_bad))
      return;
  }
}

namespace internal {

expected<common_options> make_common_options(const decoder_options& opts, const schema_ptr& s) {
  common_options co;
  co.invalid_utf8 = opts.invalid_utf8;
  co.zone = opts.zone;
  auto& rc = co.rc;
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
  co.read.assign(s->size(), true);
  if (opts.kind != format_kind::apache_combined)
    for (std::size_t i = 0; i < opts.read_fields.size() && i < s->size(); ++i)
      co.read[i] = opts.read_fields[i] || (rc.event_time_index && *rc.event_time_index == i);
  return co;
}

} // namespace internal

std::optional<avro_file_problem> check_avro_file(const std::string& path,
                                                 const schema& reader) {
#ifdef WEIR_HAVE_AVRO
  auto h = avro::read_container_header(path);
  if (!h)
    return avro_file_problem{true, h.error().message};
  if (auto plan = avro::resolve(h->schema, reader); !plan)
    return avro_file_problem{false, path + ": " + plan.error().message};
  return std::nullopt;
#else
  (void) path;
  (void) reader;
  return avro_file_problem{true, std::string{avro_not_built}};
#endif
}

expected<source_reader_ptr> make_avro_file_reader(const file_source_options& opts,
                                                  bad_record_handler on_bad) {
#ifdef WEIR_HAVE_AVRO
  return avro::make_container_reader(opts, std::move(on_bad));
#else
  (void) opts;
  (void) on_bad;
  return make_error(errc::invalid_argument, std::string{avro_not_built});
#endif
}

bool avro_built() noexcept {
#ifdef WEIR_HAVE_AVRO
  return true;
#else
  return false;
#endif
}

bool schema_registry_built() noexcept {
#ifdef WEIR_HAVE_CURL
  return true;
#else
  return false;
#endif
}

std::optional<protobuf_problem> check_protobuf(const decoder_options& opts) {
  using at = protobuf_problem::at;
#ifdef WEIR_HAVE_PROTOBUF
  auto set = protobuf::load_proto(opts.proto_file, opts.proto_include);
  if (!set)
    return protobuf_problem{at::proto_file, set.error().message, {}, {}};
  std::vector<std::string> names;
  const auto* d = protobuf::find_message(**set, opts.proto_message, &names);
  if (!d)
    return protobuf_problem{at::message,
                            "message " + opts.proto_message + " is not defined in "
                              + opts.proto_file + " or its imports",
                            {}, std::move(names)};
  if (!opts.schema)
    return std::nullopt;
  auto plan = protobuf::resolve(*d, *opts.schema);
  if (!plan)
    return protobuf_problem{at::field, plan.error().message, plan.error().field,
                            plan.error().candidates};
  return std::nullopt;
#else
  (void) opts;
  return protobuf_problem{at::proto_file, std::string{protobuf_not_built}, {}, {}};
#endif
}

expected<source_reader_ptr> make_protobuf_file_reader(const file_source_options& opts,
                                                      bad_record_handler on_bad) {
#ifdef WEIR_HAVE_PROTOBUF
  return protobuf::make_delimited_reader(opts, std::move(on_bad));
#else
  (void) opts;
  (void) on_bad;
  return make_error(errc::invalid_argument, std::string{protobuf_not_built});
#endif
}

bool protobuf_built() noexcept {
#ifdef WEIR_HAVE_PROTOBUF
  return true;
#else
  return false;
#endif
}

expected<std::unique_ptr<record_decoder>> make_decoder(const decoder_options& opts) {
  schema_ptr s = opts.kind == format_kind::apache_combined ? apache_combined_schema()
                                                           : opts.schema;
  if (!s)
    return make_error(errc::invalid_argument,
                      std::string{"format "} + std::string{to_string(opts.kind)}
                        + " needs a schema");
  auto made = internal::make_common_options(opts, s);
  if (!made)
    return made.error();
  auto co = std::move(*made);
  switch (opts.kind) {
    case format_kind::jsonl:
      return internal::make_jsonl_decoder(std::move(s), std::move(co), opts.control_lines,
                                          opts.batch_window);
    case format_kind::csv:
      if (opts.csv_delimiter == '"' || opts.csv_delimiter == '\r'
          || opts.csv_delimiter == '\n')
        return make_error(errc::invalid_argument,
                          "csv delimiter must not be a quote or a line break");
      return internal::make_csv_decoder(std::move(s), opts.csv_header,
                                        opts.csv_delimiter, std::move(co));
    case format_kind::apache_combined:
      return internal::make_apache_combined_decoder(std::move(co));
    case format_kind::avro:
#ifdef WEIR_HAVE_AVRO
      return avro::make_datum_decoder(opts, std::move(co));
#else
      return make_error(errc::invalid_argument, std::string{avro_not_built});
#endif
    case format_kind::protobuf:
#ifdef WEIR_HAVE_PROTOBUF
      return protobuf::make_decoder(opts, std::move(co));
#else
      return make_error(errc::invalid_argument, std::string{protobuf_not_built});
#endif
  }
  return make_error(errc::invalid_argument, "unknown format");
}

} // namespace weir::format
