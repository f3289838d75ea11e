// SPDX-License-Identifier: Apache-2.0
#include "running_count_operator.hpp"

#include "weir/core/key_group.hpp"

namespace weir::internal {

void running_count::open(const operator_context& ctx) {
  auto range = state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                                  ctx.subtask_index);
  backend_ = std::make_unique<state::keyed_state_backend>(range, ctx.max_parallelism);
  if (const auto* clock = ctx.clock)
    backend_->set_ttl_time_provider([clock] { return clock->now(); });
  auto handle = backend_->get_value_state<std::int64_t>("count", ttl_);
  if (!handle)
    throw std::logic_error(handle.error().message);
  counts_ = *handle;
}

void running_count::snapshot_state(std::uint64_t, operator_snapshot& out) {
  out.keyed_state = backend_->snapshot();
}

void running_count::restore_state(const operator_restore& in) {
  for (const auto& [group, bytes] : in.key_groups)
    if (auto r = backend_->restore_key_group(group, bytes); !r)
      throw std::runtime_error("restoring key group " + std::to_string(group) + ": "
                               + r.error().message);
}

std::optional<std::string> running_count::query_state(std::string_view encoded_key) {
  backend_->set_current_key(encoded_key);
  auto c = counts_.value();
  if (!c)
    return std::string{"null"};
  return "{\"" + output_->at(key_fields_.size()).name + "\":" + std::to_string(*c) + "}";
}

void running_count::process_batch(const record_batch_ptr& batch, output_collector& out) {
  const std::size_t n = batch->num_rows;
  keys_.clear();
  key_ends_.clear();
  addresses_.clear();
  for (std::size_t row = 0; row < n; ++row) {
    encode_key(*batch, key_fields_, row, keys_);
    key_ends_.push_back(keys_.size());
  }
  const auto key = [this](std::size_t row) {
    const std::size_t begin = row == 0 ? 0 : key_ends_[row - 1];
    return std::string_view{keys_}.substr(begin, key_ends_[row] - begin);
  };
  for (std::size_t row = 0; row < n; ++row)
    addresses_.push_back(backend_->address_of(key(row), {}));
  batch_builder builder{output_};
  state::for_each_prefetched(counts_, addresses_, [&](std::size_t row) {
    backend_->set_current_key(key(row), addresses_[row]);
    auto c = counts_.value_or(0) + 1;
    counts_.update(c);
    for (std::size_t k = 0; k < key_fields_.size(); ++k)
      builder.col(k).append_from(batch->columns[key_fields_[k]], row);
    builder.col(key_fields_.size()).append_int(c);
    builder.commit_row();
    if (batch->has_timestamps())
      builder.timestamps().push_back(batch->timestamps[row]);
  });
  if (builder.rows() > 0)
    out.collect(builder.finish());
}

} // namespace weir::internal
