// SPDX-License-Identifier: Apache-2.0
#include "internal/operators.hpp"

#include "weir/core/key_group.hpp"

#include <memory>
#include <stdexcept>

namespace weir::internal {

projection::projection(schema_ptr output, std::vector<output_column> columns)
  : output_(std::move(output)), columns_(std::move(columns)), last_use_(columns_.size()) {
  std::vector<bool> seen;
  for (std::size_t i = columns_.size(); i-- > 0;) {
    const int src = columns_[i].source;
    if (src < 0)
      continue;
    const auto k = static_cast<std::size_t>(src);
    if (k >= seen.size())
      seen.resize(k + 1);
    last_use_[i] = !seen[k];
    seen[k] = true;
  }
}

void projection::process_batch(const record_batch_ptr& batch, output_collector& out) {
  auto result = std::make_shared<record_batch>();
  result->schema = output_;
  result->num_rows = batch->num_rows;
  result->columns.resize(columns_.size());
  // Expressions first: they read input columns that a field may then take.
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].source < 0)
      result->columns[i] = columns_[i].expression.evaluate(*batch);
  // Sole owner: batches are made non-const (make_shared<record_batch>) and
  // only shared as const, so taking from one nobody else holds is sound.
  record_batch* owned = batch.use_count() == 1 ? const_cast<record_batch*>(batch.get()) : nullptr;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].source < 0)
      continue;
    auto& in = batch->columns[static_cast<std::size_t>(columns_[i].source)];
    if (owned && last_use_[i])
      result->columns[i] = std::move(const_cast<column&>(in));
    else
      result->columns[i] = in;
  }
  if (owned)
    result->timestamps = std::move(owned->timestamps);
  else
    result->timestamps = batch->timestamps;
  // An expression may yield a different but compatible type (int for a
  // float field is never produced: the schema takes the expression's type).
  out.collect(std::move(result));
}

} // namespace weir::internal
