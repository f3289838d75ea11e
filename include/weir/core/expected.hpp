// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>

namespace weir {

/// Error categories that cross module boundaries.
enum class errc : std::uint8_t {
  invalid_argument = 1, ///< a caller passed a value outside the documented domain
  parse_error,          ///< text (config, expression, record) could not be parsed
  type_error,           ///< an expression or field has the wrong type
  io_error,             ///< a file could not be opened, read or written
  bad_record,           ///< a record could not be decoded
  runtime_error,        ///< a subtask failed while processing
  not_found,            ///< a named thing (an operator, a savepoint) does not exist
};

/// An error code with a human-readable message; `offset` is a byte offset into
/// the text being parsed when that applies (expressions), else `npos`.
struct error {
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  errc code = errc::runtime_error;
  std::string message;
  std::size_t offset = npos;
};

/// Either a `T` or an `E`; a tiny stand-in for C++23 `std::expected` so that
/// core headers stay free of CAF (which costs seconds per translation unit).
template <class T, class E = error>
class expected {
public:
  expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}
  expected(E err) : v_(std::in_place_index<1>, std::move(err)) {}

  explicit operator bool() const noexcept { return v_.index() == 0; }
  bool has_value() const noexcept { return v_.index() == 0; }

  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  const E& error() const& { return std::get<1>(v_); }
  E& error() & { return std::get<1>(v_); }

private:
  std::variant<T, E> v_;
};

/// Builds an `error` in one expression: `return make_error(errc::io_error, msg);`.
inline error make_error(errc code, std::string message,
                        std::size_t offset = error::npos) {
  return error{code, std::move(message), offset};
}

} // namespace weir
