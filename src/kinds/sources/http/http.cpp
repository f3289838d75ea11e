// SPDX-License-Identifier: Apache-2.0
// `type = "http"` source: records POSTed to `weir serve` at
// `/ingest/{source}` (JSONL or CSV bodies), queued whole per request and
// acknowledged when accepted or when a completed checkpoint covers them
// (README.md beside this file): its keys, parsing, planning and
// `http::add_source` (`job::from`).
#include "config/byte_size.hpp"
#include "config/kind.hpp"
#include "kinds/sources/source_keys.hpp"
#include "api/internal/graph.hpp"
#include "http_source.hpp"
#include "weir/api/job.hpp"

#include <stdexcept>

namespace weir::kinds {

namespace {

using namespace weir::config;

struct http_source_def : kind_spec {
  weir::http::source spec;
  bool error = false; ///< reported at its key; plan does not report again
};

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto out = std::make_unique<http_source_def>();
  auto& d = out->spec;
  auto& r = c.hard;
  auto& soft = c.soft;
  auto fmt = r.choice("format", {"jsonl", "csv"}, c.keys_required);
  if (fmt)
    d.decoder.kind = fmt->value == "csv" ? format::format_kind::csv : format::format_kind::jsonl;
  d.decoder.csv_header = false;
  if (!r.get("schema")) {
    if (fmt)
      r.missing("schema", {"hint: the fields of each record and their types: schema = { ts = "
                           "\"timestamp\", key = \"string\" }"});
  } else if (auto schema = schema_table(r)) {
    d.decoder.schema = std::move(schema);
  }
  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(c.children("event_time"));
    if (auto f = er.string("field", true, true)) {
      d.event_time_field = f->value;
      if (!sources::check_time_field(er, d.decoder.schema, *f, "event_time.field"))
        out->error = true;
    }
  }
  sources::read_watermark(c, d.watermark);
  sources::read_csv_options(c, fmt, d.decoder, true);
  if (auto ack = r.choice("ack", {"accepted", "checkpoint"})) {
    if (ack->value == "checkpoint") {
      d.ack = http_ack::checkpoint;
      if (!c.checkpointing) {
        r.fail(pos_of(*ack->node),
               "ack = \"checkpoint\" answers once a completed checkpoint covers the records, "
               "and this job takes no checkpoints",
               {"hint: add a [checkpoint] section (interval, dir), or ack = \"accepted\""});
        out->error = true;
      }
    }
  }
  if (auto v = byte_size(r, "max_body", 1, "1B"))
    d.max_body = static_cast<std::size_t>(*v);
  if (auto v = r.integer("max_queued_records", 1, std::int64_t{1} << 40))
    d.max_queued_records = static_cast<std::size_t>(*v);
  if (auto v = r.integer("idempotency_keys", 0, std::int64_t{1} << 40))
    d.idempotency_keys = static_cast<std::size_t>(*v);
  if (auto v = soft.duration("ack_timeout", reader::sign::positive))
    d.ack_timeout = *v;
  if (auto v = soft.duration("retry_after", reader::sign::positive))
    d.retry_after = *v;
  if (auto v = soft.integer("parallelism", 1, max_key_groups); v && *v != 1)
    soft.fail(pos_of(*soft.get("parallelism")),
              "an http source has parallelism 1, got " + std::to_string(*v),
              {"hint: its records come through one queue; operators after it may have any "
               "parallelism"});
  return out;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& s = spec_cast<http_source_def>(ks);
  auto res = c.target.from(s.spec, operator_options{c.options.name, 1});
  if (!res && !s.error)
    c.report_api(nullptr, "", res.error());
}

} // namespace

kind_descriptor describe_sources_http() {
  kind_descriptor d;
  d.category = kind_category::source;
  d.type = "http";
  d.min_inputs = d.max_inputs = 0;
  d.keys = sources::key_rows({{
    {"format", "string", true, "", "jsonl | csv: each body line a record"},
    {"schema", "table of type names", true, "", "name = \"int64\""},
  }, sources::event_time_keys(true), sources::watermark_keys("", "the source"),
  sources::csv_keys("each body's first line names the fields"), {
    {"ack", "string", false, "\"accepted\"", "accepted | checkpoint: answer 202 once queued, or once a completed checkpoint covers the records"},
    {"max_body", "string", false, "\"16MiB\"", "largest request body; larger answers 413"},
    {"max_queued_records", "integer", false, "100000", "records queued at most; a request that does not fit answers 429"},
    {"ack_timeout", "duration", false, "\"30s\"", "ack = checkpoint: answer 503 when no checkpoint covered the request by then"},
    {"retry_after", "duration", false, "\"1s\"", "Retry-After of a 429 or 503"},
    {"idempotency_keys", "integer", false, "10000", "Idempotency-Keys of taken requests kept in the source's state"},
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

// The API's entry point for this kind (`job::from`).
expected<data_stream> http::add_source(job& j, source spec, operator_options opts) {
  if (!spec.decoder.schema || spec.decoder.schema->size() == 0)
    return invalid("an http source needs a schema");
  if (spec.decoder.kind != format::format_kind::jsonl
      && spec.decoder.kind != format::format_kind::csv)
    return invalid("an http source reads jsonl or csv bodies");
  if (opts.parallelism > 1)
    return invalid("an http source has parallelism 1");
  if (!spec.event_time_field.empty()) {
    auto et = spec.decoder.schema->index_of(spec.event_time_field);
    if (!et)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' is not in the schema (fields: " + spec.decoder.schema->to_string()
                     + ")");
    auto t = spec.decoder.schema->at(*et).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a timestamp or int64, got " + std::string{to_string(t)});
  }
  if (spec.ack == http_ack::checkpoint && !j.graph()->options.checkpoint.enabled)
    return invalid("ack = checkpoint needs checkpoints on");
  spec.decoder.event_time_field = spec.event_time_field;
  if (auto check = format::make_decoder(spec.decoder); !check)
    return check.error();
  // The handle is named once the node has its name.
  auto handle_slot = std::make_shared<http_source_handle_ptr>();
  const runtime::job_graph* g = j.graph().get();
  auto node = internal::add_source_node(
    *j.graph(), opts, "http_source", spec.decoder.schema, 1, spec.watermark,
    [handle_slot, g](std::size_t, std::size_t, bad_record_handler on_bad) -> source_reader_ptr {
      return kinds::http::make_reader(*handle_slot, g->options.on_bad_record,
                                      g->options.checkpoint.enabled, std::move(on_bad));
    });
  if (!node)
    return node.error();
  *handle_slot = std::make_shared<http_source_handle>((*node)->name, std::move(spec));
  j.graph()->http_sources[(*node)->name] = *handle_slot;
  return internal::stream_access::make(j.graph(), (*node)->id);
}

} // namespace weir
