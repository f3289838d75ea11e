// SPDX-License-Identifier: Apache-2.0
#include "state_writer_actor.hpp"

#include "weir/core/log.hpp"
#include "weir/core/test_fault.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/sec.hpp>
#include <caf/stateful_actor.hpp>
#include <spdlog/logger.h>

#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <utility>

namespace weir::runtime {

write_snapshot_result write_subtask_snapshot(checkpoint::lmdb_checkpoint_store& store,
                                             const write_snapshot_request& req) {
  write_snapshot_result r;
  r.checkpoint_id = req.checkpoint_id;
  r.task = req.task;
  auto started = std::chrono::steady_clock::now();
  std::vector<checkpoint::operator_state_write> writes;
  writes.reserve(req.operators.size());
  for (const auto& e : req.operators) {
    checkpoint::operator_state_write w;
    w.operator_uid = e.operator_uid;
    w.subtask = e.subtask;
    w.parallelism = e.parallelism;
    w.source_position = e.source_position;
    if (const auto& keyed = e.snapshot.keyed_state; keyed && !keyed->range().empty()) {
      w.first_key_group = keyed->range().start;
      w.last_key_group = keyed->range().end;
      // The snapshot is immutable and thread-safe: serializing it here, on
      // the writer's thread, is the asynchronous part of the checkpoint.
      w.serialize_key_group = [keyed](std::uint16_t g, std::string& out) {
        if (keyed->has_key_group(g))
          keyed->serialize_key_group(g, out);
      };
    }
    if (!e.snapshot.operator_state.empty())
      w.operator_state = e.snapshot.operator_state;
    // An operator with neither kind of state and no position stores nothing.
    if (w.serialize_key_group || w.operator_state || !w.source_position.empty())
      writes.push_back(std::move(w));
  }
  auto handles = store.write_state(req.checkpoint_id, writes);
  r.write_duration = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::steady_clock::now() - started);
  if (!handles) {
    r.error = handles.error().message;
    return r;
  }
  r.ok = true;
  r.ack.operators = std::move(*handles);
  r.ack.alignment = req.alignment;
  return r;
}

namespace {

struct state_writer_state {
  std::shared_ptr<checkpoint::lmdb_checkpoint_store> store;
  std::shared_ptr<checkpoint::remote_checkpoints> remote; ///< null: local only
  std::string job_name; ///< for log messages
  std::uint64_t last_committed = 0; ///< the last checkpoint committed here
  std::uint64_t commits = 0;        ///< manifest commits asked for
  std::uint64_t fail_commit = 0;    ///< WEIR_FAULT: the one to refuse (0: none)
};

/// `WEIR_FAULT=fail_manifest_commit[:N]` (test-only): the Nth (default 1st)
/// manifest commit of the process fails, as a full disk would make it: its
/// checkpoint is aborted and counts as failed. 0 when unset.
std::uint64_t fault_fail_manifest_commit() {
  return weir::internal::test_fault("fail_manifest_commit");
}

/// Runs `f`, turning an escaping exception (allocation failure) into the
/// reply's error: no exception leaves a handler.
template <class Result, class F>
Result guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    Result r;
    r.error = std::string{"state writer: "} + e.what();
    return r;
  }
}

caf::behavior state_writer(caf::stateful_actor<state_writer_state>* self,
                           std::shared_ptr<checkpoint::lmdb_checkpoint_store> store,
                           std::string job_name,
                           std::shared_ptr<checkpoint::remote_checkpoints> remote) {
  self->state.store = std::move(store);
  self->state.remote = std::move(remote);
  self->state.job_name = std::move(job_name);
  self->state.fail_commit = fault_fail_manifest_commit();
  self->set_default_handler([self](caf::scheduled_actor* me, caf::message_view& x)
                              -> caf::result<caf::message> {
    auto what = "state writer: unexpected message " + to_string(x.copy_content_to_message());
    log::checkpoint().error("job '{}': {}", self->state.job_name, what);
    me->quit(caf::make_error(caf::sec::unexpected_message, std::move(what)));
    return caf::sec::unexpected_message;
  });
  return {
    [self](write_state_atom, const write_snapshot_request& req) {
      return guarded<write_snapshot_result>(
        [&] { return write_subtask_snapshot(*self->state.store, req); });
    },
    [self](commit_ckpt_atom, const checkpoint::snapshot_manifest& m) {
      return guarded<commit_manifest_result>([&] {
        commit_manifest_result r;
        r.checkpoint_id = m.checkpoint_id;
        if (++self->state.commits == self->state.fail_commit) {
          r.error = "WEIR_FAULT: manifest commit " + std::to_string(self->state.commits)
                    + " refused (test-only fault)";
          log::checkpoint().warn("job '{}': {}", self->state.job_name, r.error);
          return r;
        }
        // Test-only kills around a checkpoint's manifest commit: its state
        // is written either way; before, the checkpoint never completed;
        // after, it completed and no sink has committed it yet.
        weir::internal::test_fault_kill("kill_before_manifest_commit");
        auto& st = self->state;
        if (st.remote) {
          // The durable copy first: the checkpoint counts as complete (and
          // the sinks commit) only once it is in object storage, and a
          // local manifest is never newer than the remote one.
          auto up = st.remote->upload(*st.store, m, st.store->options().dir + "/.upload");
          if (!up) {
            r.error = "cannot upload checkpoint " + std::to_string(m.checkpoint_id) + " to "
                      + st.remote->uri() + ": " + up.error().message;
            return r;
          }
          log::checkpoint().debug("job '{}': checkpoint {} uploaded to {}: {} bytes in {} ms",
                                  st.job_name, m.checkpoint_id, st.remote->uri(), up->bytes,
                                  up->duration.count());
        }
        auto deleted = st.store->commit_manifest(m);
        if (!deleted) {
          r.error = deleted.error().message;
          return r;
        }
        weir::internal::test_fault_kill("kill_after_manifest_commit");
        if (st.remote) {
          // Best effort: a checkpoint left over is deleted by a later one.
          if (auto gone = st.remote->apply_retention(st.store->options().retain); !gone)
            log::checkpoint().warn("job '{}': retention in {}: {}", st.job_name,
                                   st.remote->uri(), gone.error().message);
        }
        r.ok = true;
        r.deleted = std::move(*deleted);
        st.last_committed = m.checkpoint_id;
        return r;
      });
    },
    [self](discard_ckpt_atom, std::uint64_t id) {
      return guarded<discard_result>([&] {
        discard_result r;
        r.checkpoint_id = id;
        auto n = self->state.store->discard(id);
        if (!n) {
          r.error = n.error().message;
          return r;
        }
        r.ok = true;
        r.values_deleted = *n;
        return r;
      });
    },
    [](drain_atom a) { return a; },
    [self](savepoint_atom, const checkpoint::snapshot_manifest& m, const std::string& dir) {
      return guarded<savepoint_write_result>([&] {
        savepoint_write_result r;
        if (self->state.last_committed != m.checkpoint_id) {
          r.error = "checkpoint " + std::to_string(m.checkpoint_id) + " did not complete";
          return r;
        }
        auto bytes = self->state.store->export_checkpoint(m, dir);
        if (!bytes) {
          r.error = bytes.error().message;
          return r;
        }
        r.ok = true;
        r.bytes = *bytes;
        return r;
      });
    },
    [self](read_latest_atom) {
      return guarded<read_latest_result>([&] {
        read_latest_result r;
        auto latest = self->state.store->read_latest();
        if (!latest) {
          r.error = latest.error().message;
          return r;
        }
        auto highest = self->state.store->highest_id();
        if (!highest) {
          r.error = highest.error().message;
          return r;
        }
        r.ok = true;
        r.latest = std::make_shared<const checkpoint::latest_checkpoint>(std::move(*latest));
        r.highest_id = *highest;
        return r;
      });
    },
    [self](restore_op_atom, const restore_request& req) {
      return guarded<restore_result>([&] {
        restore_result r;
        if (!req.manifest) {
          r.error = "state writer: restore request without a manifest";
          return r;
        }
        auto in = self->state.store->read_restore(*req.manifest, req.operator_uid,
                                                  req.subtask, req.parallelism,
                                                  req.max_parallelism);
        if (!in) {
          r.error = in.error().message;
          return r;
        }
        r.ok = true;
        r.restore = std::make_shared<const operator_restore>(std::move(*in));
        return r;
      });
    },
  };
}

} // namespace

caf::actor spawn_state_writer(caf::actor_system& sys,
                              std::shared_ptr<checkpoint::lmdb_checkpoint_store> store,
                              std::string job_name,
                              std::shared_ptr<checkpoint::remote_checkpoints> remote) {
  return sys.spawn<caf::detached>(state_writer, std::move(store), std::move(job_name),
                                  std::move(remote));
}

} // namespace weir::runtime
