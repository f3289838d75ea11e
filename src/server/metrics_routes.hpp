// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <string>

namespace weir::server::internal {

/// `GET /metrics`: every job's per-subtask counters and gauges, and its
/// checkpoint and restart figures, in Prometheus' text exposition format
/// 0.0.4 (docs/operations/metrics.md), labelled job, job_id, operator and
/// subtask.
class metrics_routes {
public:
  /// Registers the route on `ctx.routes`.
  explicit metrics_routes(server_context& ctx);

  metrics_routes(const metrics_routes&) = delete;
  metrics_routes& operator=(const metrics_routes&) = delete;

private:
  std::string metrics_text() const;

  server_context& ctx_;
};

} // namespace weir::server::internal
