// SPDX-License-Identifier: Apache-2.0
#include "weir/core/schema.hpp"

namespace weir {

std::string_view to_string(type_id t) noexcept {
  switch (t) {
    case type_id::null_type:
      return "null";
    case type_id::boolean:
      return "bool";
    case type_id::int64:
      return "int64";
    case type_id::float64:
      return "float64";
    case type_id::string:
      return "string";
    case type_id::timestamp:
      return "timestamp";
  }
  return "?";
}

std::optional<type_id> parse_type_id(std::string_view text) noexcept {
  if (text == "bool" || text == "boolean")
    return type_id::boolean;
  if (text == "int64" || text == "int" || text == "integer" || text == "long")
    return type_id::int64;
  if (text == "float64" || text == "float" || text == "double")
    return type_id::float64;
  if (text == "string")
    return type_id::string;
  if (text == "timestamp")
    return type_id::timestamp;
  return std::nullopt;
}

bool is_numeric(type_id t) noexcept {
  return t == type_id::int64 || t == type_id::float64 || t == type_id::timestamp;
}

schema::schema(std::vector<field> fields) : fields_(std::move(fields)) {
}

std::optional<std::size_t> schema::index_of(std::string_view name) const noexcept {
  for (std::size_t i = 0; i < fields_.size(); ++i)
    if (fields_[i].name == name)
      return i;
  return std::nullopt;
}

std::string schema::to_string() const {
  std::string out;
  for (const auto& f : fields_) {
    if (!out.empty())
      out += ", ";
    out += f.name;
    out += ':';
    out += weir::to_string(f.type);
  }
  return out;
}

schema_ptr make_schema(std::vector<field> fields) {
  return std::make_shared<const schema>(std::move(fields));
}

} // namespace weir
