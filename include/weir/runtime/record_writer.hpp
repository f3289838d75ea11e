// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/output_channels.hpp"

#include <cstddef>
#include <string>

namespace weir::runtime {

/// Distributes the batches of one network edge over its output channels
/// (Flink's `RecordWriter` with its `ChannelSelector`):
/// - forward: everything to the one channel (same subtask index downstream);
/// - rebalance: whole batches round-robin, starting at this subtask's index;
/// - hash: each row to the subtask owning its key group, `g * p / maxp` for
///   key group `g = xxhash64(key) % maxp` (`assign_key_group`), so every
///   edge keyed into the same key groups (both inputs of a two-input
///   operator) sends a key to the same subtask. A batch is split into one
///   batch per destination with rows in their input order; a batch whose rows
///   all go to one subtask is passed on as it is.
/// Control elements are broadcast to every channel of the edge.
class record_writer {
public:
  /// `spec` must outlive the writer; `subtask` seeds the round-robin;
  /// `max_parallelism` is the number of key groups (1..32768).
  record_writer(const writer_spec& spec, std::size_t subtask, std::size_t max_parallelism)
    : spec_(&spec), round_robin_(subtask), max_parallelism_(max_parallelism) {}

  /// Sends `batch` (non-empty) on the channel(s) its rows belong to.
  void write(const record_batch_ptr& batch, output_channels& out);

  /// Sends a control element on every channel of the edge.
  void broadcast(const output_element& e, output_channels& out) const {
    for (auto ch : spec_->channels)
      out.push(ch, e);
  }

  const writer_spec& spec() const noexcept { return *spec_; }

private:
  const writer_spec* spec_;
  std::size_t round_robin_;
  std::size_t max_parallelism_;
  std::string scratch_; ///< the encoded key of the current row
};

} // namespace weir::runtime
