// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/job_graph.hpp"

namespace weir::runtime {

namespace {

// Marks in `need` the columns of `node`'s main output that its consumers
// read; false when some consumer may read any of them.
bool mark_reads(const job_graph& g, std::size_t node, std::vector<bool>& need, int depth) {
  if (depth > 64)
    return false; // (a graph is acyclic; a chain of filters this long is not worth it)
  for (const auto& e : g.edges) {
    if (e.source != node)
      continue;
    if (e.port != 0)
      return false;
    for (auto k : e.key_fields)
      if (k < need.size())
        need[k] = true;
    const auto& t = g.nodes[e.target];
    if (!t.reads)
      return false;
    for (auto c : *t.reads) {
      if (c >= need.size())
        return false;
      need[c] = true;
    }
    if (t.forwards_input_columns && !mark_reads(g, e.target, need, depth + 1))
      return false;
  }
  return true;
}

} // namespace

void prune_generated_fields(job_graph& g) {
  for (auto& n : g.nodes) {
    if (!(n.is_source || n.forwards_input_columns) || !n.needed_columns || n.outputs.empty())
      continue;
    const std::size_t width = n.outputs[0].schema->size();
    std::vector<bool> need(width, false);
    if (!mark_reads(g, n.id, need, 0)) {
      n.needed_columns->clear(); // all
      continue;
    }
    for (auto f : {n.partition_field, n.processing_time_field})
      if (f && *f < width)
        need[*f] = true;
    *n.needed_columns = std::move(need);
  }
}

} // namespace weir::runtime
