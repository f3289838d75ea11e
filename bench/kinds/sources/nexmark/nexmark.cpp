// SPDX-License-Identifier: Apache-2.0
// `type = "nexmark"` source: the Nexmark benchmark's persons, auctions and
// bids (nexmark_generator.hpp in this folder). A benchmark kind: it lives outside the
// core library, in weir_bench_kinds, which the weir executable links.
#include "../../internal/generated.hpp"
#include "api/internal/graph.hpp"

#include "../generator/generator_source.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/runtime/job_graph.hpp"

#include <stdexcept>

#include <limits>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list nexmark_streams = {"bid", "auction", "person"};

struct nexmark_def : kind_spec {
  nexmark::source nexmark;
  std::size_t parallelism = 0;
};

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto out = std::make_unique<nexmark_def>();
  auto& d = *out;
  auto& r = c.hard;
  auto g = internal::parse_generated_common(c, "events");
  d.parallelism = g.parallelism;
  auto& spec = d.nexmark;
  spec.events = g.count;
  spec.generator.seed = g.seed;
  spec.rate = g.rate;
  spec.generation_time_field = g.generation_time_field;
  spec.watermark = g.watermark;
  spec.projection_push_down = g.projection_push_down;
  if (auto v = r.choice("stream", nexmark_streams))
    spec.stream = v->value == "bid"       ? nexmark_stream::bid
                  : v->value == "auction" ? nexmark_stream::auction
                                          : nexmark_stream::person;
  if (auto v = r.integer("event_rate", 1, std::numeric_limits<std::int64_t>::max()))
    spec.generator.event_rate = *v;
  if (auto* n = r.get("base_time")) {
    if (auto* i = n->as_integer()) {
      spec.generator.base_time = i->get();
    } else if (auto* str = n->as_string()) {
      if (auto ms = parse_iso8601(str->get()))
        spec.generator.base_time = *ms;
      else
        r.fail(pos_of(*n), "base_time must be an ISO-8601 time, got " + quote(str->get()),
               {"hint: write \"2015-07-15T00:00:00Z\" or an integer of ms since the epoch"});
    } else {
      r.wrong_type(*n, "base_time", "an ISO-8601 string or an integer of ms");
    }
  }
  return out;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& s = spec_cast<nexmark_def>(ks);
  auto r = c.target.from(s.nexmark, operator_options{c.options.name, s.parallelism});
  if (!r)
    c.report_api(c.table.get("generation_time_field"), "", r.error());
}

} // namespace

kind_descriptor describe_sources_nexmark() {
  kind_descriptor d;
  d.category = kind_category::source;
  d.type = "nexmark";
  d.min_inputs = d.max_inputs = 0;
  d.keys = {
    {"events", "integer", false, "unbounded", "events over all subtasks (all streams counted)"},
    {"stream", "string", false, "\"bid\"", "bid | auction | person"},
    {"seed", "integer", false, "0", "the generator's seed"},
    {"rate", "number", false, "as fast as possible", "events/s over all subtasks"},
    {"event_rate", "integer", false, "10000000", "events/s of event time"},
    {"base_time", "string or integer", false, "\"2015-07-15T00:00:00Z\"", "event time of event 0"},
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
expected<data_stream> nexmark::add_source(job& j, source spec, operator_options opts) {
  const auto& g = spec.generator;
  if (spec.rate < 0)
    return make_error(errc::invalid_argument, "a nexmark source's rate must not be negative");
  if (g.event_rate <= 0 || g.person_proportion <= 0 || g.auction_proportion <= 0
      || g.bid_proportion <= 0 || g.hot_auction_ratio <= 0 || g.hot_bidder_ratio <= 0
      || g.hot_seller_ratio <= 0 || g.avg_person_bytes <= 0 || g.avg_auction_bytes <= 0
      || g.avg_bid_bytes <= 0)
    return make_error(errc::invalid_argument, "a nexmark source needs a positive event_rate, proportions, hot ratios "
                   "and average sizes");
  auto schema = nexmark_output_schema(spec);
  if (!schema)
    return schema.error();
  const job_options* options = &j.graph()->options;
  // Filled by runtime::prune_generated_fields before the job runs.
  auto needed = std::make_shared<std::vector<bool>>();
  auto node = internal::add_source_node(
    *j.graph(), opts, "nexmark_source", *schema,
    internal::default_parallelism(*j.graph(), opts.parallelism), spec.watermark,
    [spec, options, needed](std::size_t subtask, std::size_t parallelism, bad_record_handler) {
      auto reader =
        make_nexmark_reader(spec, subtask, parallelism, options->buffer_timeout, *needed);
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
