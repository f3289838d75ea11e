// SPDX-License-Identifier: Apache-2.0
// The callback sink: `data_stream::sink_to_callback` and
// `sink_batches_to_callback`, for a host program that embeds weir.
#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"

namespace weir {

namespace {

/// Calls the host's function with each batch, on the subtask's thread.
class callback_sink final : public stream_operator {
public:
  explicit callback_sink(std::function<void(const record_batch_ptr&)> fn) : fn_(std::move(fn)) {}

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (batch->num_rows > 0)
      fn_(batch);
  }

private:
  std::function<void(const record_batch_ptr&)> fn_;
};

expected<std::monostate> add_callback_sink(const data_stream& in, runtime::job_graph& g,
                                           std::size_t node, std::size_t port,
                                           std::function<void(const record_batch_ptr&)> fn,
                                           const operator_options& opts) {
  (void) in;
  auto shared = std::make_shared<std::function<void(const record_batch_ptr&)>>(std::move(fn));
  auto id = internal::add_operator_node(
    g, opts,
    {"callback_sink", nullptr,
     [shared]() -> stream_operator_ptr { return std::make_unique<callback_sink>(*shared); },
     true},
    {{node, port}});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace

expected<std::monostate>
data_stream::sink_batches_to_callback(std::function<void(const record_batch_ptr&)> fn,
                                      operator_options opts) const {
  if (!fn)
    return make_error(errc::invalid_argument, "a callback sink needs a function");
  return add_callback_sink(*this, *graph_, node_, port_, std::move(fn), opts);
}

expected<std::monostate> data_stream::sink_to_callback(std::function<void(const row_view&)> fn,
                                                       operator_options opts) const {
  if (!fn)
    return make_error(errc::invalid_argument, "a callback sink needs a function");
  return add_callback_sink(
    *this, *graph_, node_, port_,
    [fn = std::move(fn)](const record_batch_ptr& b) {
      for (std::size_t r = 0; r < b->num_rows; ++r)
        fn(row_view{*b, r});
    },
    opts);
}

} // namespace weir
