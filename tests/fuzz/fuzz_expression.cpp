// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the expression language. The input is expression text,
// compiled (tokenizer, parser, type checker, constant folding) against a
// fixed schema with every type; what compiles is evaluated on a small batch
// of edge values (nulls, 0, -1, INT64_MIN/MAX, NaN, ±inf, -0.0, empty and
// non-ASCII and invalid UTF-8 strings, extreme timestamps).
//
// Checked besides "no crash, hang or sanitizer report": an error has a
// message and an offset within the text; the result column has one value per
// row and the compiled result type; `select` gives ascending rows in range;
// `referenced_fields` is ascending and in the schema; where the AVX-512
// kernels are on, the scalar kernels give the same column.
#include "weir/expr/expression.hpp"

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

namespace {

using weir::column;
using weir::record_batch;
using weir::type_id;

std::string input_text;

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_expression: %s\nexpression: %s\n", what.c_str(),
               input_text.c_str());
  std::abort();
}

// The schema of tests/unit/expr/expression_test.cpp, so that its
// expressions seed the corpus.
const weir::schema_ptr& test_schema() {
  static const weir::schema_ptr s = weir::make_schema({
    {"status", type_id::int64},
    {"path", type_id::string},
    {"bytes", type_id::int64},
    {"ratio", type_id::float64},
    {"ok", type_id::boolean},
    {"ts", type_id::timestamp},
    {"user id", type_id::string},
    {"p", type_id::boolean},
    {"q", type_id::boolean},
  });
  return s;
}

constexpr std::size_t rows = 19; // two AVX-512 blocks of 8 and a tail

const record_batch& test_batch() {
  static const record_batch b = [] {
    constexpr auto i64min = std::numeric_limits<std::int64_t>::min();
    constexpr auto i64max = std::numeric_limits<std::int64_t>::max();
    constexpr auto inf = std::numeric_limits<double>::infinity();
    const std::int64_t ints[] = {0, 1, -1, i64min, i64max, 200, 404, -7, 3, 1000000007,
                                 i64min + 1, i64max - 1, 2, -2, 86'400'000, 42, -42, 9, 10};
    const double floats[] = {0.0, -0.0, std::nan(""), inf, -inf, 1e308, -1e308, 2.5, -2.5,
                             0.1, 1e-320, 9.2233720368547758e18, -9.2233720368547758e18,
                             0.5, 1.0, -1.0, 3e10, 123.456, 7.0};
    const std::string_view strs[] = {"", "a", "/index.html", "h\xC3\xA9llo", "\xFF\xFE",
                                      "%_", "100%", "\xE2\x82\xAC", "GET", "x y z",
                                      "'quoted'", "\xF0\x9F\x98\x80", "\xC3", "ABC", "-",
                                      "2015-05-17T10:05:03Z", "12", "null", "tail"};
    const std::int64_t stamps[] = {0, -1, i64min, i64max, 1'431'857'103'000, -62'135'596'800'000,
                                   253'402'300'799'999, 253'402'300'800'000, 1, 86'399'999,
                                   -86'400'001, i64min + 1, i64max - 1, 1000, 60'000, 3'600'000,
                                   -1000, 5, 7};
    record_batch out;
    out.schema = test_schema();
    out.num_rows = rows;
    for (const auto& f : out.schema->fields())
      out.columns.emplace_back(f.type);
    for (std::size_t r = 0; r < rows; ++r) {
      const bool null_row = r % 6 == 5; // rows 5, 11, 17: nulls everywhere
      for (std::size_t c = 0; c < out.columns.size(); ++c) {
        auto& col = out.columns[c];
        // Each column has its nulls in other rows too.
        if (null_row || (r + c) % 7 == 6) {
          col.append_null();
          continue;
        }
        switch (col.type) {
          case type_id::int64:
            col.append_int(ints[(r + c) % rows]);
            break;
          case type_id::timestamp:
            col.append_int(stamps[r]);
            break;
          case type_id::float64:
            col.append_float(floats[r]);
            break;
          case type_id::string:
            col.append_string(strs[(r + c) % rows]);
            break;
          case type_id::boolean:
            col.append_bool((r + c) % 3 == 0);
            break;
          case type_id::null_type:
            col.append_null();
            break;
        }
      }
    }
    return out;
  }();
  return b;
}

bool same_value(const column& a, const column& b, std::size_t r) {
  if (a.is_null(r) != b.is_null(r))
    return false;
  if (a.is_null(r))
    return true;
  switch (a.type) {
    case type_id::int64:
    case type_id::timestamp:
      return a.ints[r] == b.ints[r];
    case type_id::float64:
      return std::memcmp(&a.floats[r], &b.floats[r], sizeof(double)) == 0
             || (std::isnan(a.floats[r]) && std::isnan(b.floats[r]));
    case type_id::boolean:
      return (a.bools[r] != 0) == (b.bools[r] != 0);
    case type_id::string:
      return a.str(r) == b.str(r);
    case type_id::null_type:
      return true;
  }
  return false;
}

void check_column(const weir::expr::compiled_expression& e, const column& c) {
  if (c.size() != rows)
    fail("evaluate gave " + std::to_string(c.size()) + " rows for " + std::to_string(rows));
  if (c.type != e.result_type())
    fail("evaluate gave a " + std::string{weir::to_string(c.type)} + " column for result type "
         + std::string{weir::to_string(e.result_type())});
  if (!c.has_values())
    return;
  if (c.type == type_id::string && (c.offsets.size() != rows + 1 || c.offsets.back() != c.chars.size()))
    fail("a string column with inconsistent offsets");
}

void run(std::string_view text, bool condition) {
  const auto& s = *test_schema();
  auto r = condition ? weir::expr::compile_condition(text, s)
                     : weir::expr::compile(text, s, {static_cast<std::uint64_t>(text.size())});
  if (!r) {
    if (r.error().message.empty())
      fail("an error without message");
    if (r.error().offset != weir::error::npos && r.error().offset > text.size())
      fail("an error offset past the end: " + r.error().message);
    return;
  }
  const auto& e = *r;
  const auto fields = e.referenced_fields();
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (fields[i] >= s.size() || (i > 0 && fields[i] <= fields[i - 1]))
      fail("referenced_fields is not ascending within the schema");
  if (auto f = e.field_reference(); f && *f >= s.size())
    fail("field_reference out of the schema");
  const column c = e.evaluate(test_batch());
  check_column(e, c);
  const auto sel = e.select(test_batch());
  for (std::size_t i = 0; i < sel.size(); ++i)
    if (sel[i] >= rows || (i > 0 && sel[i] <= sel[i - 1]))
      fail("select gave rows out of order or range");
  if (e.result_type() == type_id::boolean)
    for (auto row : sel)
      if (c.is_null(row) || c.bools[row] == 0)
        fail("select kept a row where the condition is not true");
  auto& avx = weir::expr::detail::kernels_use_avx512();
  if (avx) {
    avx = false;
    const column scalar = e.evaluate(test_batch());
    avx = true;
    for (std::size_t row = 0; row < rows; ++row)
      if (!same_value(c, scalar, row))
        fail("the AVX-512 and scalar kernels differ in row " + std::to_string(row));
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  input_text.assign(text);
  run(text, false);
  run(text, true);
  return 0;
}
