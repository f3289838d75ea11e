// SPDX-License-Identifier: Apache-2.0
// `type = "map"`: keeps every input field and adds (or replaces) computed ones:
// its keys, parsing, planning and `data_stream::map`; its runtime operator,
// shared with select, is internal::projection (src/api/internal/projection.hpp).
#include "../select/fields.hpp"

#include "api/internal/projection.hpp"

namespace weir::kinds {

using namespace weir::config;

kind_descriptor describe_operators_map() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "map";
  d.keys = {
    {"fields", "table of expressions", true, "",
     "fields added or replaced: name = \"expression\""},
  };
  d.parse = internal::parse_fields;
  d.plan = [](plan_context& c, const kind_spec& s) { internal::plan_fields(c, s, false); };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream>
data_stream::map(std::vector<std::pair<std::string, std::string>> fields,
                 operator_options opts) const {
  auto id = internal::make_projection(*this, true, std::move(fields), opts, graph_.get(), node_, port_);
  if (!id)
    return id.error();
  return data_stream{graph_, *id, 0};
}

} // namespace weir
