// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "job_context.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace weir::runtime {

/// One network output channel of a subtask: a downstream subtask's actor and
/// the input channel index this subtask has there.
struct out_channel_spec {
  caf::actor target;
  std::uint32_t target_channel = 0;
};

/// Everything one subtask needs to run.
struct subtask_spec {
  std::shared_ptr<job_context> ctx;
  std::size_t vertex = 0;
  std::size_t subtask = 0;
  std::vector<out_channel_spec> out_channels;
  std::vector<writer_spec> writers;
  /// The job manager's number for this subtask (checkpoint acks).
  std::uint32_t task_index = 0;
  caf::actor job_manager;
  caf::actor state_writer; ///< null when checkpoints are off
  /// Restoring: one entry per chain member (in chain order); empty = fresh.
  std::vector<std::shared_ptr<const operator_restore>> restores;
  std::size_t attempt = 0; ///< 0 for the first run, then one per restart
};

/// Spawns the actor of one subtask: a source subtask (its chain's head is a
/// source: it polls its reader, emits watermarks and pauses when downstream
/// has no credit) or a task subtask (it aligns watermarks over its input
/// channels and runs its operator chain). Either ends once its input is
/// exhausted and its outputs are drained; a failure ends it with an error
/// after recording a message naming the operator and subtask.
caf::actor spawn_subtask(caf::actor_system& sys, subtask_spec spec);

} // namespace weir::runtime
