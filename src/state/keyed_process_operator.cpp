// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_process_function.hpp"

#include "weir/api/job.hpp"
#include "weir/core/key_group.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace weir::state {

namespace {

/// Collects emitted rows into one output batch per call of the operator.
class batch_row_collector final : public row_collector {
public:
  explicit batch_row_collector(schema_ptr s) : schema_(s), builder_(std::move(s)) {}

  /// Timestamp for rows emitted without an explicit one (nullopt = none).
  std::optional<event_time> default_ts;

  /// Emits the collected rows, if any. Rows carry timestamps when any of
  /// them has one; the others then get `fill_ts`.
  void flush(output_collector& out, event_time fill_ts) {
    if (builder_.rows() == 0)
      return;
    if (any_ts_) {
      auto& ts = builder_.timestamps();
      ts.clear();
      ts.reserve(row_ts_.size());
      for (const auto& t : row_ts_)
        ts.push_back(t.value_or(fill_ts));
    }
    row_ts_.clear();
    any_ts_ = false;
    out.collect(builder_.finish());
  }

protected:
  void emit_row(std::vector<value> row, std::optional<event_time> ts) override {
    const auto& fields = schema_->fields();
    if (row.size() != fields.size())
      throw std::invalid_argument("keyed process function emitted " + std::to_string(row.size()) +
                                  " values for an output schema of " +
                                  std::to_string(fields.size()) + " fields (" +
                                  schema_->to_string() + ")");
    for (std::size_t i = 0; i < row.size(); ++i) {
      auto& v = row[i];
      if (std::holds_alternative<std::monostate>(v))
        continue;
      bool ok = false;
      switch (fields[i].type) {
        case type_id::boolean:
          ok = std::holds_alternative<bool>(v);
          break;
        case type_id::int64:
        case type_id::timestamp:
          ok = std::holds_alternative<std::int64_t>(v);
          break;
        case type_id::float64:
          if (auto* x = std::get_if<std::int64_t>(&v))
            v = static_cast<double>(*x);
          ok = std::holds_alternative<double>(v);
          break;
        case type_id::string:
          ok = std::holds_alternative<std::string>(v);
          break;
        case type_id::null_type:
          ok = false;
          break;
      }
      if (!ok)
        throw std::invalid_argument("keyed process function emitted " + to_display_string(v) +
                                    " for field '" + fields[i].name + "' of type " +
                                    std::string{to_string(fields[i].type)});
    }
    for (std::size_t i = 0; i < row.size(); ++i)
      builder_.col(i).append_value(row[i]);
    builder_.commit_row();
    auto t = ts ? ts : default_ts;
    any_ts_ = any_ts_ || t.has_value();
    row_ts_.push_back(t);
  }

private:
  schema_ptr schema_;
  batch_builder builder_;
  std::vector<std::optional<event_time>> row_ts_;
  bool any_ts_ = false;
};

class keyed_process_operator final : public stream_operator {
public:
  keyed_process_operator(std::vector<std::size_t> key_fields, schema_ptr output_schema,
                         std::unique_ptr<keyed_process_function> fn)
    : key_fields_(std::move(key_fields)),
      collector_(std::move(output_schema)),
      fn_(std::move(fn)),
      ctx_(*this) {}

  void open(const operator_context& ctx) override {
    info_ = ctx;
    auto range = key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                             ctx.subtask_index);
    backend_ = std::make_unique<keyed_state_backend>(range, ctx.max_parallelism);
    ts_.reset();
    domain_.reset();
    fn_->open(ctx_);
  }

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    domain_.reset();
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      key_scratch_.clear();
      encode_key(*batch, key_fields_, row, key_scratch_);
      if (key_scratch_ != backend_->current_key() || !backend_->has_current_key()) {
        backend_->set_current_key(key_scratch_);
        key_values_valid_ = false;
      }
      backend_->set_current_namespace({});
      ts_ = batch->has_timestamps() ? std::optional<event_time>{batch->timestamps[row]}
                                    : std::nullopt;
      collector_.default_ts = ts_;
      fn_->process_element(row_view{*batch, row}, ctx_, collector_);
    }
    collector_.flush(out, backend_->current_watermark());
  }

  void process_watermark(event_time wm, output_collector& out) override {
    backend_->advance_watermark(wm, [&](event_time ts) {
      on_timer(ts, time_domain::event_time, ts);
    });
    collector_.flush(out, backend_->current_watermark());
    out.emit_watermark(wm);
  }

  void on_processing_time(event_time now, output_collector& out) override {
    backend_->advance_processing_time(now, [&](event_time ts) {
      on_timer(ts, time_domain::processing_time, std::nullopt);
    });
    collector_.flush(out, backend_->current_watermark());
  }

  std::optional<event_time> next_processing_timer() const override {
    return backend_ ? backend_->next_processing_timer() : std::nullopt;
  }

  void finish(output_collector& out) override {
    collector_.flush(out, backend_->current_watermark());
    fn_->close();
  }

  // Stopped: what the function emitted goes on, but no end-of-input timers.
  void stop(output_collector& out) override { finish(out); }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    (void) checkpoint_id;
    out.keyed_state = backend_->snapshot();
  }

  /// The key's state by state name (`keyed_state_backend::query_json`).
  std::optional<std::string> query_state(std::string_view encoded_key) override {
    auto out = backend_->query_json(encoded_key);
    key_values_valid_ = false; // the current key changed
    return out;
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
  void on_timer(event_time ts, time_domain domain, std::optional<event_time> out_ts) {
    key_values_valid_ = false;
    ts_ = ts;
    domain_ = domain;
    collector_.default_ts = out_ts;
    fn_->on_timer(ts, domain, ctx_, collector_);
  }

  class context_impl final : public keyed_process_function::context {
  public:
    explicit context_impl(keyed_process_operator& op) : op_(op) {}
    std::string_view current_key() const override {
      return op_.backend_ ? op_.backend_->current_key() : std::string_view{};
    }
    const std::vector<value>& key() const override {
      if (!op_.key_values_valid_) {
        op_.key_values_.clear();
        if (op_.backend_ && op_.backend_->has_current_key()) {
          auto decoded = decode_key(op_.backend_->current_key());
          if (decoded)
            op_.key_values_ = std::move(*decoded);
        }
        op_.key_values_valid_ = true;
      }
      return op_.key_values_;
    }
    std::optional<event_time> timestamp() const override { return op_.ts_; }
    std::optional<time_domain> timer_domain() const override { return op_.domain_; }
    event_time current_watermark() const override { return op_.backend_->current_watermark(); }
    event_time current_processing_time() const override {
      return op_.backend_->current_processing_time();
    }
    keyed_state_backend& state() override { return *op_.backend_; }
    const operator_context& operator_info() const override { return op_.info_; }

  private:
    keyed_process_operator& op_;
  };

  std::vector<std::size_t> key_fields_;
  batch_row_collector collector_;
  std::unique_ptr<keyed_process_function> fn_;
  context_impl ctx_;
  operator_context info_;
  std::unique_ptr<keyed_state_backend> backend_;
  std::string key_scratch_;
  mutable std::vector<value> key_values_;
  mutable bool key_values_valid_ = false;
  std::optional<event_time> ts_;
  std::optional<time_domain> domain_;
};

} // namespace

stream_operator_ptr make_keyed_process_operator(std::vector<std::size_t> key_fields,
                                                schema_ptr output_schema,
                                                std::unique_ptr<keyed_process_function> fn) {
  return std::make_unique<keyed_process_operator>(std::move(key_fields), std::move(output_schema),
                                                  std::move(fn));
}

} // namespace weir::state
