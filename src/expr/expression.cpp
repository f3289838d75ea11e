// SPDX-License-Identifier: Apache-2.0
#include "weir/expr/expression.hpp"

#include "node.hpp"
#include "weir/expr/random.hpp"

#include <algorithm>
#include <functional>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#endif

namespace weir::expr {

compiled_expression::compiled_expression(std::shared_ptr<const node> root,
                                         std::string text)
  : root_(std::move(root)), text_(std::move(text)) {
}

type_id compiled_expression::result_type() const noexcept {
  return root_ ? root_->type : type_id::null_type;
}

column compiled_expression::evaluate(const record_batch& batch) const {
  if (!root_) {
    column out{type_id::null_type};
    out.validity.assign(batch.num_rows, 0);
    return out;
  }
  return materialize(evaluate_node(*root_, batch), batch.num_rows);
}

namespace {

void collect_fields(const node& n, std::vector<std::size_t>& out) {
  if (n.kind == node_kind::field)
    out.push_back(n.field_index);
  for (const auto& c : n.children)
    if (c)
      collect_fields(*c, out);
}

} // namespace

std::vector<std::size_t> compiled_expression::referenced_fields() const {
  std::vector<std::size_t> out;
  if (root_)
    collect_fields(*root_, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::optional<std::size_t> compiled_expression::field_reference() const noexcept {
  if (root_ && root_->kind == node_kind::field)
    return root_->field_index;
  return std::nullopt;
}

namespace {

// The selection of `field <op> literal` over int64 (or timestamp) values,
// straight from the column: no boolean column in between. Rows whose value
// is null are not selected, as a null comparison is not true.

// The comparisons as AVX-512's predicate immediates (_MM_CMPINT_EQ ...).
enum cmp_code : int { cmp_eq = 0, cmp_lt = 1, cmp_le = 2, cmp_ne = 4, cmp_ge = 5, cmp_gt = 6 };

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define WEIR_SELECT_AVX512 1
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// select_compared sixteen rows at a time with AVX-512 (F, BW, VL): two
// 8-lane comparisons and the validity bytes make a 16-bit mask, the
// selected row numbers are compressed to the front of a vector and stored
// whole (the next store overwrites what lies past them). Returns the rows
// done (a multiple of 16) and adds the selected ones to k.
template <int Cmp>
__attribute__((target("avx512f,avx512bw,avx512vl"))) std::size_t
select_compared_avx512(const column& c, std::int64_t literal, std::size_t rows,
                       std::uint32_t* o, std::size_t& k) {
  const std::int64_t* x = c.ints.data();
  const std::uint8_t* v = c.validity.data();
  const __m512i lit = _mm512_set1_epi64(literal);
  const __m512i step = _mm512_set1_epi32(16);
  __m512i index = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  std::size_t i = 0;
  std::size_t n = k;
  for (; i + 16 <= rows; i += 16) {
    const __m128i valid = _mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i));
    const auto lo = static_cast<unsigned>(_mm512_cmp_epi64_mask(_mm512_loadu_si512(x + i), lit, Cmp));
    const auto hi =
      static_cast<unsigned>(_mm512_cmp_epi64_mask(_mm512_loadu_si512(x + i + 8), lit, Cmp));
    const auto m = static_cast<__mmask16>((lo | hi << 8) & _mm_test_epi8_mask(valid, valid));
    _mm512_storeu_si512(o + n, _mm512_maskz_compress_epi32(m, index));
    n += static_cast<std::size_t>(__builtin_popcount(m));
    index = _mm512_add_epi32(index, step);
  }
  k = n;
  return i;
}
#pragma GCC diagnostic pop

bool select_avx512() noexcept {
  static const bool use = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw")
           && __builtin_cpu_supports("avx512vl");
  }();
  return use && detail::kernels_use_avx512();
}
#endif

// select_compared with the comparison `Cmp` (a cmp_code) and
// its scalar form `cmp`: the AVX-512 loop where it applies, the rest by
// the scalar one.
template <int Cmp, class Scalar>
std::size_t select_compared_by(const column& c, std::int64_t literal, std::size_t rows,
                               std::uint32_t* o, Scalar cmp) {
  std::size_t k = 0;
  std::size_t i = 0;
#if defined(WEIR_SELECT_AVX512)
  if (select_avx512())
    i = select_compared_avx512<Cmp>(c, literal, rows, o, k);
#endif
  const std::int64_t* x = c.ints.data();
  const std::uint8_t* v = c.validity.data();
  for (; i < rows; ++i) {
    o[k] = static_cast<std::uint32_t>(i);
    k += static_cast<std::size_t>((v[i] != 0) & cmp(x[i], literal));
  }
  return k;
}

// The fused form of select for `int64 field <op> int64 literal`; false
// when the expression has another shape.
bool select_field_vs_literal(const node& n, const record_batch& batch,
                             std::vector<std::uint32_t>& out) {
  if (n.kind != node_kind::compare || n.children.size() != 2)
    return false;
  const node& f = *n.children[0];
  const node& l = *n.children[1];
  const auto is_int = [](type_id t) { return t == type_id::int64 || t == type_id::timestamp; };
  if (f.kind != node_kind::field || !is_int(f.type) || !l.is_literal() || !is_int(l.type)
      || l.constant.is_null(0) || f.field_index >= batch.columns.size())
    return false;
  const column& c = batch.columns[f.field_index];
  const std::size_t rows = batch.num_rows;
  if (!is_int(c.type) || !c.has_values() || c.size() < rows)
    return false; // (the general path reports a column of another shape)
  const std::int64_t lit = l.constant.ints[0];
  out.resize(rows);
  std::size_t k = 0;
  std::uint32_t* o = out.data();
  switch (n.cmp) {
    case compare_op::eq:
      k = select_compared_by<cmp_eq>(c, lit, rows, o, std::equal_to<>{});
      break;
    case compare_op::ne:
      k = select_compared_by<cmp_ne>(c, lit, rows, o, std::not_equal_to<>{});
      break;
    case compare_op::lt:
      k = select_compared_by<cmp_lt>(c, lit, rows, o, std::less<>{});
      break;
    case compare_op::le:
      k = select_compared_by<cmp_le>(c, lit, rows, o, std::less_equal<>{});
      break;
    case compare_op::gt:
      k = select_compared_by<cmp_gt>(c, lit, rows, o, std::greater<>{});
      break;
    case compare_op::ge:
      k = select_compared_by<cmp_ge>(c, lit, rows, o, std::greater_equal<>{});
      break;
  }
  out.resize(k);
  return true;
}

} // namespace

std::vector<std::uint32_t>
compiled_expression::select(const record_batch& batch) const {
  std::vector<std::uint32_t> out;
  if (!root_ || root_->type != type_id::boolean)
    return out;
  if (select_field_vs_literal(*root_, batch, out))
    return out;
  const operand r = evaluate_node(*root_, batch);
  const column& c = r.col();
  const std::size_t rows = batch.num_rows;
  if (r.scalar) {
    if (c.is_valid(0) && c.bools[0]) {
      out.resize(rows);
      for (std::size_t i = 0; i < rows; ++i)
        out[i] = static_cast<std::uint32_t>(i);
    }
    return out;
  }
  // Every row index is written and the count advances only for selected
  // rows: no branch to mispredict on a selectivity near one half.
  out.resize(rows);
  const std::uint8_t* v = c.validity.data();
  const std::uint8_t* b = c.bools.data();
  std::uint32_t* o = out.data();
  std::size_t k = 0;
  for (std::size_t i = 0; i < rows; ++i) {
    o[k] = static_cast<std::uint32_t>(i);
    k += (v[i] & b[i]) != 0;
  }
  out.resize(k);
  return out;
}

namespace {

// Gives every call the seed its rand_* kernel hashes with; before folding,
// which evaluates calls whose arguments are all literals.
void set_seed(node& n, std::uint64_t mixed) {
  if (n.kind == node_kind::call)
    n.mixed_seed = mixed;
  for (auto& c : n.children)
    set_seed(*c, mixed);
}

} // namespace

expected<compiled_expression> compile(std::string_view text,
                                      const schema& input) {
  return compile(text, input, compile_options{});
}

expected<compiled_expression> compile(std::string_view text, const schema& input,
                                      const compile_options& opts) {
  auto tree = parse(text);
  if (!tree)
    return tree.error();
  node_ptr root = std::move(*tree);
  set_seed(*root, mixed_seed(opts.random_seed));
  if (auto err = type_check(*root, input))
    return std::move(*err);
  fold(root);
  return compiled_expression{std::shared_ptr<const node>{std::move(root)},
                             std::string{text}};
}

expected<compiled_expression> compile_condition(std::string_view text,
                                                const schema& input) {
  auto compiled = compile(text, input);
  if (!compiled)
    return compiled;
  const type_id t = compiled->result_type();
  if (t != type_id::boolean && t != type_id::null_type) {
    std::size_t start = 0;
    while (start < text.size()
           && (text[start] == ' ' || text[start] == '\t' || text[start] == '\n'
               || text[start] == '\r' || text[start] == '\f' || text[start] == '\v'))
      ++start;
    return make_error(errc::type_error,
                      "condition must be bool, got " + std::string{to_string(t)},
                      start);
  }
  return compiled;
}

} // namespace weir::expr
