// SPDX-License-Identifier: Apache-2.0
// `type = "stdout"` sink: JSON lines on stdout.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/file/sink.hpp"
#include "weir/print/sink.hpp"

#include <stdexcept>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list stdout_formats = {"jsonl"};
const key_list timestamp_formats = {"epoch_ms", "iso8601"};

struct stdout_sink_def : kind_spec {
  print::sink spec;
};
} // namespace

kind_descriptor describe_sinks_stdout() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "stdout";
  d.keys = {
    {"format", "string", false, "\"jsonl\"", "jsonl"},
    {"timestamp_format", "string", false, "\"epoch_ms\"", "epoch_ms | iso8601 (timestamp fields, window_start and window_end)"},
  };
  d.parse = [](parse_context& c) {
    c.soft.choice("format", stdout_formats);
    auto s = std::make_unique<stdout_sink_def>();
    if (auto f = c.soft.choice("timestamp_format", timestamp_formats))
      s->spec.timestamp_format = f->value == "iso8601" ? format::timestamp_format::iso8601
                                                       : format::timestamp_format::epoch_ms;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    auto r = c.inputs.front().sink_to(spec_cast<stdout_sink_def>(ks).spec, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (make_stdout_sink is beside the file
// sink, ../file/file_sink.cpp, with which it shares its encoding).
expected<std::monostate> print::add_sink(const data_stream& in, sink spec,
                                         operator_options opts) {
  const auto ts = spec.timestamp_format;
  auto id = internal::add_operator_node(
    *internal::stream_access::graph(in), opts,
    {"stdout_sink", nullptr,
     [ts] { return make_stdout_sink(format::format_kind::jsonl, nullptr, ts); }, true, 1},
    {internal::stream_access::input(in)});
  if (!id)
    return id.error();
  return std::monostate{};
}

void data_stream::print(operator_options opts) const {
  auto r = sink_to(print::sink{}, std::move(opts));
  if (!r)
    throw std::invalid_argument(r.error().message);
}

} // namespace weir
