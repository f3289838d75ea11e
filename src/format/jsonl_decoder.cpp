// SPDX-License-Identifier: Apache-2.0
#include "internal/decoder_common.hpp"

#include <simdjson.h>

#include <string>
#include <unordered_map>
#include <vector>

namespace weir::format::internal {

namespace {

std::string_view json_type_name(simdjson::dom::element_type t) noexcept {
  using et = simdjson::dom::element_type;
  switch (t) {
    case et::ARRAY:
      return "array";
    case et::OBJECT:
      return "object";
    case et::INT64:
    case et::UINT64:
      return "integer";
    case et::DOUBLE:
      return "float";
    case et::STRING:
      return "string";
    case et::BOOL:
      return "bool";
    case et::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

class jsonl_decoder final : public record_decoder {
public:
  jsonl_decoder(schema_ptr s, row_committer rc, bool control_lines)
    : schema_(std::move(s)), rc_(std::move(rc)), control_lines_(control_lines),
      slots_(schema_->size()),
      present_(schema_->size(), 0) {
    for (std::size_t i = 0; i < schema_->size(); ++i)
      index_.emplace(schema_->at(i).name, i);
  }

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof,
                          std::size_t& lines) override {
    return next_line(buffer, at_eof, lines);
  }

  status decode(std::string_view record, batch_builder& out,
                std::string& reason) override {
    if (is_blank(record))
      return status::skipped;
    // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse from a
    // reused buffer with that much slack rather than from the file buffer.
    if (padded_.size() < record.size() + simdjson::SIMDJSON_PADDING)
      padded_.resize(record.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(padded_.data(), record.data(), record.size());
    std::memset(padded_.data() + record.size(), 0, simdjson::SIMDJSON_PADDING);
    simdjson::dom::element doc;
    if (auto err = parser_.parse(padded_.data(), record.size(), false).get(doc)) {
      reason = std::string{"invalid JSON: "} + simdjson::error_message(err);
      return status::bad;
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) {
      reason = "invalid JSON: expected an object, got "
               + std::string{json_type_name(doc.type())};
      return status::bad;
    }
    if (control_lines_) {
      simdjson::dom::element control;
      if (!obj["control"].get(control)) {
        std::string_view kind;
        std::int64_t at = 0;
        if (control.get_string().get(kind) || kind != "advance_processing_time") {
          reason = "unknown control line (known: \"advance_processing_time\")";
          return status::bad;
        }
        if (obj["proc_time"].get_int64().get(at)) {
          reason = "control line advance_processing_time needs an integer proc_time";
          return status::bad;
        }
        control_time_ = at;
        return status::control;
      }
    }
    std::fill(present_.begin(), present_.end(), 0);
    for (auto kv : obj) {
      auto it = index_.find(kv.key);
      if (it == index_.end())
        continue;
      slots_[it->second] = kv.value;
      present_[it->second] = 1;
    }
    for (std::size_t i = 0; i < schema_->size(); ++i) {
      auto& c = out.col(i);
      if (!present_[i] || slots_[i].is_null()) {
        c.append_null();
        continue;
      }
      if (!append(i, slots_[i], c, reason)) {
        out.rollback_row();
        return status::bad;
      }
    }
    return rc_.commit(out, reason);
  }

  event_time control_time() const override { return control_time_; }

private:
  bool type_error(std::size_t i, simdjson::dom::element v, std::string& reason) const {
    const auto& f = schema_->at(i);
    reason = "field '" + f.name + "': expected " + std::string{to_string(f.type)}
             + ", got " + std::string{json_type_name(v.type())};
    if (v.type() == simdjson::dom::element_type::UINT64)
      reason += " out of int64 range";
    return false;
  }

  bool append(std::size_t i, simdjson::dom::element v, column& c,
              std::string& reason) const {
    using et = simdjson::dom::element_type;
    const auto t = v.type();
    switch (schema_->at(i).type) {
      case type_id::int64:
        if (t != et::INT64)
          return type_error(i, v, reason);
        c.append_int(v.get_int64().value_unsafe());
        return true;
      case type_id::float64:
        if (t != et::INT64 && t != et::UINT64 && t != et::DOUBLE)
          return type_error(i, v, reason);
        c.append_float(v.get_double().value_unsafe());
        return true;
      case type_id::boolean:
        if (t != et::BOOL)
          return type_error(i, v, reason);
        c.append_bool(v.get_bool().value_unsafe());
        return true;
      case type_id::string:
        if (t == et::ARRAY || t == et::OBJECT) {
          // Kept as minified JSON text, so that `explode` can unnest arrays.
          c.append_string(simdjson::minify(v));
          return true;
        }
        if (t != et::STRING)
          return type_error(i, v, reason);
        c.append_string(v.get_string().value_unsafe());
        return true;
      case type_id::timestamp:
        if (t == et::INT64) {
          c.append_int(v.get_int64().value_unsafe());
          return true;
        }
        if (t == et::STRING) {
          auto text = v.get_string().value_unsafe();
          if (auto ts = parse_iso8601(text)) {
            c.append_int(*ts);
            return true;
          }
          reason = "field '" + schema_->at(i).name + "': cannot parse "
                   + quote_for_reason(text) + " as an ISO-8601 timestamp";
          return false;
        }
        return type_error(i, v, reason);
      case type_id::null_type:
        c.append_null();
        return true;
    }
    return type_error(i, v, reason);
  }

  schema_ptr schema_;
  row_committer rc_;
  bool control_lines_ = false;
  event_time control_time_ = 0;
  std::unordered_map<std::string, std::size_t, string_hash, std::equal_to<>> index_;
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
  std::vector<simdjson::dom::element> slots_;
  std::vector<std::uint8_t> present_;
};

} // namespace

std::unique_ptr<record_decoder> make_jsonl_decoder(schema_ptr s, row_committer rc,
                                                   bool control_lines) {
  return std::make_unique<jsonl_decoder>(std::move(s), std::move(rc), control_lines);
}

} // namespace weir::format::internal
