// SPDX-License-Identifier: Apache-2.0
#pragma once
// The running_count kind's runtime operator (running_count_operator.cpp).

#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir::internal {

/// Emits {keys..., count} for every input row: the running count of its key,
/// kept in value state so checkpoints snapshot it (Flink's ClickCounter).
class running_count final : public stream_operator {
public:
  /// `ttl`: the counts' time-to-live (none: forever).
  running_count(schema_ptr output, std::vector<std::size_t> key_fields,
                std::optional<state::state_ttl_config> ttl = std::nullopt)
    : output_(std::move(output)), key_fields_(std::move(key_fields)), ttl_(ttl) {}
  void open(const operator_context& ctx) override;
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;
  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override;
  void restore_state(const operator_restore& in) override;
  /// `{"count":N}` for a key seen N times; `null` for an unseen key.
  std::optional<std::string> query_state(std::string_view encoded_key) override;

private:
  schema_ptr output_;
  std::vector<std::size_t> key_fields_;
  std::optional<state::state_ttl_config> ttl_;
  std::unique_ptr<state::keyed_state_backend> backend_;
  state::value_state<std::int64_t> counts_;
  // Per batch: the encoded keys back to back, where each ends, and their
  // state addresses (for prefetching).
  std::string keys_;
  std::vector<std::size_t> key_ends_;
  std::vector<state::key_address> addresses_;
};

} // namespace weir::internal
