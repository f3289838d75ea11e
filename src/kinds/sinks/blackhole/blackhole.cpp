// SPDX-License-Identifier: Apache-2.0
// `type = "blackhole"` sink: drops every row, optionally slowly, optionally
// reporting counts, a digest and latencies (weir/blackhole/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/blackhole/sink.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct blackhole_def : kind_spec {
  blackhole::sink blackhole;
  const toml::node* latency_node = nullptr;
};
} // namespace

kind_descriptor describe_sinks_blackhole() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "blackhole";
  d.keys = {
    {"rate", "number", false, "no limit", "rows/s over all subtasks (it sleeps)"},
    {"report", "boolean", false, "false", "print the rows received, one JSON line per subtask"},
    {"digest", "boolean", false, "false", "also an order-independent digest of the rows"},
    {"latency_field", "string", false, "", "an int64 generation-time field: latency percentiles"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<blackhole_def>();
    if (auto v = positive_rate(c.soft, "rate"))
      s->blackhole.rate = *v;
    if (auto v = c.soft.boolean("report"))
      s->blackhole.report = *v;
    if (auto v = c.soft.boolean("digest"))
      s->blackhole.digest = *v;
    if (auto v = c.hard.string("latency_field", false, true)) {
      s->blackhole.latency_field = v->value;
      s->latency_node = v->node;
    }
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<blackhole_def>(ks);
    auto r = c.inputs.front().sink_to(s.blackhole, c.options);
    if (!r)
      c.report_api(s.latency_node, "", without_prefix(r.error(), "blackhole: "));
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`; the
// operator is in blackhole_sink.cpp).
expected<std::monostate> blackhole::add_sink(const data_stream& in, sink spec,
                                             operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  auto factory = make_blackhole_sink_factory(in.output_schema(), spec);
  if (!factory)
    return factory.error();
  auto id = internal::add_operator_node(
    graph, opts, {"blackhole_sink", nullptr, std::move(*factory), true}, {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
