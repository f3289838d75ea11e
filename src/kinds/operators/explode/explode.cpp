// SPDX-License-Identifier: Apache-2.0
// `type = "explode"`: one row per element of a JSON array held in a string field:
// its keys, parsing, planning and `data_stream::explode`; its runtime operator,
// shared with split, is internal::row_multiplier (src/api/internal/row_multiplier.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "api/internal/row_multiplier.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct explode_spec : kind_spec {
  located field;
};
} // namespace

kind_descriptor describe_operators_explode() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "explode";
  d.keys = {
    {"field", "string", true, "", "the string field holding a JSON array"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<explode_spec>();
    if (auto f = c.hard.string("field", true, true))
      s->field = *f;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<explode_spec>(ks);
    auto r = c.inputs.front().explode(s.field.value, c.options);
    if (!r)
      c.report_api(s.field.node, "field", error{r.error().code, r.error().message, error::npos});
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream> data_stream::explode(std::string field, operator_options opts) const {
  auto idx = internal::string_field(*output_schema(), field, "explode");
  if (!idx)
    return idx.error();
  auto id = internal::add_operator_node(*graph_, opts,
                                       {"explode", output_schema(), [i = *idx] {
                                          return std::make_unique<internal::row_multiplier>(
                                            internal::row_multiplier::mode::explode, i, std::string{}, false);
                                        }},
                                       {{node_, port_}});
  if (!id)
    return id.error();
  return data_stream{graph_, *id, 0};
}

} // namespace weir
