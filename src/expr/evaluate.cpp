// SPDX-License-Identifier: Apache-2.0
// Column-at-a-time evaluation. Each operator runs one tight loop per batch
// over typed arrays; an operand is a column (stride 1) or a literal broadcast
// to every row (stride 0), so constants are never materialized.
#include "node.hpp"
#include "weir/core/log.hpp"
#include "weir/expr/expression.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <type_traits>

#include <libdivide.h>
#include <spdlog/logger.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define WEIR_EXPR_AVX512 1
#endif

namespace weir::expr {

namespace {

std::int64_t wrap_add(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x)
                                   + static_cast<std::uint64_t>(y));
}

std::int64_t wrap_sub(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x)
                                   - static_cast<std::uint64_t>(y));
}

std::int64_t wrap_mul(std::int64_t x, std::int64_t y) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(x)
                                   * static_cast<std::uint64_t>(y));
}

std::int64_t wrap_neg(std::int64_t x) {
  return static_cast<std::int64_t>(0 - static_cast<std::uint64_t>(x));
}

// out[i] = a valid and b valid.
// Calls f(SA, SB) with the strides (0 for a scalar, 1 for a column) as
// compile-time constants, so that loops indexing `x[i * sa]` vectorize
// instead of multiplying by a run-time stride on every row.
template <class F>
void with_strides(std::size_t sa, std::size_t sb, F&& f) {
  using zero = std::integral_constant<std::size_t, 0>;
  using one = std::integral_constant<std::size_t, 1>;
  if (sa == 1 && sb == 1)
    f(one{}, one{});
  else if (sa == 1)
    f(one{}, zero{});
  else if (sb == 1)
    f(zero{}, one{});
  else
    f(zero{}, zero{});
}

void and_validity(std::uint8_t* out, const operand& a, const operand& b,
                  std::size_t rows) {
  const std::uint8_t* va = a.col().validity.data();
  const std::uint8_t* vb = b.col().validity.data();
  with_strides(a.stride(), b.stride(), [&](auto sa, auto sb) {
    for (std::size_t i = 0; i < rows; ++i)
      out[i] = va[i * sa] & vb[i * sb];
  });
}

// Null rows hold 0 / 0.0 / false (record_batch.hpp).
// Whether every row is valid: then there is nothing to zero (memchr reads
// the bytes far faster than a masking pass writes the values).
bool all_valid(const buffer<std::uint8_t>& validity) noexcept {
  return validity.empty() || std::memchr(validity.data(), 0, validity.size()) == nullptr;
}

template <class T>
void zero_nulls(buffer<T>& values, const buffer<std::uint8_t>& validity) {
  if (all_valid(validity))
    return;
  const std::size_t rows = validity.size();
  T* v = values.data();
  const std::uint8_t* ok = validity.data();
  if constexpr (std::is_integral_v<T>) {
    // With a mask rather than a condition, which GCC compiles to a branch
    // per row for bytes.
    for (std::size_t i = 0; i < rows; ++i)
      v[i] = static_cast<T>(v[i] & static_cast<T>(0 - static_cast<T>(ok[i] != 0)));
  } else {
    for (std::size_t i = 0; i < rows; ++i)
      v[i] = ok[i] ? v[i] : T{};
  }
}

// The same for int64 with a mask, a loop the compiler vectorizes.
void zero_nulls(buffer<std::int64_t>& values, const buffer<std::uint8_t>& validity) {
  if (all_valid(validity))
    return;
  const std::size_t rows = validity.size();
  std::int64_t* v = values.data();
  const std::uint8_t* ok = validity.data();
  for (std::size_t i = 0; i < rows; ++i)
    v[i] &= -static_cast<std::int64_t>(ok[i] != 0);
}

#if defined(WEIR_EXPR_AVX512)
// r[i] = x[i] / d (truncated) eight rows at a time with AVX-512 (F, DQ), in
// double precision: exact while |x| < 2^53 and |d| < 2^53, because the
// quotient's rounding error, under |q| * 2^-53 < 1/|d|, is smaller than its
// distance to the next integer (at least 1/|d| when not an integer), and
// truncation then gives the integer quotient. Stops at the first eight rows
// holding a larger |x|; returns the rows done, and the caller finishes them.
// With `remainder`, r[i] = x[i] - q * d instead.
// (GCC 12 warns about the deliberately undefined vector inside the shift
// intrinsics when they are inlined: a false positive.)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
__attribute__((target("avx512f,avx512dq"))) std::size_t
divide_by_constant_avx512(const std::int64_t* x, std::int64_t d, bool remainder,
                          std::int64_t* r, std::size_t rows) noexcept {
  const __m512d dd = _mm512_set1_pd(static_cast<double>(d));
  const __m512i di = _mm512_set1_epi64(d);
  const __m512i limit = _mm512_set1_epi64(std::int64_t{1} << 53);
  std::size_t i = 0;
  for (; i + 8 <= rows; i += 8) {
    const __m512i xi = _mm512_loadu_si512(x + i);
    // |x| < 2^53, compared unsigned: the abs of INT64_MIN is 2^63.
    if (_mm512_cmplt_epu64_mask(_mm512_abs_epi64(xi), limit) != 0xFF)
      break;
    // Round to nearest whatever the thread's rounding mode: the exactness
    // argument above needs it.
    const __m512i q = _mm512_cvttpd_epi64(_mm512_div_round_pd(
      _mm512_cvtepi64_pd(xi), dd, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    _mm512_storeu_si512(r + i, remainder ? _mm512_sub_epi64(xi, _mm512_mullo_epi64(q, di)) : q);
  }
  return i;
}
#pragma GCC diagnostic pop

bool detect_avx512() noexcept {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}
#endif

// The rows of x / d (or x % d) that the AVX-512 kernel does, from the
// first: none without AVX-512 or for |d| >= 2^53.
std::size_t divide_by_constant(const std::int64_t* x, std::int64_t d, bool remainder,
                               std::int64_t* r, std::size_t rows) noexcept {
#if defined(WEIR_EXPR_AVX512)
  static const bool& use_avx512 = detail::kernels_use_avx512();
  constexpr std::int64_t limit = std::int64_t{1} << 53;
  if (use_avx512 && d > -limit && d < limit)
    return divide_by_constant_avx512(x, d, remainder, r, rows);
#endif
  (void) x, (void) d, (void) remainder, (void) r, (void) rows;
  return 0;
}

// A divisor worth precomputing for: not 0 (null), not -1 (wraps), not
// INT64_MIN (outside what libdivide's signed divider takes).
bool invariant_divisor(std::int64_t d) noexcept {
  return d != 0 && d != -1 && d != std::numeric_limits<std::int64_t>::min();
}

column arith_int(arith_op op, const operand& a, const operand& b,
                 std::size_t rows, type_id out_type) {
  column out{out_type};
  out.validity.resize(rows);
  out.ints.resize(rows);
  and_validity(out.validity.data(), a, b, rows);
  const std::int64_t* x = a.col().ints.data();
  const std::int64_t* y = b.col().ints.data();
  const std::size_t sx = a.stride(), sy = b.stride();
  std::int64_t* r = out.ints.data();
  std::uint8_t* v = out.validity.data();
  with_strides(sx, sy, [&](auto ax, auto ay) {
    switch (op) {
      case arith_op::add:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = wrap_add(x[i * ax], y[i * ay]);
        break;
      case arith_op::sub:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = wrap_sub(x[i * ax], y[i * ay]);
        break;
      case arith_op::mul:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = wrap_mul(x[i * ax], y[i * ay]);
        break;
      case arith_op::div:
        if (ay == 0 && invariant_divisor(y[0])) {
          // A constant divisor (`seq / 100`): a multiply and shifts per row
          // instead of a division (libdivide; Granlund & Montgomery, PLDI
          // 1994), truncating as `/` does.
          const libdivide::divider<std::int64_t> by(y[0]);
          std::size_t i = 0;
          if constexpr (decltype(ax)::value == 1)
            i = divide_by_constant(x, y[0], false, r, rows);
          for (; i < rows; ++i)
            r[i] = x[i * ax] / by;
          break;
        }
        // Division by zero is null; INT64_MIN / -1 wraps like the other ops.
        for (std::size_t i = 0; i < rows; ++i) {
          const std::int64_t d = y[i * ay];
          if (d == 0) {
            v[i] = 0;
            r[i] = 0;
          } else {
            r[i] = d == -1 ? wrap_neg(x[i * ax]) : x[i * ax] / d;
          }
        }
        break;
      case arith_op::mod:
        if (ay == 0 && invariant_divisor(y[0])) {
          const std::int64_t d = y[0];
          const libdivide::divider<std::int64_t> by(d);
          std::size_t i = 0;
          if constexpr (decltype(ax)::value == 1)
            i = divide_by_constant(x, d, true, r, rows);
          for (; i < rows; ++i)
            r[i] = x[i * ax] - x[i * ax] / by * d; // |quotient * d| <= |dividend|
          break;
        }
        // C/SQL truncated remainder: the sign follows the dividend.
        for (std::size_t i = 0; i < rows; ++i) {
          const std::int64_t d = y[i * ay];
          if (d == 0) {
            v[i] = 0;
            r[i] = 0;
          } else {
            r[i] = d == -1 ? 0 : x[i * ax] % d;
          }
        }
        break;
    }
  });
  zero_nulls(out.ints, out.validity);
  return out;
}

column arith_float(arith_op op, const operand& a, const operand& b,
                   std::size_t rows) {
  column out{type_id::float64};
  out.validity.resize(rows);
  out.floats.resize(rows);
  and_validity(out.validity.data(), a, b, rows);
  const double* x = a.col().floats.data();
  const double* y = b.col().floats.data();
  const std::size_t sx = a.stride(), sy = b.stride();
  double* r = out.floats.data();
  with_strides(sx, sy, [&](auto ax, auto ay) {
    switch (op) {
      case arith_op::add:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = x[i * ax] + y[i * ay];
        break;
      case arith_op::sub:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = x[i * ax] - y[i * ay];
        break;
      case arith_op::mul:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = x[i * ax] * y[i * ay];
        break;
      case arith_op::div:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = x[i * ax] / y[i * ay];
        break;
      case arith_op::mod:
        for (std::size_t i = 0; i < rows; ++i)
          r[i] = std::fmod(x[i * ax], y[i * ay]);
        break;
    }
  });
  zero_nulls(out.floats, out.validity);
  return out;
}

column negate(const operand& a, std::size_t rows) {
  const column& c = a.col();
  column out{c.type};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  if (c.type == type_id::float64) {
    out.floats.resize(rows);
    for (std::size_t i = 0; i < rows; ++i)
      out.floats[i] = -c.floats[i];
  } else {
    out.ints.resize(rows);
    for (std::size_t i = 0; i < rows; ++i)
      out.ints[i] = wrap_neg(c.ints[i]);
  }
  return out;
}

column cast_to_float(const operand& a, std::size_t rows) {
  const column& c = a.col();
  column out{type_id::float64};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  out.floats.resize(rows);
  for (std::size_t i = 0; i < rows; ++i)
    out.floats[i] = static_cast<double>(c.ints[i]);
  return out;
}

template <class T, class Cmp>
void compare_loop(const T* x, std::size_t sx, const T* y, std::size_t sy,
                  std::uint8_t* out, std::size_t rows, Cmp cmp) {
  with_strides(sx, sy, [&](auto sa, auto sb) {
    for (std::size_t i = 0; i < rows; ++i)
      out[i] = cmp(x[i * sa], y[i * sb]) ? 1 : 0;
  });
}

template <class T>
void compare_values(compare_op op, const T* x, std::size_t sx, const T* y,
                    std::size_t sy, std::uint8_t* out, std::size_t rows) {
  switch (op) {
    case compare_op::eq:
      compare_loop(x, sx, y, sy, out, rows, std::equal_to<>{});
      break;
    case compare_op::ne:
      compare_loop(x, sx, y, sy, out, rows, std::not_equal_to<>{});
      break;
    case compare_op::lt:
      compare_loop(x, sx, y, sy, out, rows, std::less<>{});
      break;
    case compare_op::le:
      compare_loop(x, sx, y, sy, out, rows, std::less_equal<>{});
      break;
    case compare_op::gt:
      compare_loop(x, sx, y, sy, out, rows, std::greater<>{});
      break;
    case compare_op::ge:
      compare_loop(x, sx, y, sy, out, rows, std::greater_equal<>{});
      break;
  }
}

template <class Cmp>
void compare_string_loop(const column& a, std::size_t sa, const column& b,
                         std::size_t sb, std::uint8_t* out, std::size_t rows,
                         Cmp cmp) {
  for (std::size_t i = 0; i < rows; ++i)
    out[i] = cmp(a.str(i * sa), b.str(i * sb)) ? 1 : 0;
}

void compare_strings(compare_op op, const column& a, std::size_t sa,
                     const column& b, std::size_t sb, std::uint8_t* out,
                     std::size_t rows) {
  switch (op) {
    case compare_op::eq:
      compare_string_loop(a, sa, b, sb, out, rows, std::equal_to<>{});
      break;
    case compare_op::ne:
      compare_string_loop(a, sa, b, sb, out, rows, std::not_equal_to<>{});
      break;
    case compare_op::lt:
      compare_string_loop(a, sa, b, sb, out, rows, std::less<>{});
      break;
    case compare_op::le:
      compare_string_loop(a, sa, b, sb, out, rows, std::less_equal<>{});
      break;
    case compare_op::gt:
      compare_string_loop(a, sa, b, sb, out, rows, std::greater<>{});
      break;
    case compare_op::ge:
      compare_string_loop(a, sa, b, sb, out, rows, std::greater_equal<>{});
      break;
  }
}

// Writes a op b into out (no validity); a and b have the same physical type.
void compare_into(compare_op op, const operand& a, const operand& b,
                  std::uint8_t* out, std::size_t rows) {
  const column& x = a.col();
  const column& y = b.col();
  const std::size_t sx = a.stride(), sy = b.stride();
  switch (x.type) {
    case type_id::int64:
    case type_id::timestamp:
      compare_values(op, x.ints.data(), sx, y.ints.data(), sy, out, rows);
      break;
    case type_id::float64:
      compare_values(op, x.floats.data(), sx, y.floats.data(), sy, out, rows);
      break;
    case type_id::boolean:
      compare_values(op, x.bools.data(), sx, y.bools.data(), sy, out, rows);
      break;
    case type_id::string:
      compare_strings(op, x, sx, y, sy, out, rows);
      break;
    case type_id::null_type:
      break;
  }
}

column compare(compare_op op, const operand& a, const operand& b,
               std::size_t rows) {
  column out{type_id::boolean};
  out.validity.resize(rows);
  out.bools.resize(rows);
  and_validity(out.validity.data(), a, b, rows);
  compare_into(op, a, b, out.bools.data(), rows);
  zero_nulls(out.bools, out.validity);
  return out;
}

// Kleene logic: and is false if any operand is false, true if all are true,
// else null; or is the dual.
column logical(bool is_and, const std::vector<operand>& args, std::size_t rows) {
  column out{type_id::boolean};
  // decided[i]: some operand already fixed the result (false for and,
  // true for or); unknown[i]: some operand was null.
  std::vector<std::uint8_t> decided(rows, 0), unknown(rows, 0);
  const std::uint8_t target = is_and ? 0 : 1;
  for (const auto& a : args) {
    const column& c = a.col();
    const std::size_t s = a.stride();
    const std::uint8_t* v = c.validity.data();
    const std::uint8_t* b = c.bools.data();
    for (std::size_t i = 0; i < rows; ++i) {
      const std::uint8_t valid = v[i * s];
      decided[i] |= valid & static_cast<std::uint8_t>(b[i * s] == target);
      unknown[i] |= static_cast<std::uint8_t>(valid ^ 1);
    }
  }
  out.validity.resize(rows);
  out.bools.resize(rows);
  for (std::size_t i = 0; i < rows; ++i) {
    out.validity[i] = decided[i] | static_cast<std::uint8_t>(unknown[i] ^ 1);
    // Decided: the target value; all known and undecided: the other value.
    out.bools[i] = is_and ? static_cast<std::uint8_t>(out.validity[i] & (decided[i] ^ 1))
                          : decided[i];
  }
  return out;
}

column logical_not(const operand& a, std::size_t rows) {
  const column& c = a.col();
  column out{type_id::boolean};
  out.validity.assign(c.validity.begin(), c.validity.begin() + static_cast<std::ptrdiff_t>(rows));
  out.bools.resize(rows);
  for (std::size_t i = 0; i < rows; ++i)
    out.bools[i] = c.validity[i] & (c.bools[i] ^ 1);
  return out;
}

column is_null(const operand& a, bool negated, std::size_t rows) {
  const column& c = a.col();
  column out{type_id::boolean};
  out.validity.assign(rows, 1);
  out.bools.resize(rows);
  const std::uint8_t flip = negated ? 0 : 1;
  for (std::size_t i = 0; i < rows; ++i)
    out.bools[i] = c.validity[i] ^ flip;
  return out;
}

// x in (items): true if some non-null item equals x; else null if x or some
// item is null; else false. `not in` negates that (null stays null).
column in_list(const std::vector<operand>& args, bool negated, std::size_t rows) {
  const operand& x = args[0];
  std::vector<std::uint8_t> found(rows, 0), saw_null(rows, 0), eq(rows);
  for (std::size_t k = 1; k < args.size(); ++k) {
    const operand& item = args[k];
    compare_into(compare_op::eq, x, item, eq.data(), rows);
    const std::uint8_t* v = item.col().validity.data();
    const std::size_t s = item.stride();
    for (std::size_t i = 0; i < rows; ++i) {
      found[i] |= static_cast<std::uint8_t>(eq[i] & v[i * s]);
      saw_null[i] |= static_cast<std::uint8_t>(v[i * s] ^ 1);
    }
  }
  column out{type_id::boolean};
  out.validity.resize(rows);
  out.bools.resize(rows);
  const std::uint8_t* vx = x.col().validity.data();
  const std::size_t sx = x.stride();
  const std::uint8_t flip = negated ? 1 : 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint8_t hit = vx[i * sx] & found[i];
    const std::uint8_t valid = hit | (vx[i * sx] & (saw_null[i] ^ 1));
    out.validity[i] = valid;
    out.bools[i] = valid & (hit ^ flip);
  }
  return out;
}

template <class T, class Get>
void set_lookup(const std::vector<T>& items, Get get, const std::uint8_t* vx,
                std::size_t rows, std::uint8_t* hit) {
  for (std::size_t i = 0; i < rows; ++i)
    hit[i] = vx[i] && std::binary_search(items.begin(), items.end(), get(i));
}

// x in (literals...) by binary search in the sorted items; same nulls as in_list.
column in_set_lookup(const in_set& set, const operand& x, bool negated,
                     std::size_t rows) {
  const column& c = x.col();
  column out{type_id::boolean};
  out.validity.resize(rows);
  out.bools.resize(rows);
  const std::uint8_t* vx = c.validity.data();
  std::uint8_t* hit = out.bools.data();
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      set_lookup(set.ints, [&](std::size_t i) { return c.ints[i]; }, vx, rows, hit);
      break;
    case type_id::float64:
      set_lookup(set.floats, [&](std::size_t i) { return c.floats[i]; }, vx, rows, hit);
      break;
    case type_id::string:
      set_lookup(set.strings, [&](std::size_t i) { return c.str(i); }, vx, rows, hit);
      break;
    default:
      std::fill(hit, hit + rows, std::uint8_t{0});
      break;
  }
  const std::uint8_t no_null = set.has_null ? 0 : 1;
  const std::uint8_t flip = negated ? 1 : 0;
  for (std::size_t i = 0; i < rows; ++i) {
    const std::uint8_t valid = hit[i] | (vx[i] & no_null);
    out.validity[i] = valid;
    out.bools[i] = valid & (hit[i] ^ flip);
  }
  return out;
}

column like(const node& n, const operand& a, const operand& p, std::size_t rows) {
  column out{type_id::boolean};
  out.validity.resize(rows);
  out.bools.resize(rows);
  and_validity(out.validity.data(), a, p, rows);
  const column& x = a.col();
  const std::size_t sx = a.stride();
  const bool flip = n.negated;
  if (n.pattern) {
    const like_pattern& pat = *n.pattern;
    for (std::size_t i = 0; i < rows; ++i)
      out.bools[i] = out.validity[i] && (pat.matches(x.str(i * sx)) != flip);
  } else {
    const column& y = p.col();
    const std::size_t sy = p.stride();
    for (std::size_t i = 0; i < rows; ++i)
      out.bools[i] = out.validity[i] && (like_match(x.str(i * sx), y.str(i * sy)) != flip);
  }
  return out;
}

// case/if over evaluated children c1, v1, ..., e: each row takes the value
// of the first condition that is true (valid and set), else e. Every branch
// is evaluated over the whole batch (the kernels cannot fail: division by
// zero is null), then one pass picks.
column conditional(const std::vector<operand>& args, type_id type, std::size_t rows) {
  const std::size_t pairs = (args.size() - 1) / 2;
  std::vector<std::uint32_t> pick(rows, static_cast<std::uint32_t>(args.size() - 1));
  for (std::size_t k = pairs; k-- > 0;) {
    const column& c = args[2 * k].col();
    const std::size_t s = args[2 * k].stride();
    const std::uint8_t* v = c.validity.data();
    const std::uint8_t* b = c.bools.data();
    const auto value = static_cast<std::uint32_t>(2 * k + 1);
    for (std::size_t i = 0; i < rows; ++i)
      pick[i] = (v[i * s] & b[i * s]) != 0 ? value : pick[i];
  }
  column out{type};
  out.reserve(rows);
  for (std::size_t i = 0; i < rows; ++i)
    out.append_from(args[pick[i]].col(), i * args[pick[i]].stride());
  return out;
}

[[noreturn]] void broken_precondition(const node& n, const record_batch& batch) {
  log::runtime().critical("expression evaluated on a batch of another schema: field "
                          "'{}' (#{}, {}) missing or of another type (batch has {} "
                          "columns, {} rows)",
                          n.name, n.field_index, to_string(n.type), batch.columns.size(),
                          batch.num_rows);
  log::runtime().flush();
  std::abort();
}

} // namespace

bool& detail::kernels_use_avx512() noexcept {
#if defined(WEIR_EXPR_AVX512)
  static bool use = detect_avx512();
#else
  static bool use = false;
#endif
  return use;
}

column materialize(operand&& op, std::size_t rows) {
  if (!op.scalar)
    return op.ref ? *op.ref : std::move(op.owned);
  const column& c = op.col();
  column out{c.type};
  out.validity.assign(rows, c.validity[0]);
  switch (c.type) {
    case type_id::int64:
    case type_id::timestamp:
      out.ints.assign(rows, c.ints[0]);
      break;
    case type_id::float64:
      out.floats.assign(rows, c.floats[0]);
      break;
    case type_id::boolean:
      out.bools.assign(rows, c.bools[0]);
      break;
    case type_id::string: {
      const std::string_view s = c.str(0);
      out.chars.reserve(s.size() * rows);
      out.offsets.reserve(rows + 1);
      for (std::size_t i = 0; i < rows; ++i) {
        out.chars.append(s);
        out.offsets.push_back(static_cast<std::uint32_t>(out.chars.size()));
      }
      break;
    }
    case type_id::null_type:
      break;
  }
  return out;
}

operand evaluate_node(const node& n, const record_batch& batch) {
  operand result;
  if (n.kind == node_kind::literal) {
    result.ref = &n.constant;
    result.scalar = true;
    return result;
  }
  if (n.kind == node_kind::field) {
    if (n.field_index >= batch.columns.size())
      broken_precondition(n, batch);
    const column& c = batch.columns[n.field_index];
    // (A column without values, a field pruned as read by nothing, read
    // here would mean the pruning analysis missed a reader.)
    if (c.type != n.type || c.size() < batch.num_rows || !c.has_values())
      broken_precondition(n, batch);
    result.ref = &c;
    return result;
  }
  std::vector<operand> args;
  args.reserve(n.children.size());
  bool all_scalar = true;
  for (const auto& c : n.children) {
    args.push_back(evaluate_node(*c, batch));
    all_scalar = all_scalar && args.back().scalar;
  }
  // Only constant folding evaluates a node whose operands are all literals;
  // the result is then one row standing for all.
  const std::size_t rows = all_scalar ? 1 : batch.num_rows;
  result.scalar = all_scalar;
  switch (n.kind) {
    case node_kind::literal:
    case node_kind::field:
      break;
    case node_kind::cast:
      result.owned = cast_to_float(args[0], rows);
      break;
    case node_kind::negate:
      result.owned = negate(args[0], rows);
      break;
    case node_kind::arith:
      if (n.children[0]->type == type_id::float64)
        result.owned = arith_float(n.arith, args[0], args[1], rows);
      else
        result.owned = arith_int(n.arith, args[0], args[1], rows, n.type);
      break;
    case node_kind::compare:
      result.owned = compare(n.cmp, args[0], args[1], rows);
      break;
    case node_kind::logical_and:
    case node_kind::logical_or:
      result.owned = logical(n.kind == node_kind::logical_and, args, rows);
      break;
    case node_kind::logical_not:
      result.owned = logical_not(args[0], rows);
      break;
    case node_kind::is_null:
      result.owned = is_null(args[0], n.negated, rows);
      break;
    case node_kind::in_list:
      result.owned = n.set && !all_scalar
                       ? in_set_lookup(*n.set, args[0], n.negated, rows)
                       : in_list(args, n.negated, rows);
      break;
    case node_kind::like:
      result.owned = like(n, args[0], args[1], rows);
      break;
    case node_kind::call:
      return evaluate_call(n, args, rows, all_scalar);
    case node_kind::conditional:
      result.owned = conditional(args, n.type, rows);
      break;
  }
  return result;
}

} // namespace weir::expr
