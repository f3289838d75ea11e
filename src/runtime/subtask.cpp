// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/subtask.hpp"

#include <algorithm>
#include <stdexcept>

namespace weir::runtime {

namespace {

bool exactly_once(const job_graph& g) {
  return g.options.checkpoint.mode == checkpointing_mode::exactly_once;
}

} // namespace

subtask::subtask(subtask_config config, subtask_environment& env)
  : config_(std::move(config)),
    env_(&env),
    vertex_(config_.plan->vertices[config_.vertex]),
    clock_(config_.replay_clock),
    out_(env, config_.out_channels, config_.credits_per_channel),
    chain_(*config_.graph, vertex_, config_.subtask, *config_.metrics,
           std::move(config_.writers), out_, clock_),
    gate_(config_.plan->channel_input[config_.vertex],
          config_.graph->nodes[vertex_.nodes[0]].num_inputs, exactly_once(*config_.graph)),
    input_idle_(gate_.inputs(), false) {
  chain_.set_dead_letters(config_.dead_letters, config_.task_index, config_.attempt);
}

void subtask::open() {
  const auto& g = *config_.graph;
  const auto& head = chain_.node(0);
  chain_.set_current(0);
  if (head.is_source) {
    auto* m = &chain_.metrics(0);
    auto policy = g.options.on_bad_record;
    auto* dlq = config_.dead_letters;
    auto writer = config_.task_index;
    auto attempt = config_.attempt;
    auto reader = head.make_source(config_.subtask, vertex_.parallelism,
                                   [m, policy, dlq, writer, attempt](const bad_record& r) {
                                     m->bad_records.fetch_add(1, std::memory_order_relaxed);
                                     if (policy == bad_record_policy::fail)
                                       throw std::runtime_error(
                                         "bad record at " + r.origin
                                         + (r.line > 0 ? ":" + std::to_string(r.line)
                                                       : " offset " + std::to_string(r.offset))
                                         + ": " + r.reason);
                                     if (policy == bad_record_policy::dead_letter && dlq)
                                       dlq->write(r, writer, attempt);
                                   });
    source_.emplace(head, std::move(reader), g.options.batch_size);
    source_->open(chain_.context(0));
  }
  chain_.open(g.options.checkpoint.enabled, config_.attempt);
  if (!config_.restores.empty()) {
    // A source's operator state is the position to resume from (the job
    // manager checked that the parallelism is the one it ran with).
    const auto& r = config_.restores.front();
    if (source_ && r && !r->operator_states.empty() && !r->operator_states.front().empty()) {
      chain_.set_current(0);
      source_->restore(r->operator_states.front(), clock_);
    }
    chain_.restore(config_.restores);
  }
  chain_.set_current(0);
  if (source_)
    schedule_poll();
}

// -- checkpoints -------------------------------------------------------------

void subtask::take_snapshot(std::uint64_t n, event_time trigger_ts,
                            std::chrono::milliseconds align) {
  write_snapshot_request req;
  req.checkpoint_id = n;
  req.task = config_.task_index;
  req.alignment = align;
  chain_.prepare_snapshot_pre_barrier(n);
  for (std::size_t k = 0; k < chain_.size(); ++k) {
    const auto& node = chain_.node(k);
    operator_snapshot_entry e;
    e.operator_uid = node.name;
    e.subtask = static_cast<std::uint32_t>(config_.subtask);
    e.parallelism = static_cast<std::uint32_t>(vertex_.parallelism);
    if (k == 0 && source_) {
      chain_.set_current(0);
      source_->snapshot(clock_, e);
      source_->reader().on_checkpoint(n);
    } else {
      chain_.snapshot_member(k, n, e.snapshot);
    }
    req.operators.push_back(std::move(e));
  }
  // Pre-commits the records dead-lettered before this barrier (after the
  // members' snapshots: a sink's flush at the barrier may reject some).
  if (config_.dead_letters)
    config_.dead_letters->seal(config_.task_index, config_.attempt, n);
  chain_.set_current(0);
  chain_.broadcast(output_element{element_kind::barrier, nullptr, trigger_ts, n});
  last_snapshot_ = n;
  last_snapshot_resolved_ = false;
  ++outstanding_writes_;
  env_->write_snapshot(std::move(req));
}

void subtask::on_trigger(std::uint64_t checkpoint_id, event_time timestamp) {
  if (finishing_)
    return; // its input has ended: its final state answers for it (final_snapshot)
  take_snapshot(checkpoint_id, timestamp, std::chrono::milliseconds{0});
}

void subtask::on_stop(std::uint64_t checkpoint_id, event_time timestamp) {
  if (!source_) {
    if (checkpoint_id != 0)
      env_->decline_checkpoint(checkpoint_id, "not a source");
    return;
  }
  if (finishing_)
    return; // its input has ended: its final state answers for it (final_snapshot)
  if (checkpoint_id != 0)
    take_snapshot(checkpoint_id, timestamp, std::chrono::milliseconds{0});
  // No final +inf watermark: the input was not exhausted.
  end_of_chain(false);
}

void subtask::act_on(const checkpoint::barrier_decision& d, event_time ts) {
  for (auto id : d.aborted)
    env_->decline_checkpoint(id, "aborted during alignment");
  if (d.started)
    align_started_ = std::chrono::steady_clock::now();
  if (d.snapshot) {
    auto align = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - align_started_);
    take_snapshot(*d.snapshot, ts, align);
  }
  if (d.released)
    release_held();
}

void subtask::release_held() {
  // Each channel in order; processing a held barrier may block it again.
  for (std::size_t c = 0; c < gate_.channels(); ++c)
    while (auto e = gate_.take_released(c))
      process(*e);
}

void subtask::on_notify_complete(std::uint64_t checkpoint_id) {
  last_completed_ = std::max(last_completed_, checkpoint_id);
  chain_.notify_checkpoint_complete(checkpoint_id);
  if (source_)
    source_->reader().notify_checkpoint_complete(checkpoint_id);
  if (checkpoint_id >= last_snapshot_)
    last_snapshot_resolved_ = true;
  if (final_checkpoint_ != 0 && checkpoint_id >= final_checkpoint_)
    final_checkpoint_ = 0; // committed: the subtask may end
  maybe_finish();
}

void subtask::on_abort_transactions(std::uint64_t keep_up_to) {
  chain_.abort_transactions(keep_up_to);
}

void subtask::on_cancel(std::uint64_t checkpoint_id) {
  act_on(gate_.on_cancel(checkpoint_id), 0);
  if (checkpoint_id == last_snapshot_)
    last_snapshot_resolved_ = true;
  maybe_finish();
}

void subtask::on_snapshot_written() {
  --outstanding_writes_;
  maybe_finish();
}

// -- flow control --------------------------------------------------------------

void subtask::on_credit(std::uint32_t channel, std::uint32_t batches) {
  out_.on_credit(channel, batches);
  if (out_.blocked())
    return;
  if (auto ns = out_.take_backpressured_ns())
    chain_.metrics(0).backpressured_ns.fetch_add(ns, std::memory_order_relaxed);
  resume();
}

void subtask::resume() {
  if (source_) {
    schedule_poll();
  } else {
    while (!inbox_.empty() && !out_.blocked()) {
      auto e = std::move(inbox_.front());
      inbox_.pop_front();
      process(e);
    }
  }
  maybe_finish();
}

// -- source --------------------------------------------------------------------

void subtask::schedule_poll() {
  if (!poll_scheduled_ && !finishing_) {
    poll_scheduled_ = true;
    // A rate-limited source asks to wait rather than be polled in a spin.
    env_->request_poll(source_->next_poll_delay());
  }
}

void subtask::on_poll() {
  poll_scheduled_ = false;
  if (finishing_)
    return;
  if (out_.blocked()) {
    note_blocked();
    return; // resumed by on_credit
  }
  if (source_->poll_once(chain_, clock_)) {
    note_blocked();
    if (!out_.blocked())
      schedule_poll();
    return;
  }
  chain_.emit_watermark(0, max_watermark);
  end_of_chain();
}

// -- task ----------------------------------------------------------------------

void subtask::on_input(input_element e) {
  if (out_.blocked() || !inbox_.empty()) {
    inbox_.push_back(std::move(e));
    note_blocked();
    return;
  }
  process(e);
}

void subtask::process(input_element& e) {
  chain_.set_current(0);
  if (gate_.hold_if_blocked(e))
    return; // nothing after barrier n on this channel may enter snapshot n
  switch (e.kind) {
    case element_kind::barrier:
      act_on(gate_.on_barrier(e.channel, e.checkpoint_id), e.ts);
      break;
    case element_kind::batch:
      if (gate_.input_of(e.channel) == 0)
        chain_.process_batch(e.data);
      else
        chain_.process_batch2(e.data);
      // Processed: return the credit to the sender.
      env_->return_credit(e.channel);
      break;
    case element_kind::watermark: {
      auto wm = gate_.on_watermark(e.channel, e.ts);
      sync_input_idle(gate_.input_of(e.channel));
      if (wm)
        advance_watermark(gate_.input_of(e.channel), *wm);
      chain_.set_output_idle(gate_.all_idle());
      break;
    }
    case element_kind::idle:
    case element_kind::active: {
      auto wm = gate_.on_idle(e.channel, e.kind == element_kind::idle);
      sync_input_idle(gate_.input_of(e.channel));
      if (wm)
        advance_watermark(gate_.input_of(e.channel), *wm);
      chain_.set_output_idle(gate_.all_idle());
      break;
    }
    case element_kind::processing_time:
      if (clock_.advance(e.ts))
        chain_.fire_processing_time(clock_.now());
      break;
    case element_kind::end_of_input: {
      if (!e.drain)
        stopped_input_ = true;
      auto r = gate_.on_end_of_input(e.channel, e.drain);
      sync_input_idle(gate_.input_of(e.channel)); // its other channels may all be idle
      if (r.watermark)
        advance_watermark(gate_.input_of(e.channel), *r.watermark);
      act_on(r.decision, 0);
      if (gate_.all_ended())
        end_of_chain(!stopped_input_);
      break;
    }
  }
  note_blocked();
}

void subtask::advance_watermark(std::size_t input, event_time wm) {
  if (chain_.head_has_two_inputs())
    chain_.process_input_watermark(input, wm);
  else
    chain_.process_watermark(wm);
}

void subtask::sync_input_idle(std::size_t input) {
  if (!chain_.head_has_two_inputs())
    return;
  bool idle = gate_.input_idle(input);
  if (idle == input_idle_[input])
    return;
  input_idle_[input] = idle;
  chain_.process_input_status(input, idle);
}

// -- wall-clock processing-time timers -------------------------------------------

void subtask::schedule_wakeup() {
  if (clock_.is_replay() || finishing_)
    return;
  auto next = chain_.next_processing_timer();
  if (!next || (wakeup_at_ && *wakeup_at_ <= *next))
    return;
  wakeup_at_ = next;
  auto delay = std::max<event_time>(0, *next - subtask_clock::system_now());
  env_->request_wakeup(std::chrono::milliseconds{delay});
}

void subtask::on_wake() {
  wakeup_at_.reset();
  if (finishing_)
    return; // a wake-up requested before the end of input
  chain_.fire_processing_time(clock_.now());
}

// -- ending --------------------------------------------------------------------

void subtask::end_of_chain(bool drain) {
  if (finishing_)
    return; // a released end of input may complete the chain first
  stopping_ = !drain;
  chain_.finish(drain);
  finishing_ = true;
  // Exactly-once dead letters: the final state answers for every later
  // checkpoint, so what the chain dead-lettered since its last snapshot is
  // pre-committed now. On a stop the final checkpoint sealed them already.
  if (drain && config_.dead_letters)
    config_.dead_letters->seal_final(config_.task_index, config_.attempt);
  maybe_finish();
}

bool subtask::awaiting_checkpoint() const noexcept {
  if (!config_.graph->options.checkpoint.enabled || last_snapshot_resolved_)
    return false;
  // A stopped job's last checkpoint is its final one: its sinks commit on
  // the notification, so the subtask waits for it (Flink's synchronous
  // savepoint). A drained subtask with a two-phase-commit sink waits for it
  // too before it takes its final snapshot: the sink then has no
  // pre-committed transaction whose fate is still open (a PostgreSQL
  // prepared transaction holds the locks of its rows).
  return stopping_ || chain_.has_two_phase_commit();
}

void subtask::maybe_finish() {
  if (!finishing_ || finished_ || out_.blocked() || outstanding_writes_ != 0
      || awaiting_checkpoint())
    return;
  if (config_.graph->options.checkpoint.enabled && !final_state_sent_) {
    final_state_sent_ = true;
    env_->final_state(final_snapshot());
  }
  if (final_checkpoint_ != 0)
    return; // a two-phase-commit sink waits for the final checkpoint
  finished_ = true;
  env_->finished();
}

write_snapshot_request subtask::final_snapshot() {
  // A source's positions, and what a two-phase-commit sink pre-commits
  // after its input ended (drained only: a stopped job's final checkpoint
  // was its last barrier). The other members have emitted all they will,
  // and their consumers' state holds that.
  write_snapshot_request req;
  req.task = config_.task_index;
  auto entry = [&](std::size_t k) {
    operator_snapshot_entry e;
    e.operator_uid = chain_.node(k).name;
    e.subtask = static_cast<std::uint32_t>(config_.subtask);
    e.parallelism = static_cast<std::uint32_t>(vertex_.parallelism);
    return e;
  };
  if (source_) {
    auto e = entry(0);
    chain_.set_current(0);
    source_->snapshot(clock_, e);
    req.operators.push_back(std::move(e));
  }
  if (stopping_ || !chain_.has_two_phase_commit())
    return req;
  // Its id is above every checkpoint this subtask took or restored; every
  // checkpoint that holds this final state has an id at least as high (the
  // job manager acknowledges with it only checkpoints this subtask did not
  // take itself, which are newer than its last one).
  std::uint64_t id = std::max(last_snapshot_, last_completed_);
  for (const auto& r : config_.restores)
    if (r)
      id = std::max(id, r->checkpoint_id);
  ++id;
  for (std::size_t k = 0; k < chain_.size(); ++k) {
    if (!chain_.is_two_phase_commit(k))
      continue;
    auto e = entry(k);
    chain_.snapshot_member(k, id, e.snapshot);
    e.snapshot.keyed_state.reset();
    req.operators.push_back(std::move(e));
  }
  final_checkpoint_ = id;
  // Tells the job manager which completed checkpoint lets this subtask end
  // (`task_final_state`): it triggers no final checkpoint for it after one.
  req.checkpoint_id = id;
  return req;
}

std::string subtask::failure_message(const std::string& what) const {
  return chain_.describe(chain_.current()) + " failed: " + what;
}

} // namespace weir::runtime
