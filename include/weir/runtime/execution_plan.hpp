// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/runtime/job_graph.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::runtime {

/// A tree of chained logical nodes run by one task (Flink's `JobVertex`
/// with its chained operators, whose `OperatorChain` is a tree too).
/// `nodes[0]` is the head; every other member is fed only by its chained
/// predecessor, through the predecessor's main output and a forward edge of
/// equal parallelism. A member's output goes to all its chained successors
/// within the subtask, so two consumers of one stream see its records and
/// watermarks in the same order whichever is declared first.
///
/// Members are in pre-order (a member before its successors, successors in
/// the graph's edge order, which is declaration order): a straight chain
/// is `nodes[k]` feeding `nodes[k + 1]`. Snapshots name each member's
/// state by its node's name (`operator_snapshot_entry::operator_uid`), not
/// by its position here, so a change of chaining keeps checkpoints and
/// savepoints restorable.
struct chain_vertex {
  std::vector<std::size_t> nodes;
  /// Per member: the members its main output feeds directly (indices into
  /// `nodes`, ascending, in edge order); empty for a leaf.
  std::vector<std::vector<std::size_t>> chained_successors;
  std::size_t parallelism = 1;
  bool is_source = false; ///< head is a source
  /// "a -> b -> c"; a member with several chained successors lists them in
  /// parentheses, as Flink names chains: "src -> (a -> x, b)".
  std::string name;
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

/// Operators on one path of a chain at most (from the head to a leaf):
/// chain members call each other (`operator_chain::emit`), so this bounds a
/// subtask's stack depth; a longer run of chainable operators is cut into
/// chains joined by forward edges. A member may have any number of chained
/// successors: they are called one after the other, not nested.
constexpr std::size_t max_chain_length = 100;

/// Chains forward edges (Flink's operator chaining: single input, forward
/// partitioning of the main output, equal parallelism, at most
/// `max_chain_length` operators deep; a two-input node is never chained to
/// its inputs). Every consumer that qualifies is chained, so a node with
/// several of them heads or continues a tree (`chain_vertex`). Numbers the
/// input channels: edge by edge in graph order, each channel tagged with the
/// logical input its edge feeds.
/// Precondition: the graph is acyclic (the API cannot build a cycle).
execution_plan build_execution_plan(const job_graph& g);

/// One network edge leaving a chain member: how rows are distributed over
/// the downstream subtasks (`channels[d]` = the producing subtask's output
/// channel to downstream subtask d; one channel for a forward edge).
struct writer_spec {
  std::size_t chain_index = 0; ///< the producing member (index into `chain_vertex::nodes`)
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
