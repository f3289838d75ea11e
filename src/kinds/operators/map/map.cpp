// SPDX-License-Identifier: Apache-2.0
// `type = "map"`: keeps every input field and adds (or replaces) computed ones.
#include "../select/fields.hpp"

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
