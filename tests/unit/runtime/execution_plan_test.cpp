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

TEST_CASE("every forward consumer of equal parallelism chains: one stream's consumers "
          "form a tree") {
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "a", 1), node(2, "b", 1)};
  g.edges = {edge(0, 1, partitioning::forward), edge(0, 2, partitioning::forward)};
  auto plan = build_execution_plan(g);
  REQUIRE(plan.vertices.size() == 1);
  CHECK(plan.edge_is_chained[0]);
  CHECK(plan.edge_is_chained[1]);
  const auto& v = plan.vertices[0];
  CHECK(v.nodes == std::vector<std::size_t>{0, 1, 2});
  CHECK(v.chained_successors == std::vector<std::vector<std::size_t>>{{1, 2}, {}, {}});
  CHECK(v.name == "src -> (a, b)");
  CHECK(plan_subtask_outputs(g, plan, 0, 0).writers.empty());
}

TEST_CASE("chain members are in pre-order, chained successors in declaration order") {
  // src feeds b (declared first), a and z; a feeds x; b feeds y by key. z
  // (rebalance) and y (hash, parallelism 2) are network outputs.
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "a", 1), node(2, "b", 1), node(3, "x", 1),
             node(4, "y", 2), node(5, "z", 1)};
  g.edges = {edge(0, 2, partitioning::forward), edge(0, 1, partitioning::forward),
             edge(1, 3, partitioning::forward), edge(2, 4, partitioning::hash),
             edge(0, 5, partitioning::rebalance)};
  auto plan = build_execution_plan(g);
  REQUIRE(plan.vertices.size() == 3);
  const auto& v = plan.vertices[plan.vertex_of_node[0]];
  CHECK(v.nodes == std::vector<std::size_t>{0, 2, 1, 3});
  CHECK(v.chained_successors == std::vector<std::vector<std::size_t>>{{1, 2}, {}, {3}, {}});
  CHECK(v.name == "src -> (b, a -> x)");
  CHECK(plan.vertex_of_node[3] == plan.vertex_of_node[0]);
  // Writers member by member: src's edge to z, then b's edge to y.
  auto out = plan_subtask_outputs(g, plan, plan.vertex_of_node[0], 0);
  REQUIRE(out.writers.size() == 2);
  CHECK(out.writers[0].chain_index == 0);
  CHECK(out.writers[0].mode == partitioning::rebalance);
  CHECK(out.writers[1].chain_index == 1);
  CHECK(out.writers[1].mode == partitioning::hash);
  CHECK(out.channels.size() == 3); // z: 1 subtask, y: 2
  CHECK(plan.topo_order.front() == plan.vertex_of_node[0]);
}

TEST_CASE("a consumer of another parallelism, a second input or a side output stays out "
          "of the tree") {
  job_graph g;
  g.nodes = {node(0, "src", 1, true), node(1, "a", 1), node(2, "wide", 2), node(3, "u", 1),
             node(4, "side", 1)};
  g.nodes[1].outputs.push_back({"late", nullptr, true});
  g.edges = {edge(0, 1, partitioning::forward), edge(0, 2, partitioning::rebalance),
             edge(0, 3, partitioning::forward), edge(1, 3, partitioning::forward),
             edge(1, 4, partitioning::forward, 1)};
  auto plan = build_execution_plan(g);
  CHECK(plan.vertices[0].name == "src -> a");
  CHECK(plan.edge_is_chained[0]);
  for (std::size_t e = 1; e < g.edges.size(); ++e)
    CHECK_FALSE(plan.edge_is_chained[e]);
  CHECK(plan.vertices.size() == 4);
  CHECK(plan.input_channels[plan.vertex_of_node[3]] == 2); // the union of src and a
}

TEST_CASE("a chain tree is bounded in depth, not in width") {
  // The source feeds 3 * max_chain_length leaves directly, and one branch
  // 1.5 chains deep: the leaves all chain; the deep branch is cut.
  const std::size_t leaves = 3 * max_chain_length;
  const std::size_t deep = max_chain_length * 3 / 2;
  job_graph g;
  g.nodes.push_back(node(0, "src", 1, true));
  for (std::size_t i = 1; i <= leaves; ++i) {
    g.nodes.push_back(node(i, "leaf" + std::to_string(i), 1));
    g.edges.push_back(edge(0, i, partitioning::forward));
  }
  for (std::size_t i = 0; i < deep; ++i) {
    const auto id = g.nodes.size();
    g.nodes.push_back(node(id, "deep" + std::to_string(i), 1));
    g.edges.push_back(edge(i == 0 ? 0 : id - 1, id, partitioning::forward));
  }
  auto plan = build_execution_plan(g);
  REQUIRE(plan.vertices.size() == 2);
  const auto& head = plan.vertices[0];
  CHECK(head.nodes.size() == 1 + leaves + (max_chain_length - 1));
  CHECK(head.chained_successors[0].size() == leaves + 1);
  CHECK(plan.vertices[1].nodes.size() == deep - (max_chain_length - 1));
  CHECK(plan.vertices[1].name.rfind("deep99 -> deep100 -> ", 0) == 0);
  CHECK(plan.input_channels[1] == 1);
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
