// SPDX-License-Identifier: Apache-2.0
// `type = "summary"`: a table on stdout at the end of the job (the sink is
// make_summary_sink_factory in weir/summary/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/summary/sink.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct summary_def : kind_spec {
  std::string title;
  std::vector<located> group_by;
  std::vector<named_text> aggregates;
  const toml::node* aggregate_node = nullptr;
  located order_by;
  bool ascending = false;
  std::size_t limit = 10;
  std::string highlight_label;
  located highlight_where;
};

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto spec = std::make_unique<summary_def>();
  auto& s = *spec;
  auto& r = c.hard;
  auto& soft = c.soft;
  if (auto v = soft.string("title"))
    s.title = v->value;
  if (auto g = r.string_array("group_by"))
    s.group_by = std::move(*g);
  bool aggregates_ok = false;
  s.aggregate_node = r.get("aggregate");
  if (auto a = r.string_table("aggregate", true, "a call string such as \"count(*)\"")) {
    s.aggregates = std::move(*a);
    aggregates_ok = true;
  }
  if (auto o = soft.string("order_by", false, true)) {
    s.order_by = *o;
    if (aggregates_ok) {
      key_list names;
      for (const auto& a : s.aggregates)
        names.push_back(a.name);
      for (const auto& g : s.group_by)
        names.push_back(g.value);
      if (!contains(names, o->value)) {
        std::vector<std::string> extra;
        if (auto cand = closest(o->value, names))
          extra.push_back("hint: did you mean " + quote(*cand) + "?");
        extra.push_back("hint: order by one of " + quoted_list(names));
        soft.fail(pos_of(*o->node),
                  "order_by " + quote(o->value) + " names no aggregate or group_by field",
                  std::move(extra));
        s.order_by = {}; // the API's default stands in
      }
    }
  }
  if (auto v = soft.boolean("ascending"))
    s.ascending = *v;
  if (auto v = soft.integer("limit", 1, std::numeric_limits<std::int64_t>::max()))
    s.limit = static_cast<std::size_t>(*v);
  if (auto* h = soft.subtable("highlight")) {
    auto hr = soft.sub(*h, "highlight");
    hr.check_keys(c.children("highlight"));
    if (auto w = hr.string("where", true, true)) {
      s.highlight_where = *w;
      s.highlight_label = w->value;
    }
    if (auto l = hr.string("label"))
      s.highlight_label = l->value;
  }

  return spec;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& s = spec_cast<summary_def>(ks);
  const auto& in = c.inputs.front();
  const auto& input_schema = in.output_schema();
  if (!c.check_fields_exist(*input_schema, s.group_by, "group_by"))
    return;
  summary::sink spec;
  spec.title = s.title;
  for (const auto& g : s.group_by)
    spec.group_by.push_back(g.value);
  for (const auto& a : s.aggregates)
    spec.aggregates.push_back(window::aggregate_spec{a.name, a.text});
  spec.order_by = s.order_by.value;
  spec.ascending = s.ascending;
  spec.limit = s.limit;
  spec.highlight_label = s.highlight_label;
  spec.highlight_where = s.highlight_where.value;
  auto r = in.sink_to(spec, c.options);
  if (r)
    return;
  // Find which expression the API tripped on, and any others: check each
  // aggregate alone, then the highlight with the first aggregate.
  bool found = false;
  bool first_ok = true;
  for (const auto& a : s.aggregates) {
    summary::sink one;
    one.group_by = spec.group_by;
    one.aggregates = {window::aggregate_spec{a.name, a.text}};
    if (auto f = make_summary_sink_factory(input_schema, one); !f) {
      c.report_api(a.node, "", without_prefix(f.error(), "summary: "));
      found = true;
      first_ok = first_ok && &a != &s.aggregates.front();
    }
  }
  if (first_ok && s.highlight_where.node) {
    summary::sink first;
    first.group_by = spec.group_by;
    first.aggregates = {spec.aggregates.front()};
    first.highlight_where = spec.highlight_where;
    if (auto f = make_summary_sink_factory(input_schema, first); !f) {
      auto err = without_prefix(f.error(), "summary: ");
      if (err.message.rfind("highlight_where: ", 0) == 0 ||
          err.message.rfind("highlight_where ", 0) == 0)
        err.message.erase(0, std::string_view{"highlight_where"}.size() + 1);
      c.report_api(s.highlight_where.node, "highlight.where", err);
      found = true;
    }
  }
  if (!found)
    c.report_api(nullptr, "", without_prefix(r.error(), "summary: "));
}

} // namespace

kind_descriptor describe_sinks_summary() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "summary";
  d.keys = {
    {"title", "string", false, "\"\"", "a line above the table"},
    {"group_by", "array of strings", false, "[]", "the fields rows are grouped by"},
    {"aggregate", "table of calls", true, "", "name = \"count(*)\"; the first gives the shares"},
    {"order_by", "string", false, "the first aggregate", "an aggregate or group_by field"},
    {"ascending", "boolean", false, "false", "sort ascending"},
    {"limit", "integer", false, "10", "rows shown at most"},
    {"highlight", "table", false, "", "a line with the share of the rows matching where"},
    {"highlight.label", "string", false, "the where text", "its label"},
    {"highlight.where", "expression", true, "", "the rows it counts"},
  };
  d.parse = parse;
  d.plan = plan;
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`) (summary_sink.cpp).
expected<std::monostate> summary::add_sink(const data_stream& in, sink spec,
                                           operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  auto board = graph.end_output;
  const auto slot = board->reserve();
  auto factory = make_summary_sink_factory(
    in.output_schema(), spec, [board, slot](const std::string& text) { board->put(slot, text); });
  if (!factory)
    return factory.error();
  auto id = internal::add_operator_node(
    graph, opts, {"summary_sink", nullptr, std::move(*factory), true, 1}, {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
