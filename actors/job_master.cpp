// SPDX-License-Identifier: Apache-2.0
#include "job_master.hpp"

#include "weir/checkpoint/checkpoint_report.hpp"
#include "weir/core/key_group.hpp"
#include "weir/core/log.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/runtime/loss_check.hpp"

#include <spdlog/logger.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <set>
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

/// How often the job manager prints the status line and checks the loss
/// limits: the status interval, else every second when a limit is set.
std::chrono::milliseconds tick_interval(const job_options& o) {
  if (o.status_interval.count() > 0)
    return o.status_interval;
  if (o.max_bad_ratio || o.max_late_ratio)
    return std::chrono::milliseconds{1000};
  return std::chrono::milliseconds{0};
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

} // namespace

job_master::job_master(std::shared_ptr<job_context> ctx, job_master_environment& env)
  : ctx_(std::move(ctx)), env_(env), last_tick_(std::chrono::steady_clock::now()) {}

void job_master::start() {
  const auto& opts = ctx_->graph->options;
  deploy();
  ctx_->journal.set_state(job_state::running);
  if (failed_) {
    env_.finished();
    return;
  }
  if (tick_interval(opts).count() > 0)
    env_.schedule(job_master_timer::status_tick, tick_interval(opts));
  if (ctx_->store)
    env_.schedule(job_master_timer::checkpoint, opts.checkpoint.interval);
}

std::string job_master::checkpoint_summary() const {
  if (!coordinator_)
    return "off";
  const auto& last = coordinator_->last_completed();
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

void job_master::record_outcome() {
  if (!coordinator_)
    return;
  auto& r = ctx_->result;
  r.checkpoints_completed += coordinator_->completed_count();
  r.checkpoints_aborted += coordinator_->aborted_count();
  if (failures_)
    r.checkpoints_failed += failures_->total();
  if (const auto& last = coordinator_->last_completed())
    r.last_checkpoint_id = last->checkpoint_id;
}

/// Tells every subtask and the state writer that checkpoints were aborted.
void job_master::abort_checkpoints(const std::vector<checkpoint::aborted_checkpoint>& aborted) {
  for (const auto& a : aborted) {
    ctx_->journal.checkpoint_failed(a.checkpoint_id, env_.now().count(), a.reason);
    log::checkpoint().debug("job '{}': checkpoint {} aborted: {}", ctx_->graph->options.name,
                            a.checkpoint_id, a.reason);
    for (std::uint32_t t = 0; t < tasks_.size(); ++t)
      env_.cancel_checkpoint(t, a.checkpoint_id);
    if (ctx_->store)
      env_.discard_checkpoint(a.checkpoint_id);
    if (auto sp = savepoints_.find(a.checkpoint_id); sp != savepoints_.end()) {
      sp->second.reply->set(make_error(errc::runtime_error,
                                       "the savepoint's checkpoint "
                                         + std::to_string(a.checkpoint_id)
                                         + " was aborted: " + a.reason));
      savepoints_.erase(sp);
    }
  }
}

/// Reads what each subtask restores from the latest completed checkpoint;
/// returns false (with the job failed) if it cannot be read.
bool job_master::read_restore_points(
  std::vector<std::vector<std::vector<std::shared_ptr<const operator_restore>>>>& out) {
  auto& ctx = *ctx_;
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
    if (attempt_ == 0) {
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
      highest && coordinator_)
    coordinator_->resume_after(*highest);
  // The run before a start over stays restorable (with --allow-rollback)
  // until the first checkpoint after it completes; recorded once the
  // restore has been read.
  auto record_start_over = [&] {
    if (attempt_ != 0 || !ctx.store || !(fresh_start || from_savepoint))
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
    if (coordinator_)
      coordinator_->resume_after(m.checkpoint_id);
    log::checkpoint().info("job '{}': restoring from savepoint {} (checkpoint {})",
                           g.options.name, where, m.checkpoint_id);
  }
  // State compatibility (Flink's TypeSerializerSnapshot#
  // resolveSchemaCompatibility): an operator whose state layout changed
  // since the checkpoint refuses the start before any state is decoded.
  for (const auto& h : m.handles) {
    if (h.state_descriptor.empty() || !g.has_node_named(h.operator_uid))
      continue;
    for (const auto& n : g.nodes) {
      if (n.name != h.operator_uid)
        continue;
      if (auto why = checkpoint::check_state_compatibility(
            h.operator_uid, h.state_descriptor, n.state_descriptor,
            (from_savepoint ? "savepoint " : "checkpoint " + std::to_string(m.checkpoint_id)
                                               + " in ")
              + where)) {
        ctx.fail(*why);
        return false;
      }
      break;
    }
  }
  ctx.result.restored_checkpoint_id = m.checkpoint_id;
  ctx.journal.restored(m.checkpoint_id, env_.now().count(), from_savepoint, where);
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

/// Runs the continuation of `p` once every message already in the state
/// writer's mailbox (which is in order) has been handled, e.g. a manifest
/// commit sent before now; at once when there is no writer.
void job_master::after_writer_drained(drain_purpose p) {
  if (!ctx_->store) {
    on_state_writer_drained(p);
    return;
  }
  env_.drain_state_writer(p);
}

void job_master::on_state_writer_drained(drain_purpose p) {
  if (p == drain_purpose::finish)
    finish();
  else
    redeploy();
}

/// Spawns every subtask, downstream first (a subtask needs the handles of
/// its targets), restoring from the latest completed checkpoint if any.
void job_master::deploy() {
  const auto& g = *ctx_->graph;
  const auto& plan = ctx_->plan;
  if (ctx_->store) {
    checkpoint::coordinator_options co;
    co.timeout = g.options.checkpoint.timeout;
    co.min_pause = g.options.checkpoint.min_pause;
    std::uint32_t total = 0;
    for (const auto& v : plan.vertices)
      total += static_cast<std::uint32_t>(v.parallelism);
    coordinator_.emplace(co, total);
    failures_.emplace(g.options.checkpoint.tolerable_failures);
  }
  std::vector<std::vector<std::vector<std::shared_ptr<const operator_restore>>>> restores;
  if (!read_restore_points(restores)) {
    // A refusal to restore: said where `weir serve` shows a job's failure
    // too (its log and GET /jobs/{id}/exceptions).
    if (auto why = ctx_->failure()) {
      log::checkpoint().error("job '{}' failed: {}", g.options.name, *why);
      ctx_->journal.exception(env_.now().count(), *why, false);
    }
    failed_ = true;
    return;
  }
  if (coordinator_ && attempt_ == 0)
    ctx_->result.checkpoint_ids_after = coordinator_->latest_id();
  if (auto& dlq = ctx_->dead_letters) {
    // Exactly-once dead letters: back to what the restored checkpoint
    // committed (a no-op for directly written ones).
    try {
      dlq->restore(ctx_->result.restored_checkpoint_id, attempt_);
    } catch (const std::exception& e) {
      ctx_->fail(e.what());
      failed_ = true;
      return;
    }
  }
  tasks_.clear();
  final_states_.clear();
  awaiting_final_.clear();
  all_ended_at_.reset();
  running_ = 0;
  std::vector<subtask_deployment> deployments;
  // The task number of each (vertex, subtask) deployed so far.
  std::vector<std::vector<std::uint32_t>> task_at(plan.vertices.size());
  for (auto it = plan.topo_order.rbegin(); it != plan.topo_order.rend(); ++it) {
    auto v = *it;
    const auto& vertex = plan.vertices[v];
    for (std::size_t s = 0; s < vertex.parallelism; ++s) {
      subtask_deployment d;
      d.task = static_cast<std::uint32_t>(tasks_.size());
      d.vertex = v;
      d.subtask = s;
      d.attempt = attempt_;
      if (!restores[v].empty())
        d.restores = restores[v][s];
      auto outputs = plan_subtask_outputs(g, plan, v, s);
      d.writers = std::move(outputs.writers);
      for (const auto& t : outputs.channels)
        d.out_channels.push_back({task_at[t.vertex][t.subtask], t.channel});
      log::runtime().debug("job '{}': operator '{}' subtask {}/{}: deploying (attempt {})",
                           g.options.name, vertex.name, s, vertex.parallelism,
                           attempt_ + 1);
      task_at[v].push_back(d.task);
      tasks_.push_back(task_info{v, s, vertex.is_source, true});
      deployments.push_back(std::move(d));
      ++running_;
    }
  }
  env_.deploy(std::move(deployments));
}

/// Stops the job for a reason of the job manager's own (too many failed
/// checkpoints), as a subtask failure would: every subtask is stopped, then
/// the job restarts from its latest completed checkpoint (job.restart) or
/// ends with `why` as its error.
void job_master::fail_job(std::string why) {
  if (failed_ || restarting_)
    return;
  const auto& ro = ctx_->graph->options.restart;
  if (running_ > 0 && ctx_->store && attempt_ < ro.attempts) {
    log::runtime().warn("job '{}': {}; restarting from the latest checkpoint (attempt {} of {})",
                        ctx_->graph->options.name, why, attempt_ + 1, ro.attempts);
    restarting_ = true;
    ctx_->journal.exception(env_.now().count(), why, true);
    ctx_->journal.set_state(job_state::restarting);
  } else {
    ctx_->journal.exception(env_.now().count(), why, false);
    failed_ = true;
    ctx_->fail(std::move(why));
  }
  stop_subtasks();
}

std::uint64_t job_master::last_completed_id() const {
  std::uint64_t id = std::max(ctx_->result.last_checkpoint_id,
                              ctx_->result.restored_checkpoint_id);
  if (coordinator_ && coordinator_->last_completed())
    id = std::max(id, coordinator_->last_completed()->checkpoint_id);
  return id;
}

/// Stops every subtask for a failure, a cancel or a restart. Each is told
/// first that no checkpoint newer than the newest one completed or whose
/// manifest commit is with the state writer completes in this run
/// (`abort_transactions`): its two-phase-commit sinks roll back the rest, so
/// a failed run leaves no transaction open. The notifications sent before
/// reach a subtask first (messages between two actors keep their order).
/// Acknowledgements are ignored from now on (`on_acknowledge`), so no later
/// commit is sent.
void job_master::stop_subtasks() {
  auto keep = last_completed_id();
  if (!commits_in_doubt_.empty())
    keep = std::max(keep, *commits_in_doubt_.rbegin());
  for (std::uint32_t t = 0; t < tasks_.size(); ++t)
    env_.stop_subtask(t, keep);
}

/// Checkpoint `id` failed (its state or manifest could not be stored, or it
/// timed out): says so, and fails the job once more checkpoints in a row
/// have failed than [checkpoint] tolerable_failures allows. The completed
/// checkpoints in storage are untouched (a failed LMDB transaction changes
/// nothing), so the job or a rerun resumes from the last of them.
void job_master::checkpoint_failed(std::uint64_t id, const std::string& reason) {
  if (!failures_ || restarting_ || failed_)
    return;
  const auto& name = ctx_->graph->options.name;
  const auto counted = failures_->total();
  auto fatal = failures_->failed(id, reason);
  if (failures_->total() == counted)
    return; // this checkpoint was counted already
  const auto last = last_completed_id();
  const std::string intact = last > 0 ? "the last completed checkpoint, #" + std::to_string(last)
                                          + ", is intact"
                                      : "no checkpoint has completed yet";
  if (!fatal) {
    log::checkpoint().warn("job '{}': checkpoint {} failed: {}; tolerated ({} of {} in a row, "
                           "[checkpoint] tolerable_failures); {}",
                           name, id, reason, failures_->consecutive(),
                           failures_->tolerable(), intact);
    return;
  }
  log::checkpoint().error("job '{}': {}; {}", name, *fatal, intact);
  fail_job(*fatal + "; " + intact
           + (last > 0 ? " (a rerun on the same checkpoint dir resumes from it)" : ""));
}

/// Acknowledges checkpoint `id` for a task that has ended, with the final
/// state it left (`task_final_state`): stored under `id` by the state writer
/// like any task's snapshot, so every checkpoint stays self-contained.
void job_master::acknowledge_with_final_state(std::uint64_t id, std::uint32_t task) {
  auto it = final_states_.find(task);
  if (it == final_states_.end())
    return;
  auto req = it->second;
  req.checkpoint_id = id;
  if (req.operators.empty()) {
    write_snapshot_result r;
    r.checkpoint_id = id;
    r.task = task;
    r.ok = true;
    on_acknowledge(std::move(r));
    return;
  }
  env_.write_final_state(attempt_, std::move(req));
}

void job_master::on_final_state_written(std::size_t attempt, write_snapshot_result r) {
  if (attempt == attempt_)
    on_acknowledge(std::move(r));
}

/// Checkpoint `id` was just triggered: the tasks that have ended take part
/// through their final state (Flink's checkpoints after tasks finished,
/// FLIP-147).
void job_master::acknowledge_finished_tasks(std::uint64_t id) {
  std::vector<std::uint32_t> tasks;
  for (const auto& [task, req] : final_states_)
    tasks.push_back(task);
  for (auto task : tasks)
    acknowledge_with_final_state(id, task);
}

/// A task ended its input and left its final state: later checkpoints go on
/// without it, and those in flight that waited for it get that state.
void job_master::on_final_state(task_final_state f) {
  if (!coordinator_ || restarting_ || failed_)
    return;
  auto task = f.request.task;
  if (task >= tasks_.size())
    return;
  // Beyond a source's positions, a final state holds only what
  // two-phase-commit sinks pre-committed after their input ended.
  if (f.request.operators.size() > (tasks_[task].is_source ? 1u : 0u))
    awaiting_final_[task] = f.request.checkpoint_id;
  final_states_[task] = std::move(f.request);
  for (auto id : coordinator_->task_finished_with_state(task))
    acknowledge_with_final_state(id, task);
  trigger_final_checkpoint();
}

/// Every task has ended its input and some wait for the job's final
/// checkpoint (their two-phase-commit sinks commit their last transaction
/// when it completes; Flink's final checkpoint, FLIP-147): triggers it now
/// rather than at the next interval, unless one is in flight or a
/// checkpoint triggered after every task had ended completed already. One
/// that is aborted is followed by the periodic trigger.
void job_master::trigger_final_checkpoint() {
  if (!coordinator_ || restarting_ || failed_ || final_states_.size() < tasks_.size())
    return;
  if (!all_ended_at_)
    all_ended_at_ = coordinator_->latest_id();
  if (awaiting_final_.empty() || coordinator_->in_flight() > 0
      || last_completed_id() > *all_ended_at_)
    return;
  auto now = env_.now();
  auto r = coordinator_->trigger(now, true);
  if (!r.triggered())
    return;
  log::checkpoint().debug("job '{}': final checkpoint {} triggered: every input has ended",
                          ctx_->graph->options.name, r.checkpoint_id);
  ctx_->journal.checkpoint_triggered(r.checkpoint_id, now.count());
  acknowledge_finished_tasks(r.checkpoint_id);
}

/// Every task has ended its input and none waits for a checkpoint to
/// commit its final snapshot: the subtasks are ending, and a checkpoint
/// triggered now could only be left in flight when the job ends.
bool job_master::nothing_left_to_checkpoint() const {
  return !tasks_.empty() && final_states_.size() == tasks_.size() && awaiting_final_.empty();
}

/// Sends the trigger of checkpoint `id` to every source that has not ended.
void job_master::trigger_sources(std::uint64_t id, std::int64_t now_ms) {
  for (std::uint32_t t = 0; t < tasks_.size(); ++t)
    if (tasks_[t].is_source && !final_states_.count(t))
      env_.trigger_checkpoint(t, id, now_ms);
}

void job_master::trigger_checkpoint_now() {
  if (!coordinator_ || restarting_ || failed_)
    return;
  auto now = env_.now();
  auto expired = coordinator_->expire(now);
  abort_checkpoints(expired);
  for (const auto& a : expired)
    checkpoint_failed(a.checkpoint_id, a.reason);
  if (restarting_ || failed_)
    return;
  if (stopping_ && final_states_.size() < tasks_.size())
    return; // the stop triggers the last one (once every task has ended,
            // checkpoints go on for those waiting for a completed one)
  if (nothing_left_to_checkpoint())
    return;
  auto r = coordinator_->trigger(now);
  if (!r.triggered())
    return;
  log::checkpoint().debug("job '{}': checkpoint {} triggered", ctx_->graph->options.name,
                          r.checkpoint_id);
  ctx_->journal.checkpoint_triggered(r.checkpoint_id, now.count());
  trigger_sources(r.checkpoint_id, now.count());
  acknowledge_finished_tasks(r.checkpoint_id);
}

void job_master::on_checkpoint_timer() {
  trigger_checkpoint_now();
  env_.schedule(job_master_timer::checkpoint, ctx_->graph->options.checkpoint.interval);
}

/// A graceful stop (Flink's stop-with-savepoint without drain): tells every
/// source to stop reading, with checkpoints after taking a final checkpoint
/// that its subtasks wait for before they finish (`subtask::on_stop`). While
/// another checkpoint is in flight it retries shortly (at most one in
/// flight); when no checkpoint can be taken any more (a source has finished
/// its input) the job stops without one, its last completed checkpoint
/// staying the one to resume from.
void job_master::stop_sources() {
  if (sources_stopped_ || restarting_ || failed_)
    return;
  const auto& name = ctx_->graph->options.name;
  auto now = env_.now();
  std::uint64_t id = 0;
  if (coordinator_) {
    abort_checkpoints(coordinator_->expire(now));
    auto r = coordinator_->trigger(now, true);
    if (r.refusal == checkpoint::trigger_refusal::too_many) {
      env_.schedule(job_master_timer::stop_retry, std::chrono::milliseconds{10});
      return;
    }
    if (r.triggered()) {
      id = r.checkpoint_id;
      ctx_->journal.checkpoint_triggered(id, now.count());
    } else {
      std::string w = "stopping without a final checkpoint: " + r.reason;
      log::checkpoint().warn("job '{}': {}", name, w);
      ctx_->result.warnings.push_back(std::move(w));
    }
  }
  sources_stopped_ = true;
  ctx_->result.stop_checkpoint_id = id;
  if (stop_savepoint_) {
    if (id != 0)
      savepoints_.emplace(id, std::move(*stop_savepoint_));
    else
      stop_savepoint_->reply->set(make_error(
        errc::runtime_error, "the job stopped without a final checkpoint to keep as savepoint"));
    stop_savepoint_.reset();
  }
  if (id != 0)
    log::runtime().info("job '{}': stopping with final checkpoint {}", name, id);
  else
    log::runtime().info("job '{}': stopping", name);
  for (std::uint32_t t = 0; t < tasks_.size(); ++t)
    if (tasks_[t].is_source && !final_states_.count(t))
      env_.stop_source(t, id, now.count());
  if (id != 0)
    acknowledge_finished_tasks(id);
}

void job_master::on_stop() {
  if (!stopping_) {
    stopping_ = true;
    ctx_->result.stopped = true;
  }
  // While restarting the redeploy sees `stopping` and ends the job.
  stop_sources();
}

/// Copies checkpoint `m` (whose commit was just sent to the state writer,
/// so nothing can come between) into the savepoint directory asked for, and
/// answers the request. A stop-with-savepoint's job stops on its own.
void job_master::write_savepoint(checkpoint::snapshot_manifest m) {
  auto it = savepoints_.find(m.checkpoint_id);
  if (it == savepoints_.end())
    return;
  auto req = std::move(it->second);
  savepoints_.erase(it);
  env_.write_savepoint(std::move(req), std::move(m));
}

void job_master::on_savepoint_written(const savepoint_request& req, std::uint64_t id,
                                      const savepoint_write_result& r) {
  const auto& name = ctx_->graph->options.name;
  if (!r.ok) {
    log::checkpoint().warn("job '{}': savepoint of checkpoint {} at {} failed: {}", name, id,
                           req.path, r.error);
    req.reply->set(make_error(errc::io_error, r.error));
    return;
  }
  log::checkpoint().info("job '{}': savepoint of checkpoint {} written to {}", name, id,
                         req.path);
  req.reply->set(savepoint_result{req.path, id, r.bytes});
}

/// Checks a savepoint path before anything is triggered: not empty, not the
/// checkpoint dir, and not a directory holding anything.
std::optional<error> job_master::check_savepoint_path(const std::string& path) const {
  namespace fs = std::filesystem;
  if (!coordinator_ || !ctx_->store)
    return make_error(errc::invalid_argument,
                      "a savepoint needs checkpoints: add a [checkpoint] table with a dir");
  if (path.empty())
    return make_error(errc::invalid_argument, "a savepoint needs a path");
  std::error_code ec;
  auto a = fs::weakly_canonical(path, ec);
  auto b = fs::weakly_canonical(ctx_->graph->options.checkpoint.dir, ec);
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
void job_master::on_savepoint_request(savepoint_request r) {
  if (auto e = check_savepoint_path(r.path)) {
    r.reply->set(*e);
    return;
  }
  if (restarting_ || failed_ || stopping_) {
    r.reply->set(make_error(errc::runtime_error, "the job is restarting or stopping"));
    return;
  }
  if (r.stop) {
    // The stop's final checkpoint is the savepoint (Flink's
    // stop-with-savepoint): the sinks commit exactly what it holds.
    stop_savepoint_ = std::move(r);
    stopping_ = true;
    ctx_->result.stopped = true;
    stop_sources();
    return;
  }
  auto now = env_.now();
  abort_checkpoints(coordinator_->expire(now));
  auto t = coordinator_->trigger(now, true);
  if (t.refusal == checkpoint::trigger_refusal::too_many) {
    env_.retry_savepoint(std::move(r), std::chrono::milliseconds{10});
    return;
  }
  if (!t.triggered()) {
    r.reply->set(make_error(errc::runtime_error, "no savepoint can be taken: " + t.reason));
    return;
  }
  log::checkpoint().info("job '{}': savepoint to {}: checkpoint {} triggered",
                         ctx_->graph->options.name, r.path, t.checkpoint_id);
  savepoints_.emplace(t.checkpoint_id, std::move(r));
  trigger_sources(t.checkpoint_id, now.count());
  acknowledge_finished_tasks(t.checkpoint_id);
}

/// A host's state query: finds the operator's chain and member, encodes the
/// key with the key fields' types, and sends the question to the subtask
/// owning the key group (`operator_index_for_key_group`).
void job_master::on_state_query(state_query q) {
  const auto& g = *ctx_->graph;
  const auto& plan = ctx_->plan;
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
  for (std::size_t t = 0; t < tasks_.size(); ++t)
    if (tasks_[t].vertex == at->first && tasks_[t].subtask == sub && tasks_[t].running)
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
  sq.result.checkpoint_id = last_completed_id();
  sq.reply = std::move(q.reply);
  env_.query_state(static_cast<std::uint32_t>(*task), std::move(sq));
}

/// "operator 'name' subtask i/p" of task `task`, or "task n" if unknown.
std::string job_master::who(std::uint32_t task) const {
  if (task >= tasks_.size())
    return "task " + std::to_string(task);
  const auto& vertex = ctx_->plan.vertices[tasks_[task].vertex];
  return "operator '" + vertex.name + "' subtask " + std::to_string(tasks_[task].subtask)
         + "/" + std::to_string(vertex.parallelism);
}

void job_master::on_acknowledge(write_snapshot_result r) {
  // A failed job's subtasks were told which checkpoints may still complete
  // (stop_subtasks): none after them may.
  if (!coordinator_ || restarting_ || failed_)
    return;
  if (!r.ok) {
    // The subtask's state could not be stored: the checkpoint is declined.
    auto reason = who(r.task) + " could not store its state: " + r.error;
    if (auto a = coordinator_->decline(r.checkpoint_id, r.task, reason))
      abort_checkpoints({*a});
    checkpoint_failed(r.checkpoint_id, reason);
    return;
  }
  if (r.task < tasks_.size()) {
    // Each chain member's stored bytes, for its subtask's state size.
    const auto& t = tasks_[r.task];
    for (auto node_id : ctx_->plan.vertices[t.vertex].nodes) {
      std::uint64_t bytes = 0;
      for (const auto& h : r.ack.operators)
        if (h.operator_uid == ctx_->graph->nodes[node_id].name)
          bytes += h.size_bytes();
      ctx_->metrics.at(node_id, t.subtask).state_bytes.store(bytes, std::memory_order_relaxed);
    }
  }
  auto res = coordinator_->acknowledge(r.checkpoint_id, r.task, std::move(r.ack), env_.now());
  if (res.status != checkpoint::ack_status::all_acked || !res.manifest)
    return;
  auto id = r.checkpoint_id;
  // Each handle records what its operator's state layout depends on, which
  // a restore compares with the pipeline's before reading any state.
  for (auto& h : res.manifest->handles)
    for (const auto& n : ctx_->graph->nodes)
      if (n.name == h.operator_uid) {
        h.state_descriptor = n.state_descriptor;
        break;
      }
  std::optional<checkpoint::snapshot_manifest> for_savepoint;
  if (savepoints_.count(id))
    for_savepoint = *res.manifest;
  commits_in_doubt_.insert(id);
  env_.commit_checkpoint(attempt_, std::move(*res.manifest));
  if (for_savepoint)
    write_savepoint(std::move(*for_savepoint));
}

void job_master::on_checkpoint_committed(std::size_t attempt, std::uint64_t id,
                                         const commit_manifest_result& c) {
  commits_in_doubt_.erase(id);
  if (!coordinator_ || attempt_ != attempt)
    return;
  if (!c.ok) {
    if (auto a = coordinator_->manifest_failed(id, c.error))
      abort_checkpoints({*a});
    checkpoint_failed(id, c.error);
    return;
  }
  auto done = coordinator_->manifest_committed(id, env_.now());
  if (!done)
    return;
  if (failures_)
    failures_->completed(id);
  ctx_->journal.checkpoint_completed(id, done->stats.duration_ms, done->stats.size_bytes,
                                     done->stats.alignment_ms);
  log::checkpoint().debug("job '{}': checkpoint {} completed", ctx_->graph->options.name, id);
  abort_checkpoints(done->subsumed);
  if (auto& dlq = ctx_->dead_letters) {
    try {
      dlq->commit(id);
    } catch (const std::exception& e) {
      // The checkpoint stays complete; the next restore from it completes
      // this commit.
      log::runtime().error("job '{}': checkpoint {}: {}", ctx_->graph->options.name, id,
                           e.what());
    }
  }
  for (std::uint32_t t = 0; t < tasks_.size(); ++t)
    env_.notify_checkpoint_complete(t, id);
  // The tasks whose final snapshot this checkpoint commits end on this
  // notification: no final checkpoint is owed to them any more (one
  // triggered for them would be left in flight when the job ends).
  for (auto it = awaiting_final_.begin(); it != awaiting_final_.end();)
    it = it->second != 0 && it->second <= id ? awaiting_final_.erase(it) : std::next(it);
  trigger_final_checkpoint();
}

void job_master::on_commit_unanswered(std::size_t attempt, std::uint64_t id,
                                      const std::string& why) {
  // No answer: the writer may have committed it before it stopped, so it
  // stays in doubt.
  if (!coordinator_ || attempt_ != attempt)
    return;
  if (auto a = coordinator_->manifest_failed(id, why))
    abort_checkpoints({*a});
  checkpoint_failed(id, why);
}

void job_master::on_status_tick() {
  const auto& o = ctx_->graph->options;
  auto now = std::chrono::steady_clock::now();
  // Loss made visible: sources and operators above warn_ratio are named on
  // the status line; above max_bad_ratio / max_late_ratio the job fails
  // (once they have seen min_records_for_ratio records).
  auto findings = check_loss(o, ctx_->metrics.counts(), min_records_for_ratio);
  if (o.status_interval.count() > 0) {
    auto totals = ctx_->metrics.totals();
    auto secs = std::chrono::duration<double>(now - last_tick_).count();
    auto line = format_status(*ctx_, totals, last_, secs, checkpoint_summary());
    std::string warn;
    for (const auto& f : findings)
      warn += (warn.empty() ? "" : ", ") + f.brief();
    if (!warn.empty())
      line += " | WARNING " + warn;
    // The status line is the CLI's user interface, not a log message: its
    // form stays fixed (scripts read it: bench/checkpoint/run; a warning is
    // appended at the end) and no log level hides it (status_interval =
    // "0s" or -q does).
    std::fprintf(stderr, "%s\n", line.c_str());
    last_ = totals;
    last_tick_ = now;
  }
  if (!findings.empty() && findings.front().fatal && !failed_ && !restarting_ && running_ > 0) {
    ctx_->fail(findings.front().message(o));
    ctx_->journal.exception(env_.now().count(), findings.front().message(o), false);
    failed_ = true;
    stop_subtasks();
    return;
  }
  env_.schedule(job_master_timer::status_tick, tick_interval(o));
}

void job_master::on_discard_result(const discard_result& r) {
  // The reply to discarding an aborted checkpoint's state.
  if (!r.ok)
    log::checkpoint().warn("job '{}': cannot delete aborted checkpoint {}: {}",
                           ctx_->graph->options.name, r.checkpoint_id, r.error);
}

void job_master::on_decline(std::uint64_t checkpoint_id, std::uint32_t task,
                            const std::string& reason) {
  if (!coordinator_ || restarting_)
    return;
  if (task < tasks_.size())
    log::checkpoint().debug("job '{}': {}: declined checkpoint {}: {}",
                            ctx_->graph->options.name, who(task), checkpoint_id, reason);
  if (auto a = coordinator_->decline(checkpoint_id, task, reason))
    abort_checkpoints({*a});
}

void job_master::on_cancel() {
  // Ends the job at once (running_job::cancel): every subtask is told to
  // exit where it is; nothing is flushed, nothing restarts.
  if (failed_)
    return;
  failed_ = true;
  ctx_->clear_failure();
  ctx_->fail("canceled");
  log::runtime().info("job '{}': canceled", ctx_->graph->options.name);
  if (running_ == 0) {
    // Between two attempts: the redeploy sees `failed` and ends the job.
    return;
  }
  restarting_ = false;
  stop_subtasks();
}

void job_master::on_redeploy_timer() {
  // A manifest commit sent before the failure may still be in the state
  // writer's mailbox: draining it makes the restart see that checkpoint, so
  // it neither restores an older one nor reuses its id.
  after_writer_drained(drain_purpose::redeploy);
}

void job_master::redeploy() {
  if (stopping_) {
    // Stopped between two attempts: the last completed checkpoint stays the
    // one to resume from.
    ctx_->clear_failure();
    env_.finished();
    return;
  }
  if (failed_) {
    // Canceled between two attempts.
    env_.finished();
    return;
  }
  restarting_ = false;
  ctx_->journal.set_state(job_state::running);
  ++attempt_;
  ++ctx_->result.restarts;
  ctx_->clear_failure();
  ctx_->metrics.reset();
  deploy();
  if (failed_)
    env_.finished();
}

void job_master::finish() {
  if (coordinator_ && std::any_of(commits_in_doubt_.begin(), commits_in_doubt_.end(),
                                  [&](std::uint64_t id) { return coordinator_->is_in_flight(id); })) {
    // A manifest commit sent after the drain was asked for (the last
    // acknowledgements came in meanwhile): its answer follows once the
    // writer's mailbox is drained again, so the summary counts the
    // checkpoint the store holds.
    env_.drain_state_writer(drain_purpose::finish);
    return;
  }
  if (coordinator_) {
    // Checkpoints still waiting for acknowledgements can no longer
    // complete: aborted, so that every id this run handed out is counted
    // (Flink aborts pending checkpoints when a job reaches a terminal state).
    abort_checkpoints(coordinator_->abort_waiting("the job ended before it completed"));
  }
  record_outcome();
  env_.finished();
}

void job_master::on_subtask_ended(std::uint32_t task, std::optional<std::string> error) {
  if (task >= tasks_.size() || !tasks_[task].running)
    return; // a subtask of an earlier attempt
  tasks_[task].running = false;
  awaiting_final_.erase(task);
  --running_;
  if (!error) {
    if (coordinator_ && !restarting_)
      abort_checkpoints(coordinator_->task_finished(task));
  } else if (!failed_ && !restarting_) {
    const auto& ro = ctx_->graph->options.restart;
    // A job being stopped does not restart: it fails.
    if (ctx_->store && attempt_ < ro.attempts && !stopping_ && !ctx_->unrecoverable()) {
      auto why = ctx_->failure().value_or(*error);
      log::runtime().warn("job '{}': {}; restarting from the latest checkpoint (attempt {} of {})",
                          ctx_->graph->options.name, why, attempt_ + 1, ro.attempts);
      restarting_ = true;
      ctx_->journal.exception(env_.now().count(), why, true);
      ctx_->journal.set_state(job_state::restarting);
    } else {
      failed_ = true;
      if (!ctx_->failure())
        ctx_->fail("a subtask stopped: " + *error);
      ctx_->journal.exception(env_.now().count(), *ctx_->failure(), false);
    }
    stop_subtasks();
  }
  if (running_ > 0)
    return;
  if (restarting_) {
    if (coordinator_)
      abort_checkpoints(coordinator_->abort_waiting("the job restarted before it completed"));
    record_outcome();
    env_.schedule(job_master_timer::redeploy, ctx_->graph->options.restart.delay);
    return;
  }
  // Let a manifest commit still in the writer's mailbox land (and its reply
  // reach the coordinator) before the summary counts checkpoints.
  after_writer_drained(drain_purpose::finish);
}

void job_master::on_state_writer_down(bool normal_exit, const std::string& reason) {
  if (running_ > 0 || normal_exit) {
    ctx_->fail("the state writer stopped: " + reason);
    failed_ = true;
    stop_subtasks();
  }
  if (running_ == 0)
    env_.finished();
}

} // namespace weir::runtime
