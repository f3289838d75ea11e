// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a kind needs to add a node to a job's graph: the kinds' folders
// (src/kinds/, bench/kinds/) define the functions that plan them
// (`file::add_sink`, `generator::add_source`, ... which `data_stream::sink_to`
// and `job::from` call) and the API's operator methods with it.

#include "weir/api/job.hpp"
#include "weir/runtime/job_graph.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>
#include <string_view>

namespace weir::internal {

/// The parts of a stream a kind's planning reads, and a stream made from a
/// node of the graph (the constructor is private to the API).
struct stream_access {
  static data_stream make(std::shared_ptr<runtime::job_graph> g, std::size_t node,
                          std::size_t port = 0) {
    return data_stream{std::move(g), node, port};
  }
  static const std::shared_ptr<runtime::job_graph>& graph(const data_stream& s) {
    return s.graph_;
  }
  static std::size_t node(const data_stream& s) { return s.node_; }
  static std::size_t port(const data_stream& s) { return s.port_; }
  /// The (node, port) input a node fed by `s` names.
  static std::pair<std::size_t, std::size_t> input(const data_stream& s) {
    return {s.node_, s.port_};
  }
};

/// Claims a source's stream name (generated from `kind` when empty; errors
/// for a duplicate) and adds its node without inputs; the caller finishes it.
expected<runtime::stream_node*> add_source_node(runtime::job_graph& g,
                                                const operator_options& opts,
                                                std::string_view kind, schema_ptr output,
                                                std::size_t parallelism,
                                                watermark_options watermark,
                                                runtime::source_factory factory);

/// An operator node to add: its kind, main output schema (null for a sink)
/// and the factory of its per-subtask instances.
struct operator_node {
  std::string_view kind;
  schema_ptr output;
  runtime::operator_factory factory;
  bool is_sink = false;
  std::size_t parallelism = 0; ///< 0: from the operator options or the job
};

/// Claims the operator's stream name (generated from its kind when empty;
/// errors for a duplicate) and adds its node fed by `inputs` ((node, port)
/// each), hash-partitioned by `hash_keys` if given, else forwarded or
/// rebalanced; returns the node's index.
expected<std::size_t> add_operator_node(runtime::job_graph& g, const operator_options& opts,
                                        operator_node def,
                                        std::vector<std::pair<std::size_t, std::size_t>> inputs,
                                        std::optional<std::vector<std::size_t>> hash_keys = {});

/// `requested`, or the job's parallelism when it is 0.
std::size_t default_parallelism(const runtime::job_graph& g, std::size_t requested);

/// Checks a stream name for uniqueness (errors for a duplicate); generates
/// one from `kind` when empty. For a kind that builds its nodes itself
/// (window: a second, late-data output and an optional local phase).
expected<std::string> claim_stream_name(runtime::job_graph& g, std::string name,
                                        std::string_view kind);

/// Adds `node` fed by `inputs` ((node, port) each), hash-partitioned by
/// `hash_keys` if given, else forwarded or rebalanced; returns its index.
std::size_t add_graph_node(runtime::job_graph& g, runtime::stream_node node,
                           std::vector<std::pair<std::size_t, std::size_t>> inputs,
                           std::optional<std::vector<std::size_t>> hash_keys = std::nullopt);

} // namespace weir::internal
