// SPDX-License-Identifier: Apache-2.0
// `type = "split"`: one row per part of a string field cut at a separator.
#include "config/kind.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct split_spec : kind_spec {
  located field;
  located separator;
  bool keep_empty = false;
};
} // namespace

kind_descriptor describe_operators_split() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "split";
  d.keys = {
    {"field", "string", true, "", "the string field to cut; each row holds one part"},
    {"separator", "string", true, "", "where to cut"},
    {"keep_empty", "boolean", false, "false", "keep empty parts"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<split_spec>();
    if (auto f = c.hard.string("field", true, true))
      s->field = *f;
    if (auto sep = c.hard.string("separator", true, true))
      s->separator = *sep;
    if (auto k = c.hard.boolean("keep_empty"))
      s->keep_empty = *k;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<split_spec>(ks);
    auto r = c.inputs.front().split(s.field.value, s.separator.value, s.keep_empty, c.options);
    if (!r)
      c.report_api(s.field.node, "field", error{r.error().code, r.error().message, error::npos});
  };
  return d;
}

} // namespace weir::kinds
