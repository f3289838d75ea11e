// SPDX-License-Identifier: Apache-2.0
// Private to src/expr: the syntax tree and the passes over it.
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::expr {

enum class node_kind : std::uint8_t {
  literal,     ///< `constant` holds one row of type `type`
  field,       ///< `field_index` into the input batch
  cast,        ///< int64/timestamp child to float64 (inserted by type_check)
  negate,      ///< unary `-`
  arith,       ///< `arith` op over children[0], children[1]
  compare,     ///< `cmp` op over children[0], children[1]
  logical_and, ///< n-ary, three-valued
  logical_or,  ///< n-ary, three-valued
  logical_not, ///< three-valued
  is_null,     ///< `negated` = is not null
  in_list,     ///< children[0] in (children[1..]); `negated` = not in
  like,        ///< children[0] like children[1]; `negated` = not like
  call,        ///< function `fn` over the children
  conditional, ///< `case when c1 then v1 ... else e end` / `if(c, a, b)`:
               ///< children c1, v1, c2, v2, ..., e (e a null literal when
               ///< no else was written); a null condition counts as false
};

enum class arith_op : std::uint8_t { add, sub, mul, div, mod };
enum class compare_op : std::uint8_t { eq, ne, lt, le, gt, ge };
enum class function_id : std::uint8_t {
  lower,
  upper,
  length,
  substr,
  concat,
  abs,
  floor,
  coalesce,
  to_timestamp,
  rand_int,    ///< rand_int(seq, salt, lo, hi), see weir/expr/random.hpp
  rand_float,  ///< rand_float(seq, salt)
  rand_string, ///< rand_string(seq, salt, length)
};

/// A compiled `like` pattern with fast paths for the common shapes.
struct like_pattern {
  enum class shape : std::uint8_t { exact, prefix, suffix, contains, general };
  shape kind = shape::general;
  std::string text; ///< the literal part (fast paths) or the whole pattern
  bool matches(std::string_view s) const noexcept;
  static like_pattern make(std::string_view pattern);
};

/// The general `like` matcher: `%` any run, `_` one UTF-8 character.
bool like_match(std::string_view s, std::string_view pattern) noexcept;

/// The items of `x in (...)` when all are literals, sorted for binary search
/// (built by fold for long lists; only the vector of x's type is used).
struct in_set {
  std::vector<std::int64_t> ints;   ///< int64 and timestamp items
  std::vector<double> floats;       ///< float64 items, NaN dropped (never equal)
  std::vector<std::string> strings; ///< string items
  bool has_null = false;            ///< some item is null
};

struct node;
using node_ptr = std::unique_ptr<node>;

/// One node of the typed syntax tree. The parser fills kind, offsets, names
/// and literals; type_check sets `type` and `field_index` and inserts casts;
/// fold replaces constant subtrees by literals.
struct node {
  node_kind kind = node_kind::literal;
  type_id type = type_id::null_type;
  std::size_t offset = 0;    ///< byte offset of the subexpression's first token
  std::size_t op_offset = 0; ///< byte offset of the operator or function name
  std::string op_text;       ///< operator as written ("==", "and", "not in")
  arith_op arith = arith_op::add;
  compare_op cmp = compare_op::eq;
  function_id fn = function_id::lower;
  bool negated = false;
  std::string name;          ///< field or function name
  std::size_t field_index = 0;
  std::size_t depth = 1;      ///< levels in this subtree (parser limit)
  std::uint64_t mixed_seed = 0; ///< rand_* calls: mix64(compile_options::random_seed)
  column constant;           ///< literal value, one row
  std::shared_ptr<const like_pattern> pattern; ///< constant `like` pattern
  std::shared_ptr<const in_set> set; ///< literal `in` items, when many
  std::vector<node_ptr> children;

  bool is_literal() const noexcept { return kind == node_kind::literal; }
  bool is_null_literal() const noexcept {
    return kind == node_kind::literal && constant.is_null(0);
  }
};

/// A literal node of type `t` holding null.
node_ptr make_null_literal(type_id t, std::size_t offset);

/// A literal node holding row `row` of `c` (any type, null included).
node_ptr make_literal(const column& c, std::size_t row, std::size_t offset);

/// Parses `text` into an untyped tree (errc::parse_error with offset).
expected<node_ptr> parse(std::string_view text);

/// Resolves fields, sets types, inserts casts (errc::type_error with offset).
std::optional<error> type_check(node& n, const schema& input);

/// Folds constant subtrees and null-propagating nodes with a null operand
/// into literals. Precondition: `n` is type-checked.
void fold(node_ptr& n);

/// The result of evaluating a node: a column of `num_rows` rows (owned, or a
/// column of the input batch or of a literal) or, when `scalar`, one row that
/// stands for every row.
struct operand {
  column owned;
  const column* ref = nullptr;
  bool scalar = false;

  const column& col() const noexcept { return ref ? *ref : owned; }
  std::size_t stride() const noexcept { return scalar ? 0 : 1; }
};

/// Evaluates `n` over `batch` (`batch.num_rows` rows).
operand evaluate_node(const node& n, const record_batch& batch);

/// Evaluates function call `n` over its evaluated arguments `args`, giving
/// `rows` rows (one standing for all when `scalar`).
operand evaluate_call(const node& n, std::vector<operand>& args,
                      std::size_t rows, bool scalar);

/// `op` as a full column of `rows` rows (copies a borrowed column, broadcasts a scalar).
column materialize(operand&& op, std::size_t rows);

} // namespace weir::expr
