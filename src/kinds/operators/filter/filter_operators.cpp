// SPDX-License-Identifier: Apache-2.0
#include "filter_operators.hpp"

namespace weir::internal {

namespace {

void emit_selection(const record_batch_ptr& batch, std::vector<std::uint32_t> rows,
                    output_collector& out, const std::vector<bool>& columns = {}) {
  if (rows.empty())
    return;
  if (rows.size() == batch->num_rows) {
    out.collect(batch); // all rows pass: forward the same immutable batch
    return;
  }
  out.collect(std::make_shared<record_batch>(batch->take(rows, columns)));
}

} // namespace

void expression_filter::process_batch(const record_batch_ptr& batch,
                                      output_collector& out) {
  static const std::vector<bool> all;
  emit_selection(batch, condition_.select(*batch), out, needed_ ? *needed_ : all);
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

} // namespace weir::internal
