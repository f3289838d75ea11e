// SPDX-License-Identifier: Apache-2.0
// Private to src/expr: splits expression text into tokens.
#pragma once

#include "weir/core/expected.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weir::expr {

enum class token_kind : std::uint8_t {
  end,               ///< end of input; offset = text size
  identifier,        ///< bare word: field, function or keyword
  quoted_identifier, ///< "double quoted" field name; `str` unescaped
  int_literal,       ///< `int_value`; `int_overflow` when > INT64_MAX
  float_literal,     ///< `float_value`
  string_literal,    ///< 'single quoted'; `str` unescaped
  symbol,            ///< operator or punctuation: ( ) , + - * / % = == <> != < <= > >=
};

struct token {
  token_kind kind = token_kind::end;
  std::size_t offset = 0;  ///< byte offset of the first character
  std::string_view text;   ///< the token as written
  std::string str;         ///< unescaped string / quoted identifier
  std::int64_t int_value = 0;
  bool int_overflow = false; ///< literal > INT64_MAX (only -9223372036854775808 fits)
  double float_value = 0;

  bool is_symbol(std::string_view s) const noexcept {
    return kind == token_kind::symbol && text == s;
  }
  /// True for a bare word equal to `kw` ignoring ASCII case (kw lowercase).
  bool is_keyword(std::string_view kw) const noexcept;
};

/// Splits `text` into tokens, the last one `end`. Whitespace (space, tab,
/// CR, LF, FF, VT) separates tokens. Errors (errc::parse_error):
/// "unterminated string literal", "unterminated quoted name",
/// "unexpected character '#'", "malformed number '1e'", with the offset of
/// the offending token.
expected<std::vector<token>> tokenize(std::string_view text);

/// The token as shown in messages: its text, or "end of input".
std::string describe(const token& t);

} // namespace weir::expr
