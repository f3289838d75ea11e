// SPDX-License-Identifier: Apache-2.0
// `type = "elasticsearch"` sink: rows indexed into Elasticsearch or
// OpenSearch through the `_bulk` API, at least once, idempotent with
// deterministic document ids (README.md here). Its keys,
// `elasticsearch::add_sink` (`data_stream::sink_to`), and the runtime
// (elasticsearch_sink.cpp, declared in weir/elasticsearch/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/elasticsearch/sink.hpp"
#include "weir/expr/expression.hpp"

#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace weir::kinds {

namespace {
using namespace weir::config;

struct elasticsearch_sink_def : kind_spec {
  elasticsearch::sink es;
  const toml::node* index_node = nullptr;
  const toml::node* document_id_node = nullptr;
  const toml::node* hosts_node = nullptr;
};

bool is_http_url(const std::string& s) {
  return s.rfind("http://", 0) == 0 || s.rfind("https://", 0) == 0;
}
} // namespace

kind_descriptor describe_sinks_elasticsearch() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "elasticsearch";
  d.keys = {
    {"hosts", "array of strings", true, "",
     "base URLs, \"http://host:9200\"; the next one after a connection failure"},
    {"index", "string", false, "", "the index written (or index_expression)"},
    {"index_expression", "expression", false, "", "each row's index (or index)"},
    {"document_id", "expression", false, "",
     "each row's _id (a replay overwrites); none: the server assigns ids"},
    {"bulk_flush", "table", false, "", "when a bulk request goes out"},
    {"bulk_flush.max_actions", "integer", false, "1000", "actions per request at most"},
    {"bulk_flush.max_bytes", "integer", false, "5242880", "request body bytes at most"},
    {"bulk_flush.interval", "duration", false, "\"1s\"",
     "buffered actions go out at least this often; 0: on size, barriers and the end"},
    {"backoff", "table", false, "", "retries of failed actions (429, 5xx, no connection)"},
    {"backoff.max_retries", "integer", false, "5", "then the job fails; 0: none"},
    {"backoff.delay", "duration", false, "\"100ms\"", "before the first retry, doubled each time"},
    {"backoff.max_delay", "duration", false, "\"10s\"", "the longest wait between retries"},
    {"request_timeout", "duration", false, "\"30s\"", "connect, read and write timeout"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<elasticsearch_sink_def>();
    auto& es = s->es;
    s->hosts_node = c.hard.get("hosts");
    if (auto hs = c.hard.string_array("hosts", true, 1)) {
      for (const auto& h : *hs) {
        if (!is_http_url(h.value))
          c.hard.fail(pos_of(*h.node),
                      "hosts: " + quote(h.value) + " is not an http:// or https:// URL",
                      {"hint: write the base URL, e.g. \"http://127.0.0.1:9200\""});
        es.hosts.push_back(h.value);
      }
    }
    auto index = c.hard.string("index", false, true);
    auto index_expr = c.hard.string("index_expression", false, true);
    if (index && index_expr)
      c.hard.fail(pos_of(*index_expr->node), "index and index_expression exclude each other",
                  {"hint: index names one index; index_expression computes each row's"});
    else if (index) {
      es.index = index->value;
      s->index_node = index->node;
    } else if (index_expr) {
      es.index_expression = index_expr->value;
      s->index_node = index_expr->node;
    } else if (c.keys_required && !c.hard.get("index") && !c.hard.get("index_expression"))
      c.hard.missing("index", {"hint: index = \"name\", or index_expression = \"...\" "
                               "to compute each row's index"});
    if (auto v = c.hard.string("document_id", false, true)) {
      es.document_id = v->value;
      s->document_id_node = v->node;
    }
    if (auto* bf = c.soft.subtable("bulk_flush")) {
      auto r = c.soft.sub(*bf, "bulk_flush");
      r.check_keys(c.children("bulk_flush"));
      if (auto v = r.integer("max_actions", 1, std::numeric_limits<std::int32_t>::max()))
        es.max_actions = static_cast<std::size_t>(*v);
      if (auto v = r.integer("max_bytes", 1, std::numeric_limits<std::int32_t>::max()))
        es.max_bytes = static_cast<std::size_t>(*v);
      if (auto v = r.duration("interval"))
        es.flush_interval = *v;
    }
    if (auto* bo = c.soft.subtable("backoff")) {
      auto r = c.soft.sub(*bo, "backoff");
      r.check_keys(c.children("backoff"));
      if (auto v = r.integer("max_retries", 0, 1000))
        es.max_retries = static_cast<std::uint32_t>(*v);
      if (auto v = r.duration("delay"))
        es.retry_delay = *v;
      if (auto v = r.duration("max_delay"))
        es.max_retry_delay = *v;
      if (es.retry_delay > es.max_retry_delay)
        r.fail(pos_of(*bo), "backoff.delay must not exceed backoff.max_delay");
    }
    if (auto v = c.soft.duration("request_timeout", reader::sign::positive))
      es.request_timeout = *v;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<elasticsearch_sink_def>(ks);
    const auto& in = *c.inputs.front().output_schema();
    bool ok = true;
    if (!s.es.index_expression.empty())
      if (auto e = expr::compile(s.es.index_expression, in); !e) {
        c.report_api(s.index_node, "index_expression", e.error());
        ok = false;
      }
    if (!s.es.document_id.empty())
      if (auto e = expr::compile(s.es.document_id, in); !e) {
        c.report_api(s.document_id_node, "document_id", e.error());
        ok = false;
      }
    if (!ok)
      return;
    auto r = c.inputs.front().sink_to(s.es, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`).
expected<std::monostate> elasticsearch::add_sink(const data_stream& in, sink spec,
                                                 operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  // Checked now for the caller, and again when each subtask's sink is made.
  auto probe = make_elasticsearch_sink(spec, in.output_schema());
  if (!probe)
    return probe.error();
  auto factory = [spec, schema = in.output_schema()]() -> stream_operator_ptr {
    auto op = make_elasticsearch_sink(spec, schema);
    if (!op)
      throw std::runtime_error(op.error().message);
    return std::move(*op);
  };
  auto id = internal::add_operator_node(graph, opts,
                                        {"elasticsearch_sink", nullptr, factory, true},
                                        {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
