// SPDX-License-Identifier: Apache-2.0
// `type = "split"`: one row per part of a string field cut at a separator:
// its keys, parsing, planning and `data_stream::split`; its runtime operator,
// shared with explode, is internal::row_multiplier (src/api/internal/row_multiplier.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "api/internal/row_multiplier.hpp"

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

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream> data_stream::split(std::string field, std::string separator,
                                         bool keep_empty, operator_options opts) const {
  auto idx = internal::string_field(*output_schema(), field, "split");
  if (!idx)
    return idx.error();
  if (separator.empty())
    return make_error(errc::invalid_argument, "split: the separator must not be empty");
  auto id = internal::add_operator_node(*graph_, opts,
                                       {"split", output_schema(), [i = *idx, separator, keep_empty] {
                                          return std::make_unique<internal::row_multiplier>(
                                            internal::row_multiplier::mode::split, i, separator, keep_empty);
                                        }},
                                       {{node_, port_}});
  if (!id)
    return id.error();
  return data_stream{graph_, *id, 0};
}

} // namespace weir
