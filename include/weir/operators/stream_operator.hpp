// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace weir {

/// Where an operator sends what it produces. Port 0 is the main output;
/// ports 1.. are side outputs (for example a window's late records).
///
/// The task that runs an operator chain implements this: a chained successor
/// is called directly, a network edge partitions the batch onto channels.
class output_collector {
public:
  virtual ~output_collector() = default;

  /// Emits a batch on the main output. The batch must not change afterwards.
  virtual void collect(record_batch_ptr batch) = 0;

  /// Emits a batch on side output `port` (1-based; 0 is the main output).
  virtual void collect_side(std::size_t port, record_batch_ptr batch) = 0;

  /// Forwards an event-time watermark (ms) to every output.
  virtual void emit_watermark(event_time wm) = 0;
};

/// Per-subtask facts an operator may need when it opens.
struct operator_context {
  std::string operator_name;
  std::size_t subtask_index = 0;
  std::size_t parallelism = 1;
  std::size_t max_parallelism = 128;
};

/// A synchronous, single-threaded operator: the unit a task chains and a unit
/// test drives without an actor system (Flink's `StreamOperator`).
///
/// Calls arrive in order: `open`, any mix of `process_batch` and
/// `process_watermark`, then `finish` once every input has ended (after the
/// final `max_watermark`). An operator may throw to fail its subtask; the task
/// turns the exception into a job failure naming the operator and subtask.
class stream_operator {
public:
  virtual ~stream_operator() = default;

  virtual void open(const operator_context& ctx) { (void) ctx; }

  /// Processes one batch; rows of one batch share the watermark that was
  /// current before the batch arrived.
  virtual void process_batch(const record_batch_ptr& batch,
                             output_collector& out) = 0;

  /// Handles a watermark that advanced the subtask's combined input watermark;
  /// the default forwards it.
  virtual void process_watermark(event_time wm, output_collector& out) {
    out.emit_watermark(wm);
  }

  /// Called once after the end of every input.
  virtual void finish(output_collector& out) { (void) out; }
};

using stream_operator_ptr = std::unique_ptr<stream_operator>;

} // namespace weir
