// SPDX-License-Identifier: Apache-2.0
// `type = "running_count"`: keyed state; emits {keys..., count} per input row.
#include "config/kind.hpp"

#include "api/internal/graph.hpp"
#include "running_count_operator.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct running_count_spec : kind_spec {
  std::vector<located> key_by;
  const toml::node* key_by_node = nullptr;
  located output;
  std::optional<std::chrono::milliseconds> state_ttl;
};
} // namespace

kind_descriptor describe_operators_running_count() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "running_count";
  d.keys = {
    {"key_by", "array of strings", true, "", "the key fields"},
    {"output", "string", false, "\"count\"", "the name of the count field"},
    {"state_ttl", "duration", false, "", "a key's count expires this long after its last write"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<running_count_spec>();
    s->key_by_node = c.hard.get("key_by");
    if (auto kb = c.hard.string_array("key_by", true, 1))
      s->key_by = std::move(*kb);
    if (auto o = c.hard.string("output", false, true))
      s->output = *o;
    if (c.hard.get("state_ttl"))
      if (auto t = c.hard.duration("state_ttl", reader::sign::positive))
        s->state_ttl = *t;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<running_count_spec>(ks);
    const auto& in = c.inputs.front();
    if (!c.check_fields_exist(*in.output_schema(), s.key_by, "key_by"))
      return;
    std::vector<std::string> keys;
    for (const auto& k : s.key_by)
      keys.push_back(k.value);
    auto keyed = in.key_by(keys);
    if (!keyed) {
      c.report_api(s.key_by_node, "key_by",
                   error{keyed.error().code, keyed.error().message, error::npos});
      return;
    }
    auto field_name = s.output.value.empty() ? std::string{"count"} : s.output.value;
    auto r = keyed->count(field_name, c.options, s.state_ttl);
    if (!r)
      c.report_api(s.output.node, "output",
                   error{r.error().code, r.error().message, error::npos});
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans (running_count_operator.cpp).
expected<data_stream> keyed_stream::count(std::string output_field, operator_options opts,
                                          std::optional<std::chrono::milliseconds> state_ttl) const {
  if (state_ttl && state_ttl->count() <= 0)
    return make_error(errc::invalid_argument, "count: state_ttl must be positive");
  std::optional<state::state_ttl_config> ttl;
  if (state_ttl)
    ttl = state::state_ttl_config{*state_ttl};
  auto& g = input_.graph_;
  std::vector<field> fields;
  for (auto i : key_idx_)
    fields.push_back(input_.output_schema()->at(i));
  for (const auto& f : fields)
    if (f.name == output_field)
      return make_error(errc::invalid_argument,
                        "count: output field '" + output_field + "' clashes with a key");
  fields.push_back(field{output_field, type_id::int64});
  auto schema = make_schema(std::move(fields));
  auto id = internal::add_operator_node(*g, opts,
                                       {"count", schema, [schema, keys = key_idx_, ttl] {
                                          return std::make_unique<internal::running_count>(
                                            schema, keys, ttl);
                                        }},
                                       {{input_.node_, input_.port_}}, key_idx_);
  if (!id)
    return id.error();
  // Its state: one int64 count per key (keyed_state_backend), so its layout
  // depends on the key types only.
  std::string descriptor = "count; keys (";
  for (std::size_t i = 0; i < key_idx_.size(); ++i)
    descriptor += (i ? ", " : "")
                  + std::string{to_string(input_.output_schema()->at(key_idx_[i]).type)};
  g->nodes[*id].state_descriptor = descriptor + ")";
  return data_stream{g, *id, 0};
}

} // namespace weir
