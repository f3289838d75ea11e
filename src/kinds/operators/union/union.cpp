// SPDX-License-Identifier: Apache-2.0
// `type = "union"`: merges two or more streams of the same schema: its keys,
// parsing, planning and `data_stream::union_with`.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "pass_through.hpp"

#include "weir/api/job.hpp"

#include <limits>

namespace weir::kinds {

using namespace weir::config;

kind_descriptor describe_operators_union() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "union";
  d.min_inputs = 2;
  d.max_inputs = std::numeric_limits<std::size_t>::max();
  d.parse = [](parse_context&) { return std::make_unique<kind_spec>(); };
  d.plan = [](plan_context& c, const kind_spec&) {
    std::vector<data_stream> rest(c.inputs.begin() + 1, c.inputs.end());
    auto r = c.inputs.front().union_with(rest, c.options);
    if (!r)
      c.report_api(c.table.get("inputs"), "inputs",
                   error{r.error().code, r.error().message, error::npos});
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans (a pass-through node fed by
// every input, pass_through.hpp).
expected<data_stream> data_stream::union_with(const std::vector<data_stream>& others,
                                              operator_options opts) const {
  std::vector<std::pair<std::size_t, std::size_t>> inputs{{node_, port_}};
  for (const auto& o : others) {
    if (o.graph_ != graph_)
      return make_error(errc::invalid_argument, "union: streams belong to different jobs");
    if (!(*o.output_schema() == *output_schema()))
      return make_error(errc::type_error,
                        "union: stream '" + o.name() + "' has schema ("
                          + o.output_schema()->to_string() + "), but '" + name()
                          + "' has (" + output_schema()->to_string() + ")");
    inputs.emplace_back(o.node_, o.port_);
  }
  auto id = internal::add_operator_node(
    *graph_, opts,
    {"union", output_schema(), [] { return std::make_unique<internal::pass_through>(); }},
    std::move(inputs));
  if (!id)
    return id.error();
  return data_stream{graph_, *id, 0};
}

} // namespace weir
