// SPDX-License-Identifier: Apache-2.0
// `type = "union"`: merges two or more streams of the same schema.
#include "config/kind.hpp"

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
