// SPDX-License-Identifier: Apache-2.0
// `type = "kafka"` source (librdkafka): its keys, parsing, planning and
// `kafka::add_source` (`job::from`); the runtime is kafka_source_reader.{hpp,cpp}.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "connectors/internal/rate_limited_reader.hpp"
#include "kinds/kafka_properties.hpp"
#include "kinds/sources/kafka/kafka_source_reader.hpp"
#include "kinds/sources/source_keys.hpp"

#include "weir/api/job.hpp"
#include "weir/kafka/source.hpp"
#include "weir/core/timestamp.hpp"

#include <memory>
#include <regex>
#include <set>
#include <stdexcept>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list kafka_formats = {"jsonl", "csv", "raw", "avro", "protobuf"};
const key_list start_modes = {"earliest", "latest", "committed", "timestamp"};
// librdkafka properties weir sets itself (docs/internals/style.md: offsets live in the
// checkpoints; the group only receives them for monitoring).
const key_list managed_properties = {"bootstrap.servers", "group.id", "enable.auto.commit",
                                     "enable.auto.offset.store", "enable.partition.eof"};

struct kafka_source_def : kind_spec {
  kafka::source spec;
  const toml::node* event_time_node = nullptr;
  const toml::node* topics_node = nullptr;
  /// The source's own `parallelism` key (0: absent, the job's). The loader
  /// passes a parallelism to operators only, so the kind keeps its own, as
  /// the file and generator sources do.
  std::size_t parallelism = 0;
};

// The metadata names and the member of kafka_metadata_fields each fills.
struct metadata_item {
  const char* name;
  std::string kafka_metadata_fields::*member;
};
const metadata_item metadata_items[] = {
  {"key", &kafka_metadata_fields::key},
  {"topic", &kafka_metadata_fields::topic},
  {"partition", &kafka_metadata_fields::partition},
  {"offset", &kafka_metadata_fields::offset},
  {"timestamp", &kafka_metadata_fields::timestamp},
  {"headers", &kafka_metadata_fields::headers},
};

// `avro_schema`: the writer's schema of every message, inline JSON or the
// path of an .avsc file; required by format "avro", refused by the others.
// Checked now against the declared fields (format::make_decoder resolves it).
// With `schema_registry`, each message names its writer schema by id, and
// `avro_schema` is refused.
void read_avro_schema(parse_context& c, const std::optional<located>& fmt,
                      format::decoder_options& d) {
  auto& r = c.hard;
  const bool avro = fmt && fmt->value == "avro";
  if (avro && !format::avro_built()) {
    r.fail(pos_of(*fmt->node), std::string{format::avro_not_built});
    return;
  }
  const bool registry = kafka_properties::read_schema_registry(
    r, c.children("schema_registry"), d.schema_registry, false);
  if (registry && !avro && fmt) {
    r.fail(pos_of(*r.get("schema_registry")),
           "schema_registry applies only to format = \"avro\"");
    return;
  }
  auto v = r.string("avro_schema", avro && !registry, true);
  if (v && registry) {
    r.fail(pos_of(*v->node), "avro_schema and schema_registry exclude each other",
           {"hint: with a registry, each message's writer schema is fetched by its id"});
    return;
  }
  if (!v)
    return;
  if (!avro) {
    r.fail(pos_of(*v->node), "avro_schema applies only to format = \"avro\"");
    return;
  }
  const auto first = v->value.find_first_not_of(" \t\r\n");
  if (first != std::string::npos
      && (v->value[first] == '{' || v->value[first] == '"' || v->value[first] == '[')) {
    d.avro_schema = v->value;
  } else {
    std::ifstream in{v->value, std::ios::binary};
    if (!in) {
      r.fail(pos_of(*v->node), "cannot read Avro schema file " + quote(v->value) + ": "
                                 + std::strerror(errno),
             {"hint: avro_schema is the path of an .avsc file, or the schema's JSON"});
      return;
    }
    d.avro_schema.assign(std::istreambuf_iterator<char>{in}, {});
  }
  if (!d.schema)
    return;
  auto probe = d;
  if (auto dec = format::make_decoder(probe); !dec)
    r.fail(pos_of(*v->node), dec.error().message,
           {"hint: docs/kinds/formats/avro.md lists the Avro types each field type reads"});
}

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto out = std::make_unique<kafka_source_def>();
  auto& d = *out;
  auto& s = d.spec;
  auto& r = c.hard;
  auto& soft = c.soft;
  const bool req = c.keys_required;

  d.topics_node = r.get("topics");
  if (auto ts = r.string_array("topics", false, 1))
    for (const auto& t : *ts)
      s.topics.push_back(t.value);
  if (auto p = r.string("topic_pattern", false, true)) {
    s.topic_pattern = p->value;
    try {
      std::regex re(p->value, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      r.fail(pos_of(*p->node), "topic_pattern is not a regular expression: " + std::string{e.what()});
    }
    if (d.topics_node)
      r.fail(pos_of(*p->node), "topics and topic_pattern exclude each other",
             {"hint: name the topics, or match them with a pattern"});
  } else if (!d.topics_node && req) {
    r.missing("topics", {"hint: topics = [\"logs\"], or topic_pattern = \"logs-.*\""});
  }
  if (auto b = r.string("bootstrap_servers", req, true))
    s.bootstrap_servers = b->value;

  if (auto* pt = r.subtable("properties")) {
    std::vector<kafka_properties::property> checked;
    for (auto&& [k, v] : *pt) {
      std::string key{k.str()};
      std::string text;
      if (auto* str = v.as_string())
        text = str->get();
      else if (auto* i = v.as_integer())
        text = std::to_string(i->get());
      else if (auto* b = v.as_boolean())
        text = b->get() ? "true" : "false";
      else if (auto* f = v.as_floating_point())
        text = std::to_string(f->get());
      else {
        r.fail(pos_of(v), "properties." + key + " must be a string, number or boolean, got "
                            + std::string(type_name(v)));
        continue;
      }
      if (contains(managed_properties, key)) {
        std::string hint = key == "bootstrap.servers" ? "hint: use the key bootstrap_servers"
                           : key == "group.id"        ? "hint: use the key group_id"
                                                      : "hint: weir keeps offsets in its checkpoints";
        r.fail(pos_of(k.source()), "properties." + key + " is set by weir", {hint});
        continue;
      }
      checked.push_back({key, text, pos_of(k.source())});
      s.properties.emplace_back(std::move(key), std::move(text));
    }
    // As the reader configures its consumer (kafka_source_reader.cpp).
    kafka_properties::check(r, kafka_properties::client::consumer, checked,
                            {{"isolation.level", "read_committed"},
                             {"auto.offset.reset", "earliest"},
                             {"queued.min.messages", "1000000"}},
                            {{"group.id", "weir-validate"},
                             {"enable.auto.commit", "false"},
                             {"enable.auto.offset.store", "false"},
                             {"enable.partition.eof", "true"}},
                            pos_of(*pt));
  }

  auto fmt = r.choice("format", kafka_formats, req);
  if (fmt) {
    s.raw = fmt->value == "raw";
    s.decoder.kind = fmt->value == "csv"    ? format::format_kind::csv
                     : fmt->value == "avro" ? format::format_kind::avro
                     : fmt->value == "protobuf" ? format::format_kind::protobuf
                                            : format::format_kind::jsonl;
  }
  const auto* schema_node = r.get("schema");
  if (fmt && s.raw) {
    if (schema_node)
      r.fail(pos_of(*schema_node), "schema must not be set for format \"raw\"",
             {"hint: its one field is value (string)"});
  } else if (!schema_node) {
    if (fmt)
      r.missing("schema", {"hint: format " + quote(fmt->value)
                           + " needs the fields and their types: schema = { ts = "
                             "\"timestamp\", key = \"string\" }"});
  } else if (auto schema = schema_table(r)) {
    s.decoder.schema = std::move(schema);
  }
  // A message is one record: no header line.
  sources::read_csv_options(c, fmt, s.decoder, false);
  read_avro_schema(c, fmt, s.decoder);
  (void) sources::read_protobuf_options(r, fmt, s.decoder);

  if (auto* md = r.subtable("metadata")) {
    auto mr = r.sub(*md, "metadata");
    mr.check_keys(c.children("metadata"));
    for (const auto& item : metadata_items)
      if (auto f = mr.string(item.name, false, true))
        s.metadata.*item.member = f->value;
  }

  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(c.children("event_time"));
    auto f = er.string("field", false, true);
    auto k = er.boolean("kafka_timestamp");
    if (f) {
      s.event_time_field = f->value;
      d.event_time_node = f->node;
    }
    if (k)
      s.event_time_from_kafka = *k;
    if (f && k && *k)
      er.fail(pos_of(*et), "event_time: field and kafka_timestamp exclude each other");
    else if (!f && !(k && *k))
      er.fail(pos_of(*et), "event_time needs field or kafka_timestamp = true",
              {"hint: event_time = { field = \"ts\" } or { kafka_timestamp = true }"});
  }
  sources::read_watermark(c, s.watermark);

  if (auto st = r.choice("start", start_modes)) {
    if (st->value == "latest")
      s.start = kafka_start_offset::latest;
    else if (st->value == "committed")
      s.start = kafka_start_offset::committed;
    else if (st->value == "timestamp")
      s.start = kafka_start_offset::timestamp;
  }
  if (auto* n = r.get("start_timestamp")) {
    if (auto* i = n->as_integer()) {
      s.start_timestamp_ms = i->get();
    } else if (auto* str = n->as_string()) {
      if (auto ms = parse_iso8601(str->get()))
        s.start_timestamp_ms = *ms;
      else
        r.fail(pos_of(*n), "start_timestamp must be an ISO-8601 time, got " + quote(str->get()),
               {"hint: \"2015-05-17T10:05:00Z\", or an integer of ms since the epoch"});
    } else {
      r.wrong_type(*n, "start_timestamp", "an ISO-8601 string or an integer of ms");
    }
    if (s.start != kafka_start_offset::timestamp)
      r.fail(pos_of(*n), "start_timestamp needs start = \"timestamp\"");
  } else if (s.start == kafka_start_offset::timestamp) {
    r.missing("start_timestamp", {"hint: start = \"timestamp\" reads from the first record "
                                  "at or after start_timestamp"});
  }
  if (auto b = r.choice("bounded", {"latest"}))
    s.bounded = true;
  if (auto v = soft.duration("partition_discovery_interval"))
    s.partition_discovery_interval = *v;
  if (auto g = r.string("group_id", false, true))
    s.group_id = g->value;
  if (s.start == kafka_start_offset::committed && s.group_id.empty() && req)
    r.fail(pos_of(*r.get("start")), "start = \"committed\" needs group_id",
           {"hint: group_id names the consumer group whose committed offsets to start from"});
  if (auto v = soft.duration("connect_timeout", reader::sign::positive))
    s.connect_timeout = *v;
  if (auto v = positive_rate(r, "rate"))
    s.rate = *v;
  if (auto v = soft.integer("parallelism", 1, max_key_groups)) {
    if (static_cast<std::size_t>(*v) > c.max_parallelism)
      soft.fail(pos_of(*soft.get("parallelism")),
                "parallelism must not exceed job.max_parallelism (" +
                  std::to_string(c.max_parallelism) + "), got " + std::to_string(*v));
    else
      d.parallelism = static_cast<std::size_t>(*v);
  }
  return out;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& d = spec_cast<kafka_source_def>(ks);
  auto res = c.target.from(d.spec, operator_options{c.options.name, d.parallelism});
  if (res)
    return;
  const auto& msg = res.error().message;
  const toml::node* at = nullptr;
  if (msg.rfind("event_time", 0) == 0)
    at = d.event_time_node;
  c.report_api(at, "", res.error());
}

} // namespace

kind_descriptor describe_sources_kafka() {
  kind_descriptor d;
  d.category = kind_category::source;
  d.type = "kafka";
  d.min_inputs = d.max_inputs = 0;
  d.keys = sources::key_rows({{
    {"topics", "array of strings", false, "", "the topics to read; required unless topic_pattern"},
    {"topic_pattern", "string", false, "", "a regex matching whole topic names (instead of topics)"},
    {"bootstrap_servers", "string", true, "", "host:port,... of the Kafka brokers"},
    {"properties", "table", false, "", "librdkafka properties, passed through"},
    {"format", "string", true, "", "jsonl | csv | raw (one string field value) | avro (one datum a message) | protobuf (one message a message)"},
    {"avro_schema", "string", false, "", "format avro: the writer's schema, an .avsc path or its JSON"},
    {"schema_registry", "table", false, "", "format avro: messages framed for a Confluent schema registry"},
    {"schema_registry.url", "string", true, "", "the registry's REST API, http:// or https://"},
    {"schema_registry.basic_auth_user_info", "string", false, "", "\"user:password\" for basic auth"},
    {"schema_registry.basic_auth_user_info_env", "string", false, "", "the environment variable holding it"},
    {"schema_registry.ca_file", "string", false, "the system's CAs", "https: the CAs trusted (PEM)"},
    {"proto_file", "string", false, "", "format protobuf: the .proto file of the messages"},
    {"proto_include", "array of strings", false, "[]", "format protobuf: directories its imports are found in, after the file's own"},
    {"message", "string", false, "", "format protobuf: the message type, its full name (\"pkg.Msg\"); one message a Kafka message"},
    {"schema", "table of type names", true, "", "name = \"int64\" (not for raw)"},
  }, sources::csv_keys(""), {
    {"metadata", "table", false, "", "Kafka metadata read into fields: item = \"field name\""},
    {"metadata.key", "string", false, "", "string field: the message key"},
    {"metadata.topic", "string", false, "", "string field: the topic"},
    {"metadata.partition", "string", false, "", "int64 field: the partition"},
    {"metadata.offset", "string", false, "", "int64 field: the offset"},
    {"metadata.timestamp", "string", false, "", "timestamp field: the record's timestamp"},
    {"metadata.headers", "string", false, "", "string field: the headers as a JSON object"},
  }, sources::event_time_keys(false), {
    {"event_time.kafka_timestamp", "boolean", false, "false", "the record's Kafka timestamp"},
  }, sources::watermark_keys(", one per partition", "a partition"), {
    {"start", "string", false, "\"earliest\"", "earliest | latest | committed | timestamp"},
    {"start_timestamp", "string or integer", false, "", "start = timestamp: ISO-8601 or ms"},
    {"bounded", "string", false, "", "\"latest\": stop at the end offsets current at start"},
    {"partition_discovery_interval", "duration", false, "\"30s\"", "look for new partitions; 0: never"},
    {"group_id", "string", false, "", "consumer group offsets are committed to (monitoring)"},
    {"connect_timeout", "duration", false, "\"15s\"", "how long to wait for the brokers at start"},
    {"rate", "number", false, "as fast as possible", "rows/s over all subtasks: replays the topic at a steady pace"},
  }});
  d.parse = parse;
  d.plan = plan;
  return d;
}

} // namespace weir::kinds

namespace weir {

namespace {
error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}
} // namespace

expected<schema_ptr> kafka_source_schema(const kafka::source& spec) {
  std::vector<field> fields;
  if (spec.raw) {
    fields.push_back(field{"value", type_id::string});
  } else {
    if (!spec.decoder.schema || spec.decoder.schema->size() == 0)
      return invalid("a " + std::string{format::to_string(spec.decoder.kind)}
                     + " Kafka source needs a schema");
    fields = spec.decoder.schema->fields();
  }
  const std::pair<const std::string*, type_id> meta[] = {
    {&spec.metadata.key, type_id::string},      {&spec.metadata.topic, type_id::string},
    {&spec.metadata.partition, type_id::int64}, {&spec.metadata.offset, type_id::int64},
    {&spec.metadata.timestamp, type_id::timestamp}, {&spec.metadata.headers, type_id::string},
  };
  for (const auto& [name, type] : meta)
    if (!name->empty())
      fields.push_back(field{*name, type});
  std::set<std::string> seen;
  for (const auto& f : fields)
    if (!seen.insert(f.name).second)
      return invalid("field '" + f.name + "' is defined twice (schema and metadata)");
  return make_schema(std::move(fields));
}

// The API's entry point for this kind (`job::from`).
expected<data_stream> kafka::add_source(job& j, source spec, operator_options opts) {
  if (spec.topics.empty() == spec.topic_pattern.empty())
    return invalid("a Kafka source needs topics or a topic_pattern (one of them)");
  if (!spec.topic_pattern.empty()) {
    try {
      std::regex re(spec.topic_pattern, std::regex::ECMAScript);
    } catch (const std::regex_error& e) {
      return invalid("topic_pattern is not a regular expression: " + std::string{e.what()});
    }
  }
  if (spec.bootstrap_servers.empty())
    return invalid("a Kafka source needs bootstrap_servers");
  for (const auto& [k, v] : spec.properties)
    for (const auto& m : {"bootstrap.servers", "group.id", "enable.auto.commit",
                          "enable.auto.offset.store", "enable.partition.eof"})
      if (k == m)
        return invalid("properties." + k + " is set by weir");
  if (spec.start == kafka_start_offset::committed && spec.group_id.empty())
    return invalid("start = committed needs a group_id");
  auto schema = kafka_source_schema(spec);
  if (!schema)
    return schema.error();
  if (!spec.event_time_field.empty()) {
    if (spec.event_time_from_kafka)
      return invalid("event_time: field and kafka_timestamp exclude each other");
    auto idx = (*schema)->index_of(spec.event_time_field);
    if (!idx)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' is not a field (fields: " + (*schema)->to_string() + ")");
    auto t = (*schema)->at(*idx).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a timestamp or int64, got " + std::string{to_string(t)});
    const auto& m = spec.metadata;
    if (spec.event_time_field == m.partition || spec.event_time_field == m.offset)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a field of the value or the Kafka timestamp, not the "
                       "partition or offset");
  }
  if (!spec.raw) {
    auto d = spec.decoder;
    d.csv_header = false;
    if (spec.event_time_field != spec.metadata.timestamp || spec.metadata.timestamp.empty())
      d.event_time_field = spec.event_time_field;
    if (auto dec = format::make_decoder(d); !dec)
      return dec.error();
  }
  const auto* options = &j.graph()->options;
  auto out_schema = *schema;
  // The stream's name (generated when empty) is known once the node exists.
  auto source_name = std::make_shared<std::string>(opts.name);
  // The output columns some operator reads, filled by
  // runtime::prune_generated_fields before the readers are made: the value's
  // fields (the schema's first columns) that nothing reads are not decoded
  // (projection push-down, decoder_options::read_fields); the metadata
  // columns are always filled.
  auto needed = std::make_shared<std::vector<bool>>();
  auto node = internal::add_source_node(
    *j.graph(), opts, "kafka_source", out_schema,
    internal::default_parallelism(*j.graph(), opts.parallelism), spec.watermark,
    [spec, options, out_schema, source_name, needed](std::size_t subtask,
                                                     std::size_t parallelism,
                                                     bad_record_handler on_bad)
      -> source_reader_ptr {
      kafka::reader_options ro;
      ro.spec = spec;
      if (!spec.raw && spec.decoder.schema && needed->size() >= spec.decoder.schema->size())
        ro.spec.decoder.read_fields.assign(
          needed->begin(),
          needed->begin() + static_cast<std::ptrdiff_t>(spec.decoder.schema->size()));
      ro.output = out_schema;
      ro.source_name = *source_name;
      ro.job_name = options->name;
      ro.subtask = subtask;
      ro.parallelism = parallelism;
      auto reader = kafka::make_reader(std::move(ro), std::move(on_bad));
      if (spec.rate > 0)
        return std::make_unique<internal::rate_limited_reader>(
          std::move(reader), spec.rate / static_cast<double>(parallelism),
          options->buffer_timeout);
      return reader;
    });
  if (!node)
    return node.error();
  *source_name = (*node)->name;
  if (!spec.raw)
    (*node)->needed_columns = std::move(needed);
  return internal::stream_access::make(j.graph(), (*node)->id);
}

} // namespace weir
