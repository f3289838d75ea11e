// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/job_metrics.hpp"

#include <algorithm>

namespace weir::runtime {

job_metrics::job_metrics(const job_graph& g) : graph_(&g) {
  metrics_.resize(g.nodes.size());
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    taps_.push_back(std::make_unique<batch_tap>());
  for (std::size_t n = 0; n < g.nodes.size(); ++n)
    for (std::size_t s = 0; s < g.nodes[n].parallelism; ++s)
      metrics_[n].push_back(std::make_unique<subtask_metrics>());
}

void job_metrics::reset() {
  for (auto& node : metrics_)
    for (auto& m : node) {
      auto r = std::memory_order_relaxed;
      m->records_in.store(0, r);
      m->records_out.store(0, r);
      m->late_records.store(0, r);
      m->bad_records.store(0, r);
      m->partial_matches_dropped.store(0, r);
      m->lines_read.store(0, r);
      m->backpressured_ns.store(0, r);
      m->watermark.store(min_watermark, r);
      m->bytes_in.store(0, r);
      m->bytes_out.store(0, r);
      m->state_bytes.store(0, r);
      m->source_lag.store(-1, r);
    }
}

std::uint64_t batch_bytes(const record_batch& batch) noexcept {
  std::uint64_t bytes = batch.timestamps.size() * 8;
  for (const auto& c : batch.columns) {
    switch (c.type) {
      case type_id::boolean:
        bytes += c.bools.size();
        break;
      case type_id::string:
        bytes += c.chars.size() + 4 * c.size();
        break;
      case type_id::float64:
        bytes += 8 * c.floats.size();
        break;
      default:
        bytes += 8 * c.ints.size();
        break;
    }
  }
  return bytes;
}

job_totals job_metrics::totals() const {
  job_totals t;
  bool any_sink = false;
  event_time sink_wm = max_watermark;
  for (std::size_t n = 0; n < metrics_.size(); ++n) {
    const auto& node = graph_->nodes[n];
    for (const auto& m : metrics_[n]) {
      auto r = std::memory_order_relaxed;
      if (node.is_source)
        t.records_read += m->records_out.load(r);
      if (node.is_sink) {
        t.records_written += m->records_in.load(r);
        sink_wm = std::min(sink_wm, m->watermark.load(r));
        any_sink = true;
      }
      t.bad_records += m->bad_records.load(r);
      t.late_records += m->late_records.load(r);
    }
  }
  t.sink_watermark = any_sink ? sink_wm : min_watermark;
  return t;
}

std::vector<node_counts> job_metrics::counts() const {
  std::vector<node_counts> out;
  const auto r = std::memory_order_relaxed;
  for (std::size_t n = 0; n < metrics_.size(); ++n) {
    const auto& node = graph_->nodes[n];
    node_counts c;
    c.name = node.name;
    c.is_source = node.is_source;
    bool lines = false;
    std::uint64_t lines_read = 0;
    for (const auto& m : metrics_[n]) {
      c.records_in += m->records_in.load(r);
      c.records_out += m->records_out.load(r);
      c.bad_records += m->bad_records.load(r);
      c.late_records += m->late_records.load(r);
      c.partial_matches_dropped += m->partial_matches_dropped.load(r);
      lines_read += m->lines_read.load(r);
      lines = lines || m->counts_lines.load(r);
    }
    if (lines)
      c.lines_read = lines_read;
    // A sink appears only with bad records (documents its server rejected).
    if (c.is_source || c.late_records > 0 || c.bad_records > 0 ||
        c.partial_matches_dropped > 0)
      out.push_back(std::move(c));
  }
  return out;
}

} // namespace weir::runtime
