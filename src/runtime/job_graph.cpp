// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/job_graph.hpp"

namespace weir::runtime {

namespace {

// Marks in `need` the columns of `node`'s main output that its consumers
// read; false when some consumer may read any of them. `out[n]`: the edges
// leaving node n. Recursive, but at most 65 calls deep.
bool mark_reads(const job_graph& g, const std::vector<std::vector<std::size_t>>& out,
                std::size_t node, std::vector<bool>& need, int depth) {
  if (depth > 64)
    return false; // (a graph is acyclic; a chain of filters this long is not worth it)
  for (auto ei : out[node]) {
    const auto& e = g.edges[ei];
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
    if (t.forwards_input_columns && !mark_reads(g, out, e.target, need, depth + 1))
      return false;
  }
  return true;
}

} // namespace

void prune_generated_fields(job_graph& g) {
  std::vector<std::vector<std::size_t>> out(g.nodes.size());
  for (std::size_t e = 0; e < g.edges.size(); ++e)
    out[g.edges[e].source].push_back(e);
  for (auto& n : g.nodes) {
    if (!(n.is_source || n.forwards_input_columns) || !n.needed_columns || n.outputs.empty())
      continue;
    const std::size_t width = n.outputs[0].schema->size();
    std::vector<bool> need(width, false);
    if (!mark_reads(g, out, n.id, need, 0)) {
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
