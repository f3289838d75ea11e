// SPDX-License-Identifier: Apache-2.0
#pragma once
// The filter kind's runtime operators (filter_operators.cpp).

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/stream_operator.hpp"

#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace weir::internal {

/// Keeps the rows where a compiled boolean expression is true. Of a batch
/// that it cuts, it copies only the columns flagged in `*needed` (filled by
/// `runtime::prune_generated_fields` with what its consumers read; null or
/// empty: all); the others come out null without values.
class expression_filter final : public stream_operator {
public:
  explicit expression_filter(expr::compiled_expression condition,
                             std::shared_ptr<const std::vector<bool>> needed = nullptr)
    : condition_(std::move(condition)), needed_(std::move(needed)) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  expr::compiled_expression condition_;
  std::shared_ptr<const std::vector<bool>> needed_;
};

/// Keeps the rows for which a user predicate returns true.
class predicate_filter final : public stream_operator {
public:
  explicit predicate_filter(std::function<bool(const row_view&)> predicate)
    : predicate_(std::move(predicate)) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  std::function<bool(const row_view&)> predicate_;
};

} // namespace weir::internal
