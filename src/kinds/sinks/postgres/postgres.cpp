// SPDX-License-Identifier: Apache-2.0
// `type = "postgres"` sink: rows inserted or upserted into a table in
// batches; at_least_once, or exactly_once through two-phase commit
// (PREPARE TRANSACTION at the barrier, COMMIT PREPARED when the checkpoint
// completes: README.md here). Its keys, `postgres::add_sink` (`data_stream::sink_to`), and
// the runtime (postgres_sink.cpp, declared in weir/postgres/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/postgres/sink.hpp"
#include "weir/expr/expression.hpp"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list pg_modes = {"insert", "upsert"};
const key_list pg_deliveries = {"at_least_once", "exactly_once"};

struct postgres_sink_def : kind_spec {
  postgres::sink pg;
  std::vector<named_text> columns;
  std::vector<located> key_columns;
  const toml::node* mode_node = nullptr;
  const toml::node* delivery_node = nullptr;
};
} // namespace

kind_descriptor describe_sinks_postgres() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "postgres";
  d.keys = {
    {"connection", "string", true, "",
     "libpq connection string or URI (\"host=... port=... dbname=... user=...\")"},
    {"table", "string", true, "", "the table written (it must exist); SQL syntax, verbatim"},
    {"columns", "table of expressions", false, "",
     "column = expression, in order; absent: every input field into its namesake"},
    {"mode", "string", false, "\"insert\"",
     "insert | upsert (INSERT ... ON CONFLICT (key_columns) DO UPDATE)"},
    {"key_columns", "array of strings", false, "", "upsert only (required): the conflict target"},
    {"delivery", "string", false, "\"at_least_once\"", "at_least_once | exactly_once"},
    {"batch_size", "integer", false, "1000", "rows per INSERT statement"},
    {"flush_interval", "duration", false, "\"1s\"",
     "at_least_once: buffered rows are committed at least this often"},
    {"progress_table", "string", false, "\"weir_sink_progress\"",
     "exactly_once: the table of end-of-input markers (created when missing)"},
    {"max_attempts", "integer", false, "6",
     "connection attempts (backoff 100 ms doubling to 5 s) before the job fails"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<postgres_sink_def>();
    auto& p = s->pg;
    if (auto v = c.hard.string("connection", c.keys_required, true))
      p.connection = v->value;
    if (auto v = c.hard.string("table", c.keys_required, true))
      p.table = v->value;
    if (auto v = c.hard.string_table("columns", false, "an expression")) {
      s->columns = std::move(*v);
      for (const auto& e : s->columns)
        p.columns.emplace_back(e.name, e.text);
    }
    if (auto v = c.hard.choice("mode", pg_modes)) {
      s->mode_node = v->node;
      p.mode = v->value == "upsert" ? postgres_write_mode::upsert : postgres_write_mode::insert;
    }
    if (auto v = c.hard.string_array("key_columns", false, 1)) {
      s->key_columns = std::move(*v);
      for (const auto& k : s->key_columns)
        p.key_columns.push_back(k.value);
    }
    if (auto v = c.hard.choice("delivery", pg_deliveries)) {
      s->delivery_node = v->node;
      p.delivery = v->value == "exactly_once" ? postgres_delivery::exactly_once
                                              : postgres_delivery::at_least_once;
    }
    if (auto v = c.hard.integer("batch_size", 1, 65535))
      p.batch_size = static_cast<std::size_t>(*v);
    if (auto v = c.soft.duration("flush_interval"))
      p.flush_interval = *v;
    if (auto v = c.hard.string("progress_table", false, true))
      p.progress_table = v->value;
    if (auto v = c.hard.integer("max_attempts", 1, 1000))
      p.max_attempts = static_cast<std::size_t>(*v);
    if (p.mode == postgres_write_mode::upsert && p.key_columns.empty() && s->mode_node
        && !c.hard.get("key_columns"))
      c.hard.fail(pos_of(*s->mode_node),
                  "mode \"upsert\" needs 'key_columns' (the conflict target: a primary key "
                  "or unique constraint of the table)");
    if (p.mode == postgres_write_mode::insert && c.hard.get("key_columns"))
      c.hard.fail(pos_of(*c.hard.get("key_columns")),
                  "'key_columns' applies to mode \"upsert\" only");
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<postgres_sink_def>(ks);
    const auto& in = *c.inputs.front().output_schema();
    bool ok = true;
    std::vector<std::string> names;
    for (const auto& col : s.columns) {
      names.push_back(col.name);
      if (auto e = expr::compile(col.text, in); !e) {
        c.report_api(col.node, "columns." + col.name, e.error());
        ok = false;
      }
    }
    if (s.columns.empty())
      for (const auto& f : in.fields())
        names.push_back(f.name);
    for (const auto& k : s.key_columns)
      if (std::find(names.begin(), names.end(), k.value) == names.end()) {
        c.report_api(k.node, "key_columns",
                     make_error(errc::invalid_argument,
                                "'" + k.value + "' is not one of the columns written ("
                                  + [&] {
                                      std::string l;
                                      for (const auto& n : names)
                                        l += (l.empty() ? "" : ", ") + n;
                                      return l;
                                    }()
                                  + ")"));
        ok = false;
      }
    if (s.pg.delivery == postgres_delivery::exactly_once
        && !c.target.options().checkpoint.enabled) {
      c.report_api(s.delivery_node, "delivery",
                   make_error(errc::invalid_argument,
                              "\"exactly_once\" needs a [checkpoint] section: a transaction "
                              "commits when the checkpoint that covers it completes",
                              0));
      ok = false;
    }
    if (!ok)
      return;
    auto r = c.inputs.front().sink_to(s.pg, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`).
expected<std::monostate> postgres::add_sink(const data_stream& in, sink spec,
                                            operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  std::weak_ptr<runtime::job_graph> weak_graph = internal::stream_access::graph(in);
  postgres_sink_job probe_job;
  // Checked now for the caller, and again when each subtask's sink is made
  // (checkpoints then: the job's options may be set after the graph).
  probe_job.checkpoints = true;
  auto probe = make_postgres_sink(spec, probe_job, in.output_schema());
  if (!probe)
    return probe.error();
  auto factory = [spec, schema = in.output_schema(), weak_graph]() -> stream_operator_ptr {
    postgres_sink_job job;
    if (auto g = weak_graph.lock()) {
      job.job_name = g->options.name;
      job.checkpoints = g->options.checkpoint.enabled;
    }
    auto op = make_postgres_sink(spec, job, schema);
    if (!op)
      throw std::runtime_error(op.error().message);
    return std::move(*op);
  };
  auto id = internal::add_operator_node(graph, opts,
                                        {"postgres_sink", nullptr, factory, true},
                                        {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
