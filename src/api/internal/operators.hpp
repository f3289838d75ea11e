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

/// Turns each row into zero or more rows, one per piece of a string field
/// (Flink's flatMap; SQL's UNNEST): `split` cuts the text at a separator,
/// `explode` unnests a JSON array held as text. The other fields are copied;
/// a null field gives no row.
class row_multiplier final : public stream_operator {
public:
  enum class mode { split, explode };
  row_multiplier(mode m, std::size_t field, std::string separator, bool keep_empty)
    : mode_(m), field_(field), separator_(std::move(separator)), keep_empty_(keep_empty) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  mode mode_;
  std::size_t field_;
  std::string separator_;
  bool keep_empty_;
  std::vector<std::string> pieces_;
};

/// Forwards every batch unchanged (union; the input gate merges watermarks).
class pass_through final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    out.collect(batch);
  }
};


} // namespace weir::internal
