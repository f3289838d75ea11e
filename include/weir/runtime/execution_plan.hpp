// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/runtime/job_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::runtime {

/// A chain of logical nodes run by one task (Flink's `JobVertex` with its
/// chained operators). `nodes[0]` is the head; each next node is fed only by
/// the previous one through a forward edge of equal parallelism.
struct chain_vertex {
  std::vector<std::size_t> nodes;
  std::size_t parallelism = 1;
  bool is_source = false; ///< head is a source
  std::string name;       ///< "a -> b -> c"
};

/// The physical layout of a job: chains, and the input channel numbering of
/// every network edge.
struct execution_plan {
  std::vector<chain_vertex> vertices;
  std::vector<std::size_t> vertex_of_node;
  std::vector<bool> edge_is_chained;
  /// For a network edge: the channel index, at each downstream subtask, of
  /// upstream subtask 0 (forward edges use one channel: upstream i -> i).
  std::vector<std::size_t> channel_base;
  /// Input channels per subtask of each vertex (same for all its subtasks).
  std::vector<std::size_t> input_channels;
  /// Per vertex, the logical input (0, or 1 for a two-input head) of each of
  /// its input channels.
  std::vector<std::vector<std::size_t>> channel_input;
  /// Vertices in topological order (sources first).
  std::vector<std::size_t> topo_order;
  /// The edges leaving each node, in graph order.
  std::vector<std::vector<std::size_t>> out_edges;

  /// Channel index at a downstream subtask of edge `e` from upstream subtask `u`.
  std::size_t channel_of(const job_graph& g, std::size_t e, std::size_t u) const;
};

/// Operators in one chain at most: chain members call each other
/// (`operator_chain::emit`), so this bounds a subtask's stack depth; a longer
/// run of chainable operators is cut into chains joined by forward edges.
constexpr std::size_t max_chain_length = 100;

/// Chains forward edges (Flink's operator chaining: single input, forward
/// partitioning, equal parallelism, at most `max_chain_length` operators; a
/// two-input node is never chained) and
/// numbers the input channels: edge by edge in graph order, each channel
/// tagged with the logical input its edge feeds.
/// Precondition: the graph is acyclic (the API cannot build a cycle).
execution_plan build_execution_plan(const job_graph& g);

/// One network edge leaving a chain member: how rows are distributed over
/// the downstream subtasks (`channels[d]` = the producing subtask's output
/// channel to downstream subtask d; one channel for a forward edge).
struct writer_spec {
  std::size_t chain_index = 0; ///< position of the producing node in the chain
  std::size_t port = 0;
  partitioning mode = partitioning::forward;
  std::vector<std::size_t> key_fields; ///< hash only: indices in the port's schema
  std::size_t target_parallelism = 1;
  std::vector<std::uint32_t> channels;
};

/// Where one output channel of a subtask leads: a downstream subtask and
/// the input channel index this subtask has there.
struct output_channel_target {
  std::size_t vertex = 0;
  std::size_t subtask = 0;
  std::uint32_t channel = 0;
};

/// The network outputs of one subtask: its record writers (in the order of
/// the graph's edges, chain member by chain member) and its output channels.
struct subtask_outputs {
  std::vector<writer_spec> writers;
  std::vector<output_channel_target> channels;
};

/// Wires the outputs of subtask `subtask` of vertex `vertex`: one writer per
/// network edge leaving a chain member; a forward edge gets one channel (to
/// the same subtask index), rebalance and hash edges one per downstream
/// subtask.
subtask_outputs plan_subtask_outputs(const job_graph& g, const execution_plan& plan,
                                     std::size_t vertex, std::size_t subtask);

} // namespace weir::runtime
