// SPDX-License-Identifier: Apache-2.0
#include "enrich_operator.hpp"

#include "weir/core/key_group.hpp"
#include "weir/core/log.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <spdlog/logger.h>

#include <algorithm>
#include <limits>
#include <optional>
#include <queue>
#include <tuple>
#include <stdexcept>
#include <string>
#include <utility>

namespace weir::internal {

namespace {

using row_values = std::vector<value>; // a stored row: its values, then its timestamp

event_time saturating_add(event_time a, event_time b) {
  if (a > 0 && b > std::numeric_limits<event_time>::max() - a)
    return std::numeric_limits<event_time>::max();
  return a + b;
}

event_time ts_of(const row_values& r) { return std::get<std::int64_t>(r.back()); }

class enrich_operator final : public two_input_stream_operator {
public:
  explicit enrich_operator(enrich_plan plan)
    : plan_(std::move(plan)), builder_(plan_.output) {}

  void open(const operator_context& ctx) override {
    info_ = ctx;
    auto range = state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                             ctx.subtask_index);
    backend_ = std::make_unique<state::keyed_state_backend>(range, ctx.max_parallelism);
    auto& b = *backend_;
    if (const auto* clock = ctx.clock)
      b.set_ttl_time_provider([clock] { return clock->now(); });
    std::optional<state::state_ttl_config> ttl;
    if (plan_.state_ttl)
      ttl = state::state_ttl_config{*plan_.state_ttl};
    row_ = must(b.get_value_state<row_values>("row", ttl));
    pending_ = must(b.get_list_state<row_values>("pending"));
    pending_table_ = must(b.get_list_state<row_values>("pending_table"));
    waiting_ = must(b.get_list_state<row_values>("waiting"));
    next_timer_ = must(b.get_value_state<std::int64_t>("next_timer"));
  }

  void process_batch1(const record_batch_ptr& batch, output_collector& out) override {
    const auto& in = *batch;
    for (std::size_t r = 0; r < in.num_rows; ++r) {
      set_key(in, r, plan_.stream_keys);
      row_values rec;
      rec.reserve(in.columns.size() + 1);
      for (const auto& c : in.columns)
        rec.push_back(c.get(r));
      if (!in.has_timestamps()) {
        apply_now_record(std::move(rec));
        continue;
      }
      const event_time ts = in.timestamps[r];
      rec.emplace_back(std::int64_t{ts});
      pending_.add(std::move(rec));
      arrived(ts);
    }
    flush(out);
  }

  void process_batch2(const record_batch_ptr& batch, output_collector& out) override {
    const auto& in = *batch;
    for (std::size_t r = 0; r < in.num_rows; ++r) {
      set_key(in, r, plan_.table_keys);
      row_values row;
      row.reserve(plan_.table_fields.size() + 1);
      for (auto f : plan_.table_fields)
        row.push_back(in.columns[f].get(r));
      if (!in.has_timestamps()) {
        row_.update(std::move(row));
        continue;
      }
      const event_time ts = in.timestamps[r];
      row.emplace_back(std::int64_t{ts});
      pending_table_.add(std::move(row));
      arrived(ts);
    }
    flush(out);
  }

  // The combined watermark of both inputs advanced: every key with a
  // pending timestamp or a waiting deadline at or before it is processed.
  void process_watermark(event_time wm, output_collector& out) override {
    backend_->advance_watermark(wm, [&](event_time) { process_key(); });
    flush(out);
    event_time held = wm;
    if (plan_.on_missing == enrich_missing::wait && wm != max_watermark)
      held = wm > min_watermark + plan_.max_wait ? wm - plan_.max_wait : min_watermark;
    if (held > forwarded_) {
      forwarded_ = held;
      out.emit_watermark(held);
    }
  }

  void finish(output_collector& out) override {
    flush(out);
    if (unmatched_ > 0)
      log::runtime().info("enrich '{}' subtask {}/{}: {} record(s) found no table row for "
                          "their key ({})",
                          info_.operator_name, info_.subtask_index, info_.parallelism,
                          unmatched_,
                          dropping() ? "dropped" : "emitted with null table fields");
  }

  void stop(output_collector& out) override { flush(out); }

  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
    out.keyed_state = backend_->snapshot();
  }

  void restore_state(const operator_restore& in) override {
    for (const auto& [group, bytes] : in.key_groups) {
      auto ok = backend_->restore_key_group(group, bytes);
      if (!ok)
        throw std::runtime_error("restoring keyed state of " + info_.operator_name + " subtask " +
                                 std::to_string(info_.subtask_index) + " from checkpoint " +
                                 std::to_string(in.checkpoint_id) + ": " + ok.error().message);
    }
  }

private:
  template <class T>
  static T must(expected<T> e) {
    if (!e)
      throw std::runtime_error("enrich: " + e.error().message);
    return std::move(*e);
  }

  bool dropping() const {
    return plan_.on_missing == enrich_missing::drop
           || (plan_.on_missing == enrich_missing::wait && !plan_.emit_on_timeout);
  }

  void set_key(const record_batch& in, std::size_t r, const std::vector<std::size_t>& keys) {
    key_.clear();
    encode_key(in, keys, r, key_);
    backend_->set_current_key(key_);
  }

  // Something at `ts` joined the current key's pending state: a timer at
  // the key's earliest pending time (one per key, not one per row), or at
  // once when the watermark has already passed it (a late row).
  void arrived(event_time ts) {
    if (ts <= backend_->current_watermark()) {
      process_key();
      return;
    }
    auto next = next_timer_.value();
    if (!next || ts < *next) {
      backend_->register_event_time_timer(ts);
      next_timer_.update(ts);
    }
  }

  // Without event time: joined with the row in effect now.
  void apply_now_record(row_values rec) {
    if (auto row = row_.value()) {
      emit(rec, &*row, std::nullopt);
      return;
    }
    ++unmatched_;
    if (plan_.on_missing != enrich_missing::drop)
      emit(rec, nullptr, std::nullopt);
  }

  // Applies the current key's table rows, records and waiting deadlines at
  // or before the watermark in event-time order: at equal times a table row
  // first (a row is valid from its timestamp on), then records, then the
  // end of a wait (a row at the deadline is in time).
  void process_key() {
    const event_time wm = backend_->current_watermark();
    struct event {
      event_time t;
      int kind; // 0 table row, 1 record, 2 end of a wait
      std::size_t idx;
      bool operator>(const event& o) const {
        return std::tie(t, kind, idx) > std::tie(o.t, o.kind, o.idx);
      }
    };
    std::priority_queue<event, std::vector<event>, std::greater<>> q;
    const auto table_span = pending_table_.get();
    const auto recs_span = pending_.get();
    std::vector<row_values> table(table_span.begin(), table_span.end());
    std::vector<row_values> recs(recs_span.begin(), recs_span.end());
    std::vector<std::optional<row_values>> pool;
    for (const auto& w : waiting_.get())
      pool.emplace_back(w);
    std::vector<row_values> keep_table, keep_recs;
    for (std::size_t i = 0; i < table.size(); ++i) {
      if (ts_of(table[i]) <= wm)
        q.push({ts_of(table[i]), 0, i});
      else
        keep_table.push_back(std::move(table[i]));
    }
    for (std::size_t i = 0; i < recs.size(); ++i) {
      if (ts_of(recs[i]) <= wm)
        q.push({ts_of(recs[i]), 1, i});
      else
        keep_recs.push_back(std::move(recs[i]));
    }
    for (std::size_t i = 0; i < pool.size(); ++i) {
      const auto deadline = saturating_add(ts_of(*pool[i]), plan_.max_wait);
      if (deadline <= wm)
        q.push({deadline, 2, i});
    }
    std::optional<row_values> row = row_.value();
    bool row_changed = false;
    while (!q.empty()) {
      const event e = q.top();
      q.pop();
      if (e.kind == 0) {
        auto& r = table[e.idx];
        r.pop_back();
        row = std::move(r);
        row_changed = true;
        for (auto& w : pool)
          if (w) {
            emit(*w, &*row, ts_of(*w));
            w.reset();
          }
      } else if (e.kind == 1) {
        auto& rec = recs[e.idx];
        if (row) {
          emit(rec, &*row, ts_of(rec));
        } else if (plan_.on_missing == enrich_missing::wait) {
          const auto deadline = saturating_add(ts_of(rec), plan_.max_wait);
          pool.emplace_back(std::move(rec));
          if (deadline <= wm)
            q.push({deadline, 2, pool.size() - 1});
        } else {
          ++unmatched_;
          if (plan_.on_missing == enrich_missing::null)
            emit(rec, nullptr, ts_of(rec));
        }
      } else if (auto& w = pool[e.idx]) {
        ++unmatched_;
        if (plan_.emit_on_timeout)
          emit(*w, nullptr, ts_of(*w));
        w.reset();
      }
    }
    if (row_changed)
      row_.update(std::move(*row));
    std::optional<event_time> next;
    const auto earliest = [&](event_time t) { next = next ? std::min(*next, t) : t; };
    for (const auto& r : keep_table)
      earliest(ts_of(r));
    for (const auto& r : keep_recs)
      earliest(ts_of(r));
    std::vector<row_values> still_waiting;
    for (auto& w : pool)
      if (w) {
        earliest(saturating_add(ts_of(*w), plan_.max_wait));
        still_waiting.push_back(std::move(*w));
      }
    store(pending_table_, std::move(keep_table));
    store(pending_, std::move(keep_recs));
    store(waiting_, std::move(still_waiting));
    if (next) {
      backend_->register_event_time_timer(*next);
      next_timer_.update(*next);
    } else {
      next_timer_.clear();
    }
  }

  static void store(state::list_state<row_values>& s, std::vector<row_values> rows) {
    if (rows.empty())
      s.clear();
    else
      s.update(std::move(rows));
  }

  // One output row: the record's fields (its stored timestamp left out),
  // then the table row's fields or nulls.
  void emit(const row_values& rec, const row_values* row, std::optional<event_time> ts) {
    const std::size_t n_in = plan_.output->fields().size() - plan_.table_fields.size();
    std::size_t c = 0;
    for (; c < n_in; ++c)
      builder_.col(c).append_value(rec[c]);
    for (std::size_t i = 0; i < plan_.table_fields.size(); ++i, ++c) {
      if (row)
        builder_.col(c).append_value((*row)[i]);
      else
        builder_.col(c).append_null();
    }
    builder_.commit_row();
    row_ts_.push_back(ts);
    any_ts_ = any_ts_ || ts.has_value();
  }

  void flush(output_collector& out) {
    if (builder_.rows() == 0)
      return;
    if (any_ts_) {
      auto& ts = builder_.timestamps();
      ts.clear();
      for (const auto& t : row_ts_)
        ts.push_back(t.value_or(backend_->current_watermark()));
    }
    row_ts_.clear();
    any_ts_ = false;
    out.collect(builder_.finish());
  }

  enrich_plan plan_;
  operator_context info_;
  std::unique_ptr<state::keyed_state_backend> backend_;
  state::value_state<row_values> row_;
  state::list_state<row_values> pending_;
  state::list_state<row_values> pending_table_;
  state::list_state<row_values> waiting_;
  state::value_state<std::int64_t> next_timer_;
  std::string key_;
  batch_builder builder_;
  std::vector<std::optional<event_time>> row_ts_;
  bool any_ts_ = false;
  event_time forwarded_ = min_watermark;
  std::uint64_t unmatched_ = 0;
};

} // namespace

std::unique_ptr<two_input_stream_operator> make_enrich_operator(enrich_plan plan) {
  return std::make_unique<enrich_operator>(std::move(plan));
}

} // namespace weir::internal
