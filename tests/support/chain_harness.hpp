// SPDX-License-Identifier: Apache-2.0
#pragma once

// Drives one subtask of a job graph without CAF: the test scripts the order
// in which elements arrive on its input channels, grants credits to its
// output channels, triggers checkpoints and completes their writes; the
// harness records everything the subtask sends, the credits it returns, the
// snapshots it takes and the checkpoints it declines.

#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/job_metrics.hpp"
#include "weir/runtime/subtask.hpp"
#include "weir/runtime/subtask_environment.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::testing {

struct chain_harness_options {
  std::size_t vertex = 0;  ///< the chain (index into the plan's vertices)
  std::size_t subtask = 0; ///< which of its subtasks
  std::uint32_t credits = 8;
  std::size_t attempt = 1; ///< 1: no failure injection
  /// Restoring: one entry per chain member; empty = fresh.
  std::vector<std::shared_ptr<const operator_restore>> restores = {};
};

class chain_harness final : public runtime::subtask_environment {
public:
  using options = chain_harness_options;

  /// Plans `graph` and builds (does not open) the subtask.
  explicit chain_harness(std::shared_ptr<runtime::job_graph> graph, options o = {})
    : graph_(std::move(graph)),
      plan_(runtime::build_execution_plan(*graph_)),
      metrics_(*graph_) {
    auto outs = runtime::plan_subtask_outputs(*graph_, plan_, o.vertex, o.subtask);
    targets = outs.channels;
    runtime::subtask_config c;
    c.graph = graph_.get();
    c.plan = &plan_;
    c.metrics = &metrics_;
    c.vertex = o.vertex;
    c.subtask = o.subtask;
    c.credits_per_channel = o.credits;
    c.attempt = o.attempt;
    c.writers = std::move(outs.writers);
    c.out_channels = targets.size();
    c.restores = std::move(o.restores);
    for (const auto& n : graph_->nodes)
      c.replay_clock = c.replay_clock || n.processing_time_field.has_value();
    sent.resize(targets.size());
    credits_returned.resize(plan_.input_channels[o.vertex]);
    subtask_.emplace(std::move(c), *this);
  }

  runtime::subtask& task() { return *subtask_; }
  const runtime::execution_plan& plan() const { return plan_; }
  runtime::job_metrics& metrics() { return metrics_; }

  void open() { subtask_->open(); }

  // -- input -------------------------------------------------------------------

  void batch(std::uint32_t ch, record_batch_ptr b) {
    input({runtime::element_kind::batch, ch, std::move(b), 0, 0});
  }
  void watermark(std::uint32_t ch, event_time wm) {
    input({runtime::element_kind::watermark, ch, nullptr, wm, 0});
  }
  void idle(std::uint32_t ch, bool is_idle = true) {
    input({is_idle ? runtime::element_kind::idle : runtime::element_kind::active, ch,
           nullptr, 0, 0});
  }
  void end_of_input(std::uint32_t ch) {
    input({runtime::element_kind::end_of_input, ch, nullptr, 0, 0});
  }
  /// End of input of a stopped upstream (a graceful stop: no draining).
  void stopped(std::uint32_t ch) {
    input({runtime::element_kind::end_of_input, ch, nullptr, 0, 0, false});
  }
  void barrier(std::uint32_t ch, std::uint64_t id, event_time ts = 0) {
    input({runtime::element_kind::barrier, ch, nullptr, ts, id});
  }
  void input(runtime::input_element e) {
    subtask_->on_input(std::move(e));
    subtask_->schedule_wakeup();
  }

  /// Returns `n` credits on output channel `ch`.
  void grant(std::uint32_t ch, std::uint32_t n = 1) {
    subtask_->on_credit(ch, n);
    subtask_->schedule_wakeup();
  }

  /// Source: polls while a poll is asked for, at most `max_polls` times;
  /// returns how many polls ran.
  std::size_t run_source(std::size_t max_polls = 1'000'000) {
    std::size_t polls = 0;
    while (poll_requested && polls < max_polls) {
      poll_requested = false;
      subtask_->on_poll();
      ++polls;
    }
    return polls;
  }

  // -- checkpoints -------------------------------------------------------------

  void trigger(std::uint64_t id, event_time ts = 0) { subtask_->on_trigger(id, ts); }
  /// Source: a graceful stop, after final checkpoint `id` unless 0.
  void stop(std::uint64_t id = 0, event_time ts = 0) { subtask_->on_stop(id, ts); }
  void cancel(std::uint64_t id) { subtask_->on_cancel(id); }
  void notify_complete(std::uint64_t id) { subtask_->on_notify_complete(id); }
  /// Completes every snapshot write handed out so far.
  void complete_writes() {
    for (; writes_completed_ < snapshots.size(); ++writes_completed_)
      subtask_->on_snapshot_written();
  }

  /// What a subtask restoring from `snapshot` receives, member by member:
  /// its operator state (keyed state is not carried).
  static std::vector<std::shared_ptr<const operator_restore>>
  restores_of(const runtime::write_snapshot_request& snapshot) {
    std::vector<std::shared_ptr<const operator_restore>> out;
    for (const auto& e : snapshot.operators) {
      auto r = std::make_shared<operator_restore>();
      r->checkpoint_id = snapshot.checkpoint_id;
      r->operator_states.push_back(e.snapshot.operator_state);
      r->previous_parallelism = e.parallelism;
      out.push_back(std::move(r));
    }
    return out;
  }

  // -- what went out -------------------------------------------------------------

  /// The batches sent on output channel `ch`, in order.
  std::vector<record_batch_ptr> batches(std::size_t ch) const {
    std::vector<record_batch_ptr> out;
    for (const auto& e : sent[ch])
      if (e.kind == runtime::element_kind::batch)
        out.push_back(e.data);
    return out;
  }
  /// The watermarks sent on output channel `ch`, in order.
  std::vector<event_time> watermarks(std::size_t ch) const {
    std::vector<event_time> out;
    for (const auto& e : sent[ch])
      if (e.kind == runtime::element_kind::watermark)
        out.push_back(e.ts);
    return out;
  }
  /// The kinds of the elements sent on `ch`, in order ("b" batch, "w"
  /// watermark, "|n" barrier n, "e" end of input, "s" end of a stopped
  /// input, "i"/"a" idle/active, "p").
  std::string trace(std::size_t ch) const {
    std::string out;
    for (const auto& e : sent[ch]) {
      if (!out.empty())
        out += ' ';
      out += describe(e);
    }
    return out;
  }
  /// Every element sent, on any channel, in the order sent: "ch:kind" as in
  /// `trace` ("0:b4 1:b4 0:w2 1:w2").
  std::string trace_all() const {
    std::string out;
    std::vector<std::size_t> next(sent.size(), 0);
    for (auto ch : send_order) {
      if (!out.empty())
        out += ' ';
      out += std::to_string(ch) + ":" + describe(sent[ch][next[ch]++]);
    }
    return out;
  }
  static std::string describe(const runtime::output_element& e) {
    switch (e.kind) {
      case runtime::element_kind::batch: return "b" + std::to_string(e.data->num_rows);
      case runtime::element_kind::watermark: return "w" + std::to_string(e.ts);
      case runtime::element_kind::end_of_input: return e.drain ? "e" : "s";
      case runtime::element_kind::idle: return "i";
      case runtime::element_kind::active: return "a";
      case runtime::element_kind::processing_time: return "p";
      case runtime::element_kind::barrier: return "|" + std::to_string(e.checkpoint_id);
    }
    return "?";
  }

  // -- subtask_environment -------------------------------------------------------

  void send(std::uint32_t ch, const runtime::output_element& e) override {
    sent[ch].push_back(e);
    send_order.push_back(ch);
  }
  void return_credit(std::uint32_t ch) override { ++credits_returned[ch]; }
  void write_snapshot(runtime::write_snapshot_request req) override {
    snapshots.push_back(std::move(req));
  }
  void decline_checkpoint(std::uint64_t id, std::string reason) override {
    declines.emplace_back(id, std::move(reason));
  }
  void request_poll(std::chrono::nanoseconds) override { poll_requested = true; }
  void request_wakeup(std::chrono::milliseconds delay) override { wakeups.push_back(delay); }
  void final_state(runtime::write_snapshot_request req) override {
    final_states.push_back(std::move(req));
  }
  void finished() override { is_finished = true; }

  std::vector<runtime::output_channel_target> targets; ///< per output channel
  std::vector<std::vector<runtime::output_element>> sent; ///< per output channel
  std::vector<std::uint32_t> send_order; ///< the channel of each element sent, in order
  std::vector<std::size_t> credits_returned;              ///< per input channel
  std::vector<runtime::write_snapshot_request> snapshots;
  std::vector<std::pair<std::uint64_t, std::string>> declines;
  std::vector<runtime::write_snapshot_request> final_states;
  std::vector<std::chrono::milliseconds> wakeups;
  bool poll_requested = false;
  bool is_finished = false;

private:
  std::shared_ptr<runtime::job_graph> graph_;
  runtime::execution_plan plan_;
  runtime::job_metrics metrics_;
  std::optional<runtime::subtask> subtask_;
  std::size_t writes_completed_ = 0;
};

} // namespace weir::testing
