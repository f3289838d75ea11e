// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "sliced_window_operator.hpp"

#include <cstddef>
#include <memory>
#include <vector>

namespace weir::window {

/// The global phase of a two-phase window aggregation (Flink SQL's
/// `GlobalSlicingWindowAggOperator`, after the key-by exchange): a
/// `sliced_window_operator` whose input is the partial rows of
/// `local_window_aggregate` (the key fields, `rows`, the encoded
/// accumulators; event time = the slice's last ms), hash-partitioned by
/// their key fields. Each partial is merged into its (key, slice)
/// accumulators; windows fire, snapshot and restore as the sliced
/// operator's do, with the same state.
///
/// A partial whose windows have all fired is late: its `rows` count as late
/// records (`late_records`, `output_collector::count_late`); there is no
/// side output, as the records are gone. Throws `std::logic_error` for a
/// partial that does not decode into one accumulator per aggregate.
///
/// Cost per partial row: one decode of its accumulators and one state merge.
class global_window_aggregate final : public sliced_window_operator {
public:
  explicit global_window_aggregate(std::shared_ptr<const window_plan::impl> plan);

  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  /// The key fields of a partial row: its first columns.
  std::vector<std::size_t> partial_key_fields_;
  internal::accumulators partial_scratch_;
};

} // namespace weir::window
