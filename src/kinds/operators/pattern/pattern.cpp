// SPDX-License-Identifier: Apache-2.0
// `type = "pattern"`: Flink CEP over a keyed stream, in event time. This
// folder holds the kind's key table, parsing, planning and
// `keyed_stream::pattern`; the engine is nfa.hpp, the operator
// pattern_operator.hpp.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "nfa.hpp"
#include "pattern_operator.hpp"

#include "weir/api/job.hpp"

#include <limits>
#include <set>

namespace weir::kinds {

namespace {
using namespace weir::config;
using weir::cep::contiguity;
using weir::cep::skip_strategy;
using weir::cep::step_kind;

const key_list contiguities = {"next", "followed_by", "followed_by_any", "not_next",
                               "not_followed_by"};
const key_list skips = {"no_skip", "skip_to_next", "skip_past_last_event", "skip_to_first",
                        "skip_to_last"};

struct step_nodes {
  const toml::node* table = nullptr;
  const toml::node* where = nullptr;
  const toml::node* name = nullptr;
};

struct pattern_spec_toml : kind_spec {
  std::vector<located> key_by;
  const toml::node* key_by_node = nullptr;
  weir::cep::pattern_spec spec;
  std::vector<step_nodes> step_nodes_;
  const toml::node* steps_node = nullptr;
  const toml::node* skip_node = nullptr;
  std::vector<named_text> select;
  located late_output;
  located timeout_output;
  bool broken = false;

  std::vector<located> side_outputs() const override {
    std::vector<located> out;
    if (late_output.node)
      out.push_back(late_output);
    if (timeout_output.node)
      out.push_back(timeout_output);
    return out;
  }
};

/// Reads one `steps` entry; false if it is broken (already reported).
bool parse_step(reader& r, const toml::table& t, std::size_t index, const key_list& keys,
                weir::cep::pattern_step& s, step_nodes& nodes) {
  r.check_keys(keys);
  bool ok = true;
  nodes.table = &t;
  if (auto n = r.string("name", true, true)) {
    s.name = n->value;
    nodes.name = n->node;
  } else {
    ok = false;
  }
  if (auto w = r.string("where")) {
    s.condition = w->value;
    nodes.where = w->node;
  }
  if (auto c = r.choice("contiguity", contiguities)) {
    if (index == 0) {
      r.fail(pos_of(*c->node), "the first step has no contiguity (nothing comes before it)");
      ok = false;
    }
    const auto& v = c->value;
    s.kind = v == "not_next"          ? step_kind::not_next
             : v == "not_followed_by" ? step_kind::not_followed_by
                                      : step_kind::normal;
    s.contiguity = v == "next"              ? contiguity::strict
                   : v == "followed_by_any" ? contiguity::non_deterministic
                                            : contiguity::relaxed;
  } else if (t.get("contiguity")) {
    ok = false;
  }
  constexpr auto big = std::numeric_limits<std::int32_t>::max();
  int quantifiers = 0;
  if (auto* n = t.get("times")) {
    ++quantifiers;
    if (auto* a = n->as_array()) {
      auto* lo = a->size() == 2 ? a->get(0)->as_integer() : nullptr;
      auto* hi = a->size() == 2 ? a->get(1)->as_integer() : nullptr;
      if (!lo || !hi || lo->get() < 1 || hi->get() < lo->get() || hi->get() > big) {
        r.fail(pos_of(*n), r.path("times") + " must be a count or [min, max] with 1 <= min <= max",
               {"hint: times = 3, or times = [2, 4]"});
        ok = false;
      } else {
        s.min_times = lo->get();
        s.max_times = hi->get();
      }
    } else if (auto v = r.integer("times", 1, big)) {
      s.min_times = s.max_times = *v;
    } else {
      ok = false;
    }
  }
  if (t.get("times_or_more")) {
    ++quantifiers;
    if (auto v = r.integer("times_or_more", 1, big)) {
      s.min_times = *v;
      s.max_times = -1;
    } else {
      ok = false;
    }
  }
  if (auto v = r.boolean("one_or_more"); v && *v) {
    ++quantifiers;
    s.min_times = 1;
    s.max_times = -1;
  }
  if (quantifiers > 1) {
    r.fail(pos_of(t), "a step takes one of times, times_or_more and one_or_more");
    ok = false;
  }
  if (auto v = r.boolean("optional"))
    s.optional = *v;
  if (auto v = r.boolean("greedy"))
    s.greedy = *v;
  const auto consecutive = r.boolean("consecutive");
  const auto combinations = r.boolean("allow_combinations");
  if (consecutive.value_or(false) && combinations.value_or(false)) {
    r.fail(pos_of(t), "consecutive and allow_combinations exclude each other");
    ok = false;
  }
  if (consecutive.value_or(false))
    s.inner = contiguity::strict;
  if (combinations.value_or(false))
    s.inner = contiguity::non_deterministic;
  if ((consecutive || combinations) && s.max_times == 1) {
    r.fail(pos_of(t), "consecutive and allow_combinations apply to looping steps "
                      "(times, times_or_more, one_or_more)");
    ok = false;
  }
  return ok;
}

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto spec = std::make_unique<pattern_spec_toml>();
  auto& op = *spec;
  auto& r = c.hard;
  op.key_by_node = r.get("key_by");
  if (auto kb = r.string_array("key_by", true, 1))
    op.key_by = std::move(*kb);
  op.steps_node = r.get("steps");
  if (!op.steps_node) {
    r.missing("steps", {"hint: steps = [ { name = \"small\", where = \"amount < 10\" }, "
                        "{ name = \"large\", where = \"amount > 500\" } ]"});
    op.broken = true;
  } else if (auto* a = op.steps_node->as_array(); !a || a->empty()) {
    r.wrong_type(*op.steps_node, "steps", "a non-empty array of tables");
    op.broken = true;
  } else {
    const auto keys = c.children("steps[]");
    for (std::size_t i = 0; i < a->size(); ++i) {
      auto* t = a->get(i)->as_table();
      if (!t) {
        r.fail(pos_of(*a->get(i)), "steps[" + std::to_string(i) + "] must be a table, got " +
                                     std::string(type_name(*a->get(i))));
        op.broken = true;
        continue;
      }
      auto sr = r.sub(*t, "steps[" + std::to_string(i) + "]");
      weir::cep::pattern_step s;
      step_nodes nodes;
      if (!parse_step(sr, *t, i, keys, s, nodes))
        op.broken = true;
      op.spec.steps.push_back(std::move(s));
      op.step_nodes_.push_back(nodes);
    }
  }
  if (auto v = r.duration("within", reader::sign::positive))
    op.spec.within = *v;
  op.skip_node = r.get("skip");
  if (auto v = r.choice("skip", skips)) {
    const auto& s = v->value;
    op.spec.skip = s == "skip_to_next"           ? skip_strategy::skip_to_next
                   : s == "skip_past_last_event" ? skip_strategy::skip_past_last_event
                   : s == "skip_to_first"        ? skip_strategy::skip_to_first
                   : s == "skip_to_last"         ? skip_strategy::skip_to_last
                                                 : skip_strategy::no_skip;
  }
  if (auto v = r.string("skip_step", false, true))
    op.spec.skip_step = v->value;
  const bool to_step = op.spec.skip == skip_strategy::skip_to_first ||
                       op.spec.skip == skip_strategy::skip_to_last;
  if (to_step && op.spec.skip_step.empty())
    r.fail(pos_of(op.skip_node ? *op.skip_node : r.table()),
           "skip = \"" + std::string(op.spec.skip == skip_strategy::skip_to_first
                                       ? "skip_to_first"
                                       : "skip_to_last") +
             "\" needs skip_step, the step to skip to");
  if (!to_step && r.get("skip_step"))
    r.fail(pos_of(*r.get("skip_step")),
           "skip_step applies to skip = \"skip_to_first\" or \"skip_to_last\" only");
  if (auto s = r.string_table("select", false, "an expression"))
    op.select = std::move(*s);
  if (auto v = r.string("late_output", false, true))
    op.late_output = *v;
  if (auto v = r.string("timeout_output", false, true))
    op.timeout_output = *v;
  if (auto v = r.integer("max_partial_matches", 1, std::numeric_limits<std::int32_t>::max()))
    op.spec.max_partial_matches = *v;
  if (auto v = c.soft.duration("state_ttl"))
    op.spec.state_ttl = *v;
  if (op.timeout_output.node && op.spec.within.count() == 0)
    r.fail(pos_of(*op.timeout_output.node),
           "timeout_output needs within: without it no partial match times out");
  return spec;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& op = spec_cast<pattern_spec_toml>(ks);
  if (op.broken)
    return;
  const auto& in = c.inputs.front();
  if (!c.check_fields_exist(*in.output_schema(), op.key_by, "key_by"))
    return;
  std::vector<std::string> keys;
  for (const auto& k : op.key_by)
    keys.push_back(k.value);
  auto keyed = in.key_by(keys);
  if (!keyed) {
    c.report_api(op.key_by_node, "key_by",
                 error{keyed.error().code, keyed.error().message, error::npos});
    return;
  }
  auto spec = op.spec;
  for (const auto& s : op.select)
    spec.select.emplace_back(s.name, s.text);
  spec.late_output = op.late_output.value;
  spec.timeout_output = op.timeout_output.value;
  // Place the engine's errors: a step's condition, a select expression.
  if (auto p = internal::cep::compiled_pattern::make(*in.output_schema(), spec); !p) {
    const auto& err = p.error();
    for (std::size_t i = 0; i < spec.steps.size(); ++i) {
      const std::string prefix = "step '" + spec.steps[i].name + "': ";
      if (err.message.rfind(prefix, 0) != 0)
        continue;
      const auto& nodes = op.step_nodes_[i];
      if (err.offset != error::npos && nodes.where) {
        c.report_api(nodes.where, "steps[" + std::to_string(i) + "].where",
                     error{err.code, err.message.substr(prefix.size()), err.offset});
      } else {
        c.report_api(nodes.table, "steps[" + std::to_string(i) + "]",
                     error{err.code, err.message.substr(prefix.size()), error::npos});
      }
      return;
    }
    c.report_api(err.message.find("skip step") != std::string::npos ? op.skip_node : nullptr,
                 "", error{err.code, err.message, error::npos});
    return;
  } else {
    bool bad = false;
    for (const auto& s : op.select) {
      auto e = expr::compile(s.text, *p->match_schema());
      if (!e) {
        c.report_api(s.node, "select." + s.name, e.error());
        bad = true;
      }
    }
    if (bad)
      return;
  }
  auto r = keyed->pattern(std::move(spec), c.options);
  if (!r)
    c.report_api(nullptr, "", r.error());
}

} // namespace

kind_descriptor describe_operators_pattern() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "pattern";
  d.keys = {
    {"key_by", "array of strings", true, "", "the key fields: patterns match per key"},
    {"steps", "array of tables", true, "", "the pattern sequence, in order"},
    {"steps[].name", "string", true, "", "the step's name (select and conditions say name.field)"},
    {"steps[].where", "string", false, "", "condition; may read earlier steps (amount > small.amount)"},
    {"steps[].contiguity", "string", false, "\"followed_by\"",
     "to the step before: next | followed_by | followed_by_any | not_next | not_followed_by"},
    {"steps[].times", "integer or [min, max]", false, "1", "events the step takes"},
    {"steps[].times_or_more", "integer", false, "", "at least this many events"},
    {"steps[].one_or_more", "boolean", false, "false", "one or more events"},
    {"steps[].optional", "boolean", false, "false", "the step may take no event"},
    {"steps[].greedy", "boolean", false, "false", "a looping step takes every matching event"},
    {"steps[].consecutive", "boolean", false, "false", "strict contiguity inside a looping step"},
    {"steps[].allow_combinations", "boolean", false, "false",
     "non-deterministic contiguity inside a looping step"},
    {"within", "duration", false, "", "event time from a match's first event to its last"},
    {"skip", "string", false, "\"no_skip\"",
     "after a match: no_skip | skip_to_next | skip_past_last_event | skip_to_first | skip_to_last"},
    {"skip_step", "string", false, "", "skip_to_first / skip_to_last: the step"},
    {"select", "table of expressions", false, "",
     "output fields over the match (small.amount); default: every step's count and fields"},
    {"late_output", "string", false, "", "a stream of records behind the watermark"},
    {"timeout_output", "string", false, "", "a stream of partial matches that timed out"},
    {"max_partial_matches", "integer", false, "10000",
     "per key; beyond it the youngest are dropped and counted"},
    {"state_ttl", "duration", false, "", "drop a key's pattern state idle this long (processing time)"},
  };
  d.parse = parse;
  d.plan = plan;
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans (pattern_operator.cpp).
expected<data_stream> keyed_stream::pattern(cep::pattern_spec spec,
                                            operator_options opts) const {
  auto& g = input_.graph_;
  const auto& in = *input_.output_schema();
  auto compiled = internal::cep::compiled_pattern::make(in, spec);
  if (!compiled)
    return compiled.error();
  auto shared = std::make_shared<const internal::cep::compiled_pattern>(std::move(*compiled));

  std::vector<field> head;
  std::set<std::string> names;
  for (auto i : key_idx_) {
    head.push_back(in.at(i));
    names.insert(in.at(i).name);
  }
  for (const char* n : {"match_start", "match_end"}) {
    if (!names.insert(n).second)
      return make_error(errc::invalid_argument, "pattern: key field '" + std::string{n} +
                                                  "' clashes with an output field");
    head.push_back(field{n, type_id::timestamp});
  }
  auto select = spec.select;
  if (select.empty()) {
    const auto& ms = *shared->match_schema();
    for (std::size_t f = in.size(); f < ms.size(); ++f) {
      const auto& name = ms.at(f).name;
      const auto dot = name.find('.');
      const auto base = name.substr(dot + 1);
      bool is_key = false;
      for (auto k : key_idx_)
        is_key = is_key || in.at(k).name == base;
      if (!is_key || base == "count")
        select.emplace_back(name, "\"" + name + "\"");
    }
  }
  internal::cep::pattern_plan plan;
  plan.pattern = shared;
  plan.key_fields = key_idx_;
  plan.input = input_.output_schema();
  std::vector<field> tail;
  for (const auto& [name, text] : select) {
    if (name == "timed_out_at" || !names.insert(name).second)
      return make_error(errc::invalid_argument,
                        "pattern: output field '" + name + "' is there twice");
    auto e = expr::compile(text, *shared->match_schema());
    if (!e)
      return error{e.error().code, "select." + name + ": " + e.error().message,
                   e.error().offset};
    if (e->result_type() == type_id::null_type)
      return make_error(errc::type_error, "select." + name + ": the expression is always null");
    tail.push_back(field{name, e->result_type()});
    plan.select.push_back(std::move(*e));
  }
  auto out_fields = head;
  out_fields.insert(out_fields.end(), tail.begin(), tail.end());
  auto timeout_fields = head;
  timeout_fields.push_back(field{"timed_out_at", type_id::timestamp});
  timeout_fields.insert(timeout_fields.end(), tail.begin(), tail.end());
  plan.output = make_schema(std::move(out_fields));
  plan.timeout = make_schema(std::move(timeout_fields));
  plan.emit_timeouts = !spec.timeout_output.empty();
  if (plan.emit_timeouts && spec.within.count() == 0)
    return make_error(errc::invalid_argument,
                      "pattern: timeout_output needs within (nothing times out without it)");

  auto name = internal::claim_stream_name(*g, opts.name, "pattern");
  if (!name)
    return name.error();
  for (const auto* side : {&spec.late_output, &spec.timeout_output}) {
    if (side->empty())
      continue;
    if (*side == *name || g->find_stream(*side) != nullptr ||
        (side == &spec.timeout_output && *side == spec.late_output))
      return make_error(errc::invalid_argument, "duplicate stream name '" + *side + "'");
    for (const auto& n : g->nodes)
      if (n.name == *side)
        return make_error(errc::invalid_argument, "duplicate stream name '" + *side + "'");
  }
  runtime::stream_node node;
  node.name = *name;
  node.kind = "pattern";
  // Its state: partial matches by key, which point into the steps by index:
  // the layout depends on the key types and the steps' shapes, not on their
  // conditions or names.
  node.state_descriptor = "pattern; keys (";
  for (std::size_t i = 0; i < key_idx_.size(); ++i)
    node.state_descriptor += (i ? ", " : "")
                             + std::string{to_string(input_.output_schema()->at(key_idx_[i]).type)};
  node.state_descriptor += "); steps";
  for (const auto& st : spec.steps)
    node.state_descriptor += " " + std::to_string(static_cast<int>(st.kind)) + "/"
                             + std::to_string(st.min_times) + ".." + std::to_string(st.max_times)
                             + (st.optional ? "?" : "");
  node.parallelism = internal::default_parallelism(*g, opts.parallelism);
  node.outputs.push_back(runtime::output_port{*name, plan.output, false});
  node.outputs.push_back(runtime::output_port{spec.late_output, input_.output_schema(), true});
  node.outputs.push_back(runtime::output_port{spec.timeout_output, plan.timeout, false});
  node.make_operator = [plan] {
    return std::make_unique<internal::cep::pattern_operator>(plan);
  };
  auto id = internal::add_graph_node(*g, std::move(node), {{input_.node_, input_.port_}}, key_idx_);
  return data_stream{g, id, 0};
}

} // namespace weir
