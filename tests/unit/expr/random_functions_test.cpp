// SPDX-License-Identifier: Apache-2.0
#include "weir/expr/expression.hpp"
#include "weir/expr/random.hpp"

#include <doctest/doctest.h>

#include <set>
#include <string>
#include <vector>

using weir::column;
using weir::errc;
using weir::record_batch;
using weir::type_id;
using weir::expr::compile;
using weir::expr::compile_options;

namespace {

// A batch of one int64 column `seq` holding `from, from + 1, ...`, plus a
// nullable int64 `n` that is null on odd rows.
record_batch seq_batch(std::int64_t from, std::size_t rows) {
  weir::batch_builder b{weir::make_schema({{"seq", type_id::int64}, {"n", type_id::int64}})};
  for (std::size_t i = 0; i < rows; ++i) {
    b.col(0).append_int(from + static_cast<std::int64_t>(i));
    if (i % 2 == 0)
      b.col(1).append_int(static_cast<std::int64_t>(i));
    else
      b.col(1).append_null();
    b.commit_row();
  }
  return *b.finish();
}

column eval(std::string_view text, const record_batch& batch, std::uint64_t seed = 0) {
  auto e = compile(text, *batch.schema, compile_options{seed});
  REQUIRE_MESSAGE(e, text << ": " << (e ? "" : e.error().message));
  auto c = e->evaluate(batch);
  REQUIRE(c.size() == batch.num_rows);
  REQUIRE(c.type == e->result_type());
  return c;
}

} // namespace

TEST_SUITE("expr") {
TEST_CASE("rand_int stays within its inclusive bounds and reaches both") {
  auto batch = seq_batch(0, 4000);
  auto c = eval("rand_int(seq, 7, -3, 3)", batch);
  std::set<std::int64_t> seen;
  for (std::size_t i = 0; i < c.size(); ++i) {
    REQUIRE(c.is_valid(i));
    CHECK(c.ints[i] >= -3);
    CHECK(c.ints[i] <= 3);
    seen.insert(c.ints[i]);
  }
  CHECK(seen.size() == 7);
}

TEST_CASE("a row's random value depends only on seed, seq and salt, not on its batch") {
  auto whole = eval("rand_int(seq, 1, 0, 1000000)", seq_batch(100, 50));
  auto tail = eval("rand_int(seq, 1, 0, 1000000)", seq_batch(120, 30));
  for (std::size_t i = 0; i < 30; ++i)
    CHECK(whole.ints[20 + i] == tail.ints[i]);
  // A literal seq folds to the same value.
  auto folded = eval("rand_int(125, 1, 0, 1000000)", seq_batch(0, 1));
  CHECK(folded.ints[0] == whole.ints[25]);
}

TEST_CASE("rand values match the documented hash for a pinned seed") {
  // These figures are shared with bench/flink's Java port: a change here
  // breaks the cross-engine comparison.
  const auto w = weir::expr::random_word(weir::expr::mixed_seed(42), 5, 3);
  CHECK(w == 2703782799149312835ULL);
  auto c = eval("rand_int(seq, 3, 0, 999)", seq_batch(5, 1), 42);
  CHECK(c.ints[0] == weir::expr::random_int(w, 0, 999));
  CHECK(c.ints[0] == 146);
}

TEST_CASE("another seed or salt gives another sequence") {
  auto batch = seq_batch(0, 64);
  auto a = eval("rand_int(seq, 1, 0, 1000000000)", batch, 1);
  auto b = eval("rand_int(seq, 1, 0, 1000000000)", batch, 2);
  auto c = eval("rand_int(seq, 2, 0, 1000000000)", batch, 1);
  CHECK(a.ints != b.ints);
  CHECK(a.ints != c.ints);
  CHECK(a.ints == eval("rand_int(seq, 1, 0, 1000000000)", batch, 1).ints);
}

TEST_CASE("rand_int covers the whole int64 range when the span wraps") {
  auto c = eval("rand_int(seq, 1, -9223372036854775807 - 1, 9223372036854775807)",
                seq_batch(0, 64));
  bool negative = false, positive = false;
  for (auto v : c.ints) {
    negative = negative || v < 0;
    positive = positive || v > 0;
  }
  CHECK(negative);
  CHECK(positive);
}

TEST_CASE("rand_int over a seq column gives the same values with and without AVX-512") {
  // The vectorized kernel (where the processor has AVX-512) takes eight
  // rows at a time for spans below 2^32; the scalar loop does the rest and
  // every other shape. Both must give random_int(random_word(...)) per row,
  // 0 on null rows, for every row count around the vector width.
  bool& avx512 = weir::expr::detail::kernels_use_avx512();
  const bool had = avx512;
  const std::uint64_t seed = 7;
  const auto mseed = weir::expr::mixed_seed(seed);
  for (const char* text : {"rand_int(seq, 3, 0, 999)", "rand_int(seq, 5, -7, 4294967287)",
                           "rand_int(seq, 2, 0, 0)", "rand_int(seq, 9, 0, 4294967295)",
                           "rand_int(n, 3, 0, 999)"}) {
    for (std::size_t rows : {0, 1, 7, 8, 9, 16, 61, 1024}) {
      CAPTURE(text);
      CAPTURE(rows);
      const auto batch = seq_batch(-3, rows);
      avx512 = had;
      const auto fast = eval(text, batch, seed);
      avx512 = false;
      const auto scalar = eval(text, batch, seed);
      avx512 = had;
      CHECK(fast.ints == scalar.ints);
      CHECK(fast.validity == scalar.validity);
      if (std::string_view{text} == "rand_int(seq, 3, 0, 999)")
        for (std::size_t i = 0; i < rows; ++i)
          CHECK(fast.ints[i] == weir::expr::random_int(
                                  weir::expr::random_word(mseed, batch.columns[0].ints[i], 3),
                                  0, 999));
    }
  }
  const std::string note = had ? "rand_int: AVX-512 path tested"
                               : "rand_int: AVX-512 not available here";
  MESSAGE(note);
}

TEST_CASE("rand_int is null when lo exceeds hi, and any null argument gives null") {
  auto batch = seq_batch(0, 4);
  auto c = eval("rand_int(seq, 1, 5, 4)", batch);
  for (std::size_t i = 0; i < 4; ++i)
    CHECK(c.is_null(i));
  auto d = eval("rand_int(n, 1, 0, 9)", batch);
  CHECK(d.is_valid(0));
  CHECK(d.is_null(1));
  CHECK(d.is_valid(2));
  CHECK(d.is_null(3));
  CHECK(eval("rand_float(seq, null)", batch).is_null(0));
  CHECK(eval("rand_string(n, 1, 4)", batch).is_null(1));
}

TEST_CASE("rand_float lies in the unit interval, 1 excluded, and spreads over it") {
  auto c = eval("rand_float(seq, 9)", seq_batch(0, 2000));
  double lo = 1, hi = 0;
  for (auto f : c.floats) {
    CHECK(f >= 0.0);
    CHECK(f < 1.0);
    lo = std::min(lo, f);
    hi = std::max(hi, f);
  }
  CHECK(lo < 0.01);
  CHECK(hi > 0.99);
}

TEST_CASE("rand_string gives the requested number of lowercase letters") {
  auto batch = seq_batch(0, 20);
  auto c = eval("rand_string(seq, 4, seq)", batch);
  for (std::size_t i = 0; i < batch.num_rows; ++i) {
    auto s = c.str(i);
    CHECK(s.size() == i);
    for (char ch : s) {
      CHECK(ch >= 'a');
      CHECK(ch <= 'z');
    }
  }
  CHECK(eval("rand_string(seq, 4, -2)", batch).str(0).empty());
  // Prefixes agree: letter i does not depend on the length asked for.
  auto longer = eval("rand_string(seq, 4, 30)", batch);
  auto shorter = eval("rand_string(seq, 4, 11)", batch);
  CHECK(longer.str(3).substr(0, 11) == shorter.str(3));
}

TEST_CASE("rand_string is null above its length limit instead of asking for unbounded memory") {
  // Found by fuzz_expression (tests/fuzz/regressions/fuzz_expression/).
  auto batch = seq_batch(0, 3);
  auto at_limit = eval("rand_string(seq, 4, 65536)", batch);
  CHECK(at_limit.str(2).size() == weir::expr::max_random_string_length);
  auto above = eval("rand_string(seq, 4, 65537)", batch);
  auto huge = eval("rand_string(seq, 4, 9223372036854775807)", batch);
  for (std::size_t i = 0; i < batch.num_rows; ++i) {
    CHECK(above.is_null(i));
    CHECK(huge.is_null(i));
  }
}

TEST_CASE("rand functions take int64 arguments and a fixed number of them") {
  auto s = weir::make_schema({{"seq", type_id::int64}, {"name", type_id::string}});
  auto e = compile("rand_int(name, 1, 0, 9)", *s);
  REQUIRE_FALSE(e);
  CHECK(e.error().code == errc::type_error);
  CHECK(e.error().message == "function 'rand_int' argument 1 must be int64, got string");
  CHECK(e.error().offset == 9);
  auto f = compile("rand_float(seq)", *s);
  REQUIRE_FALSE(f);
  CHECK(f.error().message == "function 'rand_float' takes 2 arguments, got 1");
  auto g = compile("rand_string(seq, 1, 2.5)", *s);
  REQUIRE_FALSE(g);
  CHECK(g.error().message == "function 'rand_string' argument 3 must be int64, got float64");
}
}
