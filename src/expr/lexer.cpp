// SPDX-License-Identifier: Apache-2.0
#include "lexer.hpp"

#include <charconv>
#include <cstdlib>
#include <limits>

namespace weir::expr {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f'
         || c == '\v';
}

bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}

char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

} // namespace

bool token::is_keyword(std::string_view kw) const noexcept {
  if (kind != token_kind::identifier || text.size() != kw.size())
    return false;
  for (std::size_t i = 0; i < kw.size(); ++i)
    if (lower_ascii(text[i]) != kw[i])
      return false;
  return true;
}

std::string describe(const token& t) {
  if (t.kind == token_kind::end)
    return "end of input";
  constexpr std::size_t max_shown = 40;
  std::string shown{t.text.substr(0, max_shown)};
  if (t.text.size() > max_shown)
    shown += "...";
  return "'" + shown + "'";
}

expected<std::vector<token>> tokenize(std::string_view text) {
  std::vector<token> out;
  std::size_t pos = 0;
  const std::size_t n = text.size();
  while (true) {
    while (pos < n && is_space(text[pos]))
      ++pos;
    token t;
    t.offset = pos;
    if (pos == n) {
      t.kind = token_kind::end;
      out.push_back(std::move(t));
      return out;
    }
    const char c = text[pos];
    const std::size_t start = pos;
    if (is_ident_start(c)) {
      // A qualified name (`left.key`: a join's field; `small.amount`: a
      // pattern step's) is one identifier, a field of that name.
      while (pos < n && (is_ident_char(text[pos])
                         || (text[pos] == '.' && pos + 1 < n && is_ident_start(text[pos + 1]))))
        ++pos;
      t.kind = token_kind::identifier;
    } else if (is_digit(c) || (c == '.' && pos + 1 < n && is_digit(text[pos + 1]))) {
      bool is_float = false;
      while (pos < n && is_digit(text[pos]))
        ++pos;
      if (pos < n && text[pos] == '.') {
        is_float = true;
        ++pos;
        while (pos < n && is_digit(text[pos]))
          ++pos;
      }
      bool bad = false;
      if (pos < n && (text[pos] == 'e' || text[pos] == 'E')) {
        is_float = true;
        ++pos;
        if (pos < n && (text[pos] == '+' || text[pos] == '-'))
          ++pos;
        if (pos >= n || !is_digit(text[pos]))
          bad = true;
        while (pos < n && is_digit(text[pos]))
          ++pos;
      }
      // "12abc" or "1.2.3" is one malformed token, not two.
      while (pos < n && (is_ident_char(text[pos]) || text[pos] == '.')) {
        bad = true;
        ++pos;
      }
      const std::string_view word = text.substr(start, pos - start);
      if (bad)
        return make_error(errc::parse_error,
                          "malformed number '" + std::string{word} + "'",
                          start);
      if (is_float) {
        t.kind = token_kind::float_literal;
        auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(),
                                       t.float_value);
        // Out-of-range decimals become ±inf or 0 as strtod would: IEEE.
        if (ec == std::errc::result_out_of_range)
          t.float_value = std::strtod(std::string{word}.c_str(), nullptr);
        else if (ec != std::errc{} || p != word.data() + word.size())
          return make_error(errc::parse_error,
                            "malformed number '" + std::string{word} + "'",
                            start);
      } else {
        t.kind = token_kind::int_literal;
        std::uint64_t u = 0;
        auto [p, ec] = std::from_chars(word.data(), word.data() + word.size(), u);
        constexpr auto max = static_cast<std::uint64_t>(
          std::numeric_limits<std::int64_t>::max());
        if (ec != std::errc{} || u > max + 1) {
          return make_error(errc::parse_error,
                            "integer literal " + std::string{word}
                              + " is out of range for int64",
                            start);
        }
        if (u == max + 1) {
          t.int_overflow = true;
          t.int_value = std::numeric_limits<std::int64_t>::min();
        } else {
          t.int_value = static_cast<std::int64_t>(u);
        }
      }
    } else if (c == '\'' || c == '"') {
      ++pos;
      while (true) {
        if (pos >= n)
          return make_error(errc::parse_error,
                            c == '\'' ? "unterminated string literal"
                                      : "unterminated quoted name",
                            start);
        if (text[pos] == c) {
          if (pos + 1 < n && text[pos + 1] == c) {
            t.str.push_back(c);
            pos += 2;
            continue;
          }
          ++pos;
          break;
        }
        t.str.push_back(text[pos]);
        ++pos;
      }
      if (c == '"' && t.str.empty())
        return make_error(errc::parse_error, "empty quoted name", start);
      t.kind = c == '\'' ? token_kind::string_literal
                         : token_kind::quoted_identifier;
    } else {
      t.kind = token_kind::symbol;
      const char next = pos + 1 < n ? text[pos + 1] : '\0';
      switch (c) {
        case '(':
        case ')':
        case ',':
        case '+':
        case '-':
        case '*':
        case '/':
        case '%':
          pos += 1;
          break;
        case '=':
          pos += next == '=' ? 2 : 1;
          break;
        case '<':
          pos += next == '=' || next == '>' ? 2 : 1;
          break;
        case '>':
          pos += next == '=' ? 2 : 1;
          break;
        case '!':
          if (next == '=') {
            pos += 2;
            break;
          }
          [[fallthrough]];
        default: {
          // Show a whole UTF-8 character, not a lone lead byte.
          std::size_t len = 1;
          const auto b = static_cast<unsigned char>(c);
          if (b >= 0xF0)
            len = 4;
          else if (b >= 0xE0)
            len = 3;
          else if (b >= 0xC0)
            len = 2;
          return make_error(errc::parse_error,
                            "unexpected character '"
                              + std::string{text.substr(start, len)} + "'",
                            start);
        }
      }
    }
    t.text = text.substr(start, pos - start);
    out.push_back(std::move(t));
  }
}

} // namespace weir::expr
