// SPDX-License-Identifier: Apache-2.0
#include "served_job.hpp"

#include "http_util.hpp"

#include <algorithm>

namespace weir::server::internal {

operator_totals sum(const operator_status& op) {
  operator_totals t;
  bool all_have_watermark = true;
  for (const auto& s : op.subtasks) {
    t.records_in += s.records_in;
    t.records_out += s.records_out;
    t.bytes_in += s.bytes_in;
    t.bytes_out += s.bytes_out;
    t.late += s.late_records;
    t.bad += s.bad_records;
    t.backpressured_ms += s.backpressured_ms;
    t.state_bytes += s.state_bytes;
    if (!s.watermark)
      all_have_watermark = false;
    else if (!t.watermark || *s.watermark < *t.watermark)
      t.watermark = s.watermark;
  }
  if (!all_have_watermark)
    t.watermark.reset();
  return t;
}

void served_job::sample(std::size_t max_history) {
  auto st = run->status();
  auto now = wall_ms();
  std::lock_guard lock{mutex};
  const auto n = st.operators.size();
  std::vector<operator_totals> cur;
  for (const auto& op : st.operators)
    cur.push_back(sum(op));
  if (last.size() == n && last_ms > 0 && now > last_ms) {
    const double secs = static_cast<double>(now - last_ms) / 1000.0;
    auto d = [&](std::uint64_t a, std::uint64_t b) {
      return a >= b ? static_cast<double>(a - b) / secs : 0.0;
    };
    in_rate.assign(n, 0);
    out_rate.assign(n, 0);
    backpressure_ratio.assign(n, 0);
    double src_out = 0, sink_in = 0;
    for (std::size_t k = 0; k < n; ++k) {
      in_rate[k] = d(cur[k].records_in, last[k].records_in);
      out_rate[k] = d(cur[k].records_out, last[k].records_out);
      auto par = std::max<std::size_t>(1, st.operators[k].parallelism);
      backpressure_ratio[k] =
        std::min(1.0, d(cur[k].backpressured_ms, last[k].backpressured_ms) / 1000.0
                        / static_cast<double>(par));
      if (st.operators[k].is_source)
        src_out += out_rate[k];
      if (st.operators[k].is_sink)
        sink_in += in_rate[k];
    }
    subtask_rate.assign(n, {});
    for (std::size_t k = 0; k < n; ++k) {
      const auto& subs = st.operators[k].subtasks;
      if (k >= last_subtasks.size() || last_subtasks[k].size() != subs.size())
        continue;
      for (std::size_t i = 0; i < subs.size(); ++i) {
        const auto& a = subs[i];
        const auto& b = last_subtasks[k][i];
        subtask_rate[k].push_back(
          {d(a.records_in, b.records_in), d(a.records_out, b.records_out),
           std::min(1.0, d(a.backpressured_ms, b.backpressured_ms) / 1000.0)});
      }
    }
    if (!is_terminal(st.state)) {
      history.push_back({now, sink_in, src_out});
      while (history.size() > max_history)
        history.pop_front();
    }
  }
  last = std::move(cur);
  last_subtasks.clear();
  for (auto& op : st.operators)
    last_subtasks.push_back(std::move(op.subtasks));
  last_ms = now;
}

} // namespace weir::server::internal
