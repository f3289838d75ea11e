// SPDX-License-Identifier: Apache-2.0
// `type = "filter"`: keeps the rows where `where` (an expression) is true.
#include "config/kind.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct filter_spec : kind_spec {
  located where;
};
} // namespace

kind_descriptor describe_operators_filter() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "filter";
  d.keys = {
    {"where", "expression", true, "", "keeps the rows where this is true (src/expr/README.md)"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<filter_spec>();
    if (auto w = c.hard.string("where", true, true))
      s->where = *w;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<filter_spec>(ks);
    auto r = c.inputs.front().filter(std::string_view{s.where.value}, c.options);
    if (!r)
      c.report_api(s.where.node, "where", r.error());
  };
  return d;
}

} // namespace weir::kinds
