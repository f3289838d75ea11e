// SPDX-License-Identifier: Apache-2.0
// `type = "generator"` source: rows computed from expressions over their
// sequence number with seeded random functions (YSB's fields, tests;
// generator_source.hpp in this folder). A benchmark kind: it lives outside
// the core library, in weir_bench_kinds, which the weir executable links.
#include "../../internal/generated.hpp"
#include "api/internal/graph.hpp"

#include "generator_source.hpp"
#include "weir/runtime/job_graph.hpp"

#include <stdexcept>
#include "weir/expr/expression.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct generator_def : kind_spec {
  generator::source generator;
  std::vector<named_text> generator_fields;
  const toml::node* fields_node = nullptr;
  const toml::node* event_time_node = nullptr;
  std::size_t parallelism = 0;
};

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto out = std::make_unique<generator_def>();
  auto& d = *out;
  auto& r = c.hard;
  auto g = internal::parse_generated_common(c, "count");
  d.parallelism = g.parallelism;
  auto& spec = d.generator;
  spec.count = g.count;
  spec.seed = g.seed;
  spec.rate = g.rate;
  spec.generation_time_field = g.generation_time_field;
  spec.watermark = g.watermark;
  spec.projection_push_down = g.projection_push_down;
  d.fields_node = r.get("fields");
  if (auto f = r.string_table("fields", true, "an expression string")) {
    d.generator_fields = std::move(*f);
    for (const auto& e : d.generator_fields)
      spec.fields.emplace_back(e.name, e.text);
  }
  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(c.children("event_time"));
    if (auto f = er.string("field", true, true)) {
      spec.event_time_field = f->value;
      d.event_time_node = f->node;
      if (!d.generator_fields.empty()) {
        key_list names;
        for (const auto& e : d.generator_fields)
          names.push_back(e.name);
        if (!contains(names, f->value)) {
          std::vector<std::string> extra;
          if (auto cand = closest(f->value, names))
            extra.push_back("hint: did you mean " + quote(*cand) + "?");
          extra.push_back("hint: the fields are " + plain_list(names));
          er.fail(pos_of(*f->node),
                  "event_time.field " + quote(f->value) + " is not a field of the generator",
                  std::move(extra));
        }
      }
    }
  }
  return out;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& s = spec_cast<generator_def>(ks);
  auto r = c.target.from(s.generator, operator_options{c.options.name, s.parallelism});
  if (r)
    return;
  // Point at every field expression that does not compile.
  bool found = false;
  for (const auto& f : s.generator_fields) {
    auto compiled = expr::compile(f.text, *generator_input_schema(),
                                  expr::compile_options{s.generator.seed});
    if (!compiled) {
      c.report_api(f.node, "fields." + f.name, compiled.error());
      found = true;
    }
  }
  if (found)
    return;
  const auto& msg = r.error().message;
  const toml::node* at = nullptr;
  if (msg.rfind("event_time", 0) == 0)
    at = s.event_time_node;
  else if (msg.rfind("generation_time_field", 0) == 0)
    at = c.table.get("generation_time_field");
  c.report_api(at, "", error{r.error().code, msg, error::npos});
}

} // namespace

kind_descriptor describe_sources_generator() {
  kind_descriptor d;
  d.category = kind_category::source;
  d.type = "generator";
  d.min_inputs = d.max_inputs = 0;
  d.keys = {
    {"count", "integer", false, "unbounded", "rows over all subtasks"},
    {"rate", "number", false, "as fast as possible", "rows/s over all subtasks"},
    {"fields", "table of expressions", true, "", "name = \"expression over seq\", in output order"},
    {"seed", "integer", false, "0", "the seed of rand_int, rand_float, rand_string"},
    {"event_time", "table", false, "", "event time of the rows; none: no event time"},
    {"event_time.field", "string", true, "", "a timestamp or int64 field"},
    {"watermark", "table", false, "", "the watermark generator"},
    {"watermark.max_out_of_orderness", "duration", false, "\"0s\"", "bounded out-of-orderness"},
    {"watermark.idle_timeout", "duration", false, "\"0s\"", "idle after this; 0: never"},
    {"generation_time_field", "string", false, "", "adds an int64 field: generation time (ns)"},
    {"projection_push_down", "boolean", false, "true", "false: generate every field, read or not"},
  };
  d.parse = parse;
  d.plan = plan;
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the same source the kind plans.
expected<data_stream> generator::add_source(job& j, source spec, operator_options opts) {
  auto schema = generator_output_schema(spec);
  if (!schema)
    return schema.error();
  // The options are read when the job runs: they may change until then.
  const job_options* options = &j.graph()->options;
  // Filled by runtime::prune_generated_fields before the job runs.
  auto needed = std::make_shared<std::vector<bool>>();
  auto node = internal::add_source_node(
    *j.graph(), opts, "generator_source", *schema,
    internal::default_parallelism(*j.graph(), opts.parallelism), spec.watermark,
    [spec, options, needed](std::size_t subtask, std::size_t parallelism, bad_record_handler) {
      auto reader = make_generator_reader(spec, subtask, parallelism, options->buffer_timeout,
                                          *needed);
      if (!reader)
        throw std::runtime_error(reader.error().message);
      return std::move(*reader);
    });
  if (!node)
    return node.error();
  // Without push-down the node has no mask: prune_generated_fields leaves
  // it alone and the reader's mask stays empty (every field generated).
  if (spec.projection_push_down)
    (*node)->needed_columns = std::move(needed);
  return internal::stream_access::make(j.graph(), (*node)->id);
}

} // namespace weir
