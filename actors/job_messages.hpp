// SPDX-License-Identifier: Apache-2.0
#pragma once
// The payloads the job manager exchanges with its subtasks and the state
// writer, without CAF: the job master (job_master.hpp) reads and writes
// them, the actors carry them (their CAF_ALLOW_UNSAFE_MESSAGE_TYPE lines are
// in state_writer_actor.hpp and control_messages.hpp).

#include "weir/checkpoint/checkpoint_coordinator.hpp"
#include "weir/runtime/job_control.hpp"
#include "weir/runtime/subtask_snapshot.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::runtime {

/// Job manager -> the subtask owning the key: answer `query` for chain
/// member `member` with the state of `encoded_key`; `result` comes filled
/// in but for the watermark and the state.
struct subtask_state_query {
  std::size_t member = 0;
  std::string encoded_key;
  state_query_result result;
  reply_ptr<state_query_result> reply;
};

/// The reply to a write: on success `ack` is what the task sends to the job
/// manager (`checkpoint_coordinator::acknowledge`); on failure the task
/// forwards it all the same, and the job manager declines the checkpoint on
/// the task's behalf and counts it as failed (`tolerable_failures`).
struct write_snapshot_result {
  std::uint64_t checkpoint_id = 0;
  std::uint32_t task = 0;
  bool ok = false;
  std::string error;
  checkpoint::task_ack ack;
  /// Time spent serializing and writing (ms), off the processing path.
  std::chrono::milliseconds write_duration{0};
};

struct commit_manifest_result {
  std::uint64_t checkpoint_id = 0;
  bool ok = false;
  std::string error;
  /// Checkpoints deleted by `retain`.
  std::vector<std::uint64_t> deleted;
};

struct savepoint_write_result {
  bool ok = false;
  std::string error;
  std::uint64_t bytes = 0; ///< state bytes copied
};

struct discard_result {
  std::uint64_t checkpoint_id = 0;
  bool ok = false;
  std::string error;
  std::size_t values_deleted = 0;
};

/// Subtask -> job manager, once a subtask has ended its input (checkpointing
/// on): what to store for it in every checkpoint from now on (FLIP-147). A
/// source leaves its final positions (every split finished), so a restore
/// does not read its input again. After a drained input a two-phase-commit
/// sink leaves its final snapshot (the pre-committed last transaction), and
/// its subtask stays until a checkpoint holding it completes and the sink
/// commits; the job manager triggers that final checkpoint as soon as every
/// task has ended. The other members leave no state: their input has ended
/// and all they emitted is in their consumers' state, so a restored one
/// receives only its end of input.
struct task_final_state {
  write_snapshot_request request; ///< checkpoint_id unset
};

} // namespace weir::runtime
