// SPDX-License-Identifier: Apache-2.0
// `type = "select"`: outputs exactly the listed fields, each an expression:
// its keys, parsing, planning and `data_stream::select`; its runtime operator,
// shared with map, is internal::projection (src/api/internal/projection.hpp).
#include "fields.hpp"

#include "api/internal/projection.hpp"

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"

namespace weir::kinds {

using namespace weir::config;

namespace internal {

std::unique_ptr<kind_spec> parse_fields(parse_context& c) {
  auto s = std::make_unique<fields_spec>();
  s->fields_node = c.hard.get("fields");
  if (auto f = c.hard.string_table("fields", true, "an expression string"))
    s->fields = std::move(*f);
  return s;
}

void plan_fields(plan_context& c, const kind_spec& ks, bool select) {
  const auto& s = spec_cast<fields_spec>(ks);
  const auto& in = c.inputs.front();
  std::vector<std::pair<std::string, std::string>> fs;
  for (const auto& f : s.fields)
    fs.emplace_back(f.name, f.text);
  auto r = select ? in.select(std::move(fs), c.options) : in.map(std::move(fs), c.options);
  if (r)
    return;
  // The API reports the first problem; compile each expression alone to
  // point at every broken one.
  bool found = false;
  for (const auto& f : s.fields) {
    if (auto e = expr::compile(f.text, *in.output_schema()); !e) {
      c.report_api(f.node, "fields." + f.name, e.error());
      found = true;
    }
  }
  if (!found)
    c.report_api(s.fields_node, "fields", error{r.error().code, r.error().message, error::npos});
}

} // namespace internal

kind_descriptor describe_operators_select() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "select";
  d.keys = {
    {"fields", "table of expressions", true, "", "the output fields in order: name = \"expression\""},
  };
  d.parse = internal::parse_fields;
  d.plan = [](plan_context& c, const kind_spec& s) { internal::plan_fields(c, s, true); };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream>
data_stream::select(std::vector<std::pair<std::string, std::string>> fields,
                    operator_options opts) const {
  auto id = internal::make_projection(*this, false, std::move(fields), opts, graph_.get(), node_, port_);
  if (!id)
    return id.error();
  return data_stream{graph_, *id, 0};
}

} // namespace weir
