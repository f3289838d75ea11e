// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/operator_chain.hpp"

#include "weir/core/test_fault.hpp"

#include <algorithm>
#include <exception>
#include <stdexcept>
#include <string>

namespace weir::runtime {

operator_chain::operator_chain(const job_graph& g, const chain_vertex& vertex,
                               std::size_t subtask, job_metrics& metrics,
                               std::vector<writer_spec> writers, output_channels& out,
                               subtask_clock& clock)
  : graph_(&g),
    vertex_(&vertex),
    subtask_(subtask),
    writer_specs_(std::move(writers)),
    out_(&out),
    clock_(&clock) {
  const auto n = vertex.nodes.size();
  collectors_.resize(n);
  writers_of_.resize(n);
  for (std::size_t k = 0; k < n; ++k) {
    const auto& node = g.nodes[vertex.nodes[k]];
    nodes_.push_back(&node);
    collectors_[k].chain = this;
    collectors_[k].k = k;
    writers_of_[k].resize(std::max<std::size_t>(node.outputs.size(), 1));
    metrics_.push_back(&metrics.at(node.id, subtask));
    taps_.push_back(node.is_sink ? &metrics.tap(node.id) : nullptr);
  }
  if (vertex.chained_successors.size() != n)
    throw std::logic_error("chain '" + vertex.name + "': successors of "
                           + std::to_string(vertex.chained_successors.size()) + " members, not "
                           + std::to_string(n));
  successor_begin_.reserve(n + 1);
  next_.reserve(n);
  for (std::size_t k = 0; k < n; ++k) {
    const auto& succ = vertex.chained_successors[k];
    successor_begin_.push_back(successors_.size());
    successors_.insert(successors_.end(), succ.begin(), succ.end());
    next_.push_back(succ.empty()      ? no_successor
                    : succ.size() > 1 ? several_successors
                                      : succ.front());
  }
  successor_begin_.push_back(successors_.size());
  writers_.reserve(writer_specs_.size());
  for (std::size_t w = 0; w < writer_specs_.size(); ++w) {
    writers_.emplace_back(writer_specs_[w], subtask, g.options.max_parallelism);
    writers_of_[writer_specs_[w].chain_index][writer_specs_[w].port].push_back(w);
  }
}

operator_context operator_chain::context(std::size_t k) const {
  operator_context ctx{nodes_[k]->name, subtask_, vertex_->parallelism,
                       graph_->options.max_parallelism, clock_};
  // As a source's bad records (subtask.cpp): counted on the operator, then
  // by the job's policy.
  ctx.on_bad_record = [m = metrics_[k], policy = graph_->options.on_bad_record,
                       dlq = dead_letters_, writer = dead_letter_writer_,
                       attempt = dead_letter_attempt_, name = nodes_[k]->name](const bad_record& r) {
    m->bad_records.fetch_add(1, std::memory_order_relaxed);
    if (policy == bad_record_policy::fail)
      throw std::runtime_error("operator '" + name + "': bad record at " + r.origin + ": "
                               + r.reason);
    if (policy == bad_record_policy::dead_letter && dlq)
      dlq->write(r, writer, attempt);
  };
  return ctx;
}

void operator_chain::open(bool transactional, std::size_t attempt) {
  for (std::size_t k = 0; k < nodes_.size(); ++k) {
    current_ = k;
    const auto& node = *nodes_[k];
    if (node.is_source) {
      ops_.push_back(nullptr);
      continue;
    }
    auto& factory = transactional && node.make_transactional_operator
                      ? node.make_transactional_operator
                      : node.make_operator;
    ops_.push_back(factory());
    if (k == 0 && node.num_inputs == 2) {
      head2_ = dynamic_cast<two_input_stream_operator*>(ops_.back().get());
      if (!head2_)
        throw std::logic_error("a node with two inputs needs a two_input_stream_operator");
    }
    ops_.back()->open(context(k));
  }
  if (const auto& inj = graph_->options.inject_failure; inj && attempt == 0 && subtask_ == 0)
    for (std::size_t k = 0; k < nodes_.size(); ++k)
      if (nodes_[k]->name == inj->operator_name)
        inject_at_ = {k, inj->after_records};
  current_ = 0;
}

void operator_chain::restore(
  const std::vector<std::shared_ptr<const operator_restore>>& restores) {
  static const operator_restore empty;
  for (std::size_t k = 0; k < ops_.size() && k < restores.size(); ++k) {
    if (!ops_[k])
      continue;
    current_ = k;
    const auto& r = restores[k];
    ops_[k]->restore_state(r ? *r : empty);
    // Test-only: a kill once this exactly-once sink has settled the
    // transactions of the restored checkpoint, the other subtasks maybe not.
    if (ops_[k]->is_two_phase_commit())
      weir::internal::test_fault_kill("kill_in_restore");
  }
  current_ = 0;
}

void operator_chain::inject_now(std::size_t k) {
  if (metrics_[k]->records_in.load(std::memory_order_relaxed) >= inject_at_->second) {
    inject_at_.reset();
    throw std::runtime_error("injected failure");
  }
}

inline void operator_chain::push_to(std::size_t k, const record_batch_ptr& batch,
                                    std::uint64_t rows, std::uint64_t bytes) {
  auto seen = metrics_[k]->records_in.fetch_add(rows, std::memory_order_relaxed);
  metrics_[k]->bytes_in.fetch_add(bytes, std::memory_order_relaxed);
  if (taps_[k] && taps_[k]->active())
    taps_[k]->publish(batch, subtask_, seen);
  auto saved = current_;
  current_ = k;
  maybe_inject(k);
  ops_[k]->process_batch(batch, collectors_[k]);
  current_ = saved;
}

void operator_chain::emit(std::size_t k, std::size_t port, record_batch_ptr batch) {
  if (!batch || batch->num_rows == 0)
    return;
  const auto& node = *nodes_[k];
  auto rows = batch->num_rows;
  const auto bytes = batch_bytes(*batch);
  if (port < node.outputs.size() && node.outputs[port].counts_as_late) {
    metrics_[k]->late_records.fetch_add(rows, std::memory_order_relaxed);
  } else {
    metrics_[k]->records_out.fetch_add(rows, std::memory_order_relaxed);
    metrics_[k]->bytes_out.fetch_add(bytes, std::memory_order_relaxed);
  }
  for (auto w : writers_of_[k][port])
    writers_[w].write(batch, *out_);
  if (port != 0)
    return;
  const auto next = next_[k];
  if (next < several_successors)
    // The last use of `batch`: an operator that is its sole owner here
    // (no network writer took it) may take its columns (projection).
    push_to(next, batch, rows, bytes);
  else if (next == several_successors)
    fan_out(k, batch, rows, bytes);
}

void operator_chain::fan_out(std::size_t k, const record_batch_ptr& batch, std::uint64_t rows,
                             std::uint64_t bytes) {
  const auto first = successor_begin_[k];
  const auto last = successor_begin_[k + 1];
  {
    // Shared while a successor after this one still reads it: no successor
    // but the last may find itself the sole owner and take columns.
    const record_batch_ptr keep = batch;
    for (auto i = first; i + 1 < last; ++i)
      push_to(successors_[i], batch, rows, bytes);
  }
  push_to(successors_[last - 1], batch, rows, bytes);
}

inline void operator_chain::watermark_to(std::size_t k, event_time wm) {
  metrics_[k]->watermark.store(wm, std::memory_order_relaxed);
  auto saved = current_;
  current_ = k;
  ops_[k]->process_watermark(wm, collectors_[k]);
  current_ = saved;
}

void operator_chain::emit_watermark(std::size_t k, event_time wm) {
  metrics_[k]->watermark.store(wm, std::memory_order_relaxed);
  broadcast_from(k, output_element{element_kind::watermark, nullptr, wm});
  const auto next = next_[k];
  if (next < several_successors) {
    watermark_to(next, wm);
  } else if (next == several_successors) {
    const auto last = successor_begin_[k + 1];
    for (auto i = successor_begin_[k]; i < last; ++i)
      watermark_to(successors_[i], wm);
  }
}

void operator_chain::broadcast_from(std::size_t k, const output_element& e) {
  for (auto& port_writers : writers_of_[k])
    for (auto w : port_writers)
      writers_[w].broadcast(e, *out_);
}

void operator_chain::fire_processing_time(event_time now) {
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    if (!ops_[k])
      continue;
    current_ = k;
    ops_[k]->on_processing_time(now, collectors_[k]);
  }
  current_ = 0;
  if (clock_->is_replay())
    broadcast(output_element{element_kind::processing_time, nullptr, now});
}

std::optional<event_time> operator_chain::next_processing_timer() const {
  std::optional<event_time> next;
  for (const auto& op : ops_)
    if (op)
      if (auto t = op->next_processing_timer(); t && (!next || *t < *next))
        next = t;
  return next;
}

void operator_chain::set_output_idle(bool idle) {
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
  broadcast(output_element{idle ? element_kind::idle : element_kind::active, nullptr, 0});
}

void operator_chain::prepare_snapshot_pre_barrier(std::uint64_t checkpoint_id) {
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    if (ops_[k]) {
      current_ = k;
      ops_[k]->prepare_snapshot_pre_barrier(checkpoint_id, collectors_[k]);
    }
  }
  current_ = 0;
}

void operator_chain::snapshot_member(std::size_t k, std::uint64_t checkpoint_id,
                                     operator_snapshot& out) {
  current_ = k;
  ops_[k]->snapshot_state(checkpoint_id, out);
  current_ = 0;
}

void operator_chain::notify_checkpoint_complete(std::uint64_t checkpoint_id) {
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    current_ = k;
    if (ops_[k])
      ops_[k]->notify_checkpoint_complete(checkpoint_id);
  }
  current_ = 0;
}

void operator_chain::abort_transactions(std::uint64_t keep_up_to) {
  std::exception_ptr first;
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    current_ = k;
    if (!ops_[k])
      continue;
    try {
      ops_[k]->abort_transactions(keep_up_to);
    } catch (...) {
      if (!first)
        first = std::current_exception();
    }
  }
  current_ = 0;
  if (first)
    std::rethrow_exception(first);
}

void operator_chain::finish(bool drain) {
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    current_ = k;
    if (!ops_[k])
      continue;
    if (drain)
      ops_[k]->finish(collectors_[k]);
    else
      ops_[k]->stop(collectors_[k]);
  }
  current_ = 0;
  for (std::uint32_t ch = 0; ch < out_->size(); ++ch)
    out_->push(ch, output_element{element_kind::end_of_input, nullptr, 0, 0, drain});
}

std::string operator_chain::describe(std::size_t k) const {
  const auto& node = *nodes_[k];
  return "operator '" + node.name + "' (" + node.kind + ") subtask "
         + std::to_string(subtask_) + "/" + std::to_string(vertex_->parallelism);
}

void operator_chain::collector::collect(record_batch_ptr batch) {
  chain->emit(k, 0, std::move(batch));
}

void operator_chain::collector::collect_side(std::size_t port, record_batch_ptr batch) {
  chain->emit(k, port, std::move(batch));
}

void operator_chain::collector::emit_watermark(event_time wm) {
  chain->emit_watermark(k, wm);
}

void operator_chain::collector::count_late(std::uint64_t n) {
  chain->count_late(k, n);
}

void operator_chain::collector::count_dropped_partial_matches(std::uint64_t n) {
  chain->count_dropped_partial_matches(k, n);
}

} // namespace weir::runtime
