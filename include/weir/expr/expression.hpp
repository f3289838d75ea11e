// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::expr {

struct node; // the typed syntax tree; defined in src/expr

/// An expression parsed and type-checked against one input schema, evaluated
/// a column at a time (docs/concepts/records.md).
///
/// Language: field names (bare, or in double quotes), literals (int, float,
/// 'string' with '' for a quote, true, false, null), `+ - * / %`, comparisons
/// (`=`/`==`, `<>`/`!=`, `< <= > >=`), `and or not`, `x in (a, b)`,
/// `x is [not] null`, `x [not] like 'pat%_'`, and the functions lower, upper,
/// length, substr(s, start1[, len]), concat(...), abs, floor, coalesce(...),
/// to_timestamp(x), and the seeded random functions rand_int(seq, salt, lo,
/// hi) (int64 in [lo, hi], null if lo > hi), rand_float(seq, salt) (float64
/// in [0, 1)) and rand_string(seq, salt, length) (lowercase letters, null
/// for a length above 65,536), each a
/// stateless hash of (compile_options::random_seed, seq, salt) as
/// weir/expr/random.hpp defines it. SQL null semantics: arithmetic and comparisons with
/// null give null, `and`/`or` use three-valued logic, a filter keeps a row only
/// when its condition is true. Integer division by zero gives null.
///
/// Details (the full reference is src/expr/README.md):
/// - Precedence, lowest first: `or`, `and`, `not`, comparisons / `in` / `is` /
///   `like` (not associative), `+ -`, `* / %`, unary `-`. Keywords and
///   function names are case-insensitive; field names are case-sensitive.
/// - Types: int64 op int64 is int64 (wrapping on overflow), any float64
///   operand makes float64; timestamp ± int64 is a timestamp, timestamp −
///   timestamp is int64 (ms). `%` truncates toward zero like C and SQL
///   (`-7 % 3 = -1`). Integer `/` or `%` by zero is null; float division
///   follows IEEE 754 (±inf, NaN).
/// - `like`: `%` matches any run of characters, `_` exactly one UTF-8
///   character; case-sensitive; no escape character.
/// - Strings are UTF-8: length and substr count code points; lower and upper
///   change ASCII letters only.
/// - `concat` renders non-string arguments as text (timestamps as ISO-8601,
///   "2015-05-17T10:05:03.000Z") and is null when any argument is null.
///
/// Cheap to copy (the tree is shared and immutable); `evaluate` and `select`
/// are const and may run on several threads at once.
class compiled_expression {
public:
  compiled_expression() = default;
  explicit compiled_expression(std::shared_ptr<const node> root,
                               std::string text);

  /// The type of every value the expression yields; `null_type` only for an
  /// expression that is null whatever its input and has no other type
  /// (`null`, `null + null`, `abs(null)`) and for a default-constructed one.
  type_id result_type() const noexcept;

  /// The source text it was compiled from.
  const std::string& text() const noexcept { return text_; }

  /// Evaluates over every row of `batch` (which must have the schema this
  /// was compiled against); the column has `batch.num_rows` rows and type
  /// `result_type()`. Cost: one pass per operator over typed arrays.
  /// A batch lacking a referenced column, or holding it with another type, is
  /// a caller bug: it is logged (`weir.runtime`, critical) and aborts.
  column evaluate(const record_batch& batch) const;

  /// For a boolean expression: the indices of the rows where it is true
  /// (null and false rows are dropped), ascending. An expression of any other
  /// type selects nothing.
  std::vector<std::uint32_t> select(const record_batch& batch) const;

  /// The input fields the expression reads: indices into the schema it was
  /// compiled against, ascending, each once (empty for a constant).
  std::vector<std::size_t> referenced_fields() const;

  /// When the expression is one field's name and nothing else (`price`):
  /// that field's index, whose column `evaluate` would copy. Otherwise none.
  std::optional<std::size_t> field_reference() const noexcept;

private:
  std::shared_ptr<const node> root_;
  std::string text_;
};

/// Parses and type-checks `text` against `input`.
///
/// Errors (`errc::parse_error` or `errc::type_error`) carry a message like
/// "unknown field 'stauts', did you mean 'status'?" (or, with no close name,
/// "unknown field 'x' (fields: a:int64, b:string)") and `offset`, the 0-based
/// byte offset in `text` where the problem starts, so that a config loader can
/// point at file:line:col. Examples:
/// - parse_error "expected ')' at end of input" (offset = text.size()),
///   "unexpected token '='", "unterminated string literal";
/// - type_error "operator '+' needs numbers, got int64 and string" (offset of
///   the operator), "unknown function 'lowr', did you mean 'lower'?" (offset
///   of the name), "function 'substr' argument 2 must be int64, got string"
///   (offset of the argument).
[[nodiscard]] expected<compiled_expression>
compile(std::string_view text, const schema& input);

/// Settings of `compile` beyond the text and the schema.
struct compile_options {
  /// Seed of rand_int, rand_float and rand_string: the same (seed, seq,
  /// salt) always gives the same value. 0 (the default) is a seed like any
  /// other.
  std::uint64_t random_seed = 0;
};

/// As `compile(text, input)`, with `opts`.
[[nodiscard]] expected<compiled_expression>
compile(std::string_view text, const schema& input, const compile_options& opts);

/// As `compile`, and the result must be bool (or the literal null): a filter
/// condition. Otherwise `errc::type_error` "condition must be bool, got int64"
/// at the offset of the expression's first byte.
[[nodiscard]] expected<compiled_expression>
compile_condition(std::string_view text, const schema& input);

namespace detail {
/// Whether expression kernels take their AVX-512 paths (`rand_int` over a
/// seq column with constant salt and a span below 2^32; integer `/` and `%`
/// by a constant): true where the processor has AVX-512 F and DQ. Tests set
/// it to false to check the scalar loops against them; nothing else should.
bool& kernels_use_avx512() noexcept;
} // namespace detail

} // namespace weir::expr
