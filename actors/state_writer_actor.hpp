// SPDX-License-Identifier: Apache-2.0
#pragma once

// The state writer: a detached actor that owns a job's checkpoint storage
// (docs/concepts/checkpoints.md). Tasks hand it frozen snapshots at the barrier and keep
// processing; it serializes them key group by key group and writes them to
// LMDB on its own thread, then replies with the state handles the task
// forwards to the job manager as its acknowledgement.
//
// Messages (request/response; every reply carries `ok` and `error` rather
// than a CAF error, so one `.then` handler covers both outcomes):
//   (write_state_atom, write_snapshot_request)   -> write_snapshot_result
//   (commit_ckpt_atom, snapshot_manifest)        -> commit_manifest_result
//   (discard_ckpt_atom, std::uint64_t id)        -> discard_result
//   (read_latest_atom)                           -> read_latest_result
//   (restore_op_atom, restore_request)           -> restore_result
//   (drain_atom)                                 -> drain_atom (a barrier: every
//                                                   request sent before it is done)
// Each handler runs its LMDB transactions to completion inside the call.

#include "job_messages.hpp"
#include "weir/checkpoint/checkpoint_coordinator.hpp"
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/checkpoint/remote_checkpoints.hpp"
#include "weir/checkpoint/snapshot_manifest.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/runtime/subtask_snapshot.hpp"

#include <caf/actor.hpp>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/fwd.hpp>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace weir::runtime {

/// Write one subtask's snapshot for a checkpoint.
using write_state_atom = caf::atom_constant<caf::atom("wr_state")>;
/// Commit a checkpoint's manifest (the checkpoint becomes complete).
using commit_ckpt_atom = caf::atom_constant<caf::atom("commit_cp")>;
/// Delete the state of an aborted checkpoint.
using discard_ckpt_atom = caf::atom_constant<caf::atom("discard_cp")>;
/// Find the newest restorable checkpoint.
using read_latest_atom = caf::atom_constant<caf::atom("read_last")>;
/// Read what one operator subtask restores.
using restore_op_atom = caf::atom_constant<caf::atom("restore_op")>;
/// Reply once every request the sender sent before is done (the mailbox is
/// in order): a restart or the job's end waits for in-flight commits.
using drain_atom = caf::atom_constant<caf::atom("drain")>;
/// Copy a committed checkpoint into a savepoint directory:
/// (savepoint_atom, snapshot_manifest, std::string dir) -> savepoint_write_result.
/// Sent right after the checkpoint's commit, so retention cannot delete it first.
using savepoint_atom = caf::atom_constant<caf::atom("savepoint")>;

struct read_latest_result {
  bool ok = false;
  std::string error;
  /// Null manifest inside: nothing to restore. Warnings name each newer
  /// checkpoint that was skipped as damaged or incomplete.
  std::shared_ptr<const checkpoint::latest_checkpoint> latest;
  /// Highest id present in storage: `checkpoint_coordinator::resume_after`.
  std::uint64_t highest_id = 0;
};

/// Read the state of operator `operator_uid` subtask `subtask` of
/// `parallelism` from checkpoint `manifest` (rescaling by key group).
struct restore_request {
  std::shared_ptr<const checkpoint::snapshot_manifest> manifest;
  std::string operator_uid;
  std::uint32_t subtask = 0;
  std::uint32_t parallelism = 1;
  std::size_t max_parallelism = 128;
};

struct restore_result {
  bool ok = false;
  std::string error;
  /// Pass to `stream_operator::restore_state`.
  std::shared_ptr<const operator_restore> restore;
};

/// Turns the frozen snapshots of one subtask into the store's write request
/// (serializers that call `keyed_state_snapshot::serialize_key_group` over
/// the snapshot's key-group range) and writes them in one transaction.
/// Exposed for tests and for callers that write without the actor.
[[nodiscard]] write_snapshot_result
write_subtask_snapshot(checkpoint::lmdb_checkpoint_store& store,
                       const write_snapshot_request& req);

/// Spawns the state writer of one job: a detached actor (its own thread, so
/// blocking LMDB I/O never stalls the scheduler) that owns `store`. An
/// unexpected message ends it with an error (and logs it on the checkpoint
/// logger, naming `job_name`); monitor it. With `remote`, a manifest commit
/// first uploads the checkpoint there (`remote_checkpoints::upload`) and
/// fails when the upload does; after the local commit it applies the
/// store's `retain` to the remote copy too.
caf::actor spawn_state_writer(caf::actor_system& sys,
                              std::shared_ptr<checkpoint::lmdb_checkpoint_store> store,
                              std::string job_name = {},
                              std::shared_ptr<checkpoint::remote_checkpoints> remote = {});

} // namespace weir::runtime

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::write_snapshot_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::write_snapshot_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::task_final_state)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::checkpoint::snapshot_manifest)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::commit_manifest_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::discard_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::savepoint_write_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::read_latest_result)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::restore_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::restore_result)
