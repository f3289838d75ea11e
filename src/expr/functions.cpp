// SPDX-License-Identifier: Apache-2.0
// Function kernels and the `like` matcher.
#include "node.hpp"
#include "weir/expr/expression.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/expr/random.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

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

// 1 where every argument is valid (SQL's null in, null out). A scalar
// argument decides for all rows at once; columns are combined by a loop
// over local pointers that the compiler vectorizes.
buffer<std::uint8_t> valid_in_all(const std::vector<operand>& args, std::size_t rows) {
  buffer<std::uint8_t> valid(rows, 1);
  for (const auto& a : args) {
    const std::uint8_t* v = a.col().validity.data();
    if (a.scalar) {
      if (rows > 0 && v[0] == 0)
        std::fill(valid.begin(), valid.end(), std::uint8_t{0});
      continue;
    }
    std::uint8_t* out = valid.data();
    for (std::size_t i = 0; i < rows; ++i)
      out[i] &= v[i];
  }
  return valid;
}

column concat(const std::vector<operand>& args, std::size_t rows) {
  column out{type_id::string};
  out.validity = valid_in_all(args, rows);
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
        if (out.validity[i] && f >= -9223372036854775808.0 && f < 9223372036854775808.0) {
          out.ints[i] = static_cast<std::int64_t>(f);
        } else {
          out.validity[i] = 0;
          out.ints[i] = 0;
        }
      }
      break;
    case type_id::string:
      for (std::size_t i = 0; i < rows; ++i) {
        out.ints[i] = 0; // (resize leaves it indeterminate; null rows hold 0)
        if (!out.validity[i])
          continue;
        if (auto ms = parse_iso8601(c.str(i)))
          out.ints[i] = *ms;
        else
          out.validity[i] = 0;
      }
      break;
    default:
      std::fill(out.ints.begin(), out.ints.end(), 0);
      break;
  }
  return out;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WEIR_EXPR_AVX512 1

// rand_int(seq, salt, lo, hi) over eight rows at a time with AVX-512 (F,
// DQ): mix64 on 64-bit lanes, then mul_high(word, span) for a span below
// 2^32 from two 32x32-bit products, (hi32 * span + (lo32 * span >> 32)) >> 32
// (no carry is lost: the sum stays below 2^64). Rows that are null get 0.
// `key` is mixed_seed ^ salt * salt_multiplier. Returns the rows done, a
// multiple of eight; the caller finishes the rest.
// (GCC 12 warns about the deliberately undefined vector inside the shift
// intrinsics when they are inlined: a false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512dq"))) std::size_t
random_ints_avx512(std::uint64_t key, const std::int64_t* seq, std::int64_t lo,
                   std::uint64_t span, const std::uint8_t* valid, std::int64_t* out,
                   std::size_t rows) noexcept {
  const __m512i k = _mm512_set1_epi64(static_cast<long long>(key));
  const __m512i c = _mm512_set1_epi64(static_cast<long long>(seq_multiplier));
  const __m512i m1 = _mm512_set1_epi64(static_cast<long long>(0xBF58476D1CE4E5B9ULL));
  const __m512i m2 = _mm512_set1_epi64(static_cast<long long>(0x94D049BB133111EBULL));
  const __m512i sp = _mm512_set1_epi64(static_cast<long long>(span));
  const __m512i base = _mm512_set1_epi64(lo);
  std::size_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    __m512i z = _mm512_xor_si512(
      k, _mm512_mullo_epi64(_mm512_loadu_si512(seq + i), c));
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 30)), m1);
    z = _mm512_mullo_epi64(_mm512_xor_si512(z, _mm512_srli_epi64(z, 27)), m2);
    z = _mm512_xor_si512(z, _mm512_srli_epi64(z, 31));
    const __m512i low = _mm512_mul_epu32(z, sp);                          // lo32 * span
    const __m512i high = _mm512_mul_epu32(_mm512_srli_epi64(z, 32), sp);  // hi32 * span
    const __m512i r = _mm512_add_epi64(
      base, _mm512_srli_epi64(_mm512_add_epi64(high, _mm512_srli_epi64(low, 32)), 32));
    std::uint64_t bytes;
    std::memcpy(&bytes, valid + i, 8);
    // One validity byte (0 or 1) per lane: the lanes whose byte is not 0.
    const __mmask8 m = static_cast<__mmask8>(
      _mm512_cmpneq_epi64_mask(_mm512_cvtepu8_epi64(_mm_cvtsi64_si128(
                                 static_cast<long long>(bytes))),
                               _mm512_setzero_si512()));
    _mm512_storeu_si512(out + i, _mm512_maskz_mov_epi64(m, r));
  }
  return i;
}
#pragma GCC diagnostic pop

#endif

// rand_int / rand_float / rand_string: a stateless hash of (seed, seq,
// salt) per row (weir/expr/random.hpp); null if any argument is null, and
// rand_int is null when lo > hi, rand_string when the length is above
// max_random_string_length (a length column of 2^62 asked for exabytes).
column random_values(const node& n, const std::vector<operand>& args,
                     std::size_t rows) {
  column out{n.type};
  out.validity = valid_in_all(args, rows);
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
        std::size_t i = 0;
#if defined(WEIR_EXPR_AVX512)
        const std::uint64_t span = static_cast<std::uint64_t>(h) - static_cast<std::uint64_t>(l) + 1;
        static const bool& use_avx512 = detail::kernels_use_avx512();
        if (use_avx512 && span != 0 && span <= 0xFFFFFFFFULL)
          i = random_ints_avx512(seed ^ static_cast<std::uint64_t>(s0) * salt_multiplier, seq,
                                 l, span, v, r, rows);
#endif
        for (; i < rows; ++i)
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
        if (len[i * sl] > max_random_string_length)
          out.validity[i] = 0;
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
