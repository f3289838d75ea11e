// SPDX-License-Identifier: Apache-2.0
#include "internal/operators.hpp"

#include "weir/core/key_group.hpp"

#include <memory>

namespace weir::internal {

namespace {

void emit_selection(const record_batch_ptr& batch, std::vector<std::uint32_t> rows,
                    output_collector& out) {
  if (rows.empty())
    return;
  if (rows.size() == batch->num_rows) {
    out.collect(batch); // all rows pass: forward the same immutable batch
    return;
  }
  out.collect(std::make_shared<const record_batch>(batch->take(rows)));
}

} // namespace

void expression_filter::process_batch(const record_batch_ptr& batch,
                                      output_collector& out) {
  emit_selection(batch, condition_.select(*batch), out);
}

void predicate_filter::process_batch(const record_batch_ptr& batch,
                                     output_collector& out) {
  std::vector<std::uint32_t> rows;
  rows.reserve(batch->num_rows);
  for (std::size_t i = 0; i < batch->num_rows; ++i)
    if (predicate_(row_view{*batch, i}))
      rows.push_back(static_cast<std::uint32_t>(i));
  emit_selection(batch, std::move(rows), out);
}

void projection::process_batch(const record_batch_ptr& batch, output_collector& out) {
  auto result = std::make_shared<record_batch>();
  result->schema = output_;
  result->num_rows = batch->num_rows;
  result->timestamps = batch->timestamps;
  result->columns.reserve(columns_.size());
  for (const auto& c : columns_) {
    if (c.source >= 0)
      result->columns.push_back(batch->columns[static_cast<std::size_t>(c.source)]);
    else
      result->columns.push_back(c.expression.evaluate(*batch));
  }
  // An expression may yield a different but compatible type (int for a
  // float field is never produced: the schema takes the expression's type).
  out.collect(std::move(result));
}

void running_count::process_batch(const record_batch_ptr& batch, output_collector& out) {
  batch_builder builder{output_};
  for (std::size_t row = 0; row < batch->num_rows; ++row) {
    scratch_.clear();
    encode_key(*batch, key_fields_, row, scratch_);
    auto n = ++counts_[scratch_];
    for (std::size_t k = 0; k < key_fields_.size(); ++k)
      builder.col(k).append_from(batch->columns[key_fields_[k]], row);
    builder.col(key_fields_.size()).append_int(n);
    builder.commit_row();
    if (batch->has_timestamps())
      builder.timestamps().push_back(batch->timestamps[row]);
  }
  if (builder.rows() > 0)
    out.collect(builder.finish());
}

} // namespace weir::internal
