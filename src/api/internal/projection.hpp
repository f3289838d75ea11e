// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runtime operator shared by the select and map kinds
// (src/kinds/operators/select/, map/), and the planning both call
// (projection.cpp).

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/runtime/job_graph.hpp"

#include <cstddef>
#include <string>
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

/// Plans a select (`keep_input` false: exactly `fields`) or a map (the input's
/// fields, with `fields` added or replaced) reading (node_idx, port) of `g`;
/// returns the node's index.
expected<std::size_t> make_projection(const data_stream& in, bool keep_input,
                                      std::vector<std::pair<std::string, std::string>> fields,
                                      const operator_options& opts, runtime::job_graph* g,
                                      std::size_t node_idx, std::size_t port);

} // namespace weir::internal
