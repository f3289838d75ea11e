// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

/// The logical type of a column (docs/concepts/records.md). `timestamp` is int64
/// milliseconds since the Unix epoch, UTC; `null_type` is the type of the
/// literal `null` and never of a stored column.
enum class type_id : std::uint8_t {
  null_type,
  boolean,
  int64,
  float64,
  string,
  timestamp,
};

/// Returns the TOML/expression spelling: "bool", "int64", "float64",
/// "string", "timestamp", "null".
std::string_view to_string(type_id t) noexcept;

/// Parses a spelling of `to_string` (also "int", "float", "double", "boolean").
std::optional<type_id> parse_type_id(std::string_view text) noexcept;

/// True for int64, float64 and timestamp.
bool is_numeric(type_id t) noexcept;

/// One named, typed field of a schema.
struct field {
  std::string name;
  type_id type = type_id::string;

  friend bool operator==(const field&, const field&) = default;
};

/// An ordered list of uniquely named fields; immutable once shared.
class schema {
public:
  schema() = default;
  explicit schema(std::vector<field> fields);

  const std::vector<field>& fields() const noexcept { return fields_; }
  std::size_t size() const noexcept { return fields_.size(); }
  const field& at(std::size_t i) const { return fields_.at(i); }

  /// Index of the field called `name`, or nullopt. O(n), n = fields.
  std::optional<std::size_t> index_of(std::string_view name) const noexcept;

  /// Comma-separated `name:type` list, for error messages.
  std::string to_string() const;

  friend bool operator==(const schema& a, const schema& b) {
    return a.fields_ == b.fields_;
  }

private:
  std::vector<field> fields_;
};

using schema_ptr = std::shared_ptr<const schema>;

/// Convenience: `make_schema({{"key", type_id::string}, ...})`.
schema_ptr make_schema(std::vector<field> fields);

} // namespace weir
