// SPDX-License-Identifier: Apache-2.0
// `type = "kafka"` sink: one producer per subtask, delivery none,
// at_least_once or exactly_once (a transaction per checkpoint, recoverable
// after a crash at commit time: README.md here). Its keys,
// `kafka::add_sink` (`data_stream::sink_to`), and the runtime (kafka_sink.cpp over
// kafka_client.cpp, declared in weir/kafka/sink.hpp).
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "kinds/kafka_properties.hpp"

#include "weir/api/job.hpp"
#include "weir/kafka/sink.hpp"
#include "weir/expr/expression.hpp"

#include <memory>
#include <stdexcept>
#include <string>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list kafka_sink_formats = {"json", "jsonl", "csv", "avro"};
const key_list kafka_deliveries = {"none", "at_least_once", "exactly_once"};

struct kafka_sink_def : kind_spec {
  kafka::sink kafka;
  const toml::node* key_node = nullptr;
  std::vector<named_text> headers;
  const toml::node* delivery_node = nullptr;
};

/// Reads `properties` into name/value strings; a nested table stands for
/// dotted names (`linger.ms = 5` in TOML is the table linger = {ms = 5}).
void read_properties(reader& r, const toml::table& t, const std::string& prefix,
                     kafka::sink& out, std::vector<kafka_properties::property>& at) {
  for (auto&& [k, v] : t) {
    std::string name = prefix + std::string(k.str());
    const auto before = out.properties.size();
    if (auto* sub = v.as_table()) {
      read_properties(r, *sub, name + ".", out, at);
      continue;
    } else if (auto* s = v.as_string()) {
      out.properties.emplace_back(name, s->get());
    } else if (auto* i = v.as_integer()) {
      out.properties.emplace_back(name, std::to_string(i->get()));
    } else if (auto* b = v.as_boolean()) {
      out.properties.emplace_back(name, b->get() ? "true" : "false");
    } else if (auto* f = v.as_floating_point()) {
      out.properties.emplace_back(name, std::to_string(f->get()));
    } else {
      r.fail(pos_of(v), "properties." + name + " must be a string, number or bool, got "
                          + std::string(type_name(v)));
    }
    if (out.properties.size() > before)
      at.push_back({name, out.properties.back().second, pos_of(k.source())});
  }
}
} // namespace

kind_descriptor describe_sinks_kafka() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "kafka";
  d.keys = {
    {"topic", "string", true, "", "the topic written (it must exist)"},
    {"bootstrap_servers", "string", true, "", "host:port[,host:port...]"},
    {"properties", "table", false, "", "librdkafka properties, passed through"},
    {"key", "expression", false, "", "each message's key; none: no key"},
    {"format", "string", false, "\"json\"", "json | csv | avro: the message value"},
    {"avro_record_name", "string", false, "\"<job>.<sink>\"", "avro: the generated record's full name"},
    {"schema_registry", "table", false, "", "avro: register the schema, frame values with its id"},
    {"schema_registry.url", "string", true, "", "the registry's REST API, http:// or https://"},
    {"schema_registry.basic_auth_user_info", "string", false, "", "\"user:password\" for basic auth"},
    {"schema_registry.basic_auth_user_info_env", "string", false, "", "the environment variable holding it"},
    {"schema_registry.ca_file", "string", false, "the system's CAs", "https: the CAs trusted (PEM)"},
    {"schema_registry.subject_strategy", "string", false, "\"topic\"", "topic | record | topic_record"},
    {"schema_registry.lookup_only", "boolean", false, "false", "look the schema up, never register it"},
    {"headers", "table of expressions", false, "", "header name = expression"},
    {"delivery", "string", false, "\"at_least_once\"", "none | at_least_once | exactly_once"},
    {"transactional_id_prefix", "string", false, "\"weir\"",
     "exactly_once: transactional.id = prefix-job-sink-subtask"},
    {"progress_topic", "string", false, "\"<topic>.weir-progress\"",
     "exactly_once: the topic of the commit markers"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<kafka_sink_def>();
    auto& k = s->kafka;
    if (auto v = c.hard.string("topic", true, true))
      k.topic = v->value;
    if (auto v = c.hard.string("bootstrap_servers", true, true))
      k.bootstrap_servers = v->value;
    std::vector<kafka_properties::property> checked;
    const auto* props = c.hard.subtable("properties");
    if (props)
      read_properties(c.hard, *props, "", k, checked);
    if (auto v = c.hard.string("key", false, true)) {
      k.key = v->value;
      s->key_node = v->node;
    }
    auto f = c.soft.choice("format", kafka_sink_formats);
    if (f)
      k.format = f->value == "csv"    ? format::format_kind::csv
                 : f->value == "avro" ? format::format_kind::avro
                                      : format::format_kind::jsonl;
    const bool avro = f && f->value == "avro";
    if (auto v = c.hard.string("avro_record_name", false, true)) {
      if (!avro)
        c.hard.fail(pos_of(*v->node), "avro_record_name applies only to format = \"avro\"");
      k.avro_record_name = v->value;
    }
    if (kafka_properties::read_schema_registry(c.hard, c.children("schema_registry"),
                                               k.schema_registry, true)) {
      if (!avro)
        c.hard.fail(pos_of(*c.hard.get("schema_registry")),
                    "schema_registry applies only to format = \"avro\"");
      if (auto* t = c.hard.subtable("schema_registry"))
        if (auto l = c.hard.sub(*t, "schema_registry").boolean("lookup_only"))
          k.schema_registry_lookup_only = *l;
    }
    if (auto h = c.hard.string_table("headers", false, "an expression")) {
      s->headers = std::move(*h);
      for (const auto& e : s->headers)
        k.headers.emplace_back(e.name, e.text);
    }
    if (auto v = c.hard.choice("delivery", kafka_deliveries)) {
      s->delivery_node = v->node;
      k.delivery = v->value == "none"           ? kafka_delivery::none
                   : v->value == "exactly_once" ? kafka_delivery::exactly_once
                                                : kafka_delivery::at_least_once;
    }
    if (auto v = c.hard.string("transactional_id_prefix", false, true))
      k.transactional_id_prefix = v->value;
    if (auto v = c.hard.string("progress_topic", false, true))
      k.progress_topic = v->value;
    // As the sink configures its producers (kafka_client.cpp).
    if (props) {
      std::vector<std::pair<std::string, std::string>> managed;
      if (k.delivery == kafka_delivery::exactly_once)
        managed.emplace_back("transactional.id", "weir-validate");
      kafka_properties::check(c.hard, kafka_properties::client::producer, checked,
                              {{"allow.auto.create.topics", "false"}}, managed, pos_of(*props));
    }
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<kafka_sink_def>(ks);
    const auto& in = *c.inputs.front().output_schema();
    bool ok = true;
    if (!s.kafka.key.empty())
      if (auto e = expr::compile(s.kafka.key, in); !e) {
        c.report_api(s.key_node, "key", e.error());
        ok = false;
      }
    for (const auto& h : s.headers)
      if (auto e = expr::compile(h.text, in); !e) {
        c.report_api(h.node, "headers." + h.name, e.error());
        ok = false;
      }
    if (s.kafka.delivery == kafka_delivery::exactly_once
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
    auto r = c.inputs.front().sink_to(s.kafka, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`).
expected<std::monostate> kafka::add_sink(const data_stream& in, sink spec,
                                         operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  // Checked now for the caller, and again when each subtask's sink is made.
  auto probe = make_kafka_sink(spec, kafka_sink_job{}, in.output_schema());
  if (!probe)
    return probe.error();
  std::weak_ptr<runtime::job_graph> weak_graph = internal::stream_access::graph(in);
  auto factory = [spec, schema = in.output_schema(), weak_graph]() -> stream_operator_ptr {
    kafka_sink_job job;
    if (auto g = weak_graph.lock()) {
      job.job_name = g->options.name;
      job.checkpoints = g->options.checkpoint.enabled;
      job.checkpoint_interval = g->options.checkpoint.interval;
    }
    auto op = make_kafka_sink(spec, job, schema);
    if (!op)
      throw std::runtime_error(op.error().message);
    return std::move(*op);
  };
  auto id = internal::add_operator_node(graph, opts, {"kafka_sink", nullptr, factory, true},
                                        {input});
  if (!id)
    return id.error();
  return std::monostate{};
}

} // namespace weir
