// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/execution_plan.hpp"

#include <doctest/doctest.h>

using namespace weir::runtime;

namespace {

stream_node node(std::size_t id, std::string name, std::size_t parallelism,
                 bool source = false) {
  stream_node n;
  n.id = id;
  n.name = std::move(name);
  n.parallelism = parallelism;
  n.is_source = source;
  n.outputs.push_back({n.name, nullptr, false});
  return n;
}

stream_edge edge(std::size_t a, std::size_t b, partitioning m, std::size_t port = 0) {
  stream_edge e;
  e.source = a;
  e.target = b;
  e.mode = m;
  e.port = port;
  return e;
}

} // namespace

TEST_SUITE("runtime") {
TEST_CASE("forward edges of equal parallelism chain, key_by edges do not") {
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "parse", 1), node(2, "win", 2),
             node(3, "sink", 2)};
  g.edges = {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::hash),
             edge(2, 3, partitioning::forward)};
  auto plan = build_execution_plan(g);
  REQUIRE(plan.vertices.size() == 2);
  CHECK(plan.vertices[0].name == "src -> parse");
  CHECK(plan.vertices[0].is_source);
  CHECK(plan.vertices[1].name == "win -> sink");
  CHECK(plan.vertices[1].parallelism == 2);
  CHECK(plan.input_channels[1] == 1); // one upstream subtask
  CHECK(plan.topo_order == std::vector<std::size_t>{0, 1});
}

TEST_CASE("a node with two consumers chains into at most one of them") {
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "a", 1), node(2, "b", 1)};
  g.edges = {edge(0, 1, partitioning::forward), edge(0, 2, partitioning::forward)};
  auto plan = build_execution_plan(g);
  CHECK(plan.vertices.size() == 2);
  CHECK(plan.edge_is_chained[0] != plan.edge_is_chained[1]);
}

TEST_CASE("union inputs get distinct channel ranges") {
  job_graph g;
  g.nodes = {node(0, "a", 2, true), node(1, "b", 1, true), node(2, "u", 2)};
  g.edges = {edge(0, 2, partitioning::forward), edge(1, 2, partitioning::rebalance)};
  auto plan = build_execution_plan(g);
  auto u = plan.vertex_of_node[2];
  CHECK(plan.input_channels[u] == 2); // 1 forward + 1 from b's single subtask
  CHECK(plan.channel_of(g, 0, 1) == 0);
  CHECK(plan.channel_of(g, 1, 0) == 1);
}

TEST_CASE("side outputs never chain") {
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "win", 1), node(2, "late_sink", 1)};
  g.nodes[1].outputs.push_back({"late", nullptr, true});
  g.edges = {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::forward, 1)};
  auto plan = build_execution_plan(g);
  CHECK(plan.edge_is_chained[0]);
  CHECK_FALSE(plan.edge_is_chained[1]);
  CHECK(plan.vertices.size() == 2);
}

TEST_CASE("a run of chainable operators longer than max_chain_length is cut into chains") {
  // 2.5 chains' worth of forward edges: the stack depth of a subtask stays
  // bounded (operator_chain::emit calls the next member).
  const std::size_t n = max_chain_length * 5 / 2;
  job_graph g;
  for (std::size_t i = 0; i < n; ++i) {
    g.nodes.push_back(node(i, "n" + std::to_string(i), 1, i == 0));
    if (i > 0)
      g.edges.push_back(edge(i - 1, i, partitioning::forward));
  }
  auto plan = build_execution_plan(g);
  REQUIRE(plan.vertices.size() == 3);
  CHECK(plan.vertices[0].nodes.size() == max_chain_length);
  CHECK(plan.vertices[1].nodes.size() == max_chain_length);
  CHECK(plan.vertices[2].nodes.size() == n - 2 * max_chain_length);
  CHECK(plan.vertices[1].nodes.front() == max_chain_length);
  CHECK_FALSE(plan.edge_is_chained[max_chain_length - 1]);
  CHECK(plan.topo_order == std::vector<std::size_t>{0, 1, 2});
  CHECK(plan.input_channels[1] == 1);
}

TEST_CASE("a chain of 20,000 operators plans in linear time") {
  const std::size_t n = 20000;
  job_graph g;
  for (std::size_t i = 0; i < n; ++i) {
    g.nodes.push_back(node(i, "n" + std::to_string(i), 1, i == 0));
    if (i > 0)
      g.edges.push_back(edge(i - 1, i, partitioning::forward));
  }
  auto plan = build_execution_plan(g);
  CHECK(plan.vertices.size() == n / max_chain_length);
  std::size_t writers = 0;
  for (std::size_t v = 0; v < plan.vertices.size(); ++v)
    writers += plan_subtask_outputs(g, plan, v, 0).writers.size();
  CHECK(writers == plan.vertices.size() - 1);
}
}
