// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "job_context.hpp"

#include <caf/actor.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include <memory>

namespace weir::runtime {

/// To the job manager: cancel the job (`running_job::cancel`).
using cancel_job_atom = caf::atom_constant<caf::atom("cancel_job")>;

/// Spawns the job manager of one execution, the actor around a
/// `job_master` (job_master.hpp): it deploys every subtask
/// (downstream first, so each upstream knows its targets), monitors them,
/// prints a status line every `status_interval`, and ends when every subtask
/// has ended. The first subtask failure stops all others and ends the job
/// with that failure recorded in `ctx`.
caf::actor spawn_job_manager(caf::actor_system& sys, std::shared_ptr<job_context> ctx);

} // namespace weir::runtime
