// SPDX-License-Identifier: Apache-2.0
#include "pattern_operator.hpp"

#include "weir/core/key_group.hpp"

#include <algorithm>
#include <stdexcept>

namespace weir::internal::cep {

void pattern_operator::open(const operator_context& ctx) {
  info_ = ctx;
  auto range = state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                                  ctx.subtask_index);
  backend_ = std::make_unique<state::keyed_state_backend>(range, ctx.max_parallelism);
  auto handle = backend_->get_value_state<key_state>("pattern");
  if (!handle)
    throw std::logic_error(handle.error().message);
  state_ = *handle;
  matches_ = std::make_unique<batch_builder>(plan_.output);
  timeouts_ = std::make_unique<batch_builder>(plan_.timeout);
}

void pattern_operator::snapshot_state(std::uint64_t, operator_snapshot& out) {
  out.keyed_state = backend_->snapshot();
}

void pattern_operator::restore_state(const operator_restore& in) {
  for (const auto& [group, bytes] : in.key_groups)
    if (auto r = backend_->restore_key_group(group, bytes); !r)
      throw std::runtime_error("restoring the pattern state of " + info_.operator_name +
                               " subtask " + std::to_string(info_.subtask_index) +
                               ", key group " + std::to_string(group) + ": " + r.error().message);
}

void pattern_operator::process_batch(const record_batch_ptr& batch, output_collector& out) {
  const auto& in = *batch;
  if (in.num_rows == 0)
    return;
  if (!in.has_timestamps())
    throw std::runtime_error("pattern " + info_.operator_name +
                             ": records without event time (the pattern operator matches in "
                             "event time; give the source an event_time)");
  const auto bits = plan_.pattern->simple_bits(in);
  const event_time wm = backend_->current_watermark();
  const auto ttl = plan_.pattern->spec().state_ttl.count();
  const event_time now = ttl > 0 && info_.clock ? info_.clock->now() : 0;
  late_rows_.clear();
  for (std::size_t row = 0; row < in.num_rows; ++row) {
    const event_time ts = in.timestamps[row];
    if (ts <= wm) {
      late_rows_.push_back(static_cast<std::uint32_t>(row));
      continue;
    }
    key_scratch_.clear();
    encode_key(in, plan_.key_fields, row, key_scratch_);
    backend_->set_current_key(key_scratch_);
    key_state* ks = state_.get_mut();
    const bool created = ks == nullptr;
    if (created) {
      state_.update(key_state{});
      ks = state_.get_mut();
    }
    stored_event e;
    e.ts = ts;
    e.id = ks->next_id++;
    e.simple_bits = bits[row];
    e.row.reserve(in.columns.size());
    for (const auto& c : in.columns)
      e.row.push_back(c.get(row));
    ks->queue.push_back(std::move(e));
    backend_->register_event_time_timer(ts);
    if (ttl > 0) {
      // One TTL timer per key: it moves itself on when it finds the key
      // touched since (on_processing_time).
      ks->last_access_ms = now;
      if (created)
        backend_->register_processing_time_timer(now + ttl);
    }
  }
  if (!late_rows_.empty())
    out.collect_side(1, std::make_shared<record_batch>(in.take(late_rows_)));
}

void pattern_operator::process_watermark(event_time wm, output_collector& out) {
  backend_->advance_watermark(wm, [&](event_time) { on_watermark_timer(wm); });
  flush(out);
  out.emit_watermark(wm);
}

void pattern_operator::on_watermark_timer(event_time wm) {
  key_state* ks = state_.get_mut();
  if (!ks)
    return;
  const auto& p = *plan_.pattern;
  engine_output result;
  // Matched in event-time order, ties in arrival order (Flink's CepOperator
  // sorts its buffered elements by timestamp).
  std::stable_sort(ks->queue.begin(), ks->queue.end(),
                   [](const auto& a, const auto& b) { return a.ts < b.ts; });
  auto ready_end = std::find_if(ks->queue.begin(), ks->queue.end(),
                                [wm](const auto& e) { return e.ts > wm; });
  if (ready_end != ks->queue.begin()) {
    std::vector<stored_event> ready(std::make_move_iterator(ks->queue.begin()),
                                    std::make_move_iterator(ready_end));
    ks->queue.erase(ks->queue.begin(), ready_end);
    for (auto& e : ready) {
      p.advance_time(*ks, e.ts, result);
      p.process(*ks, std::move(e), result);
    }
  }
  p.advance_time(*ks, wm, result);
  for (const auto& m : result.matches)
    emit(*ks, m, false);
  if (plan_.emit_timeouts)
    for (const auto& m : result.timeouts)
      emit(*ks, m, true);
  dropped_ += result.dropped;
  compiled_pattern::collect_garbage(*ks);
  if (ks->queue.empty() && ks->partials.empty() && ks->completed.empty()) {
    state_.clear();
    return;
  }
  const auto within = p.spec().within.count();
  if (within > 0 && !ks->partials.empty()) {
    event_time first = ks->partials.front().start_ts;
    for (const auto& pm : ks->partials)
      first = std::min(first, pm.start_ts);
    if (first <= max_watermark - within)
      backend_->register_event_time_timer(first + within);
  }
}

void pattern_operator::on_processing_time(event_time now, output_collector& out) {
  const auto ttl = plan_.pattern->spec().state_ttl.count();
  backend_->advance_processing_time(now, [&](event_time) {
    const key_state* ks = state_.get();
    if (!ks || ttl <= 0)
      return;
    // Expired: no record for the key since `ttl` ago (Flink's StateTtlConfig
    // with OnCreateAndWrite updates, NeverReturnExpired): dropped from
    // memory, hence from the next checkpoint.
    if (ks->last_access_ms + ttl <= now)
      state_.clear();
    else
      backend_->register_processing_time_timer(ks->last_access_ms + ttl);
  });
  flush(out);
}

std::optional<event_time> pattern_operator::next_processing_timer() const {
  return backend_ ? backend_->next_processing_timer() : std::nullopt;
}

void pattern_operator::emit(const key_state& ks, const partial_match& pm, bool timed_out) {
  auto& b = timed_out ? *timeouts_ : *matches_;
  const auto& first = ks.events.at(std::get<2>(pm.taken.front()));
  std::size_t col = 0;
  for (auto k : plan_.key_fields)
    b.col(col++).append_value(first.row[k]);
  const event_time end = std::get<1>(pm.taken.back());
  b.col(col++).append_int(pm.start_ts);
  b.col(col++).append_int(end);
  event_time ts = end;
  if (timed_out) {
    ts = pm.start_ts + plan_.pattern->spec().within.count();
    b.col(col++).append_int(ts);
  }
  if (!plan_.select.empty()) {
    auto row = plan_.pattern->match_row(ks, pm);
    for (const auto& e : plan_.select) {
      auto c = e.evaluate(*row);
      b.col(col++).append_from(c, 0);
    }
  }
  b.commit_row();
  b.timestamps().push_back(ts);
}

void pattern_operator::flush(output_collector& out) {
  if (matches_->rows() > 0)
    out.collect(matches_->finish());
  if (timeouts_->rows() > 0)
    out.collect_side(2, timeouts_->finish());
  if (dropped_ > 0) {
    out.count_dropped_partial_matches(dropped_);
    dropped_ = 0;
  }
}

} // namespace weir::internal::cep
