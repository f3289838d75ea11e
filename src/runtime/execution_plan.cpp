// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/execution_plan.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace weir::runtime {

namespace {

/// Flink's chain name (StreamingJobGraphGenerator::createChainedName): a
/// member, then " -> " and its one chained successor's name, or its
/// successors' names in parentheses. Iterative: a chain may be wide.
std::string chain_name(const job_graph& g, const chain_vertex& cv) {
  std::string out;
  // (member, next successor to write); a member's text opens on its first
  // visit and closes once its successors are written.
  std::vector<std::pair<std::size_t, std::size_t>> stack{{0, 0}};
  out += g.nodes[cv.nodes[0]].name;
  while (!stack.empty()) {
    auto& [k, i] = stack.back();
    const auto& succ = cv.chained_successors[k];
    if (i == succ.size()) {
      if (succ.size() > 1)
        out += ')';
      stack.pop_back();
      continue;
    }
    if (i == 0)
      out += succ.size() > 1 ? " -> (" : " -> ";
    else
      out += ", ";
    const auto next = succ[i++];
    out += g.nodes[cv.nodes[next]].name;
    stack.emplace_back(next, 0);
  }
  return out;
}

} // namespace

std::size_t execution_plan::channel_of(const job_graph& g, std::size_t e,
                                       std::size_t u) const {
  return g.edges[e].mode == partitioning::forward ? channel_base[e]
                                                  : channel_base[e] + u;
}

execution_plan build_execution_plan(const job_graph& g) {
  execution_plan plan;
  const auto n = g.nodes.size();
  std::vector<std::vector<std::size_t>> in_edges(n);
  plan.out_edges.assign(n, {});
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    in_edges[g.edges[e].target].push_back(e);
    plan.out_edges[g.edges[e].source].push_back(e);
  }

  // A node chains to its predecessor when it has exactly one input, that
  // input is the predecessor's main output, forward, with equal parallelism.
  // Every such consumer chains, however many the predecessor has (Flink's
  // StreamingJobGraphGenerator::isChainable has no "only successor" rule):
  // a consumer left out would get the stream one mailbox hop later than its
  // siblings, and a node joining the two (enrich, union) would see the
  // branches interleaved by which one was declared first.
  plan.edge_is_chained.assign(g.edges.size(), false);
  std::vector<int> chained_pred(n, -1);
  for (std::size_t v = 0; v < n; ++v) {
    if (in_edges[v].size() != 1 || g.nodes[v].is_source || g.nodes[v].num_inputs > 1)
      continue;
    auto e = in_edges[v][0];
    const auto& edge = g.edges[e];
    if (edge.mode != partitioning::forward || edge.port != 0
        || g.nodes[edge.source].parallelism != g.nodes[v].parallelism)
      continue;
    plan.edge_is_chained[e] = true;
    chained_pred[v] = static_cast<int>(edge.source);
  }

  // A chain is at most max_chain_length operators deep: members call each
  // other (operator_chain::emit), so the depth bounds the stack of a
  // subtask; a longer run of chainable operators becomes several vertices
  // joined by forward edges. Chained successors are listed per node in edge
  // order (declaration order).
  std::vector<std::vector<std::size_t>> chained_succ(n);
  {
    std::vector<std::size_t> depth(n, 0);
    // Nodes are added after their inputs (the API builds in order), so a
    // predecessor's depth is known when its successor is seen.
    for (std::size_t v = 0; v < n; ++v) {
      if (chained_pred[v] == -1)
        continue;
      const auto p = static_cast<std::size_t>(chained_pred[v]);
      if (p < v && depth[p] + 1 >= max_chain_length) {
        plan.edge_is_chained[in_edges[v][0]] = false;
        chained_pred[v] = -1;
        continue;
      }
      depth[v] = p < v ? depth[p] + 1 : 0;
    }
    for (std::size_t e = 0; e < g.edges.size(); ++e)
      if (plan.edge_is_chained[e])
        chained_succ[g.edges[e].source].push_back(g.edges[e].target);
  }

  plan.vertex_of_node.assign(n, static_cast<std::size_t>(-1));
  std::vector<std::pair<std::size_t, std::size_t>> stack; // (node, chain index of its feeder)
  for (std::size_t v = 0; v < n; ++v) {
    if (chained_pred[v] != -1)
      continue; // not a head
    chain_vertex cv;
    cv.parallelism = g.nodes[v].parallelism;
    cv.is_source = g.nodes[v].is_source;
    // Pre-order, successors in edge order: an explicit stack, since a wide
    // tree or a long chain must not recurse.
    constexpr auto none = static_cast<std::size_t>(-1);
    stack.assign(1, {v, none});
    while (!stack.empty()) {
      auto [cur, from] = stack.back();
      stack.pop_back();
      const auto k = cv.nodes.size();
      cv.nodes.push_back(cur);
      cv.chained_successors.emplace_back();
      if (from != none)
        cv.chained_successors[from].push_back(k);
      plan.vertex_of_node[cur] = plan.vertices.size();
      const auto& succ = chained_succ[cur];
      for (auto it = succ.rbegin(); it != succ.rend(); ++it)
        stack.emplace_back(*it, k);
    }
    cv.name = chain_name(g, cv);
    plan.vertices.push_back(std::move(cv));
  }

  // Channel numbering at each head.
  plan.channel_base.assign(g.edges.size(), 0);
  plan.input_channels.assign(plan.vertices.size(), 0);
  plan.channel_input.assign(plan.vertices.size(), {});
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    if (plan.edge_is_chained[e])
      continue;
    const auto& edge = g.edges[e];
    auto tv = plan.vertex_of_node[edge.target];
    plan.channel_base[e] = plan.input_channels[tv];
    const auto n_channels =
      edge.mode == partitioning::forward ? 1 : g.nodes[edge.source].parallelism;
    plan.input_channels[tv] += n_channels;
    plan.channel_input[tv].insert(plan.channel_input[tv].end(), n_channels, edge.target_input);
  }

  // Topological order of vertices (Kahn).
  const auto vn = plan.vertices.size();
  std::vector<std::size_t> indegree(vn, 0);
  std::vector<std::vector<std::size_t>> succ(vn);
  for (std::size_t e = 0; e < g.edges.size(); ++e) {
    if (plan.edge_is_chained[e])
      continue;
    auto a = plan.vertex_of_node[g.edges[e].source];
    auto b = plan.vertex_of_node[g.edges[e].target];
    succ[a].push_back(b);
    ++indegree[b];
  }
  std::vector<std::size_t> ready;
  for (std::size_t v = 0; v < vn; ++v)
    if (indegree[v] == 0)
      ready.push_back(v);
  while (!ready.empty()) {
    auto v = ready.back();
    ready.pop_back();
    plan.topo_order.push_back(v);
    for (auto s : succ[v])
      if (--indegree[s] == 0)
        ready.push_back(s);
  }
  if (plan.topo_order.size() != vn)
    throw std::logic_error("job graph has a cycle");
  return plan;
}

subtask_outputs plan_subtask_outputs(const job_graph& g, const execution_plan& plan,
                                     std::size_t vertex, std::size_t subtask) {
  subtask_outputs out;
  const auto& v = plan.vertices[vertex];
  for (std::size_t k = 0; k < v.nodes.size(); ++k) {
    for (auto e : plan.out_edges[v.nodes[k]]) {
      const auto& edge = g.edges[e];
      if (plan.edge_is_chained[e])
        continue;
      auto tv = plan.vertex_of_node[edge.target];
      const auto targets = plan.vertices[tv].parallelism;
      writer_spec w;
      w.chain_index = k;
      w.port = edge.port;
      w.mode = edge.mode;
      w.key_fields = edge.key_fields;
      w.target_parallelism = targets;
      auto add = [&](std::size_t d) {
        w.channels.push_back(static_cast<std::uint32_t>(out.channels.size()));
        out.channels.push_back(output_channel_target{
          tv, d, static_cast<std::uint32_t>(plan.channel_of(g, e, subtask))});
      };
      if (edge.mode == partitioning::forward)
        add(subtask);
      else
        for (std::size_t d = 0; d < targets; ++d)
          add(d);
      out.writers.push_back(std::move(w));
    }
  }
  return out;
}

} // namespace weir::runtime
