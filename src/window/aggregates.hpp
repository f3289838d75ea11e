// SPDX-License-Identifier: Apache-2.0
#pragma once

// Aggregate functions shared by the window operator and the summary sink:
// parsing "fn(expr)" calls, accumulators, and column-at-a-time updates.

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"
#include "weir/expr/expression.hpp"
#include "weir/state/codec.hpp"
#include "weir/window/window_operator.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace weir::internal {

/// The aggregate functions; `count_rows` is count(*).
enum class aggregate_kind : std::uint8_t {
  count_rows,
  count,
  sum,
  min,
  max,
  avg,
  first,
  last,
  count_distinct,
  reduce,
};

/// Lower-case name of `k` ("count" for count_rows too).
std::string_view to_string(aggregate_kind k) noexcept;

/// One parsed aggregate call with its argument compiled against an input
/// schema.
struct aggregate_function {
  aggregate_kind kind = aggregate_kind::count_rows;
  /// none for count(*); for reduce, `expr` compiled against `reduce_schema`
  std::optional<expr::compiled_expression> argument;
  type_id input_type = type_id::null_type; ///< argument type (reduce: acc type)
  type_id result_type = type_id::int64;
  value init;                 ///< reduce: the accumulator's start value
  schema_ptr reduce_schema;   ///< reduce: the input fields, then `acc`
};

/// Parses `call` ("count(*)", "sum(bytes * 2)", "reduce(acc + x, 0)", ...)
/// and compiles its argument against `input`. Errors as
/// `window::check_aggregate` documents, with `offset` into `call`.
[[nodiscard]] expected<aggregate_function> parse_aggregate(std::string_view call,
                                                           const schema& input);

/// The running state of one aggregate for one group (key, window).
///
/// `count` is the number of non-null inputs (rows for count(*) and reduce);
/// `i` holds an int64/timestamp/bool sum, min, max, first, last or reduce
/// accumulator, `f` a float64 one, `s` a string one; `null` marks a reduce
/// accumulator that became null; `seq` is the arrival number of the value
/// held by first/last (to merge windows); `distinct` holds count_distinct's
/// encoded values. Sums wrap on int64 overflow (two's complement, like
/// Java's long).
struct accumulator {
  std::int64_t count = 0;
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;
  std::uint64_t seq = 0;
  bool null = false;
  std::set<std::string> distinct;

  friend bool operator==(const accumulator&, const accumulator&) = default;
};

/// The accumulators of one group, one per aggregate of a set, in order:
/// the value type of a window's keyed state. Up to `inline_capacity` live
/// inside the object, more on the heap, so that copying a state entry
/// (copy-on-write of a page after a snapshot, `cow_state_map`) allocates
/// nothing for windows of one or two aggregates.
class accumulator_list {
public:
  static constexpr std::size_t inline_capacity = 2;

  accumulator_list() noexcept = default;
  /// `n` default (empty) accumulators.
  explicit accumulator_list(std::size_t n) { resize(n); }
  accumulator_list(const accumulator_list& other) : inline_(other.inline_), size_(other.size_) {
    if (other.heap_)
      heap_ = clone(other.heap_.get(), size_);
  }
  accumulator_list(accumulator_list&& other) noexcept
    : inline_(std::move(other.inline_)), heap_(std::move(other.heap_)), size_(other.size_) {
    other.size_ = 0;
  }
  accumulator_list& operator=(const accumulator_list& other) {
    if (this != &other) {
      auto heap = other.heap_ ? clone(other.heap_.get(), other.size_) : nullptr;
      inline_ = other.inline_;
      heap_ = std::move(heap);
      size_ = other.size_;
    }
    return *this;
  }
  accumulator_list& operator=(accumulator_list&& other) noexcept {
    inline_ = std::move(other.inline_);
    heap_ = std::move(other.heap_);
    size_ = other.size_;
    other.size_ = 0;
    return *this;
  }
  ~accumulator_list() = default;

  std::size_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  accumulator* data() noexcept { return heap_ ? heap_.get() : inline_.data(); }
  const accumulator* data() const noexcept { return heap_ ? heap_.get() : inline_.data(); }
  accumulator& operator[](std::size_t i) noexcept { return data()[i]; }
  const accumulator& operator[](std::size_t i) const noexcept { return data()[i]; }
  accumulator* begin() noexcept { return data(); }
  accumulator* end() noexcept { return data() + size_; }
  const accumulator* begin() const noexcept { return data(); }
  const accumulator* end() const noexcept { return data() + size_; }

  /// Replaces the contents with `n` default (empty) accumulators.
  void resize(std::size_t n) {
    heap_.reset();
    inline_ = {};
    if (n > inline_capacity)
      heap_ = std::make_unique<accumulator[]>(n);
    size_ = static_cast<std::uint32_t>(n);
  }

  friend bool operator==(const accumulator_list& a, const accumulator_list& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end());
  }

private:
  static std::unique_ptr<accumulator[]> clone(const accumulator* from, std::size_t n) {
    auto out = std::make_unique<accumulator[]>(n);
    std::copy(from, from + n, out.get());
    return out;
  }

  // Unused (default) when the accumulators are on the heap.
  std::array<accumulator, inline_capacity> inline_{};
  std::unique_ptr<accumulator[]> heap_;
  std::uint32_t size_ = 0;
};

static_assert(std::is_nothrow_move_constructible_v<accumulator_list>
              && std::is_nothrow_move_assignable_v<accumulator_list>);

/// Where one input row's values go: the accumulators (one per aggregate of
/// the set, contiguous) of the group the row belongs to.
struct row_target {
  std::uint32_t row = 0;
  accumulator* accs = nullptr;
};

/// An ordered list of named aggregates over one input schema.
class aggregate_set {
public:
  aggregate_set() = default;

  /// Parses every spec against `input`. Errors name the aggregate
  /// ("aggregate 'bytes': sum needs a number, got string") and keep the
  /// offset into its call text. Empty or duplicate names are
  /// `errc::invalid_argument`; a reduce call when `allow_reduce` is false is
  /// `errc::parse_error` (only `update_row` can fold it).
  [[nodiscard]] static expected<aggregate_set>
  make(const std::vector<window::aggregate_spec>& specs, const schema& input,
       bool allow_reduce = false);

  std::size_t size() const noexcept { return functions_.size(); }
  const aggregate_function& function(std::size_t i) const { return functions_[i]; }
  const std::string& name(std::size_t i) const { return names_[i]; }

  /// True when some aggregate is a reduce (no `merge`, no `update`).
  bool has_reduce() const noexcept;

  /// Output fields: one per aggregate, `{name, result type}`.
  std::vector<field> output_fields() const;

  /// Evaluates every aggregate's argument over `batch`, one column per
  /// aggregate (an empty column for count(*) and reduce).
  std::vector<column> evaluate(const record_batch& batch) const;

  /// Adds the rows of `targets` to their accumulators, one aggregate at a
  /// time over the evaluated argument columns `args` (the type dispatch is
  /// outside the row loop). Rows may repeat (a row in several windows).
  /// first/last follow the order of `targets`. Precondition: no reduce.
  void update(const std::vector<column>& args,
              std::span<const row_target> targets) const;

  /// Adds row `row` of `batch` (whose arguments are `args`, from `evaluate`)
  /// to `accs` (size() accumulators); `seq` is its arrival number, which
  /// orders first/last across `merge`. Folds reduce aggregates too.
  void update_row(const record_batch& batch, const std::vector<column>& args,
                  std::uint32_t row, std::uint64_t seq, accumulator* accs) const;

  /// Merges `from` into `into` (size() accumulators each), as if `into` had
  /// also seen `from`'s rows (Flink's `AggregateFunction.merge`).
  /// Precondition: no reduce.
  void merge(accumulator* into, const accumulator* from) const;

  /// Appends the results of `accs` (size() accumulators) to `out[0..size())`.
  void append_results(const accumulator* accs, column* out) const;

  /// The result of aggregate `i` for `acc` (monostate when null).
  value result(std::size_t i, const accumulator& acc) const;

private:
  std::vector<aggregate_function> functions_;
  std::vector<std::string> names_;
};

} // namespace weir::internal

namespace weir::state {

/// Snapshot encoding of an accumulator: its fields in declaration order.
template <>
struct codec<internal::accumulator> {
  static void encode(const internal::accumulator& a, std::string& out) {
    wire::put_i64(out, a.count);
    wire::put_i64(out, a.i);
    codec<double>::encode(a.f, out);
    wire::put_bytes(out, a.s);
    wire::put_u64(out, a.seq);
    wire::put_u8(out, a.null ? 1 : 0);
    wire::put_u32(out, static_cast<std::uint32_t>(a.distinct.size()));
    for (const auto& d : a.distinct)
      wire::put_bytes(out, d);
  }
  static bool decode(std::string_view& in, internal::accumulator& a) {
    std::string_view s;
    std::uint8_t null = 0;
    std::uint32_t n = 0;
    if (!wire::get_i64(in, a.count) || !wire::get_i64(in, a.i)
        || !codec<double>::decode(in, a.f) || !wire::get_bytes(in, s)
        || !wire::get_u64(in, a.seq) || !wire::get_u8(in, null) || null > 1
        || !wire::get_count(in, n))
      return false;
    a.s.assign(s);
    a.null = null == 1;
    a.distinct.clear();
    for (std::uint32_t k = 0; k < n; ++k) {
      std::string_view d;
      if (!wire::get_bytes(in, d))
        return false;
      a.distinct.emplace(d);
    }
    return true;
  }
};

/// Snapshot encoding of an accumulator list: as a `std::vector` of them
/// (u32 count + accumulators), so either decodes the other's bytes.
template <>
struct codec<internal::accumulator_list> {
  static void encode(const internal::accumulator_list& v, std::string& out) {
    wire::put_u32(out, static_cast<std::uint32_t>(v.size()));
    for (const auto& a : v)
      codec<internal::accumulator>::encode(a, out);
  }
  static bool decode(std::string_view& in, internal::accumulator_list& out) {
    std::uint32_t n = 0;
    if (!wire::get_count(in, n))
      return false;
    out.resize(n);
    for (auto& a : out)
      if (!codec<internal::accumulator>::decode(in, a))
        return false;
    return true;
  }
};

} // namespace weir::state
