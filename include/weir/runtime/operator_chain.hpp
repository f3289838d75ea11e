// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/stream_operator.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/runtime/dead_letter_queue.hpp"
#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_metrics.hpp"
#include "weir/runtime/output_channels.hpp"
#include "weir/runtime/record_writer.hpp"
#include "weir/runtime/subtask_clock.hpp"
#include "weir/runtime/subtask_snapshot.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::runtime {

/// The operators of one subtask's chain and the record writers of its
/// network edges (Flink's `OperatorChain`). The members form a tree
/// (`chain_vertex`): member 0 is the head, and each member's main output
/// feeds its chained successors through direct calls, one after the other
/// in declaration order (Flink's `BroadcastingOutputCollector`), after its
/// network edges on that port, each with its own `record_writer`. Every
/// successor gets the same batch: all but the last see it shared
/// (`use_count() > 1`), so none takes its columns from under the others. A
/// source head has no operator (member 0 is then driven by a
/// `source_driver`, which emits through `emit(0, ...)`).
///
/// Metrics: member k's records_in / records_out / late_records / watermark
/// are counted here as batches pass. `current()` is the member being called,
/// for the message of a failure. Not thread-safe: one subtask's thread.
class operator_chain {
public:
  /// `vertex` is the chain; `writers` the network edges leaving it (from
  /// `plan_subtask_outputs`); `out` its output channels. All but `writers`
  /// must outlive the chain.
  operator_chain(const job_graph& g, const chain_vertex& vertex, std::size_t subtask,
                 job_metrics& metrics, std::vector<writer_spec> writers,
                 output_channels& out, subtask_clock& clock);

  operator_chain(const operator_chain&) = delete;
  operator_chain& operator=(const operator_chain&) = delete;

  std::size_t size() const noexcept { return nodes_.size(); }
  bool head_is_source() const noexcept { return !ops_.empty() && !ops_[0]; }
  const stream_node& node(std::size_t k) const { return *nodes_[k]; }
  subtask_metrics& metrics(std::size_t k) { return *metrics_[k]; }
  /// What member k's operator (or source reader) is opened with.
  operator_context context(std::size_t k) const;

  /// Where the operators' bad records go (`operator_context::on_bad_record`
  /// applies the job's `on_bad_record` with it); null: none is written.
  /// Call before `open`; `dlq` must outlive the chain.
  /// `writer` and `attempt`: the subtask's task index and restart attempt
  /// (`dead_letter_queue::write`).
  void set_dead_letters(dead_letter_queue* dlq, std::uint32_t writer = 0,
                        std::size_t attempt = 0) noexcept {
    dead_letters_ = dlq;
    dead_letter_writer_ = writer;
    dead_letter_attempt_ = attempt;
  }

  /// Makes and opens every member's operator but a source head's, first to
  /// last. `transactional`: sinks with a two-phase-commit variant use it.
  /// `attempt` (0 = first run) arms the graph's failure injection.
  void open(bool transactional, std::size_t attempt);

  /// Hands each operator member its restored state (every one, even one
  /// without state: a two-phase-commit sink must learn it is restoring).
  /// `restores[k]` may be null; a source head's entry is skipped.
  void restore(const std::vector<std::shared_ptr<const operator_restore>>& restores);

  // -- input at the head -------------------------------------------------------

  /// A batch from the network at the head.
  void process_batch(const record_batch_ptr& batch) {
    auto seen = metrics_[0]->records_in.fetch_add(batch->num_rows, std::memory_order_relaxed);
    metrics_[0]->bytes_in.fetch_add(batch_bytes(*batch), std::memory_order_relaxed);
    if (taps_[0] && taps_[0]->active())
      taps_[0]->publish(batch, subtask_, seen);
    current_ = 0;
    maybe_inject(0);
    ops_[0]->process_batch(batch, collectors_[0]);
  }

  /// The subtask's combined input watermark advanced to `wm`.
  void process_watermark(event_time wm) {
    current_ = 0;
    metrics_[0]->watermark.store(wm, std::memory_order_relaxed);
    ops_[0]->process_watermark(wm, collectors_[0]);
  }

  /// True when the head is a `two_input_stream_operator` (its node has
  /// `num_inputs == 2`).
  bool head_has_two_inputs() const noexcept { return head2_ != nullptr; }

  /// A batch of the head's input 2 (two-input head only).
  void process_batch2(const record_batch_ptr& batch) {
    metrics_[0]->records_in.fetch_add(batch->num_rows, std::memory_order_relaxed);
    metrics_[0]->bytes_in.fetch_add(batch_bytes(*batch), std::memory_order_relaxed);
    current_ = 0;
    maybe_inject(0);
    head2_->process_batch2(batch, collectors_[0]);
  }

  /// Two-input head: the watermark of input `input` (0 or 1) advanced.
  void process_input_watermark(std::size_t input, event_time wm) {
    current_ = 0;
    if (input == 0)
      head2_->process_watermark1(wm, collectors_[0]);
    else
      head2_->process_watermark2(wm, collectors_[0]);
    metrics_[0]->watermark.store(head2_->combined_watermark(), std::memory_order_relaxed);
  }

  /// Two-input head: input `input` went idle or active.
  void process_input_status(std::size_t input, bool idle) {
    current_ = 0;
    head2_->process_watermark_status(input, idle, collectors_[0]);
    metrics_[0]->watermark.store(head2_->combined_watermark(), std::memory_order_relaxed);
  }

  // -- output of member k --------------------------------------------------------

  /// Member k emitted `batch` on `port`: counts it, writes it on every
  /// network edge of that port and (main output) calls each chained
  /// successor of member k in turn. O(edges + successors) per batch.
  void emit(std::size_t k, std::size_t port, record_batch_ptr batch);
  /// Member k emitted watermark `wm`: to its network edges, then to each
  /// chained successor in turn.
  void emit_watermark(std::size_t k, event_time wm);
  void count_late(std::size_t k, std::uint64_t n) {
    metrics_[k]->late_records.fetch_add(n, std::memory_order_relaxed);
  }
  void count_dropped_partial_matches(std::size_t k, std::uint64_t n) {
    metrics_[k]->partial_matches_dropped.fetch_add(n, std::memory_order_relaxed);
  }

  /// Sends a control element on every network output of member `k`.
  void broadcast_from(std::size_t k, const output_element& e);
  /// Sends a control element on every network output of every member.
  void broadcast(const output_element& e) {
    for (std::size_t k = 0; k < ops_.size(); ++k)
      broadcast_from(k, e);
  }

  // -- chain-wide events ---------------------------------------------------------

  /// Fires processing-time timers of every operator in order, then (replay
  /// clock) carries the advance downstream.
  void fire_processing_time(event_time now);

  /// The earliest processing-time timer of any member.
  std::optional<event_time> next_processing_timer() const;

  /// Idleness of the subtask's whole output (all its inputs idle): on a
  /// change, members emit what they hold back (`prepare_idle`, going idle)
  /// and an idle/active marker goes out on every network output.
  void set_output_idle(bool idle);
  bool output_idle() const noexcept { return output_idle_; }

  /// Checkpoint n: `prepare_snapshot_pre_barrier` on every member, first to
  /// last.
  void prepare_snapshot_pre_barrier(std::uint64_t checkpoint_id);
  /// Checkpoint n: member k's operator state (k must not be a source head).
  void snapshot_member(std::size_t k, std::uint64_t checkpoint_id, operator_snapshot& out);
  void notify_checkpoint_complete(std::uint64_t checkpoint_id);
  /// Whether member k is a two-phase-commit sink
  /// (`stream_operator::is_two_phase_commit`; false for a source head).
  bool is_two_phase_commit(std::size_t k) const {
    return k < ops_.size() && ops_[k] && ops_[k]->is_two_phase_commit();
  }
  /// Whether any member is one.
  bool has_two_phase_commit() const {
    for (std::size_t k = 0; k < ops_.size(); ++k)
      if (is_two_phase_commit(k))
        return true;
    return false;
  }
  /// `stream_operator::abort_transactions` on every member; the first
  /// exception is rethrown after every member was called.
  void abort_transactions(std::uint64_t keep_up_to);
  /// Member k's `stream_operator::query_state` (nullopt for a source head).
  std::optional<std::string> query_state(std::size_t k, std::string_view encoded_key) {
    return k < ops_.size() && ops_[k] ? ops_[k]->query_state(encoded_key) : std::nullopt;
  }

  /// Every input ended: `finish` on every member in order, then end of
  /// input on every output channel. With `drain` false (the job is being
  /// stopped) `stop` instead of `finish`, and the end of input says so.
  void finish(bool drain = true);

  /// The member being called, and its description for failure messages:
  /// "operator 'name' (kind) subtask i/p".
  std::size_t current() const noexcept { return current_; }
  void set_current(std::size_t k) noexcept { current_ = k; }
  std::string describe(std::size_t k) const;

private:
  struct collector final : output_collector {
    operator_chain* chain = nullptr;
    std::size_t k = 0;
    void collect(record_batch_ptr batch) override;
    void collect_side(std::size_t port, record_batch_ptr batch) override;
    void emit_watermark(event_time wm) override;
    void count_late(std::uint64_t n) override;
    void count_dropped_partial_matches(std::uint64_t n) override;
  };

  /// Failure injection (tests of recovery): throws once the chosen member's
  /// input reaches the configured row count.
  void maybe_inject(std::size_t k) {
    if (inject_at_ && inject_at_->first == k)
      inject_now(k);
  }
  void inject_now(std::size_t k);

  /// Hands `batch` (`rows` rows, `bytes` bytes) to chained member `k`.
  /// Always inlined: the straight chain's hot path (one successor) must
  /// cost no call more than calling the next member directly did.
  [[gnu::always_inline]] void push_to(std::size_t k, const record_batch_ptr& batch,
                                      std::uint64_t rows, std::uint64_t bytes);
  /// Hands watermark `wm` to chained member `k` (inlined as `push_to`).
  [[gnu::always_inline]] void watermark_to(std::size_t k, event_time wm);
  /// Hands `batch` to each chained successor of member `k` in order,
  /// keeping it shared until the last one.
  void fan_out(std::size_t k, const record_batch_ptr& batch, std::uint64_t rows,
               std::uint64_t bytes);

  const job_graph* graph_;
  const chain_vertex* vertex_;
  std::size_t subtask_;
  std::vector<const stream_node*> nodes_;
  std::vector<subtask_metrics*> metrics_;
  std::vector<batch_tap*> taps_; ///< per member: its tap if it is a sink, else null
  std::vector<stream_operator_ptr> ops_; ///< null for a source head
  two_input_stream_operator* head2_ = nullptr; ///< ops_[0] if it has two inputs
  std::vector<collector> collectors_;
  /// Chained successors of member k: successors_[successor_begin_[k],
  /// successor_begin_[k + 1]).
  std::vector<std::size_t> successor_begin_;
  std::vector<std::size_t> successors_;
  /// Per member: its one chained successor, or `no_successor`, or
  /// `several_successors` (then see successors_). One load and one compare
  /// on the straight chain's hot path, as `k + 1 < size()` was.
  std::vector<std::size_t> next_;
  static constexpr std::size_t no_successor = static_cast<std::size_t>(-1);
  static constexpr std::size_t several_successors = no_successor - 1;
  std::vector<writer_spec> writer_specs_;
  std::vector<record_writer> writers_;
  /// writers_of_[k][port]: indices into writers_ of member k's port.
  std::vector<std::vector<std::vector<std::size_t>>> writers_of_;
  output_channels* out_;
  subtask_clock* clock_;
  bool output_idle_ = false;
  std::size_t current_ = 0;
  std::optional<std::pair<std::size_t, std::uint64_t>> inject_at_;
  dead_letter_queue* dead_letters_ = nullptr;
  std::uint32_t dead_letter_writer_ = 0;
  std::size_t dead_letter_attempt_ = 0;
};

} // namespace weir::runtime
