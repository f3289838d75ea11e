// SPDX-License-Identifier: Apache-2.0
#include "job_manager_actor.hpp"

#include "control_messages.hpp"
#include "state_writer_actor.hpp"
#include "task_actor.hpp"
#include "weir/checkpoint/checkpoint_coordinator.hpp"
#include "weir/checkpoint/checkpoint_failure_manager.hpp"
#include "weir/checkpoint/checkpoint_report.hpp"
#include "weir/core/key_group.hpp"
#include "weir/core/log.hpp"
#include "weir/core/messages.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/runtime/loss_check.hpp"

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/exit_reason.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/system_messages.hpp>
#include <spdlog/logger.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>
#include <utility>

namespace weir::runtime {

std::string format_event_time(event_time ts) {
  if (ts == min_watermark)
    return "-inf";
  if (ts == max_watermark)
    return "+inf";
  return format_iso8601(ts);
}

std::string format_status(const job_context& ctx, const job_totals& now,
                          const job_totals& before, double seconds,
                          const std::string& checkpoint) {
  auto elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now()
                                               - ctx.started)
                   .count();
  auto rate = [&](std::uint64_t a, std::uint64_t b) {
    return seconds > 0 && a >= b ? static_cast<double>(a - b) / seconds : 0.0;
  };
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "[%s] %.1fs | in %.0f rec/s (%llu) | out %.0f rec/s (%llu) | "
                "watermark %s | bad %llu | late %llu | checkpoint %s",
                ctx.graph->options.name.c_str(), elapsed,
                rate(now.records_read, before.records_read),
                static_cast<unsigned long long>(now.records_read),
                rate(now.records_written, before.records_written),
                static_cast<unsigned long long>(now.records_written),
                format_event_time(now.sink_watermark).c_str(),
                static_cast<unsigned long long>(now.bad_records),
                static_cast<unsigned long long>(now.late_records), checkpoint.c_str());
  return buf;
}

namespace {

std::chrono::milliseconds wall_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
    std::chrono::system_clock::now().time_since_epoch());
}

/// How often the job manager prints the status line and checks the loss
/// limits: the status interval, else every second when a limit is set.
std::chrono::milliseconds tick_interval(const job_options& o) {
  if (o.status_interval.count() > 0)
    return o.status_interval;
  if (o.max_bad_ratio || o.max_late_ratio)
    return std::chrono::milliseconds{1000};
  return std::chrono::milliseconds{0};
}

struct job_manager_state {
  std::shared_ptr<job_context> ctx;
  std::vector<caf::actor> subtasks;
  std::vector<bool> is_source;
  /// (vertex, subtask) of each task, for log messages.
  std::vector<std::pair<std::size_t, std::size_t>> task_subtask;
  std::unordered_map<caf::actor_addr, std::uint32_t> task_of;
  std::size_t running = 0;
  job_totals last;
  std::chrono::steady_clock::time_point last_tick;
  bool failed = false;     ///< the job failed for good
  bool restarting = false; ///< waiting for subtasks to stop before a restart
  std::size_t attempt = 0;
  bool stopping = false;        ///< a graceful stop was asked for
  bool sources_stopped = false; ///< ... and the sources were told
  caf::actor writer;
  std::optional<checkpoint::checkpoint_coordinator> coordinator;
  /// Counts failed checkpoints against [checkpoint] tolerable_failures.
  std::optional<checkpoint::checkpoint_failure_manager> failures;
  /// Savepoints waiting for their checkpoint, by checkpoint id.
  std::map<std::uint64_t, savepoint_request> savepoints;
  /// A stop-with-savepoint waiting for the stop's final checkpoint.
  std::optional<savepoint_request> stop_savepoint;
  /// Tasks of this attempt that ended their input, and what each leaves in
  /// every later checkpoint (FLIP-147; `task_final_state`).
  std::map<std::uint32_t, write_snapshot_request> final_states;
  /// Tasks of this attempt whose final state holds a two-phase-commit
  /// sink's final snapshot: each ends once a checkpoint holding it
  /// completes (the job's final checkpoint).
  std::set<std::uint32_t> awaiting_final;
  /// The latest checkpoint id when every task of this attempt had ended
  /// its input (none until then): a checkpoint with a higher id holds every
  /// task's final state.
  std::optional<std::uint64_t> all_ended_at;
  /// Checkpoints whose manifest commit went to the state writer and has
  /// not been answered (any attempt): each may complete even after the job
  /// failed.
  std::set<std::uint64_t> commits_in_doubt;
};

using jm_actor = caf::stateful_actor<job_manager_state>;

std::string checkpoint_summary(const job_manager_state& st) {
  if (!st.coordinator)
    return "off";
  const auto& last = st.coordinator->last_completed();
  if (!last)
    return "none yet";
  char buf[160];
  std::snprintf(buf, sizeof buf, "#%llu (%lld ms, %s, align %lld ms)",
                static_cast<unsigned long long>(last->checkpoint_id),
                static_cast<long long>(last->duration_ms),
                checkpoint::format_bytes(last->size_bytes).c_str(),
                static_cast<long long>(last->alignment_ms));
  return buf;
}

void record_outcome(job_manager_state& st) {
  if (!st.coordinator)
    return;
  auto& r = st.ctx->result;
  r.checkpoints_completed += st.coordinator->completed_count();
  r.checkpoints_aborted += st.coordinator->aborted_count();
  if (st.failures)
    r.checkpoints_failed += st.failures->total();
  if (const auto& last = st.coordinator->last_completed())
    r.last_checkpoint_id = last->checkpoint_id;
}

/// Tells every subtask and the state writer that checkpoints were aborted.
void abort_checkpoints(jm_actor* self,
                       const std::vector<checkpoint::aborted_checkpoint>& aborted) {
  auto& st = self->state;
  for (const auto& a : aborted) {
    st.ctx->journal.checkpoint_failed(a.checkpoint_id, wall_now().count(), a.reason);
    log::checkpoint().debug("job '{}': checkpoint {} aborted: {}", st.ctx->graph->options.name,
                            a.checkpoint_id, a.reason);
    for (auto& t : st.subtasks)
      self->send(t, cancel_checkpoint{a.checkpoint_id});
    if (st.writer)
      self->send(st.writer, discard_ckpt_atom::value, a.checkpoint_id);
    if (auto sp = st.savepoints.find(a.checkpoint_id); sp != st.savepoints.end()) {
      sp->second.reply->set(make_error(errc::runtime_error,
                                       "the savepoint's checkpoint "
                                         + std::to_string(a.checkpoint_id)
                                         + " was aborted: " + a.reason));
      st.savepoints.erase(sp);
    }
  }
}

void stop_subtasks(jm_actor* self);

/// Reads what each subtask restores from the latest completed checkpoint;
/// returns false (with the job failed) if it cannot be read.
bool read_restore_points(jm_actor* self,
                         std::vector<std::vector<std::vector<std::shared_ptr<const operator_restore>>>>& out) {
  auto& st = self->state;
  auto& ctx = *st.ctx;
  const auto& g = *ctx.graph;
  const auto& plan = ctx.plan;
  out.assign(plan.vertices.size(), {});
  // A savepoint (--from-savepoint) is restored until the job's own first
  // checkpoint completes; from then on its checkpoints are.
  const bool from_savepoint = ctx.savepoint && ctx.result.last_checkpoint_id == 0;
  const auto& cp = g.options.checkpoint;
  auto* source = from_savepoint ? ctx.savepoint.get() : ctx.store.get();
  if (!source)
    return true;
  const auto& where = from_savepoint ? cp.from_savepoint : cp.dir;
  // --fresh restores nothing until its first checkpoint completes: in the
  // first attempt, and in a restart while the store still records the
  // start over (begin_new_start below).
  bool fresh_start = false;
  if (!from_savepoint && cp.fresh) {
    if (st.attempt == 0) {
      fresh_start = true;
    } else {
      auto pending = ctx.store->new_start();
      if (!pending) {
        ctx.fail("cannot read checkpoints in " + where + ": " + pending.error().message);
        return false;
      }
      fresh_start = *pending && (*pending)->kind == checkpoint::new_start_kind::fresh;
    }
  }
  auto latest = fresh_start ? expected<checkpoint::latest_checkpoint>{
                                checkpoint::latest_checkpoint{}}
                            : source->read_latest(cp.allow_rollback);
  if (!latest) {
    if (from_savepoint)
      ctx.fail("the savepoint " + where + " cannot be restored: "
               + latest.error().message.substr(0, latest.error().message.find(". "))
               + " (nothing in " + cp.dir + " was changed)");
    else
      ctx.fail("cannot restore from the checkpoints in " + where + ": "
               + latest.error().message);
    return false;
  }
  if (from_savepoint && !latest->manifest) {
    ctx.fail("the savepoint " + where + " holds no complete checkpoint");
    return false;
  }
  for (const auto& w : latest->warnings) {
    log::checkpoint().warn("job '{}': {}", g.options.name, w);
    ctx.result.warnings.push_back(w);
  }
  if (auto highest = ctx.store ? ctx.store->highest_id() : expected<std::uint64_t>{0};
      highest && st.coordinator)
    st.coordinator->resume_after(*highest);
  // The run before a start over stays restorable (with --allow-rollback)
  // until the first checkpoint after it completes; recorded once the
  // restore has been read.
  auto record_start_over = [&] {
    if (st.attempt != 0 || !ctx.store || !(fresh_start || from_savepoint))
      return true;
    auto recorded = ctx.store->begin_new_start(
      fresh_start ? checkpoint::new_start_kind::fresh : checkpoint::new_start_kind::savepoint,
      cp.from_savepoint);
    if (!recorded) {
      ctx.fail("cannot record the start over in " + cp.dir + ": " + recorded.error().message);
      return false;
    }
    if (*recorded)
      log::checkpoint().info("job '{}': starting over ({}); the checkpoints in {} are kept "
                             "until the first checkpoint of this run completes",
                             g.options.name, fresh_start ? "--fresh" : "--from-savepoint",
                             cp.dir);
    return true;
  };
  if (!latest->manifest) {
    ctx.result.restored_checkpoint_id = 0;
    return record_start_over();
  }
  const auto& m = *latest->manifest;
  if (from_savepoint) {
    // State is matched by operator name: an operator the savepoint holds
    // and the job no longer has cannot be restored (Flink's
    // --allowNonRestoredState skips it).
    std::set<std::string> missing;
    for (const auto& h : m.handles)
      if (!g.has_node_named(h.operator_uid))
        missing.insert(h.operator_uid);
    if (!missing.empty()) {
      std::string names;
      for (const auto& n : missing)
        names += (names.empty() ? "'" : ", '") + n + "'";
      if (!g.options.checkpoint.allow_non_restored_state) {
        ctx.fail("the savepoint " + where + " holds state of operator(s) " + names
                 + " that the job does not have (renamed or removed); run with "
                   "--allow-non-restored-state to skip that state");
        return false;
      }
      std::string w = "savepoint " + where + ": state of operator(s) " + names
                      + " not restored (--allow-non-restored-state)";
      log::checkpoint().warn("job '{}': {}", g.options.name, w);
      ctx.result.warnings.push_back(std::move(w));
    }
    if (st.coordinator)
      st.coordinator->resume_after(m.checkpoint_id);
    log::checkpoint().info("job '{}': restoring from savepoint {} (checkpoint {})",
                           g.options.name, where, m.checkpoint_id);
  }
  ctx.result.restored_checkpoint_id = m.checkpoint_id;
  // Info: job_options::quiet (-q) raises the level to warn (execute.cpp).
  log::checkpoint().info("job '{}': restoring from checkpoint {}", g.options.name,
                         m.checkpoint_id);
  for (std::size_t v = 0; v < plan.vertices.size(); ++v) {
    const auto& vertex = plan.vertices[v];
    out[v].resize(vertex.parallelism);
    for (std::size_t s = 0; s < vertex.parallelism; ++s) {
      for (auto node_id : vertex.nodes) {
        auto r = source->read_restore(m, g.nodes[node_id].name,
                                         static_cast<std::uint32_t>(s),
                                         static_cast<std::uint32_t>(vertex.parallelism),
                                         g.options.max_parallelism);
        if (!r) {
          ctx.fail("cannot restore operator '" + g.nodes[node_id].name + "' subtask "
                   + std::to_string(s) + " from checkpoint "
                   + std::to_string(m.checkpoint_id) + ": " + r.error().message);
          return false;
        }
        // A source's operator state is one subtask's position, which says
        // nothing of the others' progress: a source that ran with another
        // parallelism cannot resume exactly (file sources always run as one).
        const auto& node = g.nodes[node_id];
        if (node.is_source && r->previous_parallelism != 0
            && r->previous_parallelism != vertex.parallelism) {
          ctx.fail("checkpoint " + std::to_string(m.checkpoint_id) + " holds source '"
                   + node.name + "' at parallelism " + std::to_string(r->previous_parallelism)
                   + "; a source resumes only at the parallelism it ran with (run with "
                   + "--parallelism " + std::to_string(r->previous_parallelism)
                   + " or set the source's parallelism, or start over with --fresh)");
          return false;
        }
        out[v][s].push_back(std::make_shared<const operator_restore>(std::move(*r)));
      }
    }
  }
  return record_start_over();
}

/// Spawns every subtask, downstream first (a subtask needs the handles of
/// its targets), restoring from the latest completed checkpoint if any.
/// Runs `then` once every message already in the state writer's mailbox
/// (which is in order) has been handled, e.g. a manifest commit sent before
/// now; at once when there is no writer.
template <class F>
void after_writer_drained(jm_actor* self, F then) {
  if (!self->state.writer) {
    then();
    return;
  }
  self->request(self->state.writer, caf::infinite, drain_atom::value)
    .then([then](drain_atom) { then(); }, [then](caf::error&) { then(); });
}

void deploy(jm_actor* self) {
  auto& st = self->state;
  const auto& g = *st.ctx->graph;
  const auto& plan = st.ctx->plan;
  if (st.ctx->store) {
    checkpoint::coordinator_options co;
    co.timeout = g.options.checkpoint.timeout;
    co.min_pause = g.options.checkpoint.min_pause;
    std::uint32_t total = 0;
    for (const auto& v : plan.vertices)
      total += static_cast<std::uint32_t>(v.parallelism);
    st.coordinator.emplace(co, total);
    st.failures.emplace(g.options.checkpoint.tolerable_failures);
  }
  std::vector<std::vector<std::vector<std::shared_ptr<const operator_restore>>>> restores;
  if (!read_restore_points(self, restores)) {
    // A refusal to restore: said where `weir serve` shows a job's failure
    // too (its log and GET /jobs/{id}/exceptions).
    if (auto why = st.ctx->failure()) {
      log::checkpoint().error("job '{}' failed: {}", g.options.name, *why);
      st.ctx->journal.exception(wall_now().count(), *why, false);
    }
    st.failed = true;
    return;
  }
  if (auto& dlq = st.ctx->dead_letters) {
    // Exactly-once dead letters: back to what the restored checkpoint
    // committed (a no-op for directly written ones).
    try {
      dlq->restore(st.ctx->result.restored_checkpoint_id, st.attempt);
    } catch (const std::exception& e) {
      st.ctx->fail(e.what());
      st.failed = true;
      return;
    }
  }
  st.subtasks.clear();
  st.final_states.clear();
  st.awaiting_final.clear();
  st.all_ended_at.reset();
  st.is_source.clear();
  st.task_subtask.clear();
  st.task_of.clear();
  std::vector<std::vector<caf::actor>> actors(plan.vertices.size());
  for (auto it = plan.topo_order.rbegin(); it != plan.topo_order.rend(); ++it) {
    auto v = *it;
    const auto& vertex = plan.vertices[v];
    for (std::size_t s = 0; s < vertex.parallelism; ++s) {
      subtask_spec spec;
      spec.ctx = st.ctx;
      spec.vertex = v;
      spec.subtask = s;
      spec.task_index = static_cast<std::uint32_t>(st.subtasks.size());
      spec.job_manager = caf::actor_cast<caf::actor>(self);
      spec.state_writer = st.writer;
      spec.attempt = st.attempt;
      if (!restores[v].empty())
        spec.restores = restores[v][s];
      auto outputs = plan_subtask_outputs(g, plan, v, s);
      spec.writers = std::move(outputs.writers);
      for (const auto& t : outputs.channels)
        spec.out_channels.push_back(out_channel_spec{actors[t.vertex][t.subtask], t.channel});
      log::runtime().debug("job '{}': operator '{}' subtask {}/{}: deploying (attempt {})",
                           g.options.name, vertex.name, s, vertex.parallelism,
                           st.attempt + 1);
      auto a = spawn_subtask(self->system(), std::move(spec));
      self->monitor(a);
      st.task_of[a.address()] = static_cast<std::uint32_t>(st.subtasks.size());
      st.subtasks.push_back(a);
      st.is_source.push_back(vertex.is_source);
      st.task_subtask.emplace_back(v, s);
      actors[v].push_back(a);
      ++st.running;
    }
  }
}

/// Stops the job for a reason of the job manager's own (too many failed
/// checkpoints), as a subtask failure would: every subtask is stopped, then
/// the job restarts from its latest completed checkpoint (job.restart) or
/// ends with `why` as its error.
void fail_job(jm_actor* self, std::string why) {
  auto& st = self->state;
  if (st.failed || st.restarting)
    return;
  const auto& ro = st.ctx->graph->options.restart;
  if (st.running > 0 && st.ctx->store && st.attempt < ro.attempts) {
    log::runtime().warn("job '{}': {}; restarting from the latest checkpoint (attempt {} of {})",
                        st.ctx->graph->options.name, why, st.attempt + 1, ro.attempts);
    st.restarting = true;
    st.ctx->journal.exception(wall_now().count(), why, true);
    st.ctx->journal.set_state(job_state::restarting);
  } else {
    st.ctx->journal.exception(wall_now().count(), why, false);
    st.failed = true;
    st.ctx->fail(std::move(why));
  }
  stop_subtasks(self);
}

/// The newest checkpoint known complete, in this attempt or an earlier one
/// (or restored from); 0 if none.
std::uint64_t last_completed_id(const job_manager_state& st) {
  std::uint64_t id = std::max(st.ctx->result.last_checkpoint_id,
                              st.ctx->result.restored_checkpoint_id);
  if (st.coordinator && st.coordinator->last_completed())
    id = std::max(id, st.coordinator->last_completed()->checkpoint_id);
  return id;
}

/// Stops every subtask for a failure, a cancel or a restart. Each is told
/// first that no checkpoint newer than the newest one completed or whose
/// manifest commit is with the state writer completes in this run
/// (`abort_transactions`): its two-phase-commit sinks roll back the rest, so
/// a failed run leaves no transaction open. The notifications sent before
/// reach a subtask first (messages between two actors keep their order).
/// Acknowledgements are ignored from now on (`on_ack`), so no later commit
/// is sent.
void stop_subtasks(jm_actor* self) {
  auto& st = self->state;
  auto keep = last_completed_id(st);
  if (!st.commits_in_doubt.empty())
    keep = std::max(keep, *st.commits_in_doubt.rbegin());
  for (auto& a : st.subtasks) {
    self->send(a, abort_transactions{keep});
    self->send_exit(a, caf::exit_reason::user_shutdown);
  }
}

/// Checkpoint `id` failed (its state or manifest could not be stored, or it
/// timed out): says so, and fails the job once more checkpoints in a row
/// have failed than [checkpoint] tolerable_failures allows. The completed
/// checkpoints in storage are untouched (a failed LMDB transaction changes
/// nothing), so the job or a rerun resumes from the last of them.
void checkpoint_failed(jm_actor* self, std::uint64_t id, const std::string& reason) {
  auto& st = self->state;
  if (!st.failures || st.restarting || st.failed)
    return;
  const auto& name = st.ctx->graph->options.name;
  const auto counted = st.failures->total();
  auto fatal = st.failures->failed(id, reason);
  if (st.failures->total() == counted)
    return; // this checkpoint was counted already
  const auto last = last_completed_id(st);
  const std::string intact = last > 0 ? "the last completed checkpoint, #" + std::to_string(last)
                                          + ", is intact"
                                      : "no checkpoint has completed yet";
  if (!fatal) {
    log::checkpoint().warn("job '{}': checkpoint {} failed: {}; tolerated ({} of {} in a row, "
                           "[checkpoint] tolerable_failures); {}",
                           name, id, reason, st.failures->consecutive(),
                           st.failures->tolerable(), intact);
    return;
  }
  log::checkpoint().error("job '{}': {}; {}", name, *fatal, intact);
  fail_job(self, *fatal + "; " + intact
                   + (last > 0 ? " (a rerun on the same checkpoint dir resumes from it)" : ""));
}

void on_ack(jm_actor* self, write_snapshot_result& r);
void trigger_final_checkpoint(jm_actor* self);

/// Acknowledges checkpoint `id` for a task that has ended, with the final
/// state it left (`task_final_state`): stored under `id` by the state writer
/// like any task's snapshot, so every checkpoint stays self-contained.
void acknowledge_with_final_state(jm_actor* self, std::uint64_t id, std::uint32_t task) {
  auto& st = self->state;
  auto it = st.final_states.find(task);
  if (it == st.final_states.end())
    return;
  auto req = it->second;
  req.checkpoint_id = id;
  if (req.operators.empty()) {
    write_snapshot_result r;
    r.checkpoint_id = id;
    r.task = task;
    r.ok = true;
    on_ack(self, r);
    return;
  }
  auto attempt = st.attempt;
  self->request(st.writer, caf::infinite, write_state_atom::value, std::move(req))
    .then(
      [self, attempt](write_snapshot_result& r) {
        if (self->state.attempt == attempt)
          on_ack(self, r);
      },
      [self, id, task, attempt](caf::error& err) {
        if (self->state.attempt != attempt)
          return;
        write_snapshot_result r;
        r.checkpoint_id = id;
        r.task = task;
        r.error = "state writer: " + to_string(err);
        on_ack(self, r);
      });
}

/// Checkpoint `id` was just triggered: the tasks that have ended take part
/// through their final state (Flink's checkpoints after tasks finished,
/// FLIP-147).
void acknowledge_finished_tasks(jm_actor* self, std::uint64_t id) {
  std::vector<std::uint32_t> tasks;
  for (const auto& [task, req] : self->state.final_states)
    tasks.push_back(task);
  for (auto task : tasks)
    acknowledge_with_final_state(self, id, task);
}

/// A task ended its input and left its final state: later checkpoints go on
/// without it, and those in flight that waited for it get that state.
void on_final_state(jm_actor* self, task_final_state& f) {
  auto& st = self->state;
  if (!st.coordinator || st.restarting || st.failed)
    return;
  auto task = f.request.task;
  if (task >= st.subtasks.size() || self->current_sender() != st.subtasks[task].address())
    return; // a subtask of an earlier attempt
  // Beyond a source's positions, a final state holds only what
  // two-phase-commit sinks pre-committed after their input ended.
  if (f.request.operators.size() > (st.is_source[task] ? 1u : 0u))
    st.awaiting_final.insert(task);
  st.final_states[task] = std::move(f.request);
  for (auto id : st.coordinator->task_finished_with_state(task))
    acknowledge_with_final_state(self, id, task);
  trigger_final_checkpoint(self);
}

/// Every task has ended its input and some wait for the job's final
/// checkpoint (their two-phase-commit sinks commit their last transaction
/// when it completes; Flink's final checkpoint, FLIP-147): triggers it now
/// rather than at the next interval, unless one is in flight or a
/// checkpoint triggered after every task had ended completed already. One
/// that is aborted is followed by the periodic trigger.
void trigger_final_checkpoint(jm_actor* self) {
  auto& st = self->state;
  if (!st.coordinator || st.restarting || st.failed
      || st.final_states.size() < st.subtasks.size())
    return;
  if (!st.all_ended_at)
    st.all_ended_at = st.coordinator->latest_id();
  if (st.awaiting_final.empty() || st.coordinator->in_flight() > 0
      || last_completed_id(st) > *st.all_ended_at)
    return;
  auto now = wall_now();
  auto r = st.coordinator->trigger(now, true);
  if (!r.triggered())
    return;
  log::checkpoint().debug("job '{}': final checkpoint {} triggered: every input has ended",
                          st.ctx->graph->options.name, r.checkpoint_id);
  st.ctx->journal.checkpoint_triggered(r.checkpoint_id, now.count());
  acknowledge_finished_tasks(self, r.checkpoint_id);
}

void trigger_checkpoint_now(jm_actor* self) {
  auto& st = self->state;
  if (!st.coordinator || st.restarting || st.failed)
    return;
  auto now = wall_now();
  auto expired = st.coordinator->expire(now);
  abort_checkpoints(self, expired);
  for (const auto& a : expired)
    checkpoint_failed(self, a.checkpoint_id, a.reason);
  if (st.restarting || st.failed)
    return;
  if (st.stopping && st.final_states.size() < st.subtasks.size())
    return; // the stop triggers the last one (once every task has ended,
            // checkpoints go on for those waiting for a completed one)
  auto r = st.coordinator->trigger(now);
  if (!r.triggered())
    return;
  log::checkpoint().debug("job '{}': checkpoint {} triggered", st.ctx->graph->options.name,
                          r.checkpoint_id);
  st.ctx->journal.checkpoint_triggered(r.checkpoint_id, now.count());
  for (std::size_t t = 0; t < st.subtasks.size(); ++t)
    if (st.is_source[t] && !st.final_states.count(static_cast<std::uint32_t>(t)))
      self->send(st.subtasks[t], trigger_checkpoint{r.checkpoint_id, now.count()});
  acknowledge_finished_tasks(self, r.checkpoint_id);
}

/// A graceful stop (Flink's stop-with-savepoint without drain): tells every
/// source to stop reading, with checkpoints after taking a final checkpoint
/// that its subtasks wait for before they finish (`subtask::on_stop`). While
/// another checkpoint is in flight it retries shortly (at most one in
/// flight); when no checkpoint can be taken any more (a source has finished
/// its input) the job stops without one, its last completed checkpoint
/// staying the one to resume from.
void stop_sources(jm_actor* self) {
  auto& st = self->state;
  if (st.sources_stopped || st.restarting || st.failed)
    return;
  const auto& name = st.ctx->graph->options.name;
  auto now = wall_now();
  std::uint64_t id = 0;
  if (st.coordinator) {
    abort_checkpoints(self, st.coordinator->expire(now));
    auto r = st.coordinator->trigger(now, true);
    if (r.refusal == checkpoint::trigger_refusal::too_many) {
      self->delayed_send(self, std::chrono::milliseconds{10}, stop_atom::value);
      return;
    }
    if (r.triggered()) {
      id = r.checkpoint_id;
      st.ctx->journal.checkpoint_triggered(id, now.count());
    } else {
      std::string w = "stopping without a final checkpoint: " + r.reason;
      log::checkpoint().warn("job '{}': {}", name, w);
      st.ctx->result.warnings.push_back(std::move(w));
    }
  }
  st.sources_stopped = true;
  st.ctx->result.stop_checkpoint_id = id;
  if (st.stop_savepoint) {
    if (id != 0)
      st.savepoints.emplace(id, std::move(*st.stop_savepoint));
    else
      st.stop_savepoint->reply->set(make_error(
        errc::runtime_error, "the job stopped without a final checkpoint to keep as savepoint"));
    st.stop_savepoint.reset();
  }
  if (id != 0)
    log::runtime().info("job '{}': stopping with final checkpoint {}", name, id);
  else
    log::runtime().info("job '{}': stopping", name);
  for (std::size_t t = 0; t < st.subtasks.size(); ++t)
    if (st.is_source[t] && !st.final_states.count(static_cast<std::uint32_t>(t)))
      self->send(st.subtasks[t], stop_source{id, now.count()});
  if (id != 0)
    acknowledge_finished_tasks(self, id);
}

/// Copies checkpoint `m` (whose commit was just sent to the state writer,
/// so nothing can come between) into the savepoint directory asked for, and
/// answers the request. A stop-with-savepoint's job stops on its own.
void write_savepoint(jm_actor* self, checkpoint::snapshot_manifest m) {
  auto& st = self->state;
  auto it = st.savepoints.find(m.checkpoint_id);
  if (it == st.savepoints.end())
    return;
  auto req = std::move(it->second);
  st.savepoints.erase(it);
  auto id = m.checkpoint_id;
  auto path = req.path;
  auto reply = req.reply;
  const auto& name = st.ctx->graph->options.name;
  self->request(st.writer, caf::infinite, savepoint_atom::value, std::move(m), path)
    .then(
      [reply, path, id, name](savepoint_write_result& r) {
        if (!r.ok) {
          log::checkpoint().warn("job '{}': savepoint of checkpoint {} at {} failed: {}", name,
                                 id, path, r.error);
          reply->set(make_error(errc::io_error, r.error));
          return;
        }
        log::checkpoint().info("job '{}': savepoint of checkpoint {} written to {}", name, id,
                               path);
        reply->set(savepoint_result{path, id, r.bytes});
      },
      [reply](caf::error& err) {
        reply->set(make_error(errc::io_error, "state writer: " + to_string(err)));
      });
}

/// Checks a savepoint path before anything is triggered: not empty, not the
/// checkpoint dir, and not a directory holding anything.
std::optional<error> check_savepoint_path(const job_manager_state& st, const std::string& path) {
  namespace fs = std::filesystem;
  if (!st.coordinator || !st.writer)
    return make_error(errc::invalid_argument,
                      "a savepoint needs checkpoints: add a [checkpoint] table with a dir");
  if (path.empty())
    return make_error(errc::invalid_argument, "a savepoint needs a path");
  std::error_code ec;
  auto a = fs::weakly_canonical(path, ec);
  auto b = fs::weakly_canonical(st.ctx->graph->options.checkpoint.dir, ec);
  if (a == b)
    return make_error(errc::invalid_argument, "the savepoint path " + path
                                                + " is the job's checkpoint dir");
  if (fs::exists(path, ec) && (!fs::is_directory(path, ec) || !fs::is_empty(path, ec)))
    return make_error(errc::invalid_argument,
                      "the savepoint path " + path + " exists and is not an empty directory");
  return std::nullopt;
}

/// A savepoint asked for by the host (`job::trigger_savepoint`): triggers a
/// checkpoint at once (retrying shortly while another is in flight) and
/// remembers the request until it completes or aborts.
void trigger_savepoint(jm_actor* self, savepoint_request& r) {
  auto& st = self->state;
  if (auto e = check_savepoint_path(st, r.path)) {
    r.reply->set(*e);
    return;
  }
  if (st.restarting || st.failed || st.stopping) {
    r.reply->set(make_error(errc::runtime_error, "the job is restarting or stopping"));
    return;
  }
  if (r.stop) {
    // The stop's final checkpoint is the savepoint (Flink's
    // stop-with-savepoint): the sinks commit exactly what it holds.
    st.stop_savepoint = std::move(r);
    st.stopping = true;
    st.ctx->result.stopped = true;
    stop_sources(self);
    return;
  }
  auto now = wall_now();
  abort_checkpoints(self, st.coordinator->expire(now));
  auto t = st.coordinator->trigger(now, true);
  if (t.refusal == checkpoint::trigger_refusal::too_many) {
    self->delayed_send(self, std::chrono::milliseconds{10}, std::move(r));
    return;
  }
  if (!t.triggered()) {
    r.reply->set(make_error(errc::runtime_error, "no savepoint can be taken: " + t.reason));
    return;
  }
  log::checkpoint().info("job '{}': savepoint to {}: checkpoint {} triggered",
                         st.ctx->graph->options.name, r.path, t.checkpoint_id);
  st.savepoints.emplace(t.checkpoint_id, std::move(r));
  for (std::size_t i = 0; i < st.subtasks.size(); ++i)
    if (st.is_source[i] && !st.final_states.count(static_cast<std::uint32_t>(i)))
      self->send(st.subtasks[i], trigger_checkpoint{t.checkpoint_id, now.count()});
  acknowledge_finished_tasks(self, t.checkpoint_id);
}

/// Parses `text` as a value of type `t` into `col`; false if it is not one.
bool append_key_text(column& col, type_id t, const std::string& text) {
  auto whole = [&](auto& v) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    return ec == std::errc{} && p == text.data() + text.size();
  };
  switch (t) {
    case type_id::int64:
    case type_id::timestamp: {
      std::int64_t v = 0;
      if (!whole(v))
        return false;
      col.append_int(v);
      return true;
    }
    case type_id::float64: {
      char* end = nullptr;
      double v = std::strtod(text.c_str(), &end);
      if (text.empty() || end != text.c_str() + text.size())
        return false;
      col.append_float(v);
      return true;
    }
    case type_id::boolean:
      if (text != "true" && text != "false")
        return false;
      col.append_bool(text == "true");
      return true;
    case type_id::string:
      col.append_string(text);
      return true;
    case type_id::null_type:
      return false;
  }
  return false;
}

/// A host's state query: finds the operator's chain and member, encodes the
/// key with the key fields' types, and sends the question to the subtask
/// owning the key group (`operator_index_for_key_group`).
void route_state_query(jm_actor* self, state_query& q) {
  auto& st = self->state;
  const auto& g = *st.ctx->graph;
  const auto& plan = st.ctx->plan;
  std::optional<std::pair<std::size_t, std::size_t>> at; // (vertex, member)
  for (std::size_t v = 0; v < plan.vertices.size() && !at; ++v)
    for (std::size_t k = 0; k < plan.vertices[v].nodes.size(); ++k)
      if (g.nodes[plan.vertices[v].nodes[k]].name == q.operator_name)
        at.emplace(v, k);
  if (!at) {
    q.reply->set(make_error(errc::not_found, "the job has no operator '" + q.operator_name + "'"));
    return;
  }
  const auto& vertex = plan.vertices[at->first];
  const stream_edge* keyed = nullptr;
  for (const auto& e : g.edges)
    if (e.target == vertex.nodes[0] && e.mode == partitioning::hash) {
      keyed = &e;
      break;
    }
  if (!keyed) {
    q.reply->set(make_error(errc::invalid_argument,
                            "operator '" + q.operator_name + "' is not keyed (no key_by before it)"));
    return;
  }
  const auto& schema = *g.nodes[keyed->source].outputs[keyed->port].schema;
  if (q.key.size() != keyed->key_fields.size()) {
    std::string names;
    for (auto i : keyed->key_fields)
      names += (names.empty() ? "" : ", ") + schema.at(i).name;
    q.reply->set(make_error(errc::invalid_argument,
                            "operator '" + q.operator_name + "' is keyed by " + names + ": "
                              + std::to_string(keyed->key_fields.size()) + " key value(s), got "
                              + std::to_string(q.key.size())));
    return;
  }
  std::vector<field> fields;
  for (auto i : keyed->key_fields)
    fields.push_back(schema.at(i));
  batch_builder b{std::make_shared<const weir::schema>(fields)};
  for (std::size_t i = 0; i < fields.size(); ++i)
    if (!append_key_text(b.col(i), fields[i].type, q.key[i])) {
      q.reply->set(make_error(errc::invalid_argument,
                              "key field '" + fields[i].name + "' is "
                                + std::string{to_string(fields[i].type)} + ", got '" + q.key[i]
                                + "'"));
      return;
    }
  b.commit_row();
  auto one = b.finish();
  std::vector<std::size_t> all(fields.size());
  for (std::size_t i = 0; i < all.size(); ++i)
    all[i] = i;
  subtask_state_query sq;
  encode_key(*one, all, 0, sq.encoded_key);
  auto group = assign_key_group(sq.encoded_key, g.options.max_parallelism);
  auto sub = operator_index_for_key_group(group, g.options.max_parallelism, vertex.parallelism);
  std::optional<std::size_t> task;
  for (std::size_t t = 0; t < st.task_subtask.size(); ++t)
    if (st.task_subtask[t] == std::make_pair(at->first, sub) && st.task_of.count(st.subtasks[t].address()))
      task = t;
  if (!task) {
    q.reply->set(make_error(errc::runtime_error, "operator '" + q.operator_name + "' subtask "
                                                   + std::to_string(sub)
                                                   + " is not running (finished or restarting)"));
    return;
  }
  sq.member = at->second;
  sq.result.operator_name = q.operator_name;
  sq.result.key = std::move(q.key);
  sq.result.subtask = sub;
  sq.result.parallelism = vertex.parallelism;
  sq.result.key_group = group;
  sq.result.checkpoint_id = last_completed_id(st);
  sq.reply = std::move(q.reply);
  self->send(st.subtasks[*task], std::move(sq));
}

void on_ack(jm_actor* self, write_snapshot_result& r) {
  auto& st = self->state;
  // A failed job's subtasks were told which checkpoints may still complete
  // (stop_subtasks): none after them may.
  if (!st.coordinator || st.restarting || st.failed)
    return;
  if (!r.ok) {
    // The subtask's state could not be stored: the checkpoint is declined.
    std::string who = "task " + std::to_string(r.task);
    if (r.task < st.task_subtask.size()) {
      auto [v, s] = st.task_subtask[r.task];
      const auto& vertex = st.ctx->plan.vertices[v];
      who = "operator '" + vertex.name + "' subtask " + std::to_string(s) + "/"
            + std::to_string(vertex.parallelism);
    }
    auto reason = who + " could not store its state: " + r.error;
    if (auto a = st.coordinator->decline(r.checkpoint_id, r.task, reason))
      abort_checkpoints(self, {*a});
    checkpoint_failed(self, r.checkpoint_id, reason);
    return;
  }
  if (r.task < st.task_subtask.size()) {
    // Each chain member's stored bytes, for its subtask's state size.
    auto [v, s] = st.task_subtask[r.task];
    for (auto node_id : st.ctx->plan.vertices[v].nodes) {
      std::uint64_t bytes = 0;
      for (const auto& h : r.ack.operators)
        if (h.operator_uid == st.ctx->graph->nodes[node_id].name)
          bytes += h.size_bytes();
      st.ctx->metrics.at(node_id, s).state_bytes.store(bytes, std::memory_order_relaxed);
    }
  }
  auto res = st.coordinator->acknowledge(r.checkpoint_id, r.task, std::move(r.ack), wall_now());
  if (res.status != checkpoint::ack_status::all_acked || !res.manifest)
    return;
  auto id = r.checkpoint_id;
  auto attempt = st.attempt;
  std::optional<checkpoint::snapshot_manifest> for_savepoint;
  if (st.savepoints.count(id))
    for_savepoint = *res.manifest;
  st.commits_in_doubt.insert(id);
  self->request(st.writer, caf::infinite, commit_ckpt_atom::value, std::move(*res.manifest))
    .then(
      [self, id, attempt](commit_manifest_result& c) {
        auto& s = self->state;
        s.commits_in_doubt.erase(id);
        if (!s.coordinator || s.attempt != attempt)
          return;
        if (!c.ok) {
          if (auto a = s.coordinator->manifest_failed(id, c.error))
            abort_checkpoints(self, {*a});
          checkpoint_failed(self, id, c.error);
          return;
        }
        if (auto done = s.coordinator->manifest_committed(id, wall_now())) {
          if (s.failures)
            s.failures->completed(id);
          s.ctx->journal.checkpoint_completed(id, done->stats.duration_ms,
                                              done->stats.size_bytes, done->stats.alignment_ms);
          log::checkpoint().debug("job '{}': checkpoint {} completed",
                                  s.ctx->graph->options.name, id);
          abort_checkpoints(self, done->subsumed);
          if (auto& dlq = s.ctx->dead_letters) {
            try {
              dlq->commit(id);
            } catch (const std::exception& e) {
              // The checkpoint stays complete; the next restore from it
              // completes this commit.
              log::runtime().error("job '{}': checkpoint {}: {}",
                                   s.ctx->graph->options.name, id, e.what());
            }
          }
          for (auto& t : s.subtasks)
            self->send(t, notify_checkpoint_complete{id});
          trigger_final_checkpoint(self);
        }
      },
      [self, id, attempt](caf::error& err) {
        // No answer: the writer may have committed it before it stopped,
        // so it stays in doubt.
        auto& s = self->state;
        if (!s.coordinator || s.attempt != attempt)
          return;
        auto why = "state writer: " + to_string(err);
        if (auto a = s.coordinator->manifest_failed(id, why))
          abort_checkpoints(self, {*a});
        checkpoint_failed(self, id, why);
      });
  if (for_savepoint)
    write_savepoint(self, std::move(*for_savepoint));
}

caf::behavior job_manager(jm_actor* self, std::shared_ptr<job_context> ctx) {
  auto& st0 = self->state;
  st0.ctx = std::move(ctx);
  st0.last_tick = std::chrono::steady_clock::now();
  const auto& opts = st0.ctx->graph->options;
  if (st0.ctx->store) {
    st0.writer = spawn_state_writer(self->system(), st0.ctx->store, opts.name);
    self->monitor(st0.writer);
  }
  self->set_down_handler([self](caf::down_msg& dm) {
    auto& st = self->state;
    if (dm.source == st.writer.address()) {
      if (st.running > 0 || !dm.reason) {
        st.ctx->fail("the state writer stopped: " + self->system().render(dm.reason));
        st.failed = true;
        stop_subtasks(self);
      }
      if (st.running == 0)
        self->quit();
      return;
    }
    auto it = st.task_of.find(dm.source);
    if (it == st.task_of.end())
      return; // a subtask of an earlier attempt
    auto task = it->second;
    st.task_of.erase(it);
    st.awaiting_final.erase(task);
    --st.running;
    if (!dm.reason) {
      if (st.coordinator && !st.restarting)
        abort_checkpoints(self, st.coordinator->task_finished(task));
    } else if (!st.failed && !st.restarting) {
      const auto& ro = st.ctx->graph->options.restart;
      // A job being stopped does not restart: it fails.
      if (st.ctx->store && st.attempt < ro.attempts && !st.stopping
          && !st.ctx->unrecoverable()) {
        auto why = st.ctx->failure().value_or(self->system().render(dm.reason));
        log::runtime().warn("job '{}': {}; restarting from the latest checkpoint (attempt {} of {})",
                            st.ctx->graph->options.name, why, st.attempt + 1, ro.attempts);
        st.restarting = true;
        st.ctx->journal.exception(wall_now().count(), why, true);
        st.ctx->journal.set_state(job_state::restarting);
      } else {
        st.failed = true;
        if (!st.ctx->failure())
          st.ctx->fail("a subtask stopped: " + self->system().render(dm.reason));
        st.ctx->journal.exception(wall_now().count(), *st.ctx->failure(), false);
      }
      stop_subtasks(self);
    }
    if (st.running > 0)
      return;
    if (st.restarting) {
      record_outcome(st);
      self->delayed_send(self, st.ctx->graph->options.restart.delay, redeploy_atom::value);
      return;
    }
    auto finish = [self] {
      auto& s = self->state;
      record_outcome(s);
      if (s.writer)
        self->send_exit(s.writer, caf::exit_reason::user_shutdown);
      self->quit();
    };
    // Let a manifest commit still in the writer's mailbox land (and its
    // reply reach the coordinator) before the summary counts checkpoints.
    after_writer_drained(self, finish);
  });
  deploy(self);
  st0.ctx->journal.set_state(job_state::running);
  if (st0.failed) {
    if (st0.writer)
      self->send_exit(st0.writer, caf::exit_reason::user_shutdown);
    self->quit();
    return {};
  }
  if (tick_interval(opts).count() > 0)
    self->delayed_send(self, tick_interval(opts), tick_atom::value);
  if (st0.ctx->store)
    self->delayed_send(self, opts.checkpoint.interval, checkpoint_atom::value);
  return {
    [self](tick_atom) {
      auto& st = self->state;
      const auto& o = st.ctx->graph->options;
      auto now = std::chrono::steady_clock::now();
      // Loss made visible: sources and operators above warn_ratio are named
      // on the status line; above max_bad_ratio / max_late_ratio the job
      // fails (once they have seen min_records_for_ratio records).
      auto findings = check_loss(o, st.ctx->metrics.counts(), min_records_for_ratio);
      if (o.status_interval.count() > 0) {
        auto totals = st.ctx->metrics.totals();
        auto secs = std::chrono::duration<double>(now - st.last_tick).count();
        auto line = format_status(*st.ctx, totals, st.last, secs, checkpoint_summary(st));
        std::string warn;
        for (const auto& f : findings)
          warn += (warn.empty() ? "" : ", ") + f.brief();
        if (!warn.empty())
          line += " | WARNING " + warn;
        // The status line is the CLI's user interface, not a log message: its
        // form stays fixed (scripts read it: bench/checkpoint/run; a warning
        // is appended at the end) and no log level hides it
        // (status_interval = "0s" or -q does).
        std::fprintf(stderr, "%s\n", line.c_str());
        st.last = totals;
        st.last_tick = now;
      }
      if (!findings.empty() && findings.front().fatal && !st.failed && !st.restarting
          && st.running > 0) {
        st.ctx->fail(findings.front().message(o));
        st.ctx->journal.exception(wall_now().count(), findings.front().message(o), false);
        st.failed = true;
        stop_subtasks(self);
        return;
      }
      self->delayed_send(self, tick_interval(o), tick_atom::value);
    },
    [self](checkpoint_atom) {
      trigger_checkpoint_now(self);
      self->delayed_send(self, self->state.ctx->graph->options.checkpoint.interval,
                         checkpoint_atom::value);
    },
    [self](write_snapshot_result& r) { on_ack(self, r); },
    [self](task_final_state& f) { on_final_state(self, f); },
    [self](const discard_result& r) {
      // The reply to discarding an aborted checkpoint's state.
      if (!r.ok)
        log::checkpoint().warn("job '{}': cannot delete aborted checkpoint {}: {}",
                               self->state.ctx->graph->options.name, r.checkpoint_id, r.error);
    },
    [self](const decline_checkpoint& d) {
      auto& st = self->state;
      if (!st.coordinator || st.restarting)
        return;
      if (d.task < st.task_subtask.size()) {
        auto [v, s] = st.task_subtask[d.task];
        const auto& vertex = st.ctx->plan.vertices[v];
        log::checkpoint().debug("job '{}': operator '{}' subtask {}/{}: declined checkpoint {}: {}",
                                st.ctx->graph->options.name, vertex.name, s,
                                vertex.parallelism, d.checkpoint_id, d.reason);
      }
      if (auto a = st.coordinator->decline(d.checkpoint_id, d.task, d.reason))
        abort_checkpoints(self, {*a});
    },
    [self](stop_atom) {
      auto& st = self->state;
      if (!st.stopping) {
        st.stopping = true;
        st.ctx->result.stopped = true;
      }
      // While restarting the redeploy sees `stopping` and ends the job.
      stop_sources(self);
    },
    [self](cancel_job_atom) {
      // Ends the job at once (running_job::cancel): every subtask is told to
      // exit where it is; nothing is flushed, nothing restarts.
      auto& st = self->state;
      if (st.failed)
        return;
      st.failed = true;
      st.ctx->clear_failure();
      st.ctx->fail("canceled");
      log::runtime().info("job '{}': canceled", st.ctx->graph->options.name);
      if (st.running == 0) {
        // Between two attempts: the redeploy sees `failed` and ends the job.
        return;
      }
      st.restarting = false;
      stop_subtasks(self);
    },
    [self](state_query& q) { route_state_query(self, q); },
    [self](savepoint_request& r) { trigger_savepoint(self, r); },
    [self](redeploy_atom) {
      auto redeploy = [self] {
        auto& s = self->state;
        if (s.stopping) {
          // Stopped between two attempts: the last completed checkpoint
          // stays the one to resume from.
          s.ctx->clear_failure();
          if (s.writer)
            self->send_exit(s.writer, caf::exit_reason::user_shutdown);
          self->quit();
          return;
        }
        if (s.failed) {
          // Canceled between two attempts.
          if (s.writer)
            self->send_exit(s.writer, caf::exit_reason::user_shutdown);
          self->quit();
          return;
        }
        s.restarting = false;
        s.ctx->journal.set_state(job_state::running);
        ++s.attempt;
        ++s.ctx->result.restarts;
        s.ctx->clear_failure();
        s.ctx->metrics.reset();
        deploy(self);
        if (s.failed) {
          if (s.writer)
            self->send_exit(s.writer, caf::exit_reason::user_shutdown);
          self->quit();
        }
      };
      // A manifest commit sent before the failure may still be in the state
      // writer's mailbox: draining it makes the restart see that checkpoint,
      // so it neither restores an older one nor reuses its id.
      after_writer_drained(self, redeploy);
    },
  };
}

} // namespace

caf::actor spawn_job_manager(caf::actor_system& sys, std::shared_ptr<job_context> ctx) {
  // Detached (its own thread): status lines and checkpoint triggers stay on
  // time even when every scheduler worker is busy in an operator (a
  // throttled sink sleeps).
  return sys.spawn<caf::detached>(job_manager, std::move(ctx));
}

} // namespace weir::runtime
