// SPDX-License-Identifier: Apache-2.0
#include "source_keys.hpp"

#include <string>
#include <utility>

namespace weir::kinds::sources {

using namespace weir::config;

std::vector<key_spec> key_rows(std::initializer_list<std::vector<key_spec>> groups) {
  std::vector<key_spec> out;
  for (const auto& g : groups)
    out.insert(out.end(), g.begin(), g.end());
  return out;
}

std::vector<key_spec> event_time_keys(bool field_required) {
  return {
    {"event_time", "table", false, "", "event time of the records; none: no event time"},
    {"event_time.field", "string", field_required, "", "a timestamp or int64 field"},
  };
}

std::vector<key_spec> csv_keys(std::string_view header_doc) {
  std::vector<key_spec> out{{"csv", "table", false, "", "csv options"}};
  if (!header_doc.empty())
    out.push_back({"csv.header", "boolean", false, "false", std::string{header_doc}});
  out.push_back({"csv.delimiter", "string", false, "\",\"", "one character"});
  return out;
}

std::vector<key_spec> watermark_keys(std::string_view generator, std::string_view idle_unit) {
  return {
    {"watermark", "table", false, "", "the watermark generator" + std::string{generator}},
    {"watermark.max_out_of_orderness", "duration", false, "\"0s\"", "bounded out-of-orderness"},
    {"watermark.idle_timeout", "duration", false, "\"0s\"",
     std::string{idle_unit} + " is idle after this; 0: never"},
  };
}

std::optional<type_id> field_of_schema(reader& r, const schema_ptr& schema, const located& f,
                                       std::string_view what) {
  if (!schema)
    return std::nullopt;
  if (auto idx = schema->index_of(f.value))
    return schema->at(*idx).type;
  key_list names;
  for (const auto& fl : schema->fields())
    names.push_back(fl.name);
  std::vector<std::string> extra;
  if (auto cand = closest(f.value, names))
    extra.push_back("hint: did you mean " + quote(*cand) + "?");
  extra.push_back("hint: the fields are " + schema->to_string());
  r.fail(pos_of(*f.node),
         std::string{what} + " " + quote(f.value) + " is not a field of the schema",
         std::move(extra));
  return std::nullopt;
}

bool check_time_field(reader& r, const schema_ptr& schema, const located& f,
                      std::string_view what) {
  auto ty = field_of_schema(r, schema, f, what);
  if (!ty)
    return !schema; // no schema: nothing to check against
  if (*ty == type_id::timestamp || *ty == type_id::int64)
    return true;
  r.fail(pos_of(*f.node), std::string{what} + " " + quote(f.value)
                            + " must name a timestamp or int64 field, got "
                            + std::string(to_string(*ty)));
  return false;
}

void read_watermark(parse_context& c, watermark_options& w) {
  auto* wm = c.soft.subtable("watermark");
  if (!wm)
    return;
  auto wr = c.soft.sub(*wm, "watermark");
  wr.check_keys(c.children("watermark"));
  if (auto v = wr.duration("max_out_of_orderness"))
    w.max_out_of_orderness = *v;
  if (auto v = wr.duration("idle_timeout"))
    w.idle_timeout = *v;
}

void read_csv_options(parse_context& c, const std::optional<located>& format,
                      format::decoder_options& d, bool with_header) {
  auto& soft = c.soft;
  auto* csv = soft.subtable("csv");
  if (!csv)
    return;
  auto cr = soft.sub(*csv, "csv");
  cr.check_keys(c.children("csv"));
  if (format && format->value != "csv")
    soft.fail(pos_of(*soft.get("csv")),
              "csv options apply only to format = \"csv\", not " + quote(format->value));
  if (with_header)
    if (auto v = cr.boolean("header"))
      d.csv_header = *v;
  if (auto v = cr.string("delimiter")) {
    if (v->value.size() != 1)
      cr.fail(pos_of(*v->node),
              "csv.delimiter must be a single character, got " + quote(v->value));
    else
      d.csv_delimiter = v->value[0];
  }
}

std::vector<key_spec> protobuf_keys() {
  return key_rows({{
    {"proto_file", "string", false, "", "format protobuf: the .proto file of the messages"},
    {"proto_include", "array of strings", false, "[]", "format protobuf: directories its imports are found in, after the file's own"},
    {"message", "string", false, "", "format protobuf: the message type, its full name (\"pkg.Msg\")"},
  }});
}

bool read_protobuf_options(reader& r, const std::optional<located>& format,
                           format::decoder_options& d) {
  const bool pb = format && format->value == "protobuf";
  if (pb && !format::protobuf_built()) {
    r.fail(pos_of(*format->node), std::string{format::protobuf_not_built});
    return false;
  }
  auto file = r.string("proto_file", pb, true);
  auto includes = r.string_array("proto_include");
  auto message = r.string("message", pb, true);
  if (!pb) {
    bool ok = true;
    for (const char* key : {"proto_file", "proto_include", "message"})
      if (const auto* n = r.get(key)) {
        r.fail(pos_of(*n), std::string{key} + " applies only to format = \"protobuf\"");
        ok = false;
      }
    return ok;
  }
  if (!file || !message)
    return false;
  d.proto_file = file->value;
  d.proto_message = message->value;
  if (includes)
    for (const auto& i : *includes)
      d.proto_include.push_back(i.value);
  const auto problem = format::check_protobuf(d);
  if (!problem)
    return true;
  using at = format::protobuf_problem::at;
  switch (problem->where) {
    case at::proto_file: {
      std::vector<std::string> notes;
      if (problem->message.find("not found") != std::string::npos)
        notes.push_back("hint: proto_include lists the directories its imports are found in");
      r.fail(pos_of(*file->node), problem->message, std::move(notes));
      break;
    }
    case at::message: {
      std::vector<std::string> notes;
      if (auto c = closest(message->value, problem->candidates))
        notes.push_back("hint: did you mean " + quote(*c) + "?");
      else if (!problem->candidates.empty())
        notes.push_back("hint: its messages are " + plain_list(problem->candidates));
      r.fail(pos_of(*message->node), problem->message, std::move(notes));
      break;
    }
    case at::field: {
      // At the field's key in `schema`.
      const toml::node* schema = r.get("schema");
      auto where = pos_of(schema ? *schema : *message->node);
      if (const auto* t = schema ? schema->as_table() : nullptr)
        for (auto&& [k, v] : *t)
          if (k.str() == problem->field)
            where = pos_of(k.source());
      std::vector<std::string> notes;
      if (auto c = closest(problem->field, problem->candidates))
        notes.push_back("hint: did you mean " + quote(*c) + "?");
      notes.push_back("hint: docs/kinds/formats/protobuf.md lists the Protobuf types each "
                      "field type reads");
      r.fail(where, problem->message, std::move(notes));
      break;
    }
  }
  return false;
}

} // namespace weir::kinds::sources
