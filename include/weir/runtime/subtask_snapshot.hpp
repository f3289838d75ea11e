// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::runtime {

/// What one operator of a chain froze at checkpoint n.
struct operator_snapshot_entry {
  std::string operator_uid; ///< stable across runs (the operator's name)
  std::uint32_t subtask = 0;
  std::uint32_t parallelism = 1;
  /// From `stream_operator::snapshot_state`: the frozen keyed state (may be
  /// null) and the operator state bytes (empty = none).
  operator_snapshot snapshot;
  /// A source's position, readable ("byte 1234 of a.log"); else empty.
  std::string source_position;
};

/// Write the snapshot of task `task` (the job manager's numbering) for
/// checkpoint `checkpoint_id`: all its operators in one LMDB transaction.
struct write_snapshot_request {
  std::uint64_t checkpoint_id = 0;
  std::uint32_t task = 0;
  /// Alignment time measured by the task, echoed into the ack.
  std::chrono::milliseconds alignment{0};
  /// One entry per chain member, in chain order.
  std::vector<operator_snapshot_entry> operators;
};

} // namespace weir::runtime
