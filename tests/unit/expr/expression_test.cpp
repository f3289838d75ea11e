// SPDX-License-Identifier: Apache-2.0
#include "weir/expr/expression.hpp"

#include <doctest/doctest.h>

#include <cfenv>
#include <charconv>
#include <limits>
#include <string>
#include <vector>

using weir::column;
using weir::errc;
using weir::record_batch;
using weir::record_batch_ptr;
using weir::schema_ptr;
using weir::type_id;
using weir::value;
using weir::expr::compile;
using weir::expr::compile_condition;

namespace {

const std::monostate null_v{};

// A log-like schema: every test below uses these names.
schema_ptr test_schema() {
  static const schema_ptr s = weir::make_schema({
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

// Builds a batch through batch_builder; a row lists values in field order and
// may be shorter than the schema (the rest are null).
record_batch_ptr make_batch(const std::vector<std::vector<value>>& rows,
                            schema_ptr s = test_schema()) {
  weir::batch_builder b{s};
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      b.col(i).append_value(r[i]);
    b.commit_row();
  }
  return b.finish();
}

// One row, all null: constant expressions are evaluated on it.
const record_batch& one_row() {
  static const record_batch_ptr b = make_batch({{}});
  return *b;
}

// "1, null, 'a', true, 2.5" for a column, so that failures print readably.
std::string show(const column& c) {
  std::string out;
  for (std::size_t i = 0; i < c.size(); ++i) {
    if (i > 0)
      out += ", ";
    if (c.is_null(i)) {
      out += "null";
      continue;
    }
    switch (c.type) {
      case type_id::string:
        out += "'" + std::string{c.str(i)} + "'";
        break;
      case type_id::float64: {
        char buf[32];
        auto r = std::to_chars(buf, buf + sizeof buf, c.floats[i]);
        out.append(buf, r.ptr);
        break;
      }
      default:
        out += weir::to_display_string(c.get(i));
    }
  }
  return out;
}

// Compiles `text` against the test schema (failing the test on an error) and
// evaluates it over `batch`.
std::string eval(std::string_view text, const record_batch& batch) {
  auto e = compile(text, *test_schema());
  if (!e) {
    FAIL_CHECK("compile(\"" << text << "\") failed: " << e.error().message);
    return "<error>";
  }
  column c = e->evaluate(batch);
  CHECK(c.size() == batch.num_rows);
  CHECK(c.type == e->result_type());
  return show(c);
}

std::string eval(std::string_view text) {
  return eval(text, one_row());
}

type_id type_of(std::string_view text) {
  auto e = compile(text, *test_schema());
  REQUIRE_MESSAGE(e, text);
  return e->result_type();
}

struct failure {
  errc code;
  std::string message;
  std::size_t offset;
};

failure compile_error(std::string_view text) {
  auto e = compile(text, *test_schema());
  REQUIRE_MESSAGE(!e, "expected an error for: " << text);
  return {e.error().code, e.error().message, e.error().offset};
}

} // namespace

TEST_SUITE("expr") {
TEST_CASE("multiplication binds tighter than addition, parentheses override") {
  CHECK(eval("1 + 2 * 3") == "7");
  CHECK(eval("(1 + 2) * 3") == "9");
  CHECK(eval("10 - 4 - 3") == "3");
  CHECK(eval("100 / 10 / 5") == "2");
  CHECK(eval("2 * 3 % 4") == "2");
  CHECK(eval("1 + 7 % 4 * 2") == "7");
}

TEST_CASE("unary minus binds tightest") {
  CHECK(eval("-2 * 3") == "-6");
  CHECK(eval("- 2 - 3") == "-5");
  CHECK(eval("--2") == "2");
  CHECK(eval("-(2 + 3) * 2") == "-10");
  CHECK(eval("-1.5") == "-1.5");
  CHECK(eval("-9223372036854775808") == "-9223372036854775808");
}

TEST_CASE("logical operators bind in the order or, and, not, comparison") {
  CHECK(eval("true or false and false") == "true");
  CHECK(eval("(true or false) and false") == "false");
  CHECK(eval("not true and false") == "false");
  CHECK(eval("not (true and false)") == "true");
  CHECK(eval("not 1 = 2") == "true");
  CHECK(eval("1 + 2 = 3 and 2 < 3") == "true");
  CHECK(eval("1 = 1 or 1 / 0 = 1") == "true");
  CHECK(eval("not status in (1, 2)", *make_batch({{std::int64_t{1}}, {std::int64_t{3}}}))
        == "false, true");
}

TEST_CASE("keywords and function names ignore case, field names do not") {
  CHECK(eval("TRUE And NOT False") == "true");
  CHECK(eval("NULL Is Null") == "true");
  CHECK(eval("LOWER('AbC')") == "'abc'");
  auto err = compile_error("Status = 1");
  CHECK(err.code == errc::type_error);
  CHECK(err.message == "unknown field 'Status', did you mean 'status'?");
}

TEST_CASE("whitespace and newlines separate tokens anywhere") {
  auto b = make_batch({{std::int64_t{5}}});
  CHECK(eval("\n\tstatus\r\n  +\n1  \n", *b) == "6");
  CHECK(eval("(status>=5)and(status<=5)", *b) == "true");
}

TEST_CASE("literals: integers, floats, strings with doubled quotes, booleans and null") {
  CHECK(eval("42") == "42");
  CHECK(type_of("42") == type_id::int64);
  CHECK(eval("1.5") == "1.5");
  CHECK(eval(".5") == "0.5");
  CHECK(eval("1e3") == "1000");
  CHECK(eval("2.5E-1") == "0.25");
  CHECK(type_of("1e3") == type_id::float64);
  CHECK(eval("'it''s'") == "'it's'");
  CHECK(eval("length('it''s')") == "4");
  CHECK(eval("''") == "''");
  CHECK(eval("true") == "true");
  CHECK(eval("false") == "false");
  CHECK(eval("null") == "null");
  CHECK(type_of("null") == type_id::null_type);
}

TEST_CASE("double-quoted names reach fields that are not identifiers") {
  auto odd = weir::make_schema({{"user id", type_id::string},
                                {"and", type_id::int64},
                                {"say \"hi\"", type_id::int64}});
  auto b = make_batch({{std::string{"ann"}, std::int64_t{2}, std::int64_t{3}}}, odd);
  auto e1 = compile("\"user id\" = 'ann'", *odd);
  REQUIRE(e1);
  CHECK(show(e1->evaluate(*b)) == "true");
  auto e2 = compile("\"and\" + \"say \"\"hi\"\"\"", *odd);
  REQUIRE(e2);
  CHECK(show(e2->evaluate(*b)) == "5");
  // A quoted name is never a function or a keyword.
  auto e3 = compile("\"lower\"('x')", *odd);
  REQUIRE_FALSE(e3);
}

TEST_CASE("integer arithmetic stays int64, wraps on overflow and truncates division") {
  CHECK(eval("7 / 2") == "3");
  CHECK(eval("-7 / 2") == "-3");
  CHECK(eval("-7 % 3") == "-1");
  CHECK(eval("7 % -3") == "1");
  CHECK(eval("9223372036854775807 + 1") == "-9223372036854775808");
  CHECK(eval("-9223372036854775808 / -1") == "-9223372036854775808");
  CHECK(eval("-9223372036854775808 % -1") == "0");
  CHECK(type_of("status * 2") == type_id::int64);
}

TEST_CASE("integer division or modulo by zero is null, float division follows IEEE") {
  CHECK(eval("1 / 0") == "null");
  CHECK(eval("1 % 0") == "null");
  CHECK(eval("1.0 / 0") == "inf");
  CHECK(eval("-1 / 0.0") == "-inf");
  CHECK(eval("0.0 / 0.0 = 0.0 / 0.0") == "false"); // NaN
  auto b = make_batch({{std::int64_t{10}, null_v, std::int64_t{0}},
                       {std::int64_t{10}, null_v, std::int64_t{3}},
                       {null_v, null_v, std::int64_t{0}},
                       {std::int64_t{-10}, null_v, std::int64_t{-1}}});
  CHECK(eval("status / bytes", *b) == "null, 3, null, 10");
  CHECK(eval("status % bytes", *b) == "null, 1, null, 0");
  CHECK(eval("(status / bytes) is null", *b) == "true, false, true, false");
}

TEST_CASE("division and modulo by a constant agree with division by a column holding it") {
  // A literal divisor takes the precomputed (libdivide) path; the same
  // divisor in a column takes the per-row division.
  const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
  const std::int64_t hi = std::numeric_limits<std::int64_t>::max();
  std::vector<std::int64_t> dividends{lo, lo + 1, hi, hi - 1, 0, 1, -1, 99, 100, 101, -99,
                                      -100, -101, 1599999999999, -1600000000000, 4'294'967'295};
  for (std::int64_t i = 1; i < 2000; i += 37)
    dividends.push_back(i * i * i * 7919 * (i % 2 == 0 ? 1 : -1));
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3},
                               std::int64_t{7}, std::int64_t{10}, std::int64_t{100},
                               std::int64_t{-2}, std::int64_t{-10}, std::int64_t{641},
                               std::int64_t{68719476736}, std::int64_t{-68719476737}, hi,
                               lo + 1}) {
    CAPTURE(d);
    std::vector<std::vector<value>> rows;
    for (const auto x : dividends)
      rows.push_back({x, null_v, d});
    rows.push_back({null_v, null_v, d}); // a null dividend stays null
    const auto b = make_batch(rows);
    const std::string literal = d == lo + 1 ? "(-9223372036854775807)" : "(" + std::to_string(d) + ")";
    CHECK(eval("status / " + literal, *b) == eval("status / bytes", *b));
    CHECK(eval("status % " + literal, *b) == eval("status % bytes", *b));
  }
}

TEST_CASE("division by a constant gives the same quotients with and without AVX-512") {
  // The AVX-512 kernel divides in double precision while every |dividend|
  // of eight rows is below 2^53: exact there, including next to multiples
  // of the divisor and at the limit; rows past a larger dividend take the
  // scalar path. Both must equal division by a column holding the divisor.
  bool& avx512 = weir::expr::detail::kernels_use_avx512();
  const bool had = avx512;
  constexpr std::int64_t limit = std::int64_t{1} << 53;
  for (const std::int64_t d : {std::int64_t{1}, std::int64_t{2}, std::int64_t{3},
                               std::int64_t{6}, std::int64_t{10}, std::int64_t{100},
                               std::int64_t{123}, std::int64_t{-100}, std::int64_t{-2},
                               std::int64_t{-7}, std::int64_t{641},
                               std::int64_t{94906267}, limit - 1, -(limit - 1)}) {
    CAPTURE(d);
    std::vector<std::int64_t> dividends{limit - 1, -(limit - 1), 0, 1, -1, d, -d};
    for (const std::int64_t k : {std::int64_t{1}, std::int64_t{12345}, limit / 1000,
                                 (limit - 1) / (d < 0 ? -d : d)})
      for (const std::int64_t e : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}}) {
        const std::int64_t ad = d < 0 ? -d : d;
        if (k > (limit - 2) / ad)
          continue; // k * |d| + 1 would reach 2^53 (or overflow)
        const std::int64_t m = k * ad;
        {
          dividends.push_back(m + e);
          dividends.push_back(-(m + e));
        }
      }
    std::uint64_t x = 42;
    while (dividends.size() < 64) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      dividends.push_back(static_cast<std::int64_t>(x >> 11) - (limit / 2));
    }
    // Then a chunk with a dividend beyond 2^53, and small ones after it.
    dividends.push_back(std::numeric_limits<std::int64_t>::min());
    for (int i = 0; i < 20; ++i)
      dividends.push_back(i * 1000 + 7);
    std::vector<std::vector<value>> rows;
    for (const auto v : dividends)
      rows.push_back({v, null_v, d});
    const auto b = make_batch(rows);
    const std::string literal = "(" + std::to_string(d) + ")";
    for (const char* op : {" / ", " % "}) {
      CAPTURE(op);
      avx512 = had;
      const auto fast = eval("status" + std::string{op} + literal, *b);
      avx512 = false;
      const auto scalar = eval("status" + std::string{op} + literal, *b);
      avx512 = had;
      CHECK(fast == scalar);
      CHECK(fast == eval("status" + std::string{op} + "bytes", *b));
    }
  }
  // The thread's rounding mode must not matter: rounding up, (3k - 1) / 3
  // = k - 1/3 for k > 2^51 (where doubles are 0.5 apart) would become k.
  {
    std::vector<std::vector<value>> rows;
    for (std::int64_t i = 0; i < 16; ++i)
      rows.push_back({3 * ((std::int64_t{1} << 51) + 20 - i) - 1, null_v, std::int64_t{3}});
    const auto b = make_batch(rows);
    const int saved = std::fegetround();
    std::fesetround(FE_UPWARD);
    const auto fast = eval("status / 3", *b);
    std::fesetround(saved);
    CHECK(fast == eval("status / bytes", *b));
  }
  const std::string note = had ? "division: AVX-512 path tested"
                               : "division: AVX-512 not available here";
  MESSAGE(note);
}

TEST_CASE("a float operand makes arithmetic float64") {
  CHECK(eval("1 + 0.5") == "1.5");
  CHECK(type_of("status + 0.5") == type_id::float64);
  CHECK(type_of("ratio * 2") == type_id::float64);
  CHECK(eval("7.5 % 2") == "1.5");
  CHECK(eval("3 * 0.5 - 1") == "0.5");
  auto b = make_batch({{std::int64_t{3}, null_v, null_v, 0.5}, {null_v, null_v, null_v, 2.0}});
  CHECK(eval("status * ratio", *b) == "1.5, null");
  CHECK(eval("ratio / status", *b) == "0.16666666666666666, null");
  CHECK(eval("-ratio", *b) == "-0.5, -2");
}

TEST_CASE("timestamps take + and - of int64 ms, their difference is int64") {
  auto b = make_batch({{null_v, null_v, null_v, null_v, null_v, std::int64_t{60'000}},
                       {}});
  CHECK(type_of("ts + 1000") == type_id::timestamp);
  CHECK(type_of("1000 + ts") == type_id::timestamp);
  CHECK(type_of("ts - 1000") == type_id::timestamp);
  CHECK(type_of("ts - ts") == type_id::int64);
  CHECK(eval("ts + 1000", *b) == "61000, null");
  CHECK(eval("ts - to_timestamp(0)", *b) == "60000, null");
  CHECK(eval("ts > 59999", *b) == "true, null");
}

TEST_CASE("every comparison operator on ints, floats, strings, bools and timestamps") {
  struct c {
    const char* text;
    const char* result;
  };
  for (auto [text, result] : {
         c{"1 = 1", "true"},        c{"1 == 2", "false"},    c{"1 <> 2", "true"},
         c{"1 != 1", "false"},      c{"1 < 2", "true"},      c{"2 < 1", "false"},
         c{"2 <= 2", "true"},       c{"3 <= 2", "false"},    c{"3 > 2", "true"},
         c{"2 > 2", "false"},       c{"2 >= 2", "true"},     c{"1 >= 2", "false"},
         c{"1 = 1.0", "true"},      c{"1 < 1.5", "true"},    c{"2.5 >= 3", "false"},
         c{"'abc' < 'abd'", "true"}, c{"'b' > 'abc'", "true"}, c{"'a' = 'a'", "true"},
         c{"'a' <> 'A'", "true"},   c{"true = true", "true"}, c{"false < true", "true"},
         c{"to_timestamp(5) = 5", "true"}, c{"to_timestamp(5) < 4.5", "false"},
       }) {
    CAPTURE(text);
    CHECK(eval(text) == result);
  }
  auto b = make_batch({{std::int64_t{200}, std::string{"/a"}}, {std::int64_t{404}, std::string{"/b"}},
                       {null_v, null_v}});
  CHECK(eval("status = 200", *b) == "true, false, null");
  CHECK(eval("200 <> status", *b) == "false, true, null");
  CHECK(eval("path >= '/b'", *b) == "false, true, null");
  CHECK(eval("status < bytes", *b) == "null, null, null");
}

TEST_CASE("and, or and not follow three-valued logic over columns") {
  // p and q take every combination of true, false and null.
  const value t = true, f = false;
  std::vector<std::vector<value>> rows;
  for (const value& pv : {t, f, value{}})
    for (const value& qv : {t, f, value{}})
      rows.push_back({null_v, null_v, null_v, null_v, null_v, null_v, null_v, pv, qv});
  auto b = make_batch(rows);
  //                   (t,t)  (t,f)  (t,n)  (f,t)  (f,f)  (f,n)  (n,t)  (n,f)  (n,n)
  CHECK(eval("p and q", *b) == "true, false, null, false, false, false, null, false, null");
  CHECK(eval("p or q", *b) == "true, true, true, true, false, null, true, null, null");
  CHECK(eval("not p", *b) == "false, false, false, true, true, true, null, null, null");
  CHECK(eval("p and q and true", *b) == eval("p and q", *b));
  CHECK(eval("p or q or false", *b) == eval("p or q", *b));
  CHECK(eval("p and null", *b) == "null, null, null, false, false, false, null, null, null");
  CHECK(eval("q or null", *b) == "true, null, null, true, null, null, true, null, null");
}

TEST_CASE("and, or and not follow three-valued logic over literals") {
  CHECK(eval("false and null") == "false");
  CHECK(eval("null and false") == "false");
  CHECK(eval("true and null") == "null");
  CHECK(eval("true or null") == "true");
  CHECK(eval("null or true") == "true");
  CHECK(eval("false or null") == "null");
  CHECK(eval("not null") == "null");
  CHECK(type_of("not null") == type_id::boolean);
}

TEST_CASE("in matches any listed value, with SQL nulls") {
  auto b = make_batch({{std::int64_t{200}}, {std::int64_t{404}}, {null_v}});
  CHECK(eval("status in (200, 304)", *b) == "true, false, null");
  CHECK(eval("status not in (200, 304)", *b) == "false, true, null");
  CHECK(eval("status in (200, null)", *b) == "true, null, null");
  CHECK(eval("status not in (200, null)", *b) == "false, null, null");
  CHECK(eval("status in (200.0, 1)", *b) == "true, false, null");
  CHECK(eval("status in (bytes, 404)", *b) == "null, true, null");
  CHECK(eval("null in (1, 2)") == "null");
  CHECK(eval("'b' in ('a', 'b')") == "true");
  CHECK(eval("'c' in ('a', 'b')") == "false");
  CHECK(eval("1 in (2, null)") == "null");
  CHECK(eval("1 in (1, null)") == "true");
}

TEST_CASE("a long literal in-list gives the same answers as item-by-item comparison") {
  auto b = make_batch({{std::int64_t{200}, std::string{"c"}, std::int64_t{0}, 2.5},
                       {std::int64_t{7}, std::string{"zz"}, std::int64_t{0}, 0.1},
                       {null_v, null_v, std::int64_t{0}, null_v},
                       {std::int64_t{-3}, std::string{""}, std::int64_t{0}, -3.0}});
  // "+ bytes" (always 0) keeps one item a column, forcing the generic path.
  const std::string ints = "1, 2, 3, 200, 5, 6, -3, 8, 9";
  CHECK(eval("status in (" + ints + ")", *b) == "true, false, null, true");
  CHECK(eval("status in (" + ints + ")", *b) == eval("status in (" + ints + " + bytes)", *b));
  CHECK(eval("status in (" + ints + ", null)", *b) == "true, null, null, true");
  CHECK(eval("status not in (" + ints + ", null)", *b) == "false, null, null, false");
  CHECK(eval("status not in (" + ints + ")", *b) == "false, true, null, false");
  const std::string strs = "'a', 'b', 'c', 'd', 'e', 'f', 'g', ''";
  CHECK(eval("path in (" + strs + ")", *b) == "true, false, null, true");
  CHECK(eval("path not in (" + strs + ")", *b) == "false, true, null, false");
  CHECK(eval("ratio in (1, 2, 3, 4, 5, 6, 7, 2.5, 0.0 / 0.0)", *b) == "true, false, null, false");
  CHECK(eval("ratio in (1, 2, 3, 4, 5, 6, 7, -3, null)", *b) == "null, null, null, true");
  CHECK(eval("ts in (1, 2, 3, 4, 5, 6, 7, 8)", *b) == "null, null, null, null");
}

TEST_CASE("like matches % as any run and _ as one character, case-sensitively") {
  struct c {
    const char* text;
    const char* result;
  };
  for (auto [text, result] : {
         c{"'abc' like 'abc'", "true"},   c{"'abc' like 'ab'", "false"},
         c{"'abc' like 'a%'", "true"},    c{"'abc' like 'b%'", "false"},
         c{"'abc' like '%c'", "true"},    c{"'abc' like '%b'", "false"},
         c{"'abc' like '%b%'", "true"},   c{"'abc' like '%x%'", "false"},
         c{"'abc' like '%'", "true"},     c{"'' like '%'", "true"},
         c{"'' like '_'", "false"},       c{"'abc' like 'a_c'", "true"},
         c{"'abbc' like 'a_c'", "false"}, c{"'abc' like '___'", "true"},
         c{"'abc' like 'A%'", "false"},   c{"'aXbXbc' like 'a%b%c'", "true"},
         c{"'aXbXb' like 'a%b%c'", "false"}, c{"'mississippi' like '%iss%ppi'", "true"},
         c{"'héllo' like 'h_llo'", "true"},  c{"'héllo' like 'h__llo'", "false"},
         c{"'a%b' like 'a%%b'", "true"},  c{"'abc' not like 'a%'", "false"},
         c{"null like 'a%'", "null"},     c{"'a' like null", "null"},
       }) {
    CAPTURE(text);
    CHECK(eval(text) == result);
  }
  auto b = make_batch({{null_v, std::string{"/img/a.png"}, null_v, null_v, null_v, null_v,
                        std::string{"/img/%"}},
                       {null_v, std::string{"/index.html"}, null_v, null_v, null_v, null_v,
                        std::string{"%.png"}},
                       {null_v, null_v}});
  CHECK(eval("path like '/img/%'", *b) == "true, false, null");
  CHECK(eval("path not like '%.html'", *b) == "true, false, null");
  CHECK(eval("path like \"user id\"", *b) == "true, false, null");
}

TEST_CASE("is null and is not null never yield null") {
  auto b = make_batch({{std::int64_t{1}, std::string{"x"}, null_v, 1.0, true},
                       {null_v, null_v, std::int64_t{2}, null_v, null_v}});
  CHECK(eval("status is null", *b) == "false, true");
  CHECK(eval("path is not null", *b) == "true, false");
  CHECK(eval("bytes IS NOT NULL", *b) == "false, true");
  CHECK(eval("ratio is null", *b) == "false, true");
  CHECK(eval("ok is null", *b) == "false, true");
  CHECK(eval("status + bytes is null", *b) == "true, true");
  CHECK(eval("1 is null") == "false");
}

TEST_CASE("lower and upper change ASCII letters only") {
  CHECK(eval("lower('HeLLo, World 1')") == "'hello, world 1'");
  CHECK(eval("upper('héllo')") == "'HéLLO'");
  CHECK(eval("lower(null)") == "null");
  auto b = make_batch({{null_v, std::string{"/A/b"}}, {null_v, null_v}, {null_v, std::string{"Zz"}}});
  CHECK(eval("upper(path)", *b) == "'/A/B', null, 'ZZ'");
  CHECK(eval("lower(path)", *b) == "'/a/b', null, 'zz'");
}

TEST_CASE("length counts UTF-8 characters") {
  CHECK(eval("length('hello')") == "5");
  CHECK(eval("length('héllo')") == "5");
  CHECK(eval("length('')") == "0");
  CHECK(eval("length(null)") == "null");
  CHECK(type_of("length(path)") == type_id::int64);
}

TEST_CASE("substr takes a 1-based start and an optional length, SQL-style") {
  CHECK(eval("substr('hello', 1)") == "'hello'");
  CHECK(eval("substr('hello', 2)") == "'ello'");
  CHECK(eval("substr('hello', 2, 3)") == "'ell'");
  CHECK(eval("substr('hello', 0, 2)") == "'h'");
  CHECK(eval("substr('hello', -1, 3)") == "'h'");
  CHECK(eval("substr('hello', 0)") == "'hello'");
  CHECK(eval("substr('hello', 5, 10)") == "'o'");
  CHECK(eval("substr('hello', 6)") == "''");
  CHECK(eval("substr('hello', 2, 0)") == "''");
  CHECK(eval("substr('hello', 2, -1)") == "''");
  CHECK(eval("substr('héllo', 2, 2)") == "'él'");
  CHECK(eval("substr('hello', 2, 9223372036854775807)") == "'ello'");
  CHECK(eval("substr(null, 1)") == "null");
  CHECK(eval("substr('hello', null)") == "null");
  CHECK(eval("substr('hello', 1, null)") == "null");
  auto b = make_batch({{std::int64_t{2}, std::string{"abcdef"}, std::int64_t{3}},
                       {std::int64_t{1}, null_v, std::int64_t{1}},
                       {null_v, std::string{"xyz"}, std::int64_t{1}}});
  CHECK(eval("substr(path, status, bytes)", *b) == "'bcd', null, null");
  CHECK(eval("substr(path, 2)", *b) == "'bcdef', null, 'yz'");
}

TEST_CASE("concat renders arguments as text and is null if any argument is null") {
  CHECK(eval("concat('a', 1, 2.5, true)") == "'a12.5true'");
  CHECK(eval("concat('x')") == "'x'");
  CHECK(eval("concat(0.1)") == "'0.1'");
  CHECK(eval("concat(to_timestamp(1431857103000))") == "'2015-05-17T10:05:03.000Z'");
  CHECK(eval("concat('a', null)") == "null");
  auto b = make_batch({{std::int64_t{200}, std::string{"/a"}}, {null_v, std::string{"/b"}}});
  CHECK(eval("concat(path, ':', status)", *b) == "'/a:200', null");
}

TEST_CASE("abs and floor keep the type of their argument") {
  CHECK(eval("abs(-3)") == "3");
  CHECK(eval("abs(3)") == "3");
  CHECK(eval("abs(-2.5)") == "2.5");
  CHECK(type_of("abs(status)") == type_id::int64);
  CHECK(type_of("abs(ratio)") == type_id::float64);
  CHECK(eval("floor(-1.5)") == "-2");
  CHECK(eval("floor(2.7)") == "2");
  CHECK(type_of("floor(ratio)") == type_id::float64);
  CHECK(eval("floor(7)") == "7");
  CHECK(type_of("floor(status)") == type_id::int64);
  CHECK(eval("abs(null)") == "null");
  auto b = make_batch({{std::int64_t{-4}, null_v, null_v, -0.5}, {null_v}});
  CHECK(eval("abs(status)", *b) == "4, null");
  CHECK(eval("floor(ratio)", *b) == "-1, null");
}

TEST_CASE("coalesce returns the first non-null argument") {
  CHECK(eval("coalesce(null, 1)") == "1");
  CHECK(eval("coalesce(1, null)") == "1");
  CHECK(eval("coalesce(null, null)") == "null");
  CHECK(eval("coalesce(null, 1, 2.5)") == "1");
  CHECK(type_of("coalesce(null, 1, 2.5)") == type_id::float64);
  CHECK(type_of("coalesce(status, bytes)") == type_id::int64);
  auto b = make_batch({{std::int64_t{1}, std::string{"a"}, std::int64_t{10}},
                       {null_v, null_v, std::int64_t{20}},
                       {null_v, null_v, null_v}});
  CHECK(eval("coalesce(status, bytes)", *b) == "1, 20, null");
  CHECK(eval("coalesce(status, bytes, -1)", *b) == "1, 20, -1");
  CHECK(eval("coalesce(path, 'none')", *b) == "'a', 'none', 'none'");
  CHECK(eval("coalesce(status, ratio, 0.5)", *b) == "1, 0.5, 0.5");
}

TEST_CASE("if picks its second argument where the condition is true, else its third") {
  CHECK(eval("if(true, 1, 2)") == "1");
  CHECK(eval("if(false, 1, 2)") == "2");
  CHECK(eval("if(null, 1, 2)") == "2"); // a null condition counts as false
  CHECK(eval("IF(1 < 2, 'a', 'b')") == "'a'");
  CHECK(type_of("if(ok, 1, 2.5)") == type_id::float64);
  CHECK(type_of("if(ok, null, 'x')") == type_id::string);
  CHECK(type_of("if(ok, null, null)") == type_id::null_type);
  auto b = make_batch({{std::int64_t{2000}, std::string{"a"}, std::int64_t{1}, 0.5, true},
                       {std::int64_t{10}, null_v, std::int64_t{2}, 1.5, false},
                       {null_v, std::string{"c"}, null_v, null_v, null_v}});
  CHECK(eval("if(status > 1000, 1, 0)", *b) == "1, 0, 0");
  CHECK(eval("if(ok, path, 'none')", *b) == "'a', 'none', 'none'");
  CHECK(eval("if(ok, bytes, ratio)", *b) == "1, 1.5, null");
  CHECK(eval("if(status is null, -1, status)", *b) == "2000, 10, -1");
  CHECK(eval("if(ok, 1 / 0, bytes)", *b) == "null, 2, null");
  // Constant branches fold, the column ones stay.
  CHECK(eval("if(false, status, bytes + 1)", *b) == "2, 3, null");
}

TEST_CASE("case when takes the first true branch, else the else value or null") {
  CHECK(eval("case when true then 1 end") == "1");
  CHECK(eval("case when false then 1 end") == "null");
  CHECK(eval("case when null then 1 else 2 end") == "2");
  CHECK(eval("CASE WHEN false THEN 1 WHEN true THEN 2 WHEN true THEN 3 ELSE 4 END") == "2");
  CHECK(type_of("case when ok then 1 when p then 2.5 end") == type_id::float64);
  CHECK(type_of("case when ok then 1 end") == type_id::int64);
  auto b = make_batch({{std::int64_t{500}, std::string{"/a"}},
                       {std::int64_t{404}, std::string{"/b"}},
                       {std::int64_t{200}, null_v},
                       {null_v, std::string{"/d"}}});
  CHECK(eval("case when status >= 500 then 'error' when status >= 400 then 'client' "
             "else 'ok' end",
             *b)
        == "'error', 'client', 'ok', 'ok'");
  CHECK(eval("case when status >= 400 then path end", *b) == "'/a', '/b', null, null");
  CHECK(eval("case when status = 200 then 0 when path = '/d' then 1 end", *b)
        == "null, null, 0, 1");
  // Nested: a case inside if and the other way round.
  CHECK(eval("if(status > 300, case when status > 450 then 2 else 1 end, 0)", *b)
        == "2, 1, 0, 0");
}

TEST_CASE("case and if: type and syntax errors with their offsets") {
  auto e = compile_error("if(status, 1, 2)");
  CHECK(e.code == errc::type_error);
  CHECK(e.offset == 3);
  CHECK(e.message == "function 'if' argument 1 must be bool, got int64");
  e = compile_error("if(ok, 1, 'x')");
  CHECK(e.code == errc::type_error);
  CHECK(e.offset == 10);
  CHECK(e.message == "function 'if' needs values of one type, argument 2 is int64 but "
                     "argument 3 is string");
  e = compile_error("case when ok then 1 when p then 'x' end");
  CHECK(e.code == errc::type_error);
  CHECK(e.offset == 32);
  CHECK(e.message == "'case' needs values of one type, an earlier value is int64 but "
                     "this one is string");
  e = compile_error("case when path then 1 end");
  CHECK(e.offset == 10);
  CHECK(e.message == "'when' condition must be bool, got string");
  e = compile_error("if(ok, 1)");
  CHECK(e.code == errc::parse_error);
  CHECK(e.offset == 0);
  e = compile_error("case when ok then 1");
  CHECK(e.code == errc::parse_error);
  CHECK(e.message == "expected 'when', 'else' or 'end' at end of input");
  e = compile_error("case when ok 1 end");
  CHECK(e.message == "expected 'then' but got '1'");
  CHECK(e.offset == 13);
  e = compile_error("case when ok then end");
  CHECK(e.message == "expected a value after 'then' but got 'end'");
  e = compile_error("case when ok then 1 else 2 when p then 3 end");
  CHECK(e.message == "expected 'end' but got 'when'");
}

TEST_CASE("to_timestamp reads ms and ISO-8601 text, null when unparseable") {
  CHECK(type_of("to_timestamp(0)") == type_id::timestamp);
  CHECK(eval("to_timestamp(1431857103000)") == "1431857103000");
  CHECK(eval("to_timestamp('2015-05-17T10:05:03Z')") == "1431857103000");
  CHECK(eval("to_timestamp('2015-05-17 10:05:03')") == "1431857103000");
  CHECK(eval("to_timestamp('2015-05-17T10:05:03.25Z')") == "1431857103250");
  CHECK(eval("to_timestamp('2015-05-17T12:05:03+02:00')") == "1431857103000");
  CHECK(eval("to_timestamp('2015-05-17')") == "1431820800000");
  CHECK(eval("to_timestamp('yesterday')") == "null");
  CHECK(eval("to_timestamp('2015-02-29')") == "null");
  CHECK(eval("to_timestamp(1.9)") == "1");
  CHECK(eval("to_timestamp(null)") == "null");
  auto b = make_batch({{null_v, std::string{"1970-01-01T00:00:01Z"}},
                       {null_v, std::string{"bad"}},
                       {null_v, null_v}});
  CHECK(eval("to_timestamp(path)", *b) == "1000, null, null");
}

TEST_CASE("field references evaluate to the input column, nulls included") {
  auto b = make_batch({{std::int64_t{1}, std::string{"a"}},
                       {null_v, null_v},
                       {std::int64_t{3}, std::string{""}}});
  CHECK(eval("status", *b) == "1, null, 3");
  CHECK(eval("path", *b) == "'a', null, ''");
  CHECK(eval("status + 1", *b) == "2, null, 4");
  CHECK(eval("status * 2 - status", *b) == "1, null, 3");
  CHECK(eval("status + null", *b) == "null, null, null");
  CHECK(type_of("status + null") == type_id::int64);
}

TEST_CASE("constant expressions are broadcast to every row") {
  auto b = make_batch({{}, {}, {}});
  CHECK(eval("1 + 2", *b) == "3, 3, 3");
  CHECK(eval("'x'", *b) == "'x', 'x', 'x'");
  CHECK(eval("null", *b) == "null, null, null");
  auto empty = make_batch({});
  CHECK(eval("status + 1", *empty) == "");
  CHECK(eval("1", *empty) == "");
}

TEST_CASE("select returns ascending indices of rows whose condition is true") {
  auto b = make_batch({{std::int64_t{200}, std::string{"/a"}, std::int64_t{500}},
                       {std::int64_t{200}, std::string{"/b"}, null_v},
                       {null_v, std::string{"/c"}, std::int64_t{900}},
                       {std::int64_t{404}, std::string{"/d"}, std::int64_t{900}},
                       {std::int64_t{200}, std::string{"/e"}, std::int64_t{100}},
                       {std::int64_t{200}, null_v, std::int64_t{101}}});
  auto e = compile_condition("status = 200 and bytes > 100", *test_schema());
  REQUIRE(e);
  CHECK(e->select(*b) == std::vector<std::uint32_t>{0, 5});
  auto n = compile_condition("not (status = 200 and bytes > 100)", *test_schema());
  REQUIRE(n);
  // Rows 1 and 2 are null either way, so they appear in neither result.
  CHECK(n->select(*b) == std::vector<std::uint32_t>{3, 4});
  auto o = compile_condition("status = 404 or bytes > 800", *test_schema());
  REQUIRE(o);
  CHECK(o->select(*b) == std::vector<std::uint32_t>{2, 3});
}

TEST_CASE("select of an int field against a literal agrees with evaluating the condition") {
  // `field <op> literal` selects straight from the column; the other
  // shapes (literal first, two fields) evaluate a boolean column first.
  // Both must pick the rows whose condition is true, nulls excluded.
  std::vector<std::vector<value>> rows;
  for (int i = 0; i < 70; ++i)
    rows.push_back({i % 7 == 3 ? null_v : value{std::int64_t{(i * 37) % 11 - 5}},
                    std::string{"/x"}, std::int64_t{i % 4}});
  auto b = make_batch(rows);
  // 70 rows: four blocks of the AVX-512 path's sixteen and a tail.
  bool& avx512 = weir::expr::detail::kernels_use_avx512();
  const bool had_avx512 = avx512;
  for (const bool use_avx512 : {had_avx512, false})
  for (const std::string op : {"=", "<>", "<", "<=", ">", ">="})
    for (const std::string lit : {"-5", "0", "2", "9"}) {
      avx512 = use_avx512;
      const std::string text = "status " + op + " " + lit;
      CAPTURE(use_avx512);
      CAPTURE(text);
      auto e = compile_condition(text, *test_schema());
      REQUIRE(e);
      const column c = e->evaluate(*b);
      std::vector<std::uint32_t> want;
      for (std::uint32_t i = 0; i < b->num_rows; ++i)
        if (c.is_valid(i) && c.bools[i])
          want.push_back(i);
      CHECK(e->select(*b) == want);
      auto flipped = compile_condition(lit + " " + op + " status", *test_schema());
      REQUIRE(flipped);
      const column f = flipped->evaluate(*b);
      std::vector<std::uint32_t> want_flipped;
      for (std::uint32_t i = 0; i < b->num_rows; ++i)
        if (f.is_valid(i) && f.bools[i])
          want_flipped.push_back(i);
      CHECK(flipped->select(*b) == want_flipped);
    }
  avx512 = had_avx512;
}

TEST_CASE("select on a constant or a bool field") {
  auto b = make_batch({{null_v, null_v, null_v, null_v, true},
                       {null_v, null_v, null_v, null_v, false},
                       {null_v, null_v, null_v, null_v, null_v},
                       {null_v, null_v, null_v, null_v, true}});
  auto all = compile_condition("1 = 1", *test_schema());
  REQUIRE(all);
  CHECK(all->select(*b) == std::vector<std::uint32_t>{0, 1, 2, 3});
  auto none = compile_condition("null", *test_schema());
  REQUIRE(none);
  CHECK(none->select(*b).empty());
  auto field = compile_condition("ok", *test_schema());
  REQUIRE(field);
  CHECK(field->select(*b) == std::vector<std::uint32_t>{0, 3});
  auto not_bool = compile("status", *test_schema());
  REQUIRE(not_bool);
  CHECK(not_bool->select(*b).empty());
}

TEST_CASE("a default-constructed expression yields nulls and selects nothing") {
  weir::expr::compiled_expression e;
  auto b = make_batch({{}, {}});
  CHECK(e.result_type() == type_id::null_type);
  CHECK(show(e.evaluate(*b)) == "null, null");
  CHECK(e.select(*b).empty());
}

TEST_CASE("the compiled expression keeps its source text") {
  auto e = compile(" status  = 1 ", *test_schema());
  REQUIRE(e);
  CHECK(e->text() == " status  = 1 ");
}

TEST_CASE("a long or-chain compiles and evaluates") {
  std::string text;
  for (int i = 0; i < 3000; ++i)
    text += (i ? " or status = " : "status = ") + std::to_string(i * 2);
  auto b = make_batch({{std::int64_t{4}}, {std::int64_t{5}}, {std::int64_t{5998}}, {null_v}});
  CHECK(eval(text, *b) == "true, false, true, null");
  std::string list = "status in (";
  for (int i = 0; i < 3000; ++i)
    list += (i ? ", " : "") + std::to_string(i * 2);
  CHECK(eval(list + ")", *b) == "true, false, true, null");
}

TEST_CASE("type errors name the operator and types and point at the operator") {
  struct c {
    const char* text;
    const char* message;
    std::size_t offset;
  };
  for (auto [text, message, offset] : {
         c{"status + 'x'", "operator '+' needs numbers, got int64 and string", 7},
         c{"path * 2", "operator '*' needs numbers, got string and int64", 5},
         c{"'a' + 'b'", "operator '+' needs numbers, got string and string", 4},
         c{"ok - 1", "operator '-' needs numbers, got bool and int64", 3},
         c{"-path", "operator '-' needs a number, got string", 0},
         c{"status > path", "operator '>' cannot compare int64 with string", 7},
         c{"ok = 1", "operator '=' cannot compare bool with int64", 3},
         c{"status and ok", "operator 'and' needs bool operands, got int64", 0},
         c{"ok or  path", "operator 'or' needs bool operands, got string", 7},
         c{"not status", "operator 'not' needs a bool, got int64", 0},
         c{"status like 'a%'", "operator 'like' needs strings, got int64 and string", 7},
         c{"path not like 1", "operator 'not like' needs strings, got string and int64", 5},
         c{"status in (1, 'a')", "operator 'in' cannot compare int64 with string", 14},
         c{"ts * 2",
           "operator '*' does not apply to timestamp and int64 (a timestamp takes "
           "only + or - an int64 of ms, or - another timestamp)",
           3},
         c{"ts + ts",
           "operator '+' does not apply to timestamp and timestamp (a timestamp "
           "takes only + or - an int64 of ms, or - another timestamp)",
           3},
         c{"ts + 1.5",
           "operator '+' does not apply to timestamp and float64 (a timestamp "
           "takes only + or - an int64 of ms, or - another timestamp)",
           3},
       }) {
    CAPTURE(text);
    auto err = compile_error(text);
    CHECK(err.code == errc::type_error);
    CHECK(err.message == message);
    CHECK(err.offset == offset);
  }
}

TEST_CASE("an unknown field is reported at its offset with a suggestion when close") {
  auto err = compile_error("stauts = 200");
  CHECK(err.code == errc::type_error);
  CHECK(err.message == "unknown field 'stauts', did you mean 'status'?");
  CHECK(err.offset == 0);
  auto multi = compile_error("status = 1\n  and pth = 'x'");
  CHECK(multi.message == "unknown field 'pth', did you mean 'path'?");
  CHECK(multi.offset == 17);
  auto far = compile_error("1 + zzzzzz");
  CHECK(far.message
        == "unknown field 'zzzzzz' (fields: status:int64, path:string, bytes:int64, "
           "ratio:float64, ok:bool, ts:timestamp, user id:string, p:bool, q:bool)");
  CHECK(far.offset == 4);
  auto quoted = compile_error("\"user  id\" = ''");
  CHECK(quoted.message == "unknown field 'user  id', did you mean 'user id'?");
}

TEST_CASE("function errors name the function and the offending argument") {
  struct c {
    const char* text;
    const char* message;
    std::size_t offset;
  };
  for (auto [text, message, offset] : {
         c{"lowr(path)", "unknown function 'lowr', did you mean 'lower'?", 0},
         c{"1 + frobnicate(path)",
           "unknown function 'frobnicate' (functions: lower, upper, length, substr, "
           "concat, abs, floor, coalesce, to_timestamp, rand_int, rand_float, "
           "rand_string)",
           4},
         c{"lower(path, 1)", "function 'lower' takes 1 argument, got 2", 0},
         c{"substr(path)", "function 'substr' takes 2 or 3 arguments, got 1", 0},
         c{"concat()", "function 'concat' takes at least 1 argument, got 0", 0},
         c{"substr(path, 'x')", "function 'substr' argument 2 must be int64, got string", 13},
         c{"length(status)", "function 'length' argument 1 must be string, got int64", 7},
         c{"abs(path)", "function 'abs' argument 1 must be int64 or float64, got string", 4},
         c{"to_timestamp(ok)",
           "function 'to_timestamp' argument 1 must be int64 (ms), float64 (ms), "
           "timestamp or string, got bool",
           13},
         c{"coalesce(status, path)",
           "function 'coalesce' needs arguments of one type, argument 1 is int64 but "
           "argument 2 is string",
           17},
       }) {
    CAPTURE(text);
    auto err = compile_error(text);
    CHECK(err.code == errc::type_error);
    CHECK(err.message == message);
    CHECK(err.offset == offset);
  }
}

TEST_CASE("parse errors carry the offset where parsing stopped") {
  struct c {
    const char* text;
    const char* message;
    std::size_t offset;
  };
  for (auto [text, message, offset] : {
         c{"(status + 1", "expected ')' at end of input", 11},
         c{"(status + 1 2", "expected ')' but got '2'", 12},
         c{"= 200", "unexpected token '='", 0},
         c{"status = = 200", "unexpected token '='", 9},
         c{"status = ", "expected an expression at end of input", 9},
         c{"", "expected an expression at end of input", 0},
         c{"   ", "expected an expression at end of input", 3},
         c{"status 200", "unexpected token '200'", 7},
         c{"status = 1 )", "unexpected token ')'", 11},
         c{"status and", "expected an expression at end of input", 10},
         c{"1 < 2 < 3", "unexpected token '<'", 6},
         c{"1 = 1 is null", "unexpected token 'is'", 6},
         c{"status in 200", "expected '(' but got '200'", 10},
         c{"status in ()", "unexpected token ')'", 11},
         c{"status is 1", "expected 'null' but got '1'", 10},
         c{"lower(path", "expected ',' or ')' at end of input", 10},
         c{"lower(path,)", "unexpected token ')'", 11},
         c{"path = 'abc", "unterminated string literal", 7},
         c{"\"path = 1", "unterminated quoted name", 0},
         c{"status # 1", "unexpected character '#'", 7},
         c{"status = 1 and or", "unexpected token 'or'", 15},
         c{"1e", "malformed number '1e'", 0},
         c{"1 + 12abc", "malformed number '12abc'", 4},
         c{"status>=5and ok", "malformed number '5and'", 8},
         c{"1.2.3", "malformed number '1.2.3'", 0},
         c{"99999999999999999999", "integer literal 99999999999999999999 is out of range for int64", 0},
         c{"9223372036854775808", "integer literal 9223372036854775808 is out of range for int64", 0},
         c{"not", "expected an expression at end of input", 3},
         c{"\"\" = 1", "empty quoted name", 0},
       }) {
    CAPTURE(text);
    auto e = compile(text, *test_schema());
    REQUIRE_FALSE(e);
    CHECK(e.error().code == errc::parse_error);
    CHECK(e.error().message == message);
    CHECK(e.error().offset == offset);
  }
}

TEST_CASE("deeply nested expressions are rejected, not a stack overflow") {
  std::string text(5000, '(');
  text += "1";
  text += std::string(5000, ')');
  auto e = compile(text, *test_schema());
  REQUIRE_FALSE(e);
  CHECK(e.error().code == errc::parse_error);
  CHECK(e.error().message.find("nested too deeply") != std::string::npos);
  std::string minus(5000, '-');
  auto m = compile(minus + "1", *test_schema());
  REQUIRE_FALSE(m);
  CHECK(m.error().message.find("nested too deeply") != std::string::npos);
}

TEST_CASE("compile_condition requires a bool result") {
  auto e = compile_condition("  status + 1", *test_schema());
  REQUIRE_FALSE(e);
  CHECK(e.error().code == errc::type_error);
  CHECK(e.error().message == "condition must be bool, got int64");
  CHECK(e.error().offset == 2);
  CHECK(compile_condition("status = 1", *test_schema()));
  auto inner = compile_condition("stauts = 1", *test_schema());
  REQUIRE_FALSE(inner);
  CHECK(inner.error().message == "unknown field 'stauts', did you mean 'status'?");
}

TEST_CASE("one compiled expression evaluates many batches") {
  auto e = compile("status * 10 + bytes", *test_schema());
  REQUIRE(e);
  auto b1 = make_batch({{std::int64_t{1}, null_v, std::int64_t{2}}});
  auto b2 = make_batch({{std::int64_t{3}, null_v, std::int64_t{4}}, {null_v}});
  CHECK(show(e->evaluate(*b1)) == "12");
  CHECK(show(e->evaluate(*b2)) == "34, null");
  weir::expr::compiled_expression copy = *e;
  CHECK(show(copy.evaluate(*b1)) == "12");
}
}

namespace {

schema_ptr diff_schema() {
  static const schema_ptr s = weir::make_schema({
    {"a", type_id::int64},   {"b", type_id::int64},  {"x", type_id::float64},
    {"y", type_id::float64}, {"s", type_id::string}, {"t", type_id::string},
    {"p", type_id::boolean}, {"q", type_id::boolean}, {"ts", type_id::timestamp},
  });
  return s;
}

// Row `row` of `c` written as expression text that yields the same value.
std::string literal_of(const column& c, std::size_t row) {
  if (c.is_null(row))
    return "null";
  switch (c.type) {
    case type_id::int64:
      return "(" + std::to_string(c.ints[row]) + ")";
    case type_id::timestamp:
      return "to_timestamp(" + std::to_string(c.ints[row]) + ")";
    case type_id::float64: {
      char buf[32];
      auto r = std::to_chars(buf, buf + sizeof buf, c.floats[row]);
      std::string s{buf, r.ptr};
      if (s.find_first_of(".e") == std::string::npos)
        s += ".0";
      return "(" + s + ")";
    }
    case type_id::boolean:
      return c.bools[row] ? "true" : "false";
    case type_id::string: {
      std::string s = "'";
      for (char ch : c.str(row)) {
        s += ch;
        if (ch == '\'')
          s += '\'';
      }
      return s + "'";
    }
    case type_id::null_type:
      break;
  }
  return "null";
}

// Replaces each {field} of `tmpl` by the field name (mode 0), by row `row`'s
// value as a literal (mode 1), or alternately by literal and name (mode 2,
// which mixes broadcast scalars with columns in one operator).
std::string expand(std::string_view tmpl, const record_batch& b, std::size_t row,
                   int mode) {
  std::string out;
  int occurrence = 0;
  for (std::size_t i = 0; i < tmpl.size(); ++i) {
    if (tmpl[i] != '{') {
      out += tmpl[i];
      continue;
    }
    const std::size_t close = tmpl.find('}', i);
    const std::string name{tmpl.substr(i + 1, close - i - 1)};
    const bool literal = mode == 1 || (mode == 2 && occurrence % 2 == 0);
    ++occurrence;
    out += literal ? literal_of(b.columns[*b.schema->index_of(name)], row) : name;
    i = close;
  }
  return out;
}

std::string show_row(const column& c, std::size_t row) {
  column one{c.type};
  one.append_from(c, row);
  return show(one);
}

} // namespace

TEST_SUITE("expr") {
TEST_CASE("column kernels agree with constant folding row by row") {
  const std::int64_t max = std::numeric_limits<std::int64_t>::max();
  const std::int64_t min = std::numeric_limits<std::int64_t>::min();
  const std::vector<std::vector<value>> rows{
    {std::int64_t{7}, std::int64_t{2}, 1.5, -0.25, std::string{"abc"}, std::string{"a%"},
     true, false, std::int64_t{1000}},
    {std::int64_t{-7}, std::int64_t{0}, 0.0, 0.0, std::string{"a"}, std::string{"_"},
     false, true, std::int64_t{-1000}},
    {null_v, std::int64_t{5}, null_v, 2.0, null_v, std::string{"x_z"}, null_v, true, null_v},
    {max, std::int64_t{-1}, -3.5, 3.0, std::string{"héllo wörld"}, std::string{"%wö%"},
     false, null_v, std::int64_t{-5}},
    {std::int64_t{3}, std::int64_t{3}, 2.0, 2.0, std::string{""}, std::string{""}, true, true,
     std::int64_t{0}},
    {std::int64_t{0}, null_v, 1e10, null_v, std::string{"It's"}, null_v, null_v, null_v,
     std::int64_t{7}},
    {min, std::int64_t{7}, -0.0, 1.0, std::string{"xyz"}, std::string{"x_z"}, false, false,
     std::int64_t{9}},
  };
  auto batch = make_batch(rows, diff_schema());
  const char* templates[] = {
    "{a} + {b}", "{a} - {b}", "{a} * {b}", "{a} / {b}", "{a} % {b}", "-{a}",
    "{x} + {y}", "{x} - {y}", "{x} * {y}", "{x} / {y}", "{x} % {y}", "-{x}",
    "{a} + {x}", "{x} / {a}", "{a} * 2 + {b}", "{ts} + {a}", "{ts} - to_timestamp({b})",
    "{a} = {b}", "{a} <> {b}", "{a} < {b}", "{a} <= {b}", "{a} > {b}", "{a} >= {b}",
    "{x} < {y}", "{x} >= {y}", "{a} = {x}", "{a} < {y}", "{ts} > {a}",
    "{s} < {t}", "{s} = {t}", "{s} >= {t}", "{p} = {q}", "{p} < {q}",
    "{p} and {q}", "{p} or {q}", "not {p}", "{p} and {q} and {p}", "{p} or not {q} or {p}",
    "{a} > 0 and {p}", "{a} is null", "{s} is not null", "{x} is null",
    "{a} in ({b}, 3)", "{a} not in ({b}, null)", "{a} in ({a}, 1)", "{s} in ({t}, 'abc')",
    "{x} in ({a}, 2.5)", "{a} in ({x}, {b})",
    "{s} like {t}", "{s} not like {t}", "{s} like 'a%'", "{t} like {s}",
    "lower({s})", "upper({s})", "length({s})", "substr({s}, {a})", "substr({s}, {b}, {a})",
    "substr({s}, {b}, 2)", "concat({s}, {a}, {x}, {p})", "concat({t}, '-', {ts})",
    "abs({a})", "abs({x})", "floor({x})", "floor({a})", "coalesce({a}, {b}, 7)",
    "coalesce({s}, {t})", "coalesce({x}, {a})", "coalesce({p}, {q}, false)",
    "to_timestamp({a})", "to_timestamp({s})", "to_timestamp({x})",
    "if({p}, {a}, {b})", "if({p}, {a}, {x})", "if({a} > {b}, {s}, {t})",
    "case when {p} then {s} when {q} then {t} end",
    "case when {a} > {b} then {a} when {p} then 0 else {x} end",
  };
  for (const char* tmpl : templates) {
    CAPTURE(tmpl);
    const std::string columnar = expand(tmpl, *batch, 0, 0);
    auto whole = compile(columnar, *diff_schema());
    REQUIRE_MESSAGE(whole, whole.error().message);
    const column all = whole->evaluate(*batch);
    REQUIRE(all.size() == batch->num_rows);
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      CAPTURE(row);
      const std::string constant = expand(tmpl, *batch, row, 1);
      CAPTURE(constant);
      auto folded = compile(constant, *diff_schema());
      REQUIRE_MESSAGE(folded, folded.error().message);
      CHECK(show_row(all, row) == show(folded->evaluate(one_row())));
      const std::string mixed = expand(tmpl, *batch, row, 2);
      CAPTURE(mixed);
      auto half = compile(mixed, *diff_schema());
      REQUIRE_MESSAGE(half, half.error().message);
      CHECK(show_row(all, row) == show_row(half->evaluate(*batch), row));
    }
  }
}
}
