// SPDX-License-Identifier: Apache-2.0
// Avro binary encoding of rows (Apache Avro 1.11 specification, "Binary
// Encoding"): the writer side of a Kafka sink's `format = "avro"`, and the
// registry helpers that do not depend on the schema language.
#include "weir/format/format.hpp"

#ifdef WEIR_HAVE_CURL
#include "schema_registry.hpp"
#endif

#include <cctype>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>

namespace weir::format {

namespace {

bool avro_name(std::string_view n) {
  if (n.empty() || !(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_'))
    return false;
  for (char c : n)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_'))
      return false;
  return true;
}

bool avro_full_name(std::string_view n) {
  for (;;) {
    const auto dot = n.find('.');
    if (!avro_name(n.substr(0, dot)))
      return false;
    if (dot == std::string_view::npos)
      return true;
    n.remove_prefix(dot + 1);
  }
}

void put_long(std::int64_t v, std::string& out) {
  auto z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
  while (z >= 0x80) {
    out.push_back(static_cast<char>((z & 0x7f) | 0x80));
    z >>= 7;
  }
  out.push_back(static_cast<char>(z));
}

} // namespace

expected<avro_encoder> avro_encoder::make(schema_ptr s, std::string record_full_name) {
  if (!avro_full_name(record_full_name))
    return make_error(errc::invalid_argument,
                      "'" + record_full_name
                        + "' is not an Avro record name (letters, digits and '_', not "
                          "starting with a digit; dots separate a namespace)");
  avro_encoder e;
  auto& j = e.json_;
  const auto dot = record_full_name.rfind('.');
  j = "{\"type\":\"record\",\"name\":";
  append_json_string(dot == std::string::npos ? record_full_name
                                              : record_full_name.substr(dot + 1),
                     j);
  if (dot != std::string::npos) {
    j += ",\"namespace\":";
    append_json_string(record_full_name.substr(0, dot), j);
  }
  j += ",\"fields\":[";
  for (std::size_t i = 0; i < s->size(); ++i) {
    const auto& f = s->at(i);
    if (!avro_name(f.name))
      return make_error(errc::invalid_argument,
                        "field '" + f.name
                          + "' is not an Avro name (letters, digits and '_', not starting "
                            "with a digit): rename it with a select before the sink");
    if (i > 0)
      j += ',';
    j += "{\"name\":";
    append_json_string(f.name, j);
    j += ",\"type\":";
    switch (f.type) {
      case type_id::null_type: j += "\"null\""; break;
      case type_id::boolean: j += "[\"null\",\"boolean\"]"; break;
      case type_id::int64: j += "[\"null\",\"long\"]"; break;
      case type_id::float64: j += "[\"null\",\"double\"]"; break;
      case type_id::string: j += "[\"null\",\"string\"]"; break;
      case type_id::timestamp:
        j += "[\"null\",{\"type\":\"long\",\"logicalType\":\"timestamp-millis\"}]";
        break;
    }
    j += ",\"default\":null}";
  }
  j += "]}";
  e.schema_ = std::move(s);
  return e;
}

void avro_encoder::encode(const record_batch& batch, std::size_t row, std::string& out) const {
  for (std::size_t i = 0; i < schema_->size(); ++i) {
    const auto t = schema_->at(i).type;
    if (t == type_id::null_type)
      continue;
    const auto& c = batch.columns[i];
    if (c.is_null(row)) {
      out.push_back('\0'); // union branch 0: null
      continue;
    }
    out.push_back('\x02'); // union branch 1
    switch (t) {
      case type_id::boolean: out.push_back(c.bools[row] != 0 ? '\x01' : '\0'); break;
      case type_id::int64:
      case type_id::timestamp: put_long(c.ints[row], out); break;
      case type_id::float64: {
        const double d = c.floats[row];
        char b[8];
        std::memcpy(b, &d, 8); // little-endian, as Avro's double (x86-64, aarch64)
        out.append(b, 8);
        break;
      }
      case type_id::string: {
        const auto s = c.str(row);
        put_long(static_cast<std::int64_t>(s.size()), out);
        out.append(s);
        break;
      }
      case type_id::null_type: break;
    }
  }
}

std::string subject_name(subject_strategy strategy, std::string_view topic,
                         std::string_view record_full_name, bool is_key) {
  switch (strategy) {
    case subject_strategy::record:
      return std::string{record_full_name};
    case subject_strategy::topic_record:
      return std::string{topic} + "-" + std::string{record_full_name};
    case subject_strategy::topic:
      break;
  }
  return std::string{topic} + (is_key ? "-key" : "-value");
}

std::string schema_registry_frame(std::int32_t id) {
  const auto u = static_cast<std::uint32_t>(id);
  return std::string{'\0', static_cast<char>(u >> 24), static_cast<char>(u >> 16),
                     static_cast<char>(u >> 8), static_cast<char>(u)};
}

expected<std::int32_t> register_schema(const schema_registry_options& opts,
                                       const std::string& subject, const std::string& text,
                                       const std::string& type, bool lookup_only) {
#ifdef WEIR_HAVE_CURL
  // One client per registry and credentials in the process: the subtasks of
  // a sink (and its restarts) share its cache, so the registry is asked once.
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<schema_registry::client>> clients;
  std::shared_ptr<schema_registry::client> c;
  {
    std::lock_guard lock{mu};
    auto& slot = clients[opts.url + '\n' + opts.basic_auth_user_info + '\n' + opts.ca_file];
    if (!slot) {
      auto made = schema_registry::client::make(opts);
      if (!made)
        return made.error();
      slot = std::move(*made);
    }
    c = slot;
  }
  return lookup_only ? c->lookup_schema(subject, text, type)
                     : c->register_schema(subject, text, type);
#else
  (void)opts, (void)subject, (void)text, (void)type, (void)lookup_only;
  return make_error(errc::invalid_argument, std::string{schema_registry_not_built});
#endif
}

} // namespace weir::format
