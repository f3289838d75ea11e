// SPDX-License-Identifier: Apache-2.0
// `type = "window"`: keyed windowed aggregation. This folder holds the kind's
// key table, parsing, planning and `keyed_stream::window`; the operator itself
// is window::window_plan and the window operator in src/window/.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/core/log.hpp"

#include <spdlog/logger.h>
#include "weir/window/window_operator.hpp"

#include <map>

namespace weir::kinds {

namespace {
using namespace weir::config;
using std::chrono::milliseconds;

const key_list window_types = {"tumbling", "sliding", "session", "global", "count"};
// The keys of `window = {...}` that each window type takes.
const std::map<std::string, key_list, std::less<>> window_type_keys = {
  {"tumbling", {"type", "size", "offset", "time"}},
  {"sliding", {"type", "size", "slide", "offset", "time"}},
  {"session", {"type", "gap", "time"}},
  {"global", {"type"}},
  {"count", {"type", "size", "slide"}},
};
const key_list window_times = {"event", "processing"};
const key_list trigger_types = {"event_time", "processing_time", "count"};

/// `window = {...}` of a window operator; `type` is empty when broken.
struct window_def {
  std::string type;
  milliseconds size{0};
  milliseconds slide{0};
  milliseconds offset{0};
  milliseconds gap{0};
  std::int64_t count_size = 0;  ///< count windows: records per window
  std::int64_t count_slide = 0; ///< count windows: records per firing; 0 = size
  bool processing_time = false; ///< time = "processing"
};

/// `trigger = {...}` of a window operator; `type` is empty when broken.
struct trigger_def {
  std::string type;
  std::int64_t count = 0;
  bool purge = false;
  const toml::node* node = nullptr;
};

struct window_spec : kind_spec {
  std::vector<located> key_by;
  const toml::node* key_by_node = nullptr;
  window_def window;
  const toml::node* window_node = nullptr;
  std::optional<trigger_def> trigger;
  const toml::node* trigger_node = nullptr;
  std::vector<named_text> aggregates;
  const toml::node* aggregate_node = nullptr;
  milliseconds allowed_lateness{0};
  located late_output;
  bool local_aggregation = false;

  std::vector<located> side_outputs() const override {
    if (late_output.node)
      return {late_output};
    return {};
  }
};

/// Reads the keys of `window = {...}` (table `w`) for window type `type`.
void parse_window(window_spec& op, const toml::table& w, const std::string& type,
                  reader& wr, const key_list& all) {
  auto& wd = op.window;
  const auto& allowed = window_type_keys.at(type);
  wr.check_keys(allowed, [&](std::string_view key)
                  -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    key_list users;
    for (const auto& [t, keys] : window_type_keys)
      if (contains(keys, key))
        users.push_back(t);
    if (users.empty()) {
      // A typo of a key of another window type ('slid' in a tumbling window)?
      if (closest(key, allowed) || !closest(key, all))
        return std::nullopt;
      auto c = *closest(key, all);
      key_list owners;
      for (const auto& [t, keys] : window_type_keys)
        if (contains(keys, c))
          owners.push_back(t);
      return std::pair{"unknown key 'window." + std::string(key) + "'",
                       std::vector<std::string>{"hint: did you mean '" + c + "'? It is a key of " +
                                                plain_list(owners) + " windows"}};
    }
    return std::pair{"'" + std::string(key) + "' does not apply to a " + type + " window",
                     std::vector<std::string>{"hint: '" + std::string(key) + "' is a key of " +
                                              plain_list(users) + " windows"}};
  });
  bool ok = true;
  if (contains(allowed, "time")) {
    if (auto t = wr.choice("time", window_times))
      wd.processing_time = t->value == "processing";
    else if (w.get("time"))
      ok = false;
  }
  if (type == "tumbling" || type == "sliding") {
    auto size = wr.duration("size", reader::sign::positive, true);
    std::optional<milliseconds> slide;
    if (type == "sliding") {
      slide = wr.duration("slide", reader::sign::positive, true);
      ok = ok && slide.has_value();
    }
    auto offset = wr.duration("offset", reader::sign::any);
    ok = ok && size.has_value() && (offset.has_value() || !w.get("offset"));
    if (size && offset && (offset->count() >= size->count() ||
                           -offset->count() >= size->count())) {
      wr.fail(pos_of(*w.get("offset")),
              "window.offset must be smaller than window.size (" + format_duration(*size) +
                ") in magnitude, got " + quote(w.get("offset")->as_string()->get()));
      ok = false;
    }
    if (size && slide && *slide > *size) {
      // Flink's sliding windows allow it (sampling); say what it means.
      const auto& at = w.get("slide")->source();
      log::runtime().warn("{}:{}:{}: warning: window.slide ({}) is larger than window.size "
                          "({}): records in the gaps between windows fall in no window and "
                          "are dropped (not counted as late)",
                          at.path ? *at.path : std::string{}, at.begin.line, at.begin.column,
                          format_duration(*slide), format_duration(*size));
    }
    if (size)
      wd.size = *size;
    if (slide)
      wd.slide = *slide;
    if (offset)
      wd.offset = *offset;
  } else if (type == "session") {
    auto gap = wr.duration("gap", reader::sign::positive, true);
    ok = ok && gap.has_value();
    if (gap)
      wd.gap = *gap;
  } else if (type == "count") {
    const std::vector<std::string> hint = {
      "hint: a count window's size and slide are numbers of records: "
      "window = { type = \"count\", size = 100, slide = 10 }"};
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    if (!w.get("size")) {
      wr.missing("size", hint);
      ok = false;
    } else if (auto v = wr.integer("size", 1, max)) {
      wd.count_size = *v;
    } else {
      ok = false;
    }
    if (w.get("slide")) {
      if (auto v = wr.integer("slide", 1, max))
        wd.count_slide = *v;
      else
        ok = false;
    }
  }
  if (ok)
    wd.type = type;
}

/// The cross-checks of a window operator's keys: a trigger where none
/// applies, lateness where nothing is ever late.
void check_window_options(window_spec& op, reader& soft) {
  const auto& wd = op.window;
  if (wd.type.empty())
    return;
  if (wd.type == "count" && op.trigger_node) {
    soft.fail(pos_of(*op.trigger_node), "a count window has its own trigger",
              {"hint: for another trigger write window = { type = \"global\" } and the "
               "trigger"});
  }
  if (wd.type == "global" && !op.trigger_node) {
    soft.fail(pos_of(*op.window_node), "a global window needs a trigger, or it never fires",
              {"hint: add trigger = { type = \"count\", count = 100 } (purge = true to emit "
               "disjoint batches)"});
  }
  const bool event_time = !wd.processing_time && wd.type != "global" && wd.type != "count";
  if (event_time)
    return;
  const std::string kind = wd.processing_time ? "a processing-time" : "a " + wd.type;
  if (auto* n = soft.get("allowed_lateness"); n && op.allowed_lateness.count() > 0)
    soft.fail(pos_of(*n), "allowed_lateness applies to event-time windows only; " + kind +
                            " window is never late");
  if (op.late_output.node)
    soft.fail(pos_of(*op.late_output.node),
              "late_output applies to event-time windows only; " + kind +
                " window is never late");
}

/// The assigner, trigger and evictor a window operator's keys describe.
struct windowing {
  std::shared_ptr<const window::window_assigner> assigner;
  std::shared_ptr<const window::trigger> trigger; ///< null = the assigner's default
  std::shared_ptr<const window::evictor> evictor;
};

template <class T>
std::shared_ptr<const T> shared(T x) {
  return std::make_shared<const T>(std::move(x));
}

/// Builds the windowing of `op`; a broken window table (already reported)
/// gets a 1ms tumbling window as a stand-in so that the rest is checked.
expected<windowing> make_windowing(const window_spec& op) {
  const auto& wd = op.window;
  windowing out;
  auto take = [&out](auto made) -> expected<std::monostate> {
    if (!made)
      return made.error();
    out.assigner = shared(std::move(*made));
    return std::monostate{};
  };
  expected<std::monostate> ok = std::monostate{};
  if (wd.type == "sliding") {
    ok = wd.processing_time
           ? take(window::sliding_processing_time_windows::make(wd.size, wd.slide, wd.offset))
           : take(window::sliding_event_time_windows::make(wd.size, wd.slide, wd.offset));
  } else if (wd.type == "session") {
    ok = wd.processing_time ? take(window::processing_time_session_windows::make(wd.gap))
                            : take(window::event_time_session_windows::make(wd.gap));
  } else if (wd.type == "global" || wd.type == "count") {
    out.assigner = std::make_shared<const window::global_windows>();
  } else if (wd.type == "tumbling" && wd.processing_time) {
    ok = take(window::tumbling_processing_time_windows::make(wd.size, wd.offset));
  } else if (wd.type.empty()) {
    ok = take(window::tumbling_event_time_windows::make(milliseconds{1}));
  } else {
    ok = take(window::tumbling_event_time_windows::make(wd.size, wd.offset));
  }
  if (!ok)
    return ok.error();

  if (wd.type == "count") {
    // Flink's KeyedStream.countWindow(size[, slide]).
    auto count = window::count_trigger::make(wd.count_slide > 0 ? wd.count_slide
                                                                : wd.count_size);
    if (!count)
      return count.error();
    if (wd.count_slide > 0) {
      auto ev = window::count_evictor::make(wd.count_size);
      if (!ev)
        return ev.error();
      out.evictor = shared(std::move(*ev));
      out.trigger = shared(std::move(*count));
    } else {
      out.trigger = std::make_shared<const window::purging_trigger>(shared(std::move(*count)));
    }
    return out;
  }
  if (op.trigger && !op.trigger->type.empty()) {
    const auto& td = *op.trigger;
    if (td.type == "event_time") {
      out.trigger = std::make_shared<const window::event_time_trigger>();
    } else if (td.type == "processing_time") {
      out.trigger = std::make_shared<const window::processing_time_trigger>();
    } else {
      auto count = window::count_trigger::make(td.count);
      if (!count)
        return count.error();
      out.trigger = shared(std::move(*count));
    }
    if (td.purge)
      out.trigger = std::make_shared<const window::purging_trigger>(out.trigger);
  } else if (wd.type == "global") {
    // Reported by check_window_options; a never-firing trigger stands in.
    out.trigger = out.assigner->default_trigger();
  }
  return out;
}


std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto spec = std::make_unique<window_spec>();
  auto& op = *spec;
  auto& r = c.hard;
  auto& soft = c.soft;
  op.key_by_node = r.get("key_by");
  if (auto kb = r.string_array("key_by"))
    op.key_by = std::move(*kb);
  op.window_node = r.get("window");
  if (auto* w = soft.subtable("window", true)) {
    // The type fixes the output schema (global and count windows number
    // their firings), so a broken type stops the operator's dependents.
    auto hard = r.sub(*w, "window");
    auto wt = hard.string("type", true);
    if (wt && !contains(window_types, wt->value)) {
      std::vector<std::string> extra;
      if (auto cand = closest(wt->value, window_types))
        extra.push_back("hint: did you mean " + quote(*cand) + "?");
      extra.push_back("hint: window types: " + quoted_list(window_types));
      hard.fail(pos_of(*wt->node), "unknown window type '" + wt->value + "'",
                std::move(extra));
    } else if (wt) {
      auto wr = soft.sub(*w, "window");
      parse_window(op, *w, wt->value, wr, c.children("window"));
    }
  }
  op.trigger_node = r.get("trigger");
  if (auto* tt = soft.subtable("trigger")) {
    auto tr = soft.sub(*tt, "trigger");
    tr.check_keys(c.children("trigger"));
    trigger_def td;
    td.node = op.trigger_node;
    if (auto ty = tr.choice("type", trigger_types, true)) {
      td.type = ty->value;
      if (td.type == "count") {
        if (!tt->get("count")) {
          tr.missing("count", {"hint: count is the number of records per firing: "
                               "trigger = { type = \"count\", count = 100 }"});
          td.type.clear();
        } else if (auto n = tr.integer("count", 1, std::numeric_limits<std::int64_t>::max()))
          td.count = *n;
        else
          td.type.clear();
      } else if (auto* n = tt->get("count")) {
        tr.fail(pos_of(*n), "trigger.count applies to a count trigger only, not to " +
                              quote(td.type));
      }
    }
    if (auto pg = tr.boolean("purge"))
      td.purge = *pg;
    op.trigger = td;
  }
  op.aggregate_node = r.get("aggregate");
  if (auto a = r.string_table("aggregate", true, "a call string such as \"sum(bytes)\""))
    op.aggregates = std::move(*a);
  if (auto v = soft.duration("allowed_lateness"))
    op.allowed_lateness = *v;
  if (auto v = soft.string("late_output", false, true))
    op.late_output = *v;
  if (auto v = soft.boolean("local_aggregation"))
    op.local_aggregation = *v;
  check_window_options(op, soft);
  return spec;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& op = spec_cast<window_spec>(ks);
  const auto& in = c.inputs.front();
  const auto& input_schema = in.output_schema();
  if (!c.check_fields_exist(*input_schema, op.key_by, "key_by"))
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
  auto w = make_windowing(op);
  if (!w) {
    c.report_api(op.window_node, "window",
               error{w.error().code, w.error().message, error::npos});
    return;
  }
  const auto& shared = w->assigner;
  std::vector<window::aggregate_spec> aggs;
  for (const auto& a : op.aggregates)
    aggs.push_back(window::aggregate_spec{a.name, a.text});
  auto r = keyed->window(shared, aggs,
                         window_options{op.allowed_lateness, op.late_output.value,
                                        w->trigger, w->evictor, op.local_aggregation},
                         c.options);
  if (r)
    return;
  bool found = false;
  for (const auto& a : op.aggregates) {
    window::window_operator_spec spec{keys, shared, {{a.name, a.text}},
                                      op.allowed_lateness, w->trigger, w->evictor};
    if (auto p = window::window_plan::make(input_schema, std::move(spec)); !p) {
      c.report_api(a.node, "", p.error()); // the message names the aggregate
      found = true;
    }
  }
  if (!found)
    c.report_api(nullptr, "", r.error());
}

} // namespace

kind_descriptor describe_operators_window() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "window";
  d.keys = {
    {"key_by", "array of strings", false, "[]", "the key fields; none: one global key"},
    {"window", "table", true, "", "the window: type = tumbling | sliding | session | global | count"},
    {"window.type", "string", true, "", "tumbling | sliding | session | global | count"},
    {"window.size", "duration or integer", false, "", "tumbling/sliding: length; count: records"},
    {"window.offset", "duration", false, "\"0s\"", "tumbling/sliding: shift of the window starts"},
    {"window.slide", "duration or integer", false, "", "sliding: step; count: records per firing"},
    {"window.gap", "duration", false, "", "session: inactivity that closes a session"},
    {"window.time", "string", false, "\"event\"", "event | processing"},
    {"trigger", "table", false, "", "when the window fires; default: the window's own"},
    {"trigger.type", "string", true, "", "event_time | processing_time | count"},
    {"trigger.count", "integer", false, "", "count trigger: records per firing"},
    {"trigger.purge", "boolean", false, "false", "drop the window's contents when it fires"},
    {"aggregate", "table of calls", true, "", "name = \"sum(bytes)\", in output order"},
    {"allowed_lateness", "duration", false, "\"0s\"", "how long a fired window still accepts records"},
    {"late_output", "string", false, "", "a stream of the late records"},
    {"local_aggregation", "boolean", false, "false", "pre-aggregate before the key-by exchange"},
  };
  d.parse = parse;
  d.plan = plan;
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream>
keyed_stream::window(std::shared_ptr<const window::window_assigner> assigner,
                     std::vector<window::aggregate_spec> aggregates,
                     window_options wopts, operator_options opts) const {
  auto& g = input_.graph_;
  if (!assigner)
    return make_error(errc::invalid_argument, "window: no window assigner");
  if (wopts.allowed_lateness.count() < 0)
    return make_error(errc::invalid_argument, "window: allowed_lateness must not be negative");
  window::window_operator_spec spec;
  spec.key_by = keys_;
  spec.assigner = std::move(assigner);
  spec.aggregates = std::move(aggregates);
  spec.allowed_lateness = wopts.allowed_lateness;
  spec.trigger = std::move(wopts.trigger);
  spec.evictor = std::move(wopts.evictor);
  auto plan = window::window_plan::make(input_.output_schema(), std::move(spec));
  if (!plan)
    return plan.error();
  auto name_ = internal::claim_stream_name(*g, opts.name, "window");
  if (!name_)
    return name_.error();
  std::string late_name = wopts.late_output;
  if (!late_name.empty()) {
    if (late_name == *name_ || g->find_stream(late_name) != nullptr)
      return make_error(errc::invalid_argument, "duplicate stream name '" + late_name + "'");
    for (const auto& n : g->nodes)
      if (n.name == late_name)
        return make_error(errc::invalid_argument, "duplicate stream name '" + late_name + "'");
  }
  runtime::stream_node node;
  node.name = *name_;
  node.kind = "window";
  node.state_descriptor = plan->state_descriptor();
  node.parallelism = internal::default_parallelism(*g, opts.parallelism);
  node.outputs.push_back(runtime::output_port{*name_, plan->output_schema(), false});
  node.outputs.push_back(runtime::output_port{late_name, input_.output_schema(), true});
  if (wopts.local_aggregation && late_name.empty() && plan->supports_local_aggregation()) {
    // Local phase: same parallelism as the input, forward edge (chained
    // into the input's task); the window becomes the global phase, keyed by
    // the partial rows' leading key fields.
    runtime::stream_node local;
    local.name = *name_ + "/local";
    local.kind = "local_window_aggregate";
    local.parallelism = g->nodes[input_.node_].parallelism;
    local.outputs.push_back(runtime::output_port{local.name, plan->partial_schema(), false});
    local.make_operator = [p = *plan] { return p.make_local_operator(); };
    local.state_descriptor = plan->state_descriptor() + "; local phase";
    local.reads = plan->local_reads();
    auto local_id = internal::add_graph_node(*g, std::move(local), {{input_.node_, input_.port_}}, std::nullopt);
    std::vector<std::size_t> partial_keys(key_idx_.size());
    for (std::size_t i = 0; i < partial_keys.size(); ++i)
      partial_keys[i] = i;
    node.make_operator = [p = *plan] { return p.make_global_operator(); };
    node.state_descriptor += "; global phase";
    auto id = internal::add_graph_node(*g, std::move(node), {{local_id, 0}}, partial_keys);
    return data_stream{g, id, 0};
  }
  node.make_operator = [p = *plan] { return p.make_operator(); };
  auto id = internal::add_graph_node(*g, std::move(node), {{input_.node_, input_.port_}}, key_idx_);
  return data_stream{g, id, 0};
}

} // namespace weir
