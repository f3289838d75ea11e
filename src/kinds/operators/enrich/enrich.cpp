// SPDX-License-Identifier: Apache-2.0
// `type = "enrich"`: each record of a stream joined with the latest row per
// key of a second stream, the table (inputs = [stream, table]): its keys,
// parsing, planning and `data_stream::enrich`.
#include "config/kind.hpp"

#include "enrich_operator.hpp"

#include "weir/api/job.hpp"
#include "weir/operators/enrich.hpp"

#include <algorithm>

namespace weir::kinds {

namespace {
using namespace weir::config;

struct enrich_kind_spec : kind_spec {
  std::vector<located> key_by;
  const toml::node* key_by_node = nullptr;
  std::vector<located> table_key;
  const toml::node* table_key_node = nullptr;
  std::vector<located> fields;
  const toml::node* fields_node = nullptr;
  located prefix;
  enrich_spec spec;
};

std::vector<std::string> values(const std::vector<located>& xs) {
  std::vector<std::string> out;
  for (const auto& x : xs)
    out.push_back(x.value);
  return out;
}

} // namespace

kind_descriptor describe_operators_enrich() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "enrich";
  d.min_inputs = 2;
  d.max_inputs = 2;
  d.keys = {
    {"key_by", "array of strings", true, "", "the key fields of the stream (inputs[0])"},
    {"table_key", "array of strings", false, "key_by", "the key fields of the table (inputs[1])"},
    {"fields", "array of strings", false, "every non-key table field", "the table fields added"},
    {"prefix", "string", false, "\"\"", "prepended to the added fields' names"},
    {"on_missing", "string", false, "\"wait\"", "wait | null | drop: a record with no row for its key"},
    {"max_wait", "duration", false, "\"0s\"", "wait: how long past its time a record waits for a row"},
    {"on_timeout", "string", false, "\"null\"", "wait: null | drop when the wait ends without a row"},
    {"state_ttl", "duration", false, "", "a key's table row expires this long after it was written"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<enrich_kind_spec>();
    s->key_by_node = c.hard.get("key_by");
    if (auto kb = c.hard.string_array("key_by", true, 1))
      s->key_by = std::move(*kb);
    s->table_key_node = c.hard.get("table_key");
    if (auto tk = c.hard.string_array("table_key", false, 1))
      s->table_key = std::move(*tk);
    s->fields_node = c.hard.get("fields");
    if (auto f = c.hard.string_array("fields", false, 1))
      s->fields = std::move(*f);
    if (auto p = c.hard.string("prefix", false, false))
      s->prefix = *p;
    if (auto m = c.hard.choice("on_missing", {"wait", "null", "drop"}))
      s->spec.on_missing = m->value == "null"   ? enrich_missing::null
                           : m->value == "drop" ? enrich_missing::drop
                                                : enrich_missing::wait;
    if (auto w = c.hard.duration("max_wait"))
      s->spec.max_wait = *w;
    if (auto t = c.hard.choice("on_timeout", {"null", "drop"}))
      s->spec.emit_on_timeout = t->value == "null";
    if (c.hard.get("state_ttl"))
      if (auto t = c.hard.duration("state_ttl", reader::sign::positive))
        s->spec.state_ttl = *t;
    s->spec.key_by = values(s->key_by);
    s->spec.table_key = values(s->table_key);
    s->spec.fields = values(s->fields);
    s->spec.prefix = s->prefix.value;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<enrich_kind_spec>(ks);
    const auto& stream = c.inputs[0];
    const auto& table = c.inputs[1];
    bool ok = c.check_fields_exist(*stream.output_schema(), s.key_by, "key_by");
    ok = c.check_fields_exist(*table.output_schema(),
                              s.table_key.empty() ? s.key_by : s.table_key,
                              s.table_key.empty() ? "key_by (in the table)" : "table_key")
         && ok;
    ok = c.check_fields_exist(*table.output_schema(), s.fields, "fields") && ok;
    if (!ok)
      return;
    auto r = stream.enrich(table, s.spec, c.options);
    if (r)
      return;
    // Name the key the error concerns.
    const auto& msg = r.error().message;
    const toml::node* at = s.key_by_node;
    std::string key = "key_by";
    if (msg.find("prefix") != std::string::npos || msg.find("clashes") != std::string::npos) {
      at = s.fields_node ? s.fields_node : s.prefix.node;
      key = s.fields_node ? "fields" : "prefix";
    } else if (s.table_key_node && msg.find("key") != std::string::npos) {
      at = s.table_key_node;
      key = "table_key";
    }
    c.report_api(at, key, error{r.error().code, msg, error::npos});
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans (enrich_operator.cpp).
expected<data_stream> data_stream::enrich(const data_stream& table, enrich_spec spec,
                                          operator_options opts) const {
  if (spec.key_by.empty())
    return make_error(errc::invalid_argument, "enrich: key_by names no field");
  if (spec.table_key.empty())
    spec.table_key = spec.key_by;
  if (spec.max_wait.count() < 0)
    return make_error(errc::invalid_argument, "enrich: max_wait must not be negative");
  if (spec.state_ttl && spec.state_ttl->count() <= 0)
    return make_error(errc::invalid_argument, "enrich: state_ttl must be positive");
  auto keyed = connect(table).key_by(spec.key_by, spec.table_key);
  if (!keyed)
    return keyed.error();
  const auto& in = *output_schema();
  const auto& ts = *table.output_schema();
  internal::enrich_plan plan;
  for (const auto& k : spec.key_by)
    plan.stream_keys.push_back(*in.index_of(k));
  for (const auto& k : spec.table_key)
    plan.table_keys.push_back(*ts.index_of(k));
  if (spec.fields.empty()) {
    for (std::size_t i = 0; i < ts.size(); ++i)
      if (std::find(plan.table_keys.begin(), plan.table_keys.end(), i) == plan.table_keys.end())
        plan.table_fields.push_back(i);
  } else {
    for (const auto& f : spec.fields) {
      auto i = ts.index_of(f);
      if (!i)
        return make_error(errc::type_error, "enrich: unknown table field '" + f +
                                              "' (fields: " + ts.to_string() + ")");
      plan.table_fields.push_back(*i);
    }
  }
  std::vector<field> out = in.fields();
  for (auto i : plan.table_fields) {
    field f = ts.at(i);
    f.name = spec.prefix + f.name;
    if (std::any_of(out.begin(), out.end(), [&](const field& o) { return o.name == f.name; }))
      return make_error(errc::invalid_argument,
                        "enrich: table field '" + ts.at(i).name + "' as '" + f.name +
                          "' clashes with a field of the stream or an earlier one (choose "
                          "fields, or a prefix)");
    out.push_back(std::move(f));
  }
  plan.output = make_schema(std::move(out));
  plan.on_missing = spec.on_missing;
  plan.max_wait = spec.max_wait.count();
  plan.emit_on_timeout = spec.emit_on_timeout;
  plan.state_ttl = spec.state_ttl;
  auto schema = plan.output;
  return keyed->transform("enrich", schema,
                          [plan] { return internal::make_enrich_operator(plan); },
                          std::move(opts));
}

} // namespace weir
