// SPDX-License-Identifier: Apache-2.0
#pragma once

// Aggregate functions shared by the window operator and the summary sink:
// parsing "fn(expr)" calls, accumulators, and column-at-a-time updates.

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"
#include "weir/expr/expression.hpp"
#include "weir/window/window_operator.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace weir::internal {

/// The aggregate functions; `count_rows` is count(*).
enum class aggregate_kind : std::uint8_t { count_rows, count, sum, min, max, avg };

/// Lower-case name of `k` ("count" for count_rows too).
std::string_view to_string(aggregate_kind k) noexcept;

/// One parsed aggregate call with its argument compiled against an input
/// schema.
struct aggregate_function {
  aggregate_kind kind = aggregate_kind::count_rows;
  std::optional<expr::compiled_expression> argument; ///< none for count(*)
  type_id input_type = type_id::null_type;           ///< argument type
  type_id result_type = type_id::int64;
};

/// Parses `call` ("count(*)", "sum(bytes * 2)", ...) and compiles its
/// argument against `input`. Errors as `window::check_aggregate` documents,
/// with `offset` into `call`.
[[nodiscard]] expected<aggregate_function> parse_aggregate(std::string_view call,
                                                           const schema& input);

/// The running state of one aggregate for one group (key, window).
///
/// `count` is the number of non-null inputs (rows for count(*)); `i` holds an
/// int64/timestamp sum, min or max, `f` a float64 one, `s` a string min/max.
/// Sums wrap on int64 overflow (two's complement, like Java's long).
struct accumulator {
  std::int64_t count = 0;
  std::int64_t i = 0;
  double f = 0.0;
  std::string s;
};

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
  /// `errc::invalid_argument`.
  [[nodiscard]] static expected<aggregate_set>
  make(const std::vector<window::aggregate_spec>& specs, const schema& input);

  std::size_t size() const noexcept { return functions_.size(); }
  const aggregate_function& function(std::size_t i) const { return functions_[i]; }
  const std::string& name(std::size_t i) const { return names_[i]; }

  /// Output fields: one per aggregate, `{name, result type}`.
  std::vector<field> output_fields() const;

  /// Evaluates every aggregate's argument over `batch`, one column per
  /// aggregate (an empty column for count(*)).
  std::vector<column> evaluate(const record_batch& batch) const;

  /// Adds the rows of `targets` to their accumulators, one aggregate at a
  /// time over the evaluated argument columns `args` (the type dispatch is
  /// outside the row loop). Rows may repeat (a row in several windows).
  void update(const std::vector<column>& args,
              std::span<const row_target> targets) const;

  /// Appends the results of `accs` (size() accumulators) to `out[0..size())`.
  void append_results(const accumulator* accs, column* out) const;

  /// The result of aggregate `i` for `acc` (monostate when null).
  value result(std::size_t i, const accumulator& acc) const;

private:
  std::vector<aggregate_function> functions_;
  std::vector<std::string> names_;
};

} // namespace weir::internal
