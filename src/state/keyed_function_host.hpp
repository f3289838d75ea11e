// SPDX-License-Identifier: Apache-2.0
// Private to src/state: what the operators running a keyed_process_function
// (one input) and a keyed_co_process_function (two inputs) share: the
// subtask's keyed state backend, the row collector, the function context and
// timer dispatch, snapshot and restore.
#pragma once

#include "weir/api/job.hpp"
#include "weir/core/key_group.hpp"
#include "weir/state/keyed_process_function.hpp"

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace weir::state::detail {

/// Collects emitted rows into one output batch per call of the operator.
class batch_row_collector final : public row_collector {
public:
  explicit batch_row_collector(schema_ptr s) : schema_(s), builder_(std::move(s)) {}

  /// Timestamp for rows emitted without an explicit one (nullopt = none).
  std::optional<event_time> default_ts;

  /// Emits the collected rows, if any. Rows carry timestamps when any of
  /// them has one; the others then get `fill_ts`.
  void flush(output_collector& out, event_time fill_ts);

protected:
  /// Throws std::invalid_argument for a row that does not match the schema.
  void emit_row(std::vector<value> row, std::optional<event_time> ts) override;

private:
  schema_ptr schema_;
  batch_builder builder_;
  std::vector<std::optional<event_time>> row_ts_;
  bool any_ts_ = false;
};

/// The backend of one subtask's key groups, the context a function sees
/// and the collector it emits into. `on_timer(ts, domain)` callbacks run
/// with the key, timestamp and domain of the timer set.
class keyed_function_host {
public:
  explicit keyed_function_host(schema_ptr output_schema)
    : collector_(std::move(output_schema)), ctx_(*this) {}

  /// Creates the backend for the subtask's key-group range.
  void open(const operator_context& ctx) {
    info_ = ctx;
    auto range = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                             ctx.subtask_index);
    backend_ = std::make_unique<keyed_state_backend>(range, ctx.max_parallelism);
    // State TTL goes by the job's clock (wall or replay).
    if (const auto* clock = ctx.clock)
      backend_->set_ttl_time_provider([clock] { return clock->now(); });
    ts_.reset();
    domain_.reset();
  }

  keyed_process_function::context& context() noexcept { return ctx_; }
  row_collector& collector() noexcept { return collector_; }
  keyed_state_backend& backend() noexcept { return *backend_; }

  /// Makes row `row` of `batch` (keyed by `key_fields`) the current element:
  /// its key, the global namespace, its timestamp.
  void set_element(const record_batch& batch, std::size_t row,
                   std::span<const std::size_t> key_fields) {
    domain_.reset();
    key_scratch_.clear();
    encode_key(batch, key_fields, row, key_scratch_);
    if (!backend_->has_current_key() || key_scratch_ != backend_->current_key()) {
      backend_->set_current_key(key_scratch_);
      key_values_valid_ = false;
    }
    backend_->set_current_namespace({});
    ts_ = batch.has_timestamps() ? std::optional<event_time>{batch.timestamps[row]}
                                 : std::nullopt;
    collector_.default_ts = ts_;
  }

  /// Fires the event-time timers up to `wm` through `on_timer(ts, domain)`.
  template <class F>
  void advance_watermark(event_time wm, F&& on_timer) {
    backend_->advance_watermark(wm, [&](event_time ts) {
      enter_timer(ts, time_domain::event_time, ts);
      on_timer(ts, time_domain::event_time);
    });
  }

  /// Fires the processing-time timers up to `now`; their rows carry no time.
  template <class F>
  void advance_processing_time(event_time now, F&& on_timer) {
    backend_->advance_processing_time(now, [&](event_time ts) {
      enter_timer(ts, time_domain::processing_time, std::nullopt);
      on_timer(ts, time_domain::processing_time);
    });
  }

  std::optional<event_time> next_processing_timer() const {
    return backend_ ? backend_->next_processing_timer() : std::nullopt;
  }

  /// Emits what the function emitted since the last flush.
  void flush(output_collector& out) { collector_.flush(out, backend_->current_watermark()); }

  void snapshot(operator_snapshot& out) { out.keyed_state = backend_->snapshot(); }

  /// The key's state by state name (`keyed_state_backend::query_json`);
  /// the backend's current key changes, so the decoded key is dropped.
  std::optional<std::string> query_state(std::string_view encoded_key) {
    auto out = backend_->query_json(encoded_key);
    key_values_valid_ = false;
    return out;
  }

  /// Throws std::runtime_error naming the operator, subtask and checkpoint
  /// for corrupt state.
  void restore(const operator_restore& in) {
    for (const auto& [group, bytes] : in.key_groups) {
      auto ok = backend_->restore_key_group(group, bytes);
      if (!ok)
        throw std::runtime_error("restoring keyed state of " + info_.operator_name + " subtask " +
                                 std::to_string(info_.subtask_index) + " from checkpoint " +
                                 std::to_string(in.checkpoint_id) + ": " + ok.error().message);
    }
  }

private:
  void enter_timer(event_time ts, time_domain domain, std::optional<event_time> out_ts) {
    key_values_valid_ = false;
    ts_ = ts;
    domain_ = domain;
    collector_.default_ts = out_ts;
  }

  class context_impl final : public keyed_process_function::context {
  public:
    explicit context_impl(keyed_function_host& h) : h_(h) {}
    std::string_view current_key() const override {
      return h_.backend_ ? h_.backend_->current_key() : std::string_view{};
    }
    const std::vector<value>& key() const override {
      if (!h_.key_values_valid_) {
        h_.key_values_.clear();
        if (h_.backend_ && h_.backend_->has_current_key()) {
          auto decoded = decode_key(h_.backend_->current_key());
          if (decoded)
            h_.key_values_ = std::move(*decoded);
        }
        h_.key_values_valid_ = true;
      }
      return h_.key_values_;
    }
    std::optional<event_time> timestamp() const override { return h_.ts_; }
    std::optional<time_domain> timer_domain() const override { return h_.domain_; }
    event_time current_watermark() const override { return h_.backend_->current_watermark(); }
    event_time current_processing_time() const override {
      return h_.backend_->current_processing_time();
    }
    keyed_state_backend& state() override { return *h_.backend_; }
    const operator_context& operator_info() const override { return h_.info_; }

  private:
    keyed_function_host& h_;
  };

  batch_row_collector collector_;
  context_impl ctx_;
  operator_context info_;
  std::unique_ptr<keyed_state_backend> backend_;
  std::string key_scratch_;
  mutable std::vector<value> key_values_;
  mutable bool key_values_valid_ = false;
  std::optional<event_time> ts_;
  std::optional<time_domain> domain_;
};

} // namespace weir::state::detail
