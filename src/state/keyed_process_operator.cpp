// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_process_function.hpp"

#include "keyed_function_host.hpp"

#include "weir/api/job.hpp"
#include "weir/core/key_group.hpp"

#include <stdexcept>
#include <string>
#include <utility>

namespace weir::state {

namespace detail {

void batch_row_collector::flush(output_collector& out, event_time fill_ts) {
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

void batch_row_collector::emit_row(std::vector<value> row, std::optional<event_time> ts) {
  const auto& fields = schema_->fields();
  if (row.size() != fields.size())
    throw std::invalid_argument("keyed (co-)process function emitted " + std::to_string(row.size()) +
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
      throw std::invalid_argument("keyed (co-)process function emitted " + to_display_string(v) +
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

} // namespace detail

namespace {

class keyed_process_operator final : public stream_operator {
public:
  keyed_process_operator(std::vector<std::size_t> key_fields, schema_ptr output_schema,
                         std::unique_ptr<keyed_process_function> fn)
    : key_fields_(std::move(key_fields)), host_(std::move(output_schema)), fn_(std::move(fn)) {}

  void open(const operator_context& ctx) override {
    host_.open(ctx);
    fn_->open(host_.context());
  }

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      host_.set_element(*batch, row, key_fields_);
      fn_->process_element(row_view{*batch, row}, host_.context(), host_.collector());
    }
    host_.flush(out);
  }

  void process_watermark(event_time wm, output_collector& out) override {
    host_.advance_watermark(wm, [&](event_time ts, time_domain d) { on_timer(ts, d); });
    host_.flush(out);
    out.emit_watermark(wm);
  }

  void on_processing_time(event_time now, output_collector& out) override {
    host_.advance_processing_time(now, [&](event_time ts, time_domain d) { on_timer(ts, d); });
    host_.flush(out);
  }

  std::optional<event_time> next_processing_timer() const override {
    return host_.next_processing_timer();
  }

  void finish(output_collector& out) override {
    host_.flush(out);
    fn_->close();
  }

  // Stopped: what the function emitted goes on, but no end-of-input timers.
  void stop(output_collector& out) override { finish(out); }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    (void) checkpoint_id;
    host_.snapshot(out);
  }

  /// The key's state by state name (`keyed_state_backend::query_json`).
  std::optional<std::string> query_state(std::string_view encoded_key) override {
    return host_.query_state(encoded_key);
  }

  void restore_state(const operator_restore& in) override { host_.restore(in); }

private:
  void on_timer(event_time ts, time_domain domain) {
    fn_->on_timer(ts, domain, host_.context(), host_.collector());
  }

  std::vector<std::size_t> key_fields_;
  detail::keyed_function_host host_;
  std::unique_ptr<keyed_process_function> fn_;
};

} // namespace

stream_operator_ptr make_keyed_process_operator(std::vector<std::size_t> key_fields,
                                                schema_ptr output_schema,
                                                std::unique_ptr<keyed_process_function> fn) {
  return std::make_unique<keyed_process_operator>(std::move(key_fields), std::move(output_schema),
                                                  std::move(fn));
}

} // namespace weir::state
