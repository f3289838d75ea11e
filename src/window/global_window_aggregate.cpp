// SPDX-License-Identifier: Apache-2.0
#include "global_window_aggregate.hpp"

#include "weir/core/key_group.hpp"

#include <stdexcept>
#include <string_view>
#include <utility>

namespace weir::window {

global_window_aggregate::global_window_aggregate(
    std::shared_ptr<const window_plan::impl> plan)
  : sliced_window_operator(std::move(plan)),
    partial_key_fields_(internal::first_indices(plan_->key_fields.size())) {}

void global_window_aggregate::process_batch(const record_batch_ptr& batch,
                                            output_collector& out) {
  const record_batch& in = *batch;
  if (in.num_rows == 0)
    return;
  if (!in.has_timestamps())
    throw std::logic_error("window operator received a batch without event "
                           "timestamps; assign event time at the source");
  const auto& s = *plan_->slicing;
  const std::size_t keys = plan_->key_fields.size();
  const column& rows = in.columns[keys];
  const column& accs = in.columns[keys + 1];
  window_start_cache slice_of{s.offset, s.slice};
  for (std::uint32_t row = 0; row < in.num_rows; ++row) {
    const event_time a = slice_of(in.timestamps[row]);
    if (last_end(a) - 1 <= backend_->current_watermark()) {
      const auto n = static_cast<std::uint64_t>(rows.ints[row]);
      late_ += n;
      out.count_late(n);
      continue;
    }
    std::string_view bytes = accs.str(row);
    if (!state::codec<internal::accumulators>::decode(bytes, partial_scratch_) || !bytes.empty()
        || partial_scratch_.size() != plan_->aggregates.size())
      throw std::logic_error("window operator: a malformed partial aggregate");
    key_scratch_.clear();
    encode_key(in, partial_key_fields_, row, key_scratch_);
    backend_->set_current_key(key_scratch_);
    set_slice_namespace(a);
    if (contents_.merge_accumulator(partial_scratch_))
      slices_[a].keys.emplace_back(backend_->current_key());
  }
  flush(out);
}

} // namespace weir::window
