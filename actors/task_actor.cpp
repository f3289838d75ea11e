// SPDX-License-Identifier: Apache-2.0
#include "task_actor.hpp"

#include "state_writer_actor.hpp"
#include "weir/checkpoint/barrier_aligner.hpp"
#include "weir/checkpoint/barrier_tracker.hpp"

#include "weir/core/key_group.hpp"
#include "weir/core/messages.hpp"
#include "weir/runtime/input_gate.hpp"
#include "weir/time/source_watermarks.hpp"

#include <algorithm>
#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/stateful_actor.hpp>

#include <chrono>
#include <deque>
#include <exception>
#include <stdexcept>
#include <string>

namespace weir::runtime {

namespace {

event_time system_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// The subtask's processing-time clock: the system clock, or the replay
/// clock driven by in-band processing_time elements.
class task_clock final : public processing_clock {
public:
  explicit task_clock(bool replay) : replay_(replay) {}
  event_time now() const override { return replay_ ? replay_now_ : system_now_ms(); }
  bool is_replay() const noexcept { return replay_; }
  /// Replay only: advances the clock; false if `t` is not ahead of it.
  bool advance(event_time t) {
    if (t <= replay_now_)
      return false;
    replay_now_ = t;
    return true;
  }

private:
  bool replay_;
  event_time replay_now_ = 0;
};

/// An element that travels on a channel: a batch, or control elements that
/// keep their order relative to batches.
enum class element_kind {
  batch,
  watermark,
  end_of_input,
  idle,
  active,
  processing_time,
  barrier
};

/// Something waiting on an output channel for credit (or behind a batch that
/// waits): order on a channel is preserved.
struct pending_element {
  element_kind kind = element_kind::batch;
  record_batch_ptr data;
  event_time ts = min_watermark; ///< watermark, processing time or barrier time
  std::uint64_t checkpoint_id = 0;
};

struct out_channel {
  caf::actor target;
  std::uint32_t target_channel = 0;
  std::uint32_t credits = 0;
  std::deque<pending_element> backlog;
};

/// An input element held back while the subtask is backpressured.
struct inbox_element {
  element_kind kind = element_kind::batch;
  std::uint32_t channel = 0;
  record_batch_ptr data;
  event_time ts = min_watermark;
  caf::strong_actor_ptr sender;
  std::uint32_t credit_channel = 0;
  std::uint64_t checkpoint_id = 0;
};

class subtask_state;

struct chain_collector final : output_collector {
  subtask_state* st = nullptr;
  std::size_t k = 0;
  void collect(record_batch_ptr batch) override;
  void collect_side(std::size_t port, record_batch_ptr batch) override;
  void emit_watermark(event_time wm) override;
  void count_late(std::uint64_t n) override;
};

/// The runtime of one subtask: its operator chain, input gate, clock and
/// output channels. All methods run inside the actor's handlers.
class subtask_state {
public:
  subtask_state(caf::event_based_actor* self, subtask_spec spec)
    : self_(self),
      spec_(std::move(spec)),
      graph_(*spec_.ctx->graph),
      vertex_(spec_.ctx->plan.vertices[spec_.vertex]),
      gate_(spec_.ctx->plan.input_channels[spec_.vertex]),
      clock_(spec_.ctx->replay_clock()),
      aligner_(gate_.channels()),
      tracker_(gate_.channels()),
      held_(gate_.channels()) {
    exactly_once_ =
      graph_.options.checkpoint.mode == checkpointing_mode::exactly_once;
  }

  std::string describe(std::size_t k) const {
    const auto& node = graph_.nodes[vertex_.nodes[k]];
    return "operator '" + node.name + "' (" + node.kind + ") subtask "
           + std::to_string(spec_.subtask + 1) + "/"
           + std::to_string(vertex_.parallelism);
  }

  void open() {
    auto& ctx = *spec_.ctx;
    const auto n = vertex_.nodes.size();
    collectors_.resize(n);
    writers_of_.resize(n);
    for (std::size_t k = 0; k < n; ++k) {
      const auto& node = graph_.nodes[vertex_.nodes[k]];
      collectors_[k].st = this;
      collectors_[k].k = k;
      writers_of_[k].resize(std::max<std::size_t>(node.outputs.size(), 1));
      metrics_.push_back(&ctx.metrics.at(node.id, spec_.subtask));
    }
    for (std::size_t w = 0; w < spec_.writers.size(); ++w)
      writers_of_[spec_.writers[w].chain_index][spec_.writers[w].port].push_back(w);
    round_robin_.assign(spec_.writers.size(), spec_.subtask);
    for (const auto& oc : spec_.out_channels)
      channels_.push_back(out_channel{oc.target, oc.target_channel,
                                      ctx.credits_per_channel, {}});
    for (std::size_t k = 0; k < n; ++k) {
      current_ = k;
      const auto& node = graph_.nodes[vertex_.nodes[k]];
      operator_context octx{node.name, spec_.subtask, vertex_.parallelism,
                            graph_.options.max_parallelism, &clock_};
      if (node.is_source) {
        ops_.push_back(nullptr);
        open_source(node, octx);
      } else {
        auto& factory = graph_.options.checkpoint.enabled && node.make_transactional_operator
                          ? node.make_transactional_operator
                          : node.make_operator;
        ops_.push_back(factory());
        ops_.back()->open(octx);
      }
    }
    if (!spec_.restores.empty())
      restore();
    if (const auto& inj = graph_.options.inject_failure;
        inj && spec_.attempt == 0 && spec_.subtask == 0)
      for (std::size_t k = 0; k < n; ++k)
        if (graph_.nodes[vertex_.nodes[k]].name == inj->operator_name)
          inject_at_ = {k, inj->after_records};
    current_ = 0;
  }

  /// Hands each chain member its restored state (every member, even one
  /// without state: a two-phase-commit sink must learn it is restoring).
  void restore() {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      current_ = k;
      const auto& r = spec_.restores[k];
      if (!ops_[k]) {
        // A source: its operator state is the position to resume from (the
        // job manager checked that the parallelism is the one it ran with).
        if (r && !r->operator_states.empty() && !r->operator_states.front().empty())
          restore_source(r->operator_states.front());
        continue;
      }
      static const operator_restore empty;
      ops_[k]->restore_state(r ? *r : empty);
    }
    current_ = 0;
  }

  void open_source(const stream_node& node, const operator_context& octx) {
    auto* m = metrics_[0];
    auto policy = graph_.options.on_bad_record;
    auto* dlq = spec_.ctx->dead_letters.get();
    reader_ = node.make_source(spec_.subtask, vertex_.parallelism,
                               [m, policy, dlq](const bad_record& r) {
                                 m->bad_records.fetch_add(1, std::memory_order_relaxed);
                                 if (policy == bad_record_policy::fail)
                                   throw std::runtime_error("bad record at " + r.origin + ":"
                                                            + std::to_string(r.line) + ": "
                                                            + r.reason);
                                 if (policy == bad_record_policy::dead_letter && dlq)
                                   dlq->write(r);
                               });
    reader_->open(octx);
    time::source_watermarks::options wo;
    wo.max_out_of_orderness = node.watermark.max_out_of_orderness;
    wo.idle_timeout = node.watermark.idle_timeout;
    wo.declared_partitions = node.partitions;
    watermarks_.emplace(std::move(wo));
    partition_field_ = node.partition_field;
    processing_time_field_ = node.processing_time_field;
  }

  /// Parses what take_snapshot wrote for a source: "<position>\nclock <ms>\n"
  /// then the watermark generator's lines (a bare position is accepted too).
  void restore_source(const std::string& state) {
    std::string_view rest = state;
    auto nl = rest.find('\n');
    reader_->seek(std::stoull(std::string{rest.substr(0, nl)}));
    if (nl == std::string_view::npos)
      return;
    rest.remove_prefix(nl + 1);
    if (rest.substr(0, 6) == "clock ") {
      auto end = rest.find('\n');
      auto t = std::stoll(std::string{rest.substr(6, end - 6)});
      if (clock_.is_replay())
        clock_.advance(t);
      rest.remove_prefix(end == std::string_view::npos ? rest.size() : end + 1);
    }
    watermarks_->restore(rest);
  }

  bool is_source() const { return reader_ != nullptr; }

  bool blocked() const {
    for (const auto& c : channels_)
      if (!c.backlog.empty())
        return true;
    return false;
  }

  // -- producing -------------------------------------------------------------

  void emit(std::size_t k, std::size_t port, record_batch_ptr batch) {
    if (!batch || batch->num_rows == 0)
      return;
    const auto& node = graph_.nodes[vertex_.nodes[k]];
    auto rows = batch->num_rows;
    if (port < node.outputs.size() && node.outputs[port].counts_as_late)
      metrics_[k]->late_records.fetch_add(rows, std::memory_order_relaxed);
    else
      metrics_[k]->records_out.fetch_add(rows, std::memory_order_relaxed);
    for (auto w : writers_of_[k][port])
      write(w, batch);
    if (port == 0 && k + 1 < ops_.size()) {
      metrics_[k + 1]->records_in.fetch_add(rows, std::memory_order_relaxed);
      auto saved = current_;
      current_ = k + 1;
      maybe_inject(k + 1);
      // The last use of `batch`: an operator that is its sole owner here
      // (no network writer took it) may take its columns (projection).
      ops_[k + 1]->process_batch(batch, collectors_[k + 1]);
      current_ = saved;
    }
  }

  void count_late(std::size_t k, std::uint64_t n) {
    metrics_[k]->late_records.fetch_add(n, std::memory_order_relaxed);
  }

  /// Sends a control element on every network output of chain member `k`.
  void broadcast_from(std::size_t k, element_kind kind, event_time ts,
                      std::uint64_t checkpoint_id = 0) {
    for (auto& port_writers : writers_of_[k])
      for (auto w : port_writers)
        for (auto ch : spec_.writers[w].channels)
          push(ch, pending_element{kind, nullptr, ts, checkpoint_id});
  }

  /// Failure injection (tests of recovery): throws once the chosen chain
  /// member's input reaches the configured row count.
  void maybe_inject(std::size_t k) {
    if (inject_at_ && inject_at_->first == k
        && metrics_[k]->records_in.load(std::memory_order_relaxed) >= inject_at_->second) {
      inject_at_.reset();
      throw std::runtime_error("injected failure");
    }
  }

  // -- checkpoints -------------------------------------------------------------

  /// Snapshots every chain member for checkpoint n, forwards barrier n on
  /// every output (behind the data already queued) and hands the frozen state
  /// to the state writer; the ack goes to the job manager once it is written.
  void take_snapshot(std::uint64_t n, event_time trigger_ts, std::chrono::milliseconds align) {
    write_snapshot_request req;
    req.checkpoint_id = n;
    req.task = spec_.task_index;
    req.alignment = align;
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      if (ops_[k]) {
        current_ = k;
        ops_[k]->prepare_snapshot_pre_barrier(n, collectors_[k]);
      }
    }
    for (std::size_t k = 0; k < vertex_.nodes.size(); ++k) {
      current_ = k;
      const auto& node = graph_.nodes[vertex_.nodes[k]];
      operator_snapshot_entry e;
      e.operator_uid = node.name;
      e.subtask = static_cast<std::uint32_t>(spec_.subtask);
      e.parallelism = static_cast<std::uint32_t>(vertex_.parallelism);
      if (!ops_[k]) {
        // Position, replay clock and watermark generator: a resumed source
        // re-reads from the position and emits what an uninterrupted one would.
        auto pos = reader_->position();
        e.snapshot.operator_state = std::to_string(pos) + "\nclock "
                                    + std::to_string(clock_.is_replay() ? clock_.now() : 0)
                                    + "\n" + watermarks_->snapshot();
        // Files resume at a byte offset, generated sources at an event number.
        e.source_position =
          (node.kind == "file_source" ? "byte " : "event ") + std::to_string(pos);
      } else {
        ops_[k]->snapshot_state(n, e.snapshot);
      }
      req.operators.push_back(std::move(e));
    }
    current_ = 0;
    for (std::size_t k = 0; k < ops_.size(); ++k)
      broadcast_from(k, element_kind::barrier, trigger_ts, n);
    ++outstanding_writes_;
    auto jm = spec_.job_manager;
    self_->request(spec_.state_writer, caf::infinite, write_state_atom::value, std::move(req))
      .then(
        [this, jm](write_snapshot_result& r) {
          --outstanding_writes_;
          if (r.ok)
            self_->send(jm, std::move(r));
          else
            self_->send(jm, decline_checkpoint{r.checkpoint_id, spec_.task_index, r.error});
          maybe_quit();
        },
        [this, jm, n](caf::error& err) {
          --outstanding_writes_;
          self_->send(jm, decline_checkpoint{n, spec_.task_index,
                                             "state writer: " + to_string(err)});
          maybe_quit();
        });
  }

  /// Source: checkpoint n was triggered by the job manager.
  void on_trigger(const trigger_checkpoint& t) {
    if (finishing_) {
      self_->send(spec_.job_manager,
                  decline_checkpoint{t.checkpoint_id, spec_.task_index, "source finished"});
      return;
    }
    take_snapshot(t.checkpoint_id, t.timestamp, std::chrono::milliseconds{0});
  }

  void on_barrier(std::uint32_t channel, std::uint64_t n, event_time ts) {
    auto d = exactly_once_ ? aligner_.on_barrier(channel, n) : tracker_.on_barrier(channel, n);
    act_on(d, ts);
  }

  void act_on(const checkpoint::barrier_decision& d, event_time ts) {
    for (auto id : d.aborted)
      self_->send(spec_.job_manager,
                  decline_checkpoint{id, spec_.task_index, "aborted during alignment"});
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

  /// Processes what blocked channels held back, each channel in order.
  void release_held() {
    for (std::size_t c = 0; c < held_.size(); ++c) {
      while (!held_[c].empty() && !aligner_.is_blocked(c)) {
        auto e = std::move(held_[c].front());
        held_[c].pop_front();
        process(e);
      }
    }
  }

  void on_notify_complete(std::uint64_t n) {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      current_ = k;
      if (ops_[k])
        ops_[k]->notify_checkpoint_complete(n);
    }
    current_ = 0;
  }

  void on_cancel(std::uint64_t n) {
    if (exactly_once_)
      act_on(aligner_.on_cancel(n), 0);
  }

  void emit_watermark(std::size_t k, event_time wm) {
    metrics_[k]->watermark.store(wm, std::memory_order_relaxed);
    broadcast_from(k, element_kind::watermark, wm);
    if (k + 1 < ops_.size()) {
      metrics_[k + 1]->watermark.store(wm, std::memory_order_relaxed);
      auto saved = current_;
      current_ = k + 1;
      ops_[k + 1]->process_watermark(wm, collectors_[k + 1]);
      current_ = saved;
    }
  }

  /// Fires processing-time timers of every operator of the chain in order,
  /// then (replay clock) carries the advance downstream.
  void fire_processing_time(event_time now) {
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      if (!ops_[k])
        continue;
      current_ = k;
      ops_[k]->on_processing_time(now, collectors_[k]);
    }
    current_ = 0;
    if (clock_.is_replay())
      for (std::size_t k = 0; k < ops_.size(); ++k)
        broadcast_from(k, element_kind::processing_time, now);
  }

  /// Idleness of this whole subtask's output (all its inputs idle).
  void set_output_idle(bool idle) {
    if (idle == output_idle_)
      return;
    output_idle_ = idle;
    if (idle) {
      // Held-back output goes out before the idle marker.
      for (std::size_t k = 0; k < ops_.size(); ++k)
        if (ops_[k]) {
          current_ = k;
          ops_[k]->prepare_idle(collectors_[k]);
        }
      current_ = 0;
    }
    for (std::size_t k = 0; k < ops_.size(); ++k)
      broadcast_from(k, idle ? element_kind::idle : element_kind::active, 0);
  }

  void write(std::size_t w, const record_batch_ptr& batch) {
    auto& ws = spec_.writers[w];
    switch (ws.mode) {
      case partitioning::forward:
        push(ws.channels[0], pending_element{element_kind::batch, batch, 0});
        break;
      case partitioning::rebalance: {
        auto d = round_robin_[w]++ % ws.channels.size();
        push(ws.channels[d], pending_element{element_kind::batch, batch, 0});
        break;
      }
      case partitioning::hash: {
        const auto p = ws.target_parallelism;
        const auto maxp = graph_.options.max_parallelism;
        if (p == 1) {
          push(ws.channels[0], pending_element{element_kind::batch, batch, 0});
          break;
        }
        if (ws.key_fields.empty()) {
          // key_by nothing: every row has the same (empty) key.
          auto d = operator_index_for_key_group(assign_key_group({}, maxp), maxp, p);
          push(ws.channels[d], pending_element{element_kind::batch, batch, 0});
          break;
        }
        std::vector<std::vector<std::uint32_t>> rows(p);
        for (std::size_t r = 0; r < batch->num_rows; ++r) {
          scratch_.clear();
          encode_key(*batch, ws.key_fields, r, scratch_);
          auto group = assign_key_group(scratch_, maxp);
          rows[operator_index_for_key_group(group, maxp, p)].push_back(
            static_cast<std::uint32_t>(r));
        }
        for (std::size_t d = 0; d < p; ++d) {
          if (rows[d].empty())
            continue;
          auto part = rows[d].size() == batch->num_rows
                        ? batch
                        : std::make_shared<record_batch>(batch->take(rows[d]));
          push(ws.channels[d], pending_element{element_kind::batch, part, 0});
        }
        break;
      }
    }
  }

  void push(std::uint32_t ch, pending_element e) {
    auto& c = channels_[ch];
    if (c.backlog.empty() && (e.kind != element_kind::batch || c.credits > 0))
      send_now(ch, e);
    else
      c.backlog.push_back(std::move(e));
  }

  void send_now(std::uint32_t ch, const pending_element& e) {
    auto& c = channels_[ch];
    switch (e.kind) {
      case element_kind::batch:
        --c.credits;
        self_->send(c.target, batch_message{c.target_channel, ch, e.data});
        break;
      case element_kind::watermark:
        self_->send(c.target, watermark{c.target_channel, e.ts});
        break;
      case element_kind::end_of_input:
        self_->send(c.target, end_of_input{c.target_channel});
        break;
      case element_kind::idle:
      case element_kind::active:
        self_->send(c.target,
                    watermark_status{c.target_channel, e.kind == element_kind::idle});
        break;
      case element_kind::processing_time:
        self_->send(c.target, processing_time{c.target_channel, e.ts});
        break;
      case element_kind::barrier:
        self_->send(c.target, checkpoint_barrier{c.target_channel, e.checkpoint_id, e.ts});
        break;
    }
  }

  void on_credit(const credit& x) {
    auto& c = channels_[x.channel];
    c.credits += x.batches;
    while (!c.backlog.empty()) {
      auto& front = c.backlog.front();
      if (front.kind == element_kind::batch && c.credits == 0)
        break;
      send_now(x.channel, front);
      c.backlog.pop_front();
    }
    if (blocked())
      return;
    if (blocked_since_) {
      auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                  std::chrono::steady_clock::now() - *blocked_since_)
                  .count();
      metrics_[0]->backpressured_ns.fetch_add(static_cast<std::uint64_t>(ns),
                                              std::memory_order_relaxed);
      blocked_since_.reset();
    }
    resume();
  }

  void note_blocked() {
    if (!blocked_since_ && blocked())
      blocked_since_ = std::chrono::steady_clock::now();
  }

  // -- source ----------------------------------------------------------------

  /// Reads and emits one batch; returns false once the input is exhausted.
  bool poll_once() {
    current_ = 0;
    auto& gen = *watermarks_;
    gen.on_processing_time(clock_.now());
    auto batch = reader_->poll_next(graph_.options.batch_size);
    if (!batch)
      return false;
    if (batch->num_rows > 0) {
      if (processing_time_field_) {
        // Replay clock: the batch arrives at its first row's processing time.
        const auto& col = batch->columns[*processing_time_field_];
        if (col.is_valid(0) && clock_.advance(col.ints[0]))
          fire_processing_time(clock_.now());
      }
      if (batch->has_timestamps()) {
        const auto now = clock_.now();
        const column* part = partition_field_ ? &batch->columns[*partition_field_] : nullptr;
        if (part == nullptr) {
          // One partition: only the batch's largest timestamp matters.
          partition_name_.clear();
          gen.on_record(partition_name_, batch->max_timestamp(), now);
        }
        for (std::size_t r = 0; part != nullptr && r < batch->num_rows; ++r) {
          partition_name_.clear();
          if (part != nullptr && part->is_valid(r))
            partition_name_ = to_display_string(part->get(r));
          gen.on_record(partition_name_, batch->timestamps[r], now);
        }
      }
      set_output_idle(false);
      emit(0, 0, std::move(batch)); // (sole owner: see emit)
    }
    if (auto t = reader_->take_processing_time_advance(); t && clock_.advance(*t)) {
      gen.on_processing_time(clock_.now());
      fire_processing_time(clock_.now());
    }
    // Flink's BoundedOutOfOrdernessWatermarks: max - bound - 1 per partition,
    // minimum over active partitions, emitted after each batch.
    if (auto wm = gen.poll())
      emit_watermark(0, *wm);
    if (gen.all_idle())
      set_output_idle(true);
    return true;
  }

  void schedule_poll() {
    if (!poll_scheduled_ && !finishing_) {
      poll_scheduled_ = true;
      // A rate-limited source asks to wait rather than be polled in a spin.
      auto delay = reader_->next_poll_delay();
      if (delay.count() > 0)
        self_->delayed_send(self_, std::chrono::duration_cast<std::chrono::microseconds>(delay),
                            poll_atom::value);
      else
        self_->send(self_, poll_atom::value);
    }
  }

  void on_poll() {
    poll_scheduled_ = false;
    if (finishing_)
      return;
    if (blocked()) {
      note_blocked();
      return; // resumed by on_credit
    }
    if (poll_once()) {
      note_blocked();
      if (!blocked())
        schedule_poll();
      return;
    }
    emit_watermark(0, max_watermark);
    end_of_chain();
  }

  // -- task ------------------------------------------------------------------

  void on_input(inbox_element e) {
    if (blocked() || !inbox_.empty()) {
      inbox_.push_back(std::move(e));
      note_blocked();
      return;
    }
    process(e);
  }

  void process(inbox_element& e) {
    current_ = 0;
    if (exactly_once_ && aligner_.is_blocked(e.channel)) {
      // Nothing after barrier n on this channel may enter snapshot n.
      held_[e.channel].push_back(std::move(e));
      return;
    }
    switch (e.kind) {
      case element_kind::barrier:
        on_barrier(e.channel, e.checkpoint_id, e.ts);
        break;
      case element_kind::batch:
        metrics_[0]->records_in.fetch_add(e.data->num_rows, std::memory_order_relaxed);
        maybe_inject(0);
        ops_[0]->process_batch(e.data, collectors_[0]);
        // Processed: return the credit to the sender.
        self_->send(caf::actor_cast<caf::actor>(e.sender), credit{e.credit_channel, 1});
        break;
      case element_kind::watermark:
        if (auto wm = gate_.on_watermark(e.channel, e.ts))
          advance_watermark(*wm);
        set_output_idle(gate_.all_idle());
        break;
      case element_kind::idle:
      case element_kind::active:
        if (auto wm = gate_.on_idle(e.channel, e.kind == element_kind::idle))
          advance_watermark(*wm);
        set_output_idle(gate_.all_idle());
        break;
      case element_kind::processing_time:
        if (clock_.advance(e.ts))
          fire_processing_time(clock_.now());
        break;
      case element_kind::end_of_input: {
        // An ended channel counts as aligned for a pending checkpoint.
        auto d = exactly_once_ ? aligner_.on_end_of_input(e.channel)
                               : tracker_.on_end_of_input(e.channel);
        if (auto wm = gate_.on_end_of_input(e.channel))
          advance_watermark(*wm);
        act_on(d, 0);
        if (gate_.all_ended())
          end_of_chain();
        break;
      }
    }
    note_blocked();
  }

  void advance_watermark(event_time wm) {
    metrics_[0]->watermark.store(wm, std::memory_order_relaxed);
    ops_[0]->process_watermark(wm, collectors_[0]);
  }

  void resume() {
    if (is_source()) {
      schedule_poll();
    } else {
      while (!inbox_.empty() && !blocked()) {
        auto e = std::move(inbox_.front());
        inbox_.pop_front();
        process(e);
      }
    }
    maybe_quit();
  }

  // -- wall-clock processing-time timers ---------------------------------------

  /// Schedules a wake-up for the earliest processing-time timer of the chain.
  void schedule_wakeup() {
    if (clock_.is_replay() || finishing_)
      return;
    std::optional<event_time> next;
    for (const auto& op : ops_)
      if (op)
        if (auto t = op->next_processing_timer(); t && (!next || *t < *next))
          next = t;
    if (!next || (wakeup_at_ && *wakeup_at_ <= *next))
      return;
    wakeup_at_ = next;
    auto delay = std::max<event_time>(0, *next - system_now_ms());
    self_->delayed_send(self_, std::chrono::milliseconds{delay}, wake_atom::value);
  }

  void on_wake() {
    wakeup_at_.reset();
    fire_processing_time(clock_.now());
  }

  // -- ending ----------------------------------------------------------------

  void end_of_chain() {
    if (finishing_)
      return; // a released end of input may complete the chain first
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      current_ = k;
      if (ops_[k])
        ops_[k]->finish(collectors_[k]);
    }
    for (std::uint32_t ch = 0; ch < channels_.size(); ++ch)
      push(ch, pending_element{element_kind::end_of_input, nullptr, 0});
    finishing_ = true;
    maybe_quit();
  }

  void maybe_quit() {
    if (finishing_ && !blocked() && outstanding_writes_ == 0)
      self_->quit();
  }

  void fail(const std::string& what) {
    auto msg = describe(current_) + " failed: " + what;
    spec_.ctx->fail(msg);
    self_->quit(caf::make_error(caf::sec::runtime_error, msg));
  }

private:
  caf::event_based_actor* self_;
  subtask_spec spec_;
  const job_graph& graph_;
  const chain_vertex& vertex_;
  input_gate gate_;
  task_clock clock_;
  std::vector<stream_operator_ptr> ops_;
  std::vector<chain_collector> collectors_;
  std::vector<std::vector<std::vector<std::size_t>>> writers_of_;
  std::vector<std::size_t> round_robin_;
  std::vector<out_channel> channels_;
  std::vector<subtask_metrics*> metrics_;
  std::deque<inbox_element> inbox_;
  source_reader_ptr reader_;
  std::optional<time::source_watermarks> watermarks_;
  std::optional<std::size_t> partition_field_;
  std::optional<std::size_t> processing_time_field_;
  std::string partition_name_;
  bool output_idle_ = false;
  bool poll_scheduled_ = false;
  bool finishing_ = false;
  std::size_t current_ = 0;
  std::optional<event_time> wakeup_at_;
  bool exactly_once_ = true;
  checkpoint::barrier_aligner aligner_;
  checkpoint::barrier_tracker tracker_;
  std::vector<std::deque<inbox_element>> held_;
  std::chrono::steady_clock::time_point align_started_;
  std::size_t outstanding_writes_ = 0;
  std::optional<std::pair<std::size_t, std::uint64_t>> inject_at_;
  std::optional<std::chrono::steady_clock::time_point> blocked_since_;
  std::string scratch_;
};

void chain_collector::collect(record_batch_ptr batch) {
  st->emit(k, 0, std::move(batch));
}

void chain_collector::collect_side(std::size_t port, record_batch_ptr batch) {
  st->emit(k, port, std::move(batch));
}

void chain_collector::emit_watermark(event_time wm) {
  st->emit_watermark(k, wm);
}

void chain_collector::count_late(std::uint64_t n) {
  st->count_late(k, n);
}

/// Runs `f`, turning any exception into a failure of the subtask; then
/// re-arms the wall-clock timer wake-up.
template <class F>
bool guarded(subtask_state& st, F&& f) {
  try {
    f();
    st.schedule_wakeup();
    return true;
  } catch (const std::exception& e) {
    st.fail(e.what());
  } catch (...) {
    st.fail("unknown exception");
  }
  return false;
}

caf::behavior subtask_actor(caf::event_based_actor* self, subtask_spec spec) {
  auto st = std::make_shared<subtask_state>(self, std::move(spec));
  self->set_default_handler([st](caf::scheduled_actor*, caf::message_view& x)
                              -> caf::result<caf::message> {
    st->fail("unexpected message: " + to_string(x.copy_content_to_message()));
    return caf::message{};
  });
  bool ok = guarded(*st, [&] { st->open(); });
  if (ok && st->is_source())
    st->schedule_poll();
  auto input = [st](element_kind kind, std::uint32_t channel, event_time ts) {
    guarded(*st, [&] {
      st->on_input(inbox_element{kind, channel, nullptr, ts, nullptr, 0});
    });
  };
  return {
    [st](poll_atom) { guarded(*st, [&] { st->on_poll(); }); },
    [st](wake_atom) { guarded(*st, [&] { st->on_wake(); }); },
    [st, self](batch_message& m) {
      guarded(*st, [&] {
        st->on_input(inbox_element{element_kind::batch, m.channel, std::move(m.batch), 0,
                                   self->current_sender(), m.credit_channel});
      });
    },
    [input](const watermark& m) { input(element_kind::watermark, m.channel, m.ts); },
    [input](const watermark_status& m) {
      input(m.idle ? element_kind::idle : element_kind::active, m.channel, 0);
    },
    [input](const processing_time& m) {
      input(element_kind::processing_time, m.channel, m.ts);
    },
    [input](const end_of_input& m) { input(element_kind::end_of_input, m.channel, 0); },
    [st](const checkpoint_barrier& m) {
      guarded(*st, [&] {
        inbox_element e{element_kind::barrier, m.channel, nullptr, m.timestamp, nullptr, 0};
        e.checkpoint_id = m.checkpoint_id;
        st->on_input(std::move(e));
      });
    },
    [st](const trigger_checkpoint& m) { guarded(*st, [&] { st->on_trigger(m); }); },
    [st](const notify_checkpoint_complete& m) {
      guarded(*st, [&] { st->on_notify_complete(m.checkpoint_id); });
    },
    [st](const cancel_checkpoint& m) { guarded(*st, [&] { st->on_cancel(m.checkpoint_id); }); },
    [st](const credit& m) { guarded(*st, [&] { st->on_credit(m); }); },
  };
}

} // namespace

caf::actor spawn_subtask(caf::actor_system& sys, subtask_spec spec) {
  return sys.spawn(subtask_actor, std::move(spec));
}

} // namespace weir::runtime
