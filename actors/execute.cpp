// SPDX-License-Identifier: Apache-2.0
// job::execute lives in weir_actors: it is the one place where the public API
// meets the actor system.
#include "control_messages.hpp"
#include "job_context.hpp"
#include "background_run.hpp"
#include "job_manager_actor.hpp"
#include "weir/api/job.hpp"
#include "weir/core/log.hpp"
#include "weir/core/messages.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/loss_check.hpp"
#include "weir/runtime/job_control.hpp"
#include "weir/runtime/stop_request.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/send.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <optional>
#include <exception>
#include <filesystem>
#include <iostream>
#include <thread>

namespace weir {

namespace {

/// A standby, or a new machine: when `cp.dir` holds no LMDB environment
/// (neither `data.mdb` nor `lock.mdb`) and the remote copy holds complete
/// checkpoints, downloads the newest into `cp.dir`, which then restores it
/// like any local store (and numbers on after it, after --fresh too). A
/// remote that cannot be listed refuses the start: starting from no state
/// would take back what the sinks committed. Returns the error, if any.
std::optional<std::string> adopt_remote_checkpoint(checkpoint::remote_checkpoints& remote,
                                                   const checkpoint_options& cp,
                                                   const std::string& job_name) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(fs::path{cp.dir} / "data.mdb", ec) || fs::exists(fs::path{cp.dir} / "lock.mdb", ec))
    return std::nullopt;
  auto ids = remote.complete_ids();
  if (!ids)
    return "cannot list the checkpoints in " + remote.uri() + ": " + ids.error().message;
  if (ids->empty())
    return std::nullopt;
  const auto id = ids->back();
  auto started = std::chrono::steady_clock::now();
  auto bytes = remote.download(id, cp.dir);
  if (!bytes)
    return "cannot download checkpoint " + std::to_string(id) + " from " + remote.uri() + ": "
           + bytes.error().message;
  log::checkpoint().info(
    "job '{}': {} held no checkpoint: downloaded checkpoint {} ({} bytes) from {} in {} ms",
    job_name, cp.dir, id, *bytes, remote.uri(),
    std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now()
                                                          - started)
      .count());
  return std::nullopt;
}

/// A `dir` whose newest complete checkpoint the remote lacks (checkpoints
/// taken before `remote` was set): uploads it before the job runs, so that a
/// standby never resumes from older state than this run restores. Returns
/// the error, if any (the start is refused: the remote would be behind).
std::optional<std::string>
upload_newer_local_checkpoint(checkpoint::remote_checkpoints& remote,
                              const checkpoint::lmdb_checkpoint_store& local,
                              const std::vector<checkpoint::checkpoint_listing>& stored,
                              const std::string& job_name) {
  const checkpoint::checkpoint_listing* newest = nullptr;
  for (const auto& l : stored)
    if (l.restorable && l.manifest)
      newest = &l;
  if (!newest)
    return std::nullopt;
  auto ids = remote.complete_ids();
  if (!ids)
    return "cannot list the checkpoints in " + remote.uri() + ": " + ids.error().message;
  if (!ids->empty() && ids->back() >= newest->checkpoint_id)
    return std::nullopt;
  auto up = remote.upload(local, *newest->manifest, local.options().dir + "/.upload");
  if (!up)
    return "cannot upload checkpoint " + std::to_string(newest->checkpoint_id) + " to "
           + remote.uri() + ": " + up.error().message;
  log::checkpoint().info("job '{}': uploaded checkpoint {} of {} to {} ({} bytes in {} ms): "
                         "the remote copy lacked it",
                         job_name, newest->checkpoint_id, local.options().dir, remote.uri(),
                         up->bytes, up->duration.count());
  return std::nullopt;
}

} // namespace

job_result job::execute() { return execute_with(nullptr); }

job_result job::execute_with(runtime::background_run* control) {
  job_result result;
  auto started = std::chrono::steady_clock::now();
  std::shared_ptr<runtime::job_context> ctx;
  try {
    const auto& opts = graph_->options;
    log::set_log_level(opts.quiet ? std::max(opts.log_level, log_level::warn) : opts.log_level);
    runtime::prune_generated_fields(*graph_);
    ctx = std::make_shared<runtime::job_context>(graph_);
    const auto& cp = graph_->options.checkpoint;
    bool resumable = false; // a completed checkpoint exists to resume from
    if (cp.enabled) {
      // Nothing is deleted here: a start over (--fresh, --from-savepoint)
      // is recorded in the store once its restore has been read, and the
      // old checkpoints go when its first checkpoint completes
      // (lmdb_checkpoint_store::begin_new_start).
      checkpoint::store_options so;
      so.dir = cp.dir;
      so.retain = cp.retain;
      so.map_size = cp.max_size;
      if (!cp.remote.empty()) {
        auto remote = checkpoint::open_remote_checkpoints(
          {cp.remote, cp.remote_endpoint, cp.remote_region});
        if (!remote) {
          result.error = "cannot open checkpoint storage " + cp.remote + ": "
                         + remote.error().message;
          return result;
        }
        if (auto e = adopt_remote_checkpoint(**remote, cp, opts.name)) {
          result.error = *e;
          return result;
        }
        ctx->remote = std::move(*remote);
      }
      auto store = checkpoint::lmdb_checkpoint_store::open(so);
      if (!store && cp.fresh) {
        // Damaged beyond opening: nothing in it can be restored, and
        // --fresh asked to discard it.
        std::error_code ec;
        std::filesystem::remove(std::filesystem::path{cp.dir} / "data.mdb", ec);
        std::filesystem::remove(std::filesystem::path{cp.dir} / "lock.mdb", ec);
        log::checkpoint().warn("job '{}': --fresh: discarded the damaged checkpoint storage "
                               "({})", opts.name, store.error().message);
        store = checkpoint::lmdb_checkpoint_store::open(so);
      }
      if (!store) {
        result.error = "cannot open checkpoint storage " + cp.dir + ": "
                       + store.error().message;
        return result;
      }
      if (!cp.fresh && cp.from_savepoint.empty()) {
        // Unverified (the job manager verifies the one it restores), but
        // only complete manifests count.
        auto stored = (*store)->list(false);
        resumable = !stored || std::any_of(stored->begin(), stored->end(),
                                           [](const auto& l) { return l.restorable; });
        if (ctx->remote && stored) {
          if (auto e = upload_newer_local_checkpoint(*ctx->remote, **store, *stored, opts.name)) {
            result.error = *e;
            return result;
          }
        }
      }
      ctx->store = std::move(*store);
    }
    if (control)
      control->attach_context(ctx);
    if (!cp.from_savepoint.empty()) {
      std::error_code ec;
      namespace fs = std::filesystem;
      if (cp.enabled && fs::weakly_canonical(cp.from_savepoint, ec) == fs::weakly_canonical(cp.dir, ec)) {
        result.error = "the savepoint " + cp.from_savepoint
                       + " is the job's checkpoint dir: restore a savepoint from its own directory";
        return result;
      }
      checkpoint::store_options so;
      so.dir = cp.from_savepoint;
      so.read_only = true;
      so.map_size = cp.max_size;
      auto sp = checkpoint::lmdb_checkpoint_store::open(so);
      if (!sp) {
        result.error = "cannot open savepoint " + cp.from_savepoint + ": " + sp.error().message;
        return result;
      }
      ctx->savepoint = std::move(*sp);
      resumable = true;
    }
    if (graph_->options.on_bad_record == bad_record_policy::dead_letter
        && !graph_->options.dead_letter_path.empty())
      // Exactly-once: written through a two-phase commit, so each bad record
      // is in the file once across restores (the job manager restores and
      // commits it). Otherwise a job resuming from a checkpoint keeps
      // earlier bad records (those replayed after the restore point are
      // written again); any other run starts the file over.
      ctx->dead_letters = std::make_unique<runtime::dead_letter_queue>(
        graph_->options.dead_letter_path,
        cp.enabled && cp.mode == checkpointing_mode::exactly_once
          ? runtime::dead_letter_queue::commit_mode::two_phase
          : runtime::dead_letter_queue::commit_mode::direct,
        resumable);
  } catch (const std::exception& e) {
    result.error = e.what();
    return result;
  }
  {
    caf::actor_system_config cfg;
    auto threads = graph_->options.worker_threads;
    if (threads == 0)
      threads = std::max(1u, std::thread::hardware_concurrency());
    cfg.set("scheduler.max-threads", threads);
    caf::actor_system sys{cfg};
    auto jm = runtime::spawn_job_manager(sys, ctx);
    stop_->attach([jm] { caf::anon_send(jm, stop_atom::value); });
    if (control)
      control->attach_cancel([jm] { caf::anon_send(jm, runtime::cancel_job_atom::value); });
    control_->attach(runtime::job_control::hooks{
      [jm](runtime::state_query q) { caf::anon_send(jm, std::move(q)); },
      [jm](runtime::savepoint_request r) { caf::anon_send(jm, std::move(r)); }});
    sys.await_all_actors_done();
    control_->detach();
    if (control)
      control->detach_cancel();
    stop_->detach();
  }
  graph_->end_output->print(std::cout);
  auto totals = ctx->metrics.totals();
  result.records_read = totals.records_read;
  result.records_written = totals.records_written;
  result.bad_records = totals.bad_records;
  result.late_records = totals.late_records;
  result.duration = std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::steady_clock::now() - started);
  result.checkpoints_completed = ctx->result.checkpoints_completed;
  result.checkpoints_aborted = ctx->result.checkpoints_aborted;
  result.checkpoints_failed = ctx->result.checkpoints_failed;
  result.last_checkpoint_id = ctx->result.last_checkpoint_id;
  result.restored_checkpoint_id = ctx->result.restored_checkpoint_id;
  result.checkpoint_ids_after = ctx->result.checkpoint_ids_after;
  result.restarts = ctx->result.restarts;
  result.warnings = ctx->result.warnings;
  result.counts = ctx->metrics.counts();
  // Loss made visible, over every count of this run (a bounded job's end):
  // above max_bad_ratio / max_late_ratio the job fails, above warn_ratio
  // the summary warns.
  const auto& opts = graph_->options;
  auto findings = runtime::check_loss(opts, result.counts, 0);
  for (const auto& f : findings)
    if (!f.fatal)
      result.loss_warnings.push_back(f.message(opts));
  result.stopped = ctx->result.stopped;
  result.stop_checkpoint_id = ctx->result.stop_checkpoint_id;
  if (auto failure = ctx->failure()) {
    result.error = *failure;
  } else if (!findings.empty() && findings.front().fatal) {
    for (const auto& f : findings)
      if (f.fatal)
        result.error += (result.error.empty() ? "" : "; ") + f.message(opts);
  } else {
    result.ok = true;
    if (auto& dlq = ctx->dead_letters) {
      try {
        if (!result.stopped)
          dlq->finish(); // the input ended: every dead letter is committed
        if (const auto& c = graph_->options.checkpoint;
            c.enabled && c.mode == checkpointing_mode::exactly_once)
          result.job_bad_records = dlq->committed_count();
      } catch (const std::exception& e) {
        result.ok = false;
        result.error = e.what();
        return result;
      }
    }
    if (ctx->store && !result.stopped) {
      // Finished its input: a start over with no checkpoint of its own is
      // complete all the same (its sinks committed everything).
      if (auto done = ctx->store->finish_new_start(); !done) {
        result.ok = false;
        result.error = "cannot end the start over in " + opts.checkpoint.dir + ": "
                       + done.error().message;
        return result;
      }
    }
    if (const auto& inj = graph_->options.inject_failure;
        inj && result.restarts == 0 && !result.stopped) {
      // Finished without the failure the job asked for: say so, or a test
      // of recovery would pass without recovering anything.
      std::string w = "job.inject_failure: no failure was injected: subtask 0 of operator '"
                      + inj->operator_name + "' finished before reading "
                      + std::to_string(inj->after_records) + " records";
      log::runtime().warn("job '{}': {}", graph_->options.name, w);
      result.warnings.push_back(std::move(w));
    }
  }
  return result;
}

} // namespace weir
