// SPDX-License-Identifier: Apache-2.0
// Function kernels and the `like` matcher.
#include "node.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/expr/random.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

namespace weir::expr {

namespace {

// Bytes in the UTF-8 character starting at s[i] (1 for a stray byte),
// clamped to the string's end.
std::size_t char_len(std::string_view s, std::size_t i) noexcept {
  const auto b = static_cast<unsigned char>(s[i]);
  std::size_t len = 1;
  if (b >= 0xF0)
    len = 4;
  else if (b >= 0xE0)
    len = 3;
  else if (b >= 0xC0)
    len = 2;
  return std::min(len, s.size() - i);
}

std::int64_t count_chars(std::string_view s) noexcept {
  std::int64_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

// Byte offset of the character with 0-based index k, or s.size().
std::size_t char_offset(std::string_view s, std::int64_t k) noexcept {
  std::size_t i = 0;
  while (k > 0 && i < s.size()) {
    i += char_len(s, i);
    --k;
  }
  return i;
}

void append_text(std::string& out, const column& c, std::size_t row) {
  char buf[32];
  switch (c.type) {
    case type_id::string:
      out.append(c.str(row));
      break;
    case type_id::int64: {
      auto r = std::to_chars(buf, buf + sizeof buf, c.ints[row]);
      out.append(buf, r.ptr);
      break;
    }
    case type_id::float64: {
      // Shortest text that reads back as the same double: 0.1, not 0.1000...01.
      auto r = std::to_chars(buf, buf + sizeof buf, c.floats[row]);
      out.append(buf, r.ptr);
      break;
    }
    case type_id::boolean:
      out.append(c.bools[row] ? "true" : "false");
      break;
    case type_id::timestamp:
      append_iso8601(out, c.ints[row]);
      break;
    case type_id::null_type:
      break;
  }
}

column case_map(const column& c, std::size_t rows, bool upper) {
  column out{type_id::string};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  out.offsets.assign(c.offsets.begin(), c.offsets.begin() + static_cast<std::ptrdiff_t>(rows + 1));
  // The input may be a slice of a longer column: rebase the offsets.
  const std::uint32_t base = out.offsets[0];
  out.chars.assign(c.chars, base, out.offsets[rows] - base);
  if (base != 0)
    for (auto& o : out.offsets)
      o -= base;
  const char from = upper ? 'a' : 'A';
  for (char& ch : out.chars)
    if (ch >= from && ch <= from + 25)
      ch = static_cast<char>(ch ^ 0x20);
  return out;
}

column length(const column& c, std::size_t rows) {
  column out{type_id::int64};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  out.ints.resize(rows);
  for (std::size_t i = 0; i < rows; ++i)
    out.ints[i] = count_chars(c.str(i));
  return out;
}

// SQL substring(s from start for len): the characters at 1-based positions
// p with start <= p < start + len, clipped to the string; a negative len
// gives ''.
column substr(const std::vector<operand>& args, std::size_t rows) {
  column out{type_id::string};
  out.validity.resize(rows);
  out.offsets.reserve(rows + 1);
  const column& s = args[0].col();
  const column& st = args[1].col();
  const std::size_t ss = args[0].stride(), sst = args[1].stride();
  const column* len = args.size() > 2 ? &args[2].col() : nullptr;
  const std::size_t sl = args.size() > 2 ? args[2].stride() : 0;
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  for (std::size_t i = 0; i < rows; ++i) {
    std::uint8_t valid = s.validity[i * ss] & st.validity[i * sst];
    if (len)
      valid &= len->validity[i * sl];
    out.validity[i] = valid;
    if (valid) {
      const std::string_view text = s.str(i * ss);
      const std::int64_t start = st.ints[i * sst];
      std::int64_t end = max; // exclusive, 1-based
      if (len) {
        const std::int64_t l = len->ints[i * sl];
        end = l < 0 ? start : (start > max - l ? max : start + l);
      }
      const std::int64_t from = std::max<std::int64_t>(start, 1);
      if (end > from) {
        const std::size_t b = char_offset(text, from - 1);
        const std::string_view rest = text.substr(b);
        const std::size_t e = end == max ? rest.size() : char_offset(rest, end - from);
        out.chars.append(rest.substr(0, e));
      }
    }
    out.offsets.push_back(static_cast<std::uint32_t>(out.chars.size()));
  }
  return out;
}

column concat(const std::vector<operand>& args, std::size_t rows) {
  column out{type_id::string};
  out.validity.assign(rows, 1);
  for (const auto& a : args) {
    const std::uint8_t* v = a.col().validity.data();
    const std::size_t s = a.stride();
    for (std::size_t i = 0; i < rows; ++i)
      out.validity[i] &= v[i * s];
  }
  out.offsets.reserve(rows + 1);
  for (std::size_t i = 0; i < rows; ++i) {
    if (out.validity[i])
      for (const auto& a : args)
        append_text(out.chars, a.col(), i * a.stride());
    out.offsets.push_back(static_cast<std::uint32_t>(out.chars.size()));
  }
  return out;
}

column abs_or_floor(const column& c, std::size_t rows, bool is_abs) {
  column out{c.type};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  if (c.type == type_id::float64) {
    out.floats.resize(rows);
    for (std::size_t i = 0; i < rows; ++i)
      out.floats[i] = is_abs ? std::fabs(c.floats[i]) : std::floor(c.floats[i]);
  } else if (is_abs) {
    out.ints.resize(rows);
    // abs(INT64_MIN) wraps to INT64_MIN, as negation does.
    for (std::size_t i = 0; i < rows; ++i)
      out.ints[i] = c.ints[i] < 0
                      ? static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(c.ints[i]))
                      : c.ints[i];
  } else {
    out.ints.assign(c.ints.begin(), c.ints.begin() + static_cast<std::ptrdiff_t>(rows));
  }
  return out;
}

column coalesce(const std::vector<operand>& args, type_id type, std::size_t rows) {
  constexpr std::uint32_t none = static_cast<std::uint32_t>(-1);
  std::vector<std::uint32_t> pick(rows, none);
  for (std::size_t k = args.size(); k-- > 0;) {
    const std::uint8_t* v = args[k].col().validity.data();
    const std::size_t s = args[k].stride();
    for (std::size_t i = 0; i < rows; ++i)
      pick[i] = v[i * s] ? static_cast<std::uint32_t>(k) : pick[i];
  }
  column out{type};
  out.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    if (pick[i] == none)
      out.append_null();
    else
      out.append_from(args[pick[i]].col(), i * args[pick[i]].stride());
  }
  return out;
}

column to_timestamp(const column& c, std::size_t rows) {
  column out{type_id::timestamp};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  out.ints.resize(rows);
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      std::copy_n(c.ints.begin(), rows, out.ints.begin());
      break;
    case type_id::float64:
      for (std::size_t i = 0; i < rows; ++i) {
        const double f = std::floor(c.floats[i]);
        // 2^63 is exactly representable; NaN fails both tests.
        if (out.validity[i] && f >= -9223372036854775808.0 && f < 9223372036854775808.0)
          out.ints[i] = static_cast<std::int64_t>(f);
        else
          out.validity[i] = 0;
      }
      break;
    case type_id::string:
      for (std::size_t i = 0; i < rows; ++i) {
        if (!out.validity[i])
          continue;
        if (auto ms = parse_iso8601(c.str(i)))
          out.ints[i] = *ms;
        else
          out.validity[i] = 0;
      }
      break;
    default:
      break;
  }
  return out;
}

// rand_int / rand_float / rand_string: a stateless hash of (seed, seq,
// salt) per row (weir/expr/random.hpp); null if any argument is null, and
// rand_int is null when lo > hi.
column random_values(const node& n, const std::vector<operand>& args,
                     std::size_t rows) {
  column out{n.type};
  out.validity.assign(rows, 1);
  for (const auto& a : args) {
    const std::uint8_t* v = a.col().validity.data();
    const std::size_t s = a.stride();
    for (std::size_t i = 0; i < rows; ++i)
      out.validity[i] &= v[i * s];
  }
  const std::int64_t* seq = args[0].col().ints.data();
  const std::int64_t* salt = args[1].col().ints.data();
  const std::size_t sq = args[0].stride(), ss = args[1].stride();
  const std::uint64_t seed = n.mixed_seed;
  switch (n.fn) {
    case function_id::rand_int: {
      out.ints.resize(rows);
      const std::int64_t* lo = args[2].col().ints.data();
      const std::int64_t* hi = args[3].col().ints.data();
      const std::size_t sl = args[2].stride(), sh = args[3].stride();
      if (sq == 1 && ss == 0 && sl == 0 && sh == 0) {
        // The usual shape, rand_int(seq, 3, 0, 999): one branch-free loop.
        if (lo[0] > hi[0]) {
          std::fill(out.validity.begin(), out.validity.end(), 0);
          std::fill(out.ints.begin(), out.ints.end(), 0);
          break;
        }
        const std::int64_t l = lo[0], h = hi[0];
        const std::int64_t s0 = salt[0];
        std::int64_t* r = out.ints.data();
        const std::uint8_t* v = out.validity.data();
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = v[i] ? random_int(random_word(seed, seq[i], s0), l, h) : 0;
        break;
      }
      for (std::size_t i = 0; i < rows; ++i) {
        const std::int64_t l = lo[i * sl], h = hi[i * sh];
        if (l > h)
          out.validity[i] = 0;
        out.ints[i] = out.validity[i]
                        ? random_int(random_word(seed, seq[i * sq], salt[i * ss]), l, h)
                        : 0;
      }
      break;
    }
    case function_id::rand_float:
      out.floats.resize(rows);
      for (std::size_t i = 0; i < rows; ++i)
        out.floats[i] = out.validity[i]
                          ? random_unit(random_word(seed, seq[i * sq], salt[i * ss]))
                          : 0.0;
      break;
    default: {
      const std::int64_t* len = args[2].col().ints.data();
      const std::size_t sl = args[2].stride();
      out.offsets.reserve(rows + 1);
      for (std::size_t i = 0; i < rows; ++i) {
        if (out.validity[i])
          append_random_letters(out.chars, random_word(seed, seq[i * sq], salt[i * ss]),
                                len[i * sl]);
        out.offsets.push_back(static_cast<std::uint32_t>(out.chars.size()));
      }
      break;
    }
  }
  return out;
}

} // namespace

bool like_match(std::string_view s, std::string_view p) noexcept {
  // Greedy match with one backtrack point (the last '%'): O(|s|·|p|) worst
  // case, linear for typical patterns.
  std::size_t si = 0, pi = 0;
  std::size_t star_p = std::string_view::npos, star_s = 0;
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '%') {
      star_p = pi++;
      star_s = si;
    } else if (pi < p.size() && p[pi] == '_') {
      si += char_len(s, si);
      ++pi;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++si;
      ++pi;
    } else if (star_p != std::string_view::npos) {
      pi = star_p + 1;
      star_s += char_len(s, star_s);
      si = star_s;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '%')
    ++pi;
  return pi == p.size();
}

like_pattern like_pattern::make(std::string_view pattern) {
  like_pattern out;
  out.text = std::string{pattern};
  if (pattern.find('_') != std::string_view::npos)
    return out;
  std::size_t b = 0, e = pattern.size();
  while (b < e && pattern[b] == '%')
    ++b;
  while (e > b && pattern[e - 1] == '%')
    --e;
  const std::string_view core = pattern.substr(b, e - b);
  if (core.find('%') != std::string_view::npos)
    return out;
  const bool lead = b > 0, trail = e < pattern.size();
  out.text = std::string{core};
  if (lead && trail)
    out.kind = shape::contains;
  else if (lead)
    out.kind = shape::suffix;
  else if (trail)
    out.kind = shape::prefix;
  else
    out.kind = shape::exact;
  return out;
}

bool like_pattern::matches(std::string_view s) const noexcept {
  switch (kind) {
    case shape::exact:
      return s == text;
    case shape::prefix:
      return s.starts_with(text);
    case shape::suffix:
      return s.ends_with(text);
    case shape::contains:
      return s.find(text) != std::string_view::npos;
    case shape::general:
      break;
  }
  return like_match(s, text);
}

operand evaluate_call(const node& n, std::vector<operand>& args,
                      std::size_t rows, bool scalar) {
  operand result;
  result.scalar = scalar;
  // Single-argument functions see a column (or, when scalar, one row).
  const column& a0 = args[0].col();
  switch (n.fn) {
    case function_id::lower:
    case function_id::upper:
      result.owned = case_map(a0, rows, n.fn == function_id::upper);
      break;
    case function_id::length:
      result.owned = length(a0, rows);
      break;
    case function_id::substr:
      result.owned = substr(args, rows);
      break;
    case function_id::concat:
      result.owned = concat(args, rows);
      break;
    case function_id::abs:
    case function_id::floor:
      result.owned = abs_or_floor(a0, rows, n.fn == function_id::abs);
      break;
    case function_id::coalesce:
      result.owned = coalesce(args, n.type, rows);
      break;
    case function_id::to_timestamp:
      result.owned = to_timestamp(a0, rows);
      break;
    case function_id::rand_int:
    case function_id::rand_float:
    case function_id::rand_string:
      result.owned = random_values(n, args, rows);
      break;
  }
  return result;
}

} // namespace weir::expr
