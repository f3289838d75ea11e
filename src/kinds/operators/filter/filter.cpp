// SPDX-License-Identifier: Apache-2.0
// `type = "filter"`: keeps the rows where `where` (an expression) is true:
// its keys, parsing, planning, `data_stream::filter` (both overloads) and
// its runtime operators (filter_operators.{hpp,cpp}).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "filter_operators.hpp"

#include "weir/api/job.hpp"

#include <stdexcept>

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

namespace weir {

// The API's methods: the operator this kind plans.
expected<data_stream> data_stream::filter(std::string_view condition,
                                          operator_options opts) const {
  auto compiled = expr::compile(condition, *output_schema());
  if (!compiled)
    return compiled.error();
  if (compiled->result_type() != type_id::boolean
      && compiled->result_type() != type_id::null_type)
    return make_error(errc::type_error,
                      "a filter condition must be a bool, got "
                        + std::string{to_string(compiled->result_type())},
                      0);
  auto reads = compiled->referenced_fields();
  // Filled by runtime::prune_generated_fields before the job runs.
  auto needed = std::make_shared<std::vector<bool>>();
  auto id = internal::add_operator_node(*graph_, opts,
                                       {"filter", output_schema(),
                                        [c = std::move(*compiled), needed] {
                                          return std::make_unique<internal::expression_filter>(
                                            c, needed);
                                        }},
                                       {{node_, port_}});
  if (!id)
    return id.error();
  graph_->nodes[*id].reads = std::move(reads);
  graph_->nodes[*id].forwards_input_columns = true;
  graph_->nodes[*id].needed_columns = std::move(needed);
  return data_stream{graph_, *id, 0};
}

data_stream data_stream::filter(std::function<bool(const row_view&)> predicate,
                                operator_options opts) const {
  auto id = internal::add_operator_node(*graph_, opts,
                                       {"filter", output_schema(), [p = std::move(predicate)] {
                                          return std::make_unique<internal::predicate_filter>(p);
                                        }},
                                       {{node_, port_}});
  if (!id)
    throw std::invalid_argument(id.error().message);
  return data_stream{graph_, *id, 0};
}

} // namespace weir
