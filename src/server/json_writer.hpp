// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/format/format.hpp"

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::server::internal {

/// Builds compact JSON text: objects and arrays nest, commas are placed for
/// you. `key` then a value inside an object; values alone inside an array.
/// Strings are escaped per RFC 8259 (format::append_json_string).
class json_writer {
public:
  json_writer& begin_object() {
    value_prefix();
    out_ += '{';
    first_.push_back(true);
    return *this;
  }
  json_writer& end_object() {
    out_ += '}';
    first_.pop_back();
    return *this;
  }
  json_writer& begin_array() {
    value_prefix();
    out_ += '[';
    first_.push_back(true);
    return *this;
  }
  json_writer& end_array() {
    out_ += ']';
    first_.pop_back();
    return *this;
  }
  json_writer& key(std::string_view k) {
    if (!first_.empty() && !first_.back())
      out_ += ',';
    if (!first_.empty())
      first_.back() = false;
    format::append_json_string(k, out_);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  json_writer& value(std::string_view s) {
    value_prefix();
    format::append_json_string(s, out_);
    return *this;
  }
  json_writer& value(const char* s) { return value(std::string_view{s}); }
  json_writer& value(const std::string& s) { return value(std::string_view{s}); }
  json_writer& value(bool b) {
    value_prefix();
    out_ += b ? "true" : "false";
    return *this;
  }
  json_writer& value(std::int64_t n) {
    value_prefix();
    out_ += std::to_string(n);
    return *this;
  }
  json_writer& value(std::uint64_t n) {
    value_prefix();
    out_ += std::to_string(n);
    return *this;
  }
  json_writer& value(int n) { return value(static_cast<std::int64_t>(n)); }
  json_writer& value(unsigned long long n) { return value(static_cast<std::uint64_t>(n)); }
  json_writer& value(long long n) { return value(static_cast<std::int64_t>(n)); }
  json_writer& value(double d) {
    value_prefix();
    format::append_json_double(d, out_);
    return *this;
  }
  json_writer& null() {
    value_prefix();
    out_ += "null";
    return *this;
  }
  template <class T>
  json_writer& value(const std::optional<T>& v) {
    return v ? value(*v) : null();
  }
  /// Inserts already-encoded JSON as a value.
  json_writer& raw(std::string_view json) {
    value_prefix();
    out_ += json;
    return *this;
  }
  template <class T>
  json_writer& field(std::string_view k, const T& v) {
    key(k);
    return value(v);
  }

  const std::string& str() const noexcept { return out_; }
  std::string take() { return std::move(out_); }

private:
  void value_prefix() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (!first_.empty()) {
      if (!first_.back())
        out_ += ',';
      first_.back() = false;
    }
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

} // namespace weir::server::internal
