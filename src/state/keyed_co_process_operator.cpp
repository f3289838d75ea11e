// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_co_process_function.hpp"

#include "keyed_function_host.hpp"

#include <utility>

namespace weir::state {

namespace {

class keyed_co_process_operator final : public two_input_stream_operator {
public:
  keyed_co_process_operator(std::vector<std::size_t> key_fields1,
                            std::vector<std::size_t> key_fields2, schema_ptr output_schema,
                            std::unique_ptr<keyed_co_process_function> fn)
    : key_fields1_(std::move(key_fields1)),
      key_fields2_(std::move(key_fields2)),
      host_(std::move(output_schema)),
      fn_(std::move(fn)) {}

  void open(const operator_context& ctx) override {
    host_.open(ctx);
    fn_->open(host_.context());
  }

  void process_batch1(const record_batch_ptr& batch, output_collector& out) override {
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      host_.set_element(*batch, row, key_fields1_);
      fn_->process_element1(row_view{*batch, row}, host_.context(), host_.collector());
    }
    host_.flush(out);
  }

  void process_batch2(const record_batch_ptr& batch, output_collector& out) override {
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      host_.set_element(*batch, row, key_fields2_);
      fn_->process_element2(row_view{*batch, row}, host_.context(), host_.collector());
    }
    host_.flush(out);
  }

  // The combined watermark of both inputs advanced.
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

  void stop(output_collector& out) override { finish(out); }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    (void) checkpoint_id;
    host_.snapshot(out);
  }

  void restore_state(const operator_restore& in) override { host_.restore(in); }

private:
  void on_timer(event_time ts, time_domain domain) {
    fn_->on_timer(ts, domain, host_.context(), host_.collector());
  }

  std::vector<std::size_t> key_fields1_;
  std::vector<std::size_t> key_fields2_;
  detail::keyed_function_host host_;
  std::unique_ptr<keyed_co_process_function> fn_;
};

} // namespace

std::unique_ptr<two_input_stream_operator>
make_keyed_co_process_operator(std::vector<std::size_t> key_fields1,
                               std::vector<std::size_t> key_fields2, schema_ptr output_schema,
                               std::unique_ptr<keyed_co_process_function> fn) {
  return std::make_unique<keyed_co_process_operator>(std::move(key_fields1),
                                                     std::move(key_fields2),
                                                     std::move(output_schema), std::move(fn));
}

} // namespace weir::state
