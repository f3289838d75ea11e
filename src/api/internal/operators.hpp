// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weir::internal {

/// Builds each output column either by copying an input column (`source`
/// >= 0) or by evaluating an expression; shared by select and map.
class projection final : public stream_operator {
public:
  struct output_column {
    int source = -1; ///< input column index, or -1 to evaluate `expression`
    expr::compiled_expression expression;
  };

  projection(schema_ptr output, std::vector<output_column> columns);
  /// A batch this operator solely owns (`use_count() == 1`: handed down an
  /// operator chain, which reads it no more after this call) gives up the
  /// columns its fields copy unchanged instead of having them copied.
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  schema_ptr output_;
  std::vector<output_column> columns_;
  std::vector<bool> last_use_; ///< per output: the last to copy its source column
};

/// Forwards every batch unchanged (union; the input gate merges watermarks).
class pass_through final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    out.collect(batch);
  }
};


} // namespace weir::internal
