// SPDX-License-Identifier: Apache-2.0
// `type = "stdout"` sink: JSON lines on stdout.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/connectors/file_sink.hpp"

#include <stdexcept>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list stdout_formats = {"jsonl"};
} // namespace

kind_descriptor describe_sinks_stdout() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "stdout";
  d.keys = {
    {"format", "string", false, "\"jsonl\"", "jsonl"},
  };
  d.parse = [](parse_context& c) {
    c.soft.choice("format", stdout_formats);
    return std::make_unique<kind_spec>();
  };
  d.plan = [](plan_context& c, const kind_spec&) { c.inputs.front().print(c.options); };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the sink this kind plans (make_stdout_sink is beside
// the file sink, ../file/file_sink.cpp, with which it shares its encoding).
void data_stream::print(operator_options opts) const {
  auto id = internal::add_operator_node(
    *graph_, opts,
    {"stdout_sink", nullptr, [] { return make_stdout_sink(format::format_kind::jsonl); }, true, 1},
    {{node_, port_}});
  if (!id)
    throw std::invalid_argument(id.error().message);
}

} // namespace weir
