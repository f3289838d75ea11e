// SPDX-License-Identifier: Apache-2.0
#include "per_window_operator.hpp"

#include "weir/core/key_group.hpp"
#include "weir/core/log.hpp"

#include <spdlog/logger.h>

#include <stdexcept>
#include <utility>

namespace weir::window {

using internal::buffered_row;
using internal::must;
using internal::row_input;
using internal::saturating_add;

per_window_operator::per_window_operator(std::shared_ptr<const window_plan::impl> plan)
  : per_window_operator(plan, plan->trigger->only_registers_window_end_timer()) {}

per_window_operator::per_window_operator(std::shared_ptr<const window_plan::impl> plan,
                                         bool may_skip_trigger)
  : window_operator_base(std::move(plan)), may_skip_trigger_(may_skip_trigger) {
  init_backend(state::key_group_range{0, 127}, 128);
}

void per_window_operator::register_states() {
  const auto& p = *plan_;
  if (p.buffered)
    rows_ = must(backend_->get_list_state<buffered_row>(internal::rows_state));
  else
    contents_ = must(
      backend_->get_aggregating_state<row_input, internal::accumulators, std::monostate>(
        internal::contents_state, contents_fn_));
  trigger_state_ = must(backend_->get_value_state<std::int64_t>(internal::trigger_state));
  if (p.assigner->is_global())
    fires_ = must(backend_->get_value_state<std::int64_t>(internal::fires_state));
}

// -- stream_operator ------------------------------------------------------------

void per_window_operator::process_batch(const record_batch_ptr& batch,
                                        output_collector& out) {
  const record_batch& in = *batch;
  if (in.num_rows == 0)
    return;
  const auto& p = *plan_;
  const bool by_event_time = p.assigner->is_event_time();
  if (by_event_time && !in.has_timestamps())
    throw std::logic_error("window operator received a batch without event "
                           "timestamps; assign event time at the source");
  const event_time now = processing_now();
  auto args = p.aggregates.evaluate(in);
  late_rows_.clear();
  for (std::uint32_t row = 0; row < in.num_rows; ++row) {
    const event_time ts = in.has_timestamps() ? in.timestamps[row] : now;
    key_scratch_.clear();
    encode_key(in, p.key_fields, row, key_scratch_);
    backend_->set_current_key(key_scratch_);
    const std::uint64_t seq = next_seq_++;
    if (!process_row(in, args, row, seq, by_event_time ? ts : now, ts))
      late_rows_.push_back(row);
  }
  flush(out);
  if (!late_rows_.empty()) {
    late_ += late_rows_.size();
    out.collect_side(1, std::make_shared<record_batch>(in.take(late_rows_)));
  }
}

void per_window_operator::finish(output_collector& out) {
  window_operator_base::finish(out);
  if (between_windows_ > 0)
    log::runtime().info("window operator '{}' subtask {}: {} records fell between windows "
                        "(slide > size) and were dropped",
                        name(), subtask(), between_windows_);
}

void per_window_operator::process_watermark(event_time wm, output_collector& out) {
  const event_time previous = backend_->current_watermark();
  if (wm <= previous)
    return; // a watermark never goes back; nothing new to fire
  backend_->advance_watermark(wm, [this](event_time t) { on_timer(t, true); });
  flush(out);
  out.emit_watermark(wm);
}

void per_window_operator::on_processing_time(event_time now, output_collector& out) {
  backend_->advance_processing_time(now, [this](event_time t) { on_timer(t, false); });
  flush(out);
}

// -- trigger context ------------------------------------------------------------

event_time per_window_operator::context::current_watermark() const {
  return op_.backend_->current_watermark();
}

event_time per_window_operator::context::current_processing_time() const {
  return op_.processing_now();
}

void per_window_operator::context::register_event_time_timer(event_time t) {
  op_.set_namespace(window_);
  op_.backend_->register_event_time_timer(t);
}

void per_window_operator::context::delete_event_time_timer(event_time t) {
  op_.set_namespace(window_);
  op_.backend_->delete_event_time_timer(t);
}

void per_window_operator::context::register_processing_time_timer(event_time t) {
  op_.set_namespace(window_);
  op_.backend_->register_processing_time_timer(t);
}

void per_window_operator::context::delete_processing_time_timer(event_time t) {
  op_.set_namespace(window_);
  op_.backend_->delete_processing_time_timer(t);
}

std::optional<std::int64_t> per_window_operator::context::state() const {
  op_.set_namespace(window_);
  return op_.trigger_state_.value();
}

void per_window_operator::context::set_state(std::int64_t v) {
  op_.set_namespace(window_);
  op_.trigger_state_.update(v);
}

void per_window_operator::context::clear_state() {
  op_.set_namespace(window_);
  op_.trigger_state_.clear();
}

void per_window_operator::context::merge_state(
    std::int64_t (*combine)(std::int64_t, std::int64_t)) {
  std::optional<std::int64_t> acc;
  auto fold = [&](std::optional<std::int64_t> v) {
    if (v)
      acc = acc ? combine(*acc, *v) : *v;
  };
  if (merged_) {
    for (const auto& m : *merged_) {
      if (m == window_)
        continue;
      op_.set_namespace(m);
      fold(op_.trigger_state_.value());
      op_.trigger_state_.clear();
    }
  }
  op_.set_namespace(window_);
  fold(op_.trigger_state_.value());
  if (acc)
    op_.trigger_state_.update(*acc);
}

// -- windows and their timers -----------------------------------------------------

inline void per_window_operator::register_cleanup_timer(const time_window& w) {
  if (plan_->assigner->is_global())
    return; // the global window never ends
  const auto t = cleanup_time(w);
  if (t == max_watermark)
    return; // no timer for the end of time
  set_namespace(w);
  if (plan_->assigner->is_event_time())
    backend_->register_event_time_timer(t);
  else
    backend_->register_processing_time_timer(t);
}

void per_window_operator::delete_cleanup_timer(const time_window& w) {
  if (plan_->assigner->is_global())
    return;
  const auto t = cleanup_time(w);
  if (t == max_watermark)
    return;
  set_namespace(w);
  if (plan_->assigner->is_event_time())
    backend_->delete_event_time_timer(t);
  else
    backend_->delete_processing_time_timer(t);
}

// -- elements -----------------------------------------------------------------------

bool per_window_operator::process_row(const record_batch& in,
                                      const std::vector<column>& args, std::uint32_t row,
                                      std::uint64_t seq, event_time at, event_time ts) {
  const auto& p = *plan_;
  assigned_.clear();
  p.assigner->assign(at, assigned_);
  if (assigned_.empty() && p.assigner->is_event_time()) {
    ++between_windows_; // in a gap between windows: dropped, not late
    return true;
  }
  bool skipped = true;
  for (const auto& w : assigned_) {
    if (is_window_late(w))
      continue;
    skipped = false;
    add_to_window(in, args, row, seq, ts, w, w);
  }
  if (!skipped)
    return true;
  // Skipped elements of event-time windows are late (ts + lateness <=
  // watermark); other windows never skip.
  return !p.assigner->is_event_time();
}

void per_window_operator::add_to_window(const record_batch& in,
                                        const std::vector<column>& args,
                                        std::uint32_t row, std::uint64_t seq,
                                        event_time ts, const time_window& state_window,
                                        const time_window& actual) {
  const auto& p = *plan_;
  set_namespace(state_window);
  bool created = true;
  if (p.buffered) {
    std::vector<value> fields;
    fields.reserve(in.columns.size());
    for (const auto& c : in.columns)
      fields.push_back(c.get(row));
    rows_.add(buffered_row{seq, ts, std::move(fields)});
  } else {
    created = contents_.add(row_input{&in, &args, row, seq});
  }
  // The window already held records of this key, so the first of them
  // registered the trigger's end-of-window timer and the cleanup timer
  // (nothing deletes them while the contents exist); a trigger that does
  // nothing else on an element needs no call while the window is not yet
  // due. This skips two timer registrations per record and window.
  if (!created && may_skip_trigger_
      && actual.max_timestamp() > backend_->current_watermark())
    return;
  trigger_result r;
  {
    context ctx{*this, actual};
    r = p.trigger->on_element(ts, actual, ctx);
  }
  apply(r, actual, state_window);
  register_cleanup_timer(actual);
}

inline void per_window_operator::apply(trigger_result r, const time_window& actual,
                                       const time_window& state_window) {
  if (is_fire(r))
    emit(actual, state_window);
  if (is_purge(r)) {
    set_namespace(state_window);
    if (plan_->buffered)
      rows_.clear();
    else
      contents_.clear();
  }
}

// -- timers -------------------------------------------------------------------------

void per_window_operator::on_timer(event_time t, bool event_time_timer) {
  const time_window w = internal::decode_window(backend_->current_namespace());
  fire_timer(t, event_time_timer, w, w);
}

bool per_window_operator::fire_timer(event_time t, bool event_time_timer,
                                     const time_window& w,
                                     const time_window& state_window) {
  const auto& p = *plan_;
  trigger_result r;
  {
    context ctx{*this, w};
    r = event_time_timer ? p.trigger->on_event_time(t, w, ctx)
                         : p.trigger->on_processing_time(t, w, ctx);
  }
  apply(r, w, state_window);
  if (event_time_timer == p.assigner->is_event_time() && !p.assigner->is_global()
      && t == cleanup_time(w)) {
    clear_all_state(w, state_window);
    return true;
  }
  return false;
}

inline void per_window_operator::clear_all_state(
    const time_window& w, const time_window& state_window) {
  const auto& p = *plan_;
  set_namespace(state_window);
  if (p.buffered)
    rows_.clear();
  else
    contents_.clear();
  {
    context ctx{*this, w};
    p.trigger->clear(w, ctx);
  }
  if (fires_) {
    set_namespace(w);
    fires_.clear();
  }
}

// -- output ---------------------------------------------------------------------------

inline void per_window_operator::emit(const time_window& actual,
                                      const time_window& state_window) {
  const auto& p = *plan_;
  set_namespace(state_window);
  if (p.buffered ? !fold_buffered(actual) : contents_.accumulator() == nullptr)
    return; // nothing in the window (Flink: "if (contents == null) return")
  std::int64_t fire = 0;
  if (p.assigner->is_global()) {
    set_namespace(actual);
    fire = fires_.value_or(0) + 1;
    fires_.update(fire);
  }
  // Read the accumulators after the last state write: a write may move them.
  const internal::accumulator* accs = fold_.data();
  if (!p.buffered) {
    set_namespace(state_window);
    accs = contents_fn_->check(*contents_.accumulator()).data();
  }
  append_row(actual, accs, fire);
}

// Evicts and aggregates the buffered rows of the current namespace into
// fold_; false when there are none (Flink's EvictingWindowOperator).
inline bool per_window_operator::fold_buffered(const time_window& w) {
  const auto& p = *plan_;
  auto span = rows_.get();
  if (span.empty())
    return false;
  std::vector<buffered_row> rows{span.begin(), span.end()};
  bool changed = false;
  auto evict = [&](bool before) {
    if (!p.evictor)
      return;
    stamps_.clear();
    for (const auto& r : rows)
      stamps_.push_back(std::get<1>(r));
    std::vector<bool> drop(rows.size(), false);
    if (before)
      p.evictor->evict_before(stamps_, w, drop);
    else
      p.evictor->evict_after(stamps_, w, drop);
    std::vector<buffered_row> kept;
    for (std::size_t i = 0; i < rows.size(); ++i)
      if (!drop[i])
        kept.push_back(std::move(rows[i]));
    changed = changed || kept.size() != rows.size();
    rows = std::move(kept);
  };
  evict(true);
  fold_.assign(p.aggregates.size(), internal::accumulator{});
  if (!rows.empty()) {
    batch_builder bb{p.input};
    for (const auto& r : rows) {
      const auto& fields = std::get<2>(r);
      for (std::size_t c = 0; c < fields.size(); ++c)
        bb.col(c).append_value(fields[c]);
      bb.timestamps().push_back(std::get<1>(r));
      bb.commit_row();
    }
    auto batch = bb.finish();
    auto args = p.aggregates.evaluate(*batch);
    for (std::uint32_t i = 0; i < batch->num_rows; ++i)
      p.aggregates.update_row(*batch, args, i, std::get<0>(rows[i]), fold_.data());
  }
  const bool any = !rows.empty();
  evict(false);
  if (changed)
    rows_.update(std::move(rows));
  return any;
}

} // namespace weir::window
