// SPDX-License-Identifier: Apache-2.0
#include "weir/api/job.hpp"

#include "internal/graph.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/format/format.hpp"
#include "weir/runtime/job_control.hpp"
#include "weir/runtime/stop_request.hpp"
#include "weir/state/keyed_process_function.hpp"
#include "weir/state/keyed_co_process_function.hpp"

#include <stdexcept>

namespace weir {

using runtime::job_graph;
using runtime::output_port;
using runtime::partitioning;
using runtime::stream_edge;
using runtime::stream_node;

const std::pair<std::size_t, std::size_t>*
job_graph::find_stream(std::string_view name) const {
  if (stream_index.size() == streams.size()) {
    auto it = stream_index.find(name);
    return it == stream_index.end() ? nullptr : &streams[it->second].second;
  }
  for (const auto& [n, where] : streams)
    if (n == name)
      return &where;
  return nullptr;
}

bool job_graph::has_node_named(std::string_view name) const {
  if (node_names.size() == nodes.size())
    return node_names.find(name) != node_names.end();
  for (const auto& n : nodes)
    if (n.name == name)
      return true;
  return false;
}

namespace {

error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

/// Checks a stream name for uniqueness; generates one when empty.
expected<std::string> claim_name(job_graph& g, std::string name, std::string_view kind) {
  if (name.empty())
    name = std::string{kind} + "_" + std::to_string(g.nodes.size());
  if (g.find_stream(name) != nullptr || g.has_node_named(name))
    return invalid("duplicate stream name '" + name + "'");
  return name;
}

std::size_t resolve_parallelism(const job_graph& g, std::size_t requested) {
  return requested == 0 ? g.options.parallelism : requested;
}

/// Adds a node fed by (source, port) and returns its index.
std::size_t add_node(job_graph& g, stream_node node,
                     std::vector<std::pair<std::size_t, std::size_t>> inputs,
                     std::optional<std::vector<std::size_t>> hash_keys = std::nullopt) {
  node.id = g.nodes.size();
  for (const auto& [src, port] : inputs) {
    stream_edge e;
    e.source = src;
    e.port = port;
    e.target = node.id;
    if (hash_keys) {
      e.mode = partitioning::hash;
      e.key_fields = *hash_keys;
    } else if (g.nodes[src].parallelism == node.parallelism) {
      e.mode = partitioning::forward;
    } else {
      e.mode = partitioning::rebalance;
    }
    g.edges.push_back(std::move(e));
  }
  const bool indexed = g.stream_index.size() == g.streams.size();
  for (std::size_t p = 0; p < node.outputs.size(); ++p)
    if (!node.outputs[p].name.empty()) {
      if (indexed)
        g.stream_index.emplace(node.outputs[p].name, g.streams.size());
      g.streams.emplace_back(node.outputs[p].name, std::make_pair(node.id, p));
    }
  if (g.node_names.size() == g.nodes.size())
    g.node_names.insert(node.name);
  g.nodes.push_back(std::move(node));
  return g.nodes.size() - 1;
}


using internal::operator_node;

/// Claims the operator's stream name and adds its node fed by `inputs`;
/// returns the node's index.
expected<std::size_t> add_operator(job_graph& g, const operator_options& opts,
                                   operator_node def,
                                   std::vector<std::pair<std::size_t, std::size_t>> inputs,
                                   std::optional<std::vector<std::size_t>> hash_keys = {}) {
  auto name = claim_name(g, opts.name, def.kind);
  if (!name)
    return name.error();
  stream_node node;
  node.name = *name;
  node.kind = std::string{def.kind};
  node.parallelism = def.parallelism != 0 ? def.parallelism
                                          : resolve_parallelism(g, opts.parallelism);
  node.is_sink = def.is_sink;
  if (def.output)
    node.outputs.push_back(output_port{*name, std::move(def.output), false});
  node.make_operator = std::move(def.factory);
  return add_node(g, std::move(node), std::move(inputs), std::move(hash_keys));
}

/// Claims a source's stream name and adds its node (no inputs); returns the
/// node for the caller to finish (partitioning, replay clock).
expected<stream_node*> add_source(job_graph& g, const operator_options& opts,
                                  std::string_view kind, schema_ptr output,
                                  std::size_t parallelism, watermark_options watermark,
                                  runtime::source_factory factory) {
  auto name = claim_name(g, opts.name, kind);
  if (!name)
    return name.error();
  stream_node node;
  node.name = *name;
  node.kind = std::string{kind};
  node.parallelism = parallelism;
  node.is_source = true;
  node.watermark = watermark;
  node.outputs.push_back(output_port{*name, std::move(output), false});
  node.make_source = std::move(factory);
  return &g.nodes[add_node(g, std::move(node), {})];
}

} // namespace

namespace internal {

expected<runtime::stream_node*> add_source_node(job_graph& g, const operator_options& opts,
                                                std::string_view kind, schema_ptr output,
                                                std::size_t parallelism,
                                                watermark_options watermark,
                                                runtime::source_factory factory) {
  return add_source(g, opts, kind, std::move(output), parallelism, watermark,
                    std::move(factory));
}

std::size_t default_parallelism(const job_graph& g, std::size_t requested) {
  return resolve_parallelism(g, requested);
}

expected<std::string> claim_stream_name(job_graph& g, std::string name, std::string_view kind) {
  return claim_name(g, std::move(name), kind);
}

std::size_t add_graph_node(job_graph& g, runtime::stream_node node,
                           std::vector<std::pair<std::size_t, std::size_t>> inputs,
                           std::optional<std::vector<std::size_t>> hash_keys) {
  return add_node(g, std::move(node), std::move(inputs), std::move(hash_keys));
}

expected<std::size_t> add_operator_node(job_graph& g, const operator_options& opts,
                                        operator_node def,
                                        std::vector<std::pair<std::size_t, std::size_t>> inputs,
                                        std::optional<std::vector<std::size_t>> hash_keys) {
  return add_operator(g, opts, std::move(def), std::move(inputs), std::move(hash_keys));
}


} // namespace internal

// -- row_view -----------------------------------------------------------------

value row_view::get(std::string_view name) const {
  auto idx = batch_->schema->index_of(name);
  if (!idx)
    throw std::out_of_range("unknown field '" + std::string{name} + "'");
  return batch_->columns[*idx].get(row_);
}

std::optional<std::int64_t> row_view::get_int(std::string_view name) const {
  auto v = get(name);
  if (auto* i = std::get_if<std::int64_t>(&v))
    return *i;
  return std::nullopt;
}

std::optional<std::string_view> row_view::get_string(std::string_view name) const {
  auto idx = batch_->schema->index_of(name);
  if (!idx)
    throw std::out_of_range("unknown field '" + std::string{name} + "'");
  const auto& c = batch_->columns[*idx];
  if (c.type != type_id::string || c.is_null(row_))
    return std::nullopt;
  return c.str(row_);
}

event_time row_view::timestamp() const {
  return batch_->has_timestamps() ? batch_->timestamps[row_] : min_watermark;
}

std::string row_view::to_json() const {
  std::string out = "{";
  const auto& fields = batch_->schema->fields();
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i > 0)
      out += ',';
    format::append_json_string(fields[i].name, out);
    out += ':';
    format::append_json(batch_->columns[i].get(row_), fields[i].type, out);
  }
  out += '}';
  return out;
}

// -- state_query_result ---------------------------------------------------------

std::string state_query_result::to_json() const {
  std::string out = "{\"operator\":";
  format::append_json_string(operator_name, out);
  out += ",\"key\":[";
  for (std::size_t i = 0; i < key.size(); ++i) {
    if (i > 0)
      out += ',';
    format::append_json_string(key[i], out);
  }
  out += "],\"subtask\":" + std::to_string(subtask)
         + ",\"parallelism\":" + std::to_string(parallelism)
         + ",\"key_group\":" + std::to_string(key_group) + ",\"watermark\":"
         + (watermark == min_watermark ? std::string{"null"} : std::to_string(watermark))
         + ",\"checkpoint_id\":" + std::to_string(checkpoint_id)
         + ",\"found\":" + (found ? "true" : "false") + ",\"state\":" + state + "}";
  return out;
}

// -- data_stream --------------------------------------------------------------

const schema_ptr& data_stream::output_schema() const {
  return graph_->nodes[node_].outputs[port_].schema;
}

const std::string& data_stream::name() const {
  return graph_->nodes[node_].outputs[port_].name;
}

expected<keyed_stream> data_stream::key_by(std::vector<std::string> fields) const {
  std::vector<std::size_t> idx;
  for (const auto& f : fields) {
    auto i = output_schema()->index_of(f);
    if (!i)
      return make_error(errc::type_error, "key_by: unknown field '" + f
                                            + "' (fields: "
                                            + output_schema()->to_string() + ")");
    idx.push_back(*i);
  }
  return keyed_stream{*this, std::move(fields), std::move(idx)};
}

data_stream data_stream::transform(std::string kind, schema_ptr schema,
                                   std::function<stream_operator_ptr()> factory,
                                   operator_options opts) const {
  auto id = add_operator(*graph_, opts, {kind, std::move(schema), std::move(factory)},
                         {{node_, port_}});
  if (!id)
    throw std::invalid_argument(id.error().message);
  return data_stream{graph_, *id, 0};
}

connected_streams data_stream::connect(const data_stream& other) const {
  return connected_streams{*this, other};
}

expected<connected_streams>
connected_streams::key_by(std::vector<std::string> first_fields,
                          std::vector<std::string> second_fields) const {
  if (first_fields.empty() || first_fields.size() != second_fields.size())
    return invalid("connect: key_by needs as many key fields for each input (" + std::to_string(first_fields.size()) + " and "
                   + std::to_string(second_fields.size()) + ")");
  connected_streams out = *this;
  out.first_keys_.clear();
  out.second_keys_.clear();
  for (std::size_t i = 0; i < first_fields.size(); ++i) {
    auto a = first_.output_schema()->index_of(first_fields[i]);
    auto b = second_.output_schema()->index_of(second_fields[i]);
    if (!a || !b) {
      const auto& s = a ? second_ : first_;
      const auto& f = a ? second_fields[i] : first_fields[i];
      return make_error(errc::type_error, "key_by: unknown field '" + f + "' (fields: "
                                            + s.output_schema()->to_string() + ")");
    }
    auto ta = first_.output_schema()->at(*a).type;
    auto tb = second_.output_schema()->at(*b).type;
    if (ta != tb)
      return make_error(errc::type_error, "key_by: key field '" + first_fields[i] + "' is "
                                            + std::string{to_string(ta)} + ", but '"
                                            + second_fields[i] + "' is "
                                            + std::string{to_string(tb)});
    out.first_keys_.push_back(*a);
    out.second_keys_.push_back(*b);
  }
  return out;
}

expected<data_stream>
connected_streams::transform(std::string kind, schema_ptr schema,
                             std::function<std::unique_ptr<two_input_stream_operator>()> factory,
                             operator_options opts) const {
  if (first_.graph_ != second_.graph_)
    return invalid("connect: streams belong to different jobs");
  if (!schema || !factory)
    return invalid("transform: a two-input operator needs an output schema and a factory");
  auto& g = *first_.graph_;
  auto id = add_operator(g, opts,
                         {kind, std::move(schema),
                          [factory] { return stream_operator_ptr{factory()}; }},
                         {{first_.node_, first_.port_}, {second_.node_, second_.port_}});
  if (!id)
    return id.error();
  g.nodes[*id].num_inputs = 2;
  auto& in1 = g.edges[g.edges.size() - 2];
  auto& in2 = g.edges.back();
  in2.target_input = 1;
  if (is_keyed()) {
    in1.mode = partitioning::hash;
    in1.key_fields = first_keys_;
    in2.mode = partitioning::hash;
    in2.key_fields = second_keys_;
  }
  return data_stream{first_.graph_, *id, 0};
}

expected<data_stream> connected_streams::process(
  std::string name, schema_ptr output_schema,
  std::function<std::unique_ptr<state::keyed_co_process_function>()> factory,
  operator_options opts) const {
  if (!is_keyed())
    return invalid("process: a keyed co-process function needs keyed inputs (call key_by "
                   "on the connected streams first)");
  if (!output_schema)
    return invalid("process: an output schema is required");
  if (!factory)
    return invalid("process: a function factory is required");
  if (!name.empty())
    opts.name = std::move(name);
  return transform(
    "co_process", output_schema,
    [output_schema, k1 = first_keys_, k2 = second_keys_, factory = std::move(factory)] {
      auto fn = factory();
      if (!fn)
        throw std::runtime_error("process: the factory returned no function");
      return state::make_keyed_co_process_operator(k1, k2, output_schema, std::move(fn));
    },
    std::move(opts));
}

// -- keyed_stream -------------------------------------------------------------

expected<data_stream> keyed_stream::process(
  std::string name, schema_ptr output_schema,
  std::function<std::unique_ptr<state::keyed_process_function>()> factory,
  operator_options opts) const {
  if (!output_schema)
    return invalid("process: an output schema is required");
  if (!factory)
    return invalid("process: a function factory is required");
  auto& g = input_.graph_;
  if (!name.empty())
    opts.name = std::move(name);
  auto id = add_operator(
    *g, opts,
    {"process", output_schema,
     [output_schema, keys = key_idx_, factory = std::move(factory)] {
       auto fn = factory();
       if (!fn)
         throw std::runtime_error("process: the factory returned no function");
       return state::make_keyed_process_operator(keys, output_schema, std::move(fn));
     }},
    {{input_.node_, input_.port_}}, key_idx_);
  if (!id)
    return id.error();
  return data_stream{g, *id, 0};
}

// -- job ----------------------------------------------------------------------

job::job(job_options opts)
  : graph_(std::make_shared<job_graph>()),
    stop_(std::make_shared<runtime::stop_request>()),
    control_(std::make_shared<runtime::job_control>()) {
  if (opts.parallelism == 0)
    opts.parallelism = 1;
  if (opts.max_parallelism == 0 || opts.max_parallelism > 32768)
    opts.max_parallelism = 128;
  if (opts.batch_size == 0)
    opts.batch_size = 1;
  graph_->options = std::move(opts);
}

void job::stop() {
  stop_->request();
}

std::future<expected<state_query_result>>
job::query_state(std::string operator_name, std::vector<std::string> key) const {
  auto reply = std::make_shared<runtime::reply_slot<state_query_result>>();
  auto f = reply->future();
  control_->query(runtime::state_query{std::move(operator_name), std::move(key), reply});
  return f;
}

std::future<expected<savepoint_result>> job::trigger_savepoint(std::string path) {
  auto reply = std::make_shared<runtime::reply_slot<savepoint_result>>();
  auto f = reply->future();
  control_->savepoint(runtime::savepoint_request{std::move(path), false, reply});
  return f;
}

std::future<expected<savepoint_result>> job::stop_with_savepoint(std::string path) {
  auto reply = std::make_shared<runtime::reply_slot<savepoint_result>>();
  auto f = reply->future();
  control_->savepoint(runtime::savepoint_request{std::move(path), true, reply});
  return f;
}

const job_options& job::options() const {
  return graph_->options;
}

job_options& job::options() {
  return graph_->options;
}

std::optional<data_stream> job::stream(std::string_view name) const {
  auto* where = graph_->find_stream(name);
  if (where == nullptr)
    return std::nullopt;
  return data_stream{graph_, where->first, where->second};
}

} // namespace weir
