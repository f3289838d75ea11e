// SPDX-License-Identifier: Apache-2.0
#include "weir/format/format.hpp"

#include "weir/core/timestamp.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

namespace weir::format {

namespace {

constexpr char hex_digits[] = "0123456789abcdef";

// Length of the valid UTF-8 sequence starting at s[i], or 0 if invalid
// (overlong forms, surrogates and code points above U+10FFFF are invalid).
std::size_t utf8_sequence(std::string_view s, std::size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  auto cont = [&](std::size_t k) {
    return i + k < s.size() && (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
  };
  if (b0 < 0x80)
    return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF)
    return cont(1) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    if (!cont(1) || !cont(2))
      return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if ((b0 == 0xE0 && b1 < 0xA0) || (b0 == 0xED && b1 >= 0xA0))
      return 0;
    return 3;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    if (!cont(1) || !cont(2) || !cont(3))
      return 0;
    const auto b1 = static_cast<unsigned char>(s[i + 1]);
    if ((b0 == 0xF0 && b1 < 0x90) || (b0 == 0xF4 && b1 >= 0x90))
      return 0;
    return 4;
  }
  return 0;
}

void append_double_text(double d, std::string& out) {
  char buf[64];
  auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
  (void) ec; // 64 bytes always suffice for the shortest form of a double
  std::string_view text{buf, static_cast<std::size_t>(p - buf)};
  out.append(text);
  if (text.find_first_of(".eEn") == std::string_view::npos) // 'n': inf, nan
    out += ".0";
}

void append_csv_cell(std::string_view s, std::string& out) {
  if (s.empty()) {
    out += "\"\""; // keeps the empty string apart from null (an empty cell)
    return;
  }
  if (s.find_first_of(",\"\r\n") == std::string_view::npos) {
    out.append(s);
    return;
  }
  out += '"';
  for (char c : s) {
    if (c == '"')
      out += '"';
    out += c;
  }
  out += '"';
}

void append_csv_value(const column& c, std::size_t row, std::string& out,
                      timestamp_format ts) {
  if (c.is_null(row))
    return;
  switch (c.type) {
    case type_id::timestamp:
      if (ts == timestamp_format::iso8601) {
        append_iso8601(out, c.ints[row]);
        break;
      }
      [[fallthrough]];
    case type_id::int64:
      out += std::to_string(c.ints[row]);
      break;
    case type_id::float64:
      append_double_text(c.floats[row], out);
      break;
    case type_id::boolean:
      out += c.bools[row] ? "true" : "false";
      break;
    case type_id::string:
      append_csv_cell(c.str(row), out);
      break;
    case type_id::null_type:
      break;
  }
}

void append_json_column(const column& c, std::size_t row, std::string& out,
                        timestamp_format ts) {
  if (c.is_null(row)) {
    out += "null";
    return;
  }
  switch (c.type) {
    case type_id::timestamp:
      if (ts == timestamp_format::iso8601) {
        out += '"';
        append_iso8601(out, c.ints[row]);
        out += '"';
        break;
      }
      [[fallthrough]];
    case type_id::int64: {
      char buf[24];
      auto [p, ec] = std::to_chars(buf, buf + sizeof buf, c.ints[row]);
      (void) ec;
      out.append(buf, p);
      break;
    }
    case type_id::float64:
      append_json_double(c.floats[row], out);
      break;
    case type_id::boolean:
      out += c.bools[row] ? "true" : "false";
      break;
    case type_id::string:
      append_json_string(c.str(row), out);
      break;
    case type_id::null_type:
      out += "null";
      break;
  }
}

class jsonl_encoder final : public record_encoder {
public:
  explicit jsonl_encoder(timestamp_format ts) : ts_(ts) {}

  std::string header(const schema&) const override { return {}; }

  void encode(const record_batch& batch, std::size_t row,
              std::string& out) const override {
    out += '{';
    const auto& fields = batch.schema->fields();
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0)
        out += ',';
      append_json_string(fields[i].name, out);
      out += ':';
      append_json_column(batch.columns[i], row, out, ts_);
    }
    out += "}\n";
  }

private:
  timestamp_format ts_;
};

class csv_encoder final : public record_encoder {
public:
  explicit csv_encoder(timestamp_format ts) : ts_(ts) {}

  std::string header(const schema& s) const override {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i > 0)
        out += ',';
      append_csv_cell(s.at(i).name, out);
    }
    out += '\n';
    return out;
  }

  void encode(const record_batch& batch, std::size_t row,
              std::string& out) const override {
    for (std::size_t i = 0; i < batch.columns.size(); ++i) {
      if (i > 0)
        out += ',';
      append_csv_value(batch.columns[i], row, out, ts_);
    }
    out += '\n';
  }

private:
  timestamp_format ts_;
};

} // namespace

void append_json_double(double d, std::string& out) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  append_double_text(d, out);
}

void append_json_string(std::string_view s, std::string& out) {
  out += '"';
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
      // Copy a run of plain ASCII in one go.
      std::size_t j = i + 1;
      while (j < s.size()) {
        const auto d = static_cast<unsigned char>(s[j]);
        if (d < 0x20 || d == '"' || d == '\\' || d >= 0x80)
          break;
        ++j;
      }
      out.append(s.data() + i, j - i);
      i = j;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex_digits[c >> 4];
          out += hex_digits[c & 0xF];
        } else if (auto n = utf8_sequence(s, i)) {
          out.append(s.data() + i, n);
          i += n;
          continue;
        } else {
          out += "\xEF\xBF\xBD"; // U+FFFD for a byte that is not UTF-8
        }
        break;
    }
    ++i;
  }
  out += '"';
}

void append_json(const value& v, type_id t, std::string& out) {
  struct visitor {
    type_id t;
    std::string& out;
    void operator()(std::monostate) const { out += "null"; }
    void operator()(bool b) const { out += b ? "true" : "false"; }
    void operator()(std::int64_t i) const {
      if (t == type_id::float64)
        append_json_double(static_cast<double>(i), out);
      else
        out += std::to_string(i);
    }
    void operator()(double d) const { append_json_double(d, out); }
    void operator()(const std::string& s) const { append_json_string(s, out); }
  };
  std::visit(visitor{t, out}, v);
}

void append_bad_record_json(const bad_record& r, std::string& out) {
  const auto num = [&out](const char* name, auto v) {
    out += name;
    out += std::to_string(v);
  };
  out += "{\"origin\":";
  switch (r.source) {
    case bad_record_source::kafka:
      append_json_string(r.topic + "/" + std::to_string(r.partition) + "@"
                           + std::to_string(r.offset),
                         out);
      out += ",\"topic\":";
      append_json_string(r.topic, out);
      num(",\"partition\":", r.partition);
      num(",\"offset\":", r.offset);
      out += ",\"key\":";
      if (r.key)
        append_json_string(*r.key, out);
      else
        out += "null";
      out += ",\"timestamp\":";
      if (r.timestamp)
        out += std::to_string(*r.timestamp);
      else
        out += "null";
      break;
    case bad_record_source::http:
      append_json_string(r.origin + ":" + std::to_string(r.line), out);
      out += ",\"source\":";
      append_json_string(r.source_name, out);
      out += ",\"request_id\":";
      append_json_string(r.request_id, out);
      num(",\"line\":", r.line);
      break;
    case bad_record_source::file:
    case bad_record_source::other:
      // Files, and what names its origin itself (an Elasticsearch index and
      // document id, a push source): "origin:line" and the parts.
      append_json_string(r.origin + ":" + std::to_string(r.line), out);
      out += ",\"file\":";
      append_json_string(r.origin, out);
      num(",\"line\":", r.line);
      num(",\"offset\":", r.offset);
      break;
  }
  out += ",\"reason\":";
  append_json_string(r.reason, out);
  out += ",\"raw\":";
  append_json_string(r.raw, out);
  out += "}\n";
}

std::unique_ptr<record_encoder> make_encoder(format_kind kind, timestamp_format ts) {
  switch (kind) {
    case format_kind::jsonl:
      return std::make_unique<jsonl_encoder>(ts);
    case format_kind::csv:
      return std::make_unique<csv_encoder>(ts);
    case format_kind::apache_combined:
    case format_kind::avro:
    case format_kind::protobuf:
      return nullptr;
  }
  return nullptr;
}

} // namespace weir::format
