// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <string>

namespace weir::server::internal {

/// A job's checkpoint statistics and failures (docs/operations/rest.md):
///
/// - `GET /jobs/{id}/checkpoints`: Flink's shape, `{"enabled", "counts":
///   {"total","in_progress","completed","failed","restored"}, "summary":
///   {"end_to_end_duration","state_size","alignment_duration"} (each
///   {"min","avg","max"}, ms or bytes, over every completed checkpoint),
///   "latest": {"completed","failed","restored"}, "history": [...]}`,
///   history newest first;
/// - `GET /jobs/{id}/exceptions`: `{"root-exception", "timestamp",
///   "entries": [{"timestamp","message","restarted"}]}`, newest first.
class checkpoint_routes {
public:
  /// Registers the routes on `ctx.routes`.
  explicit checkpoint_routes(server_context& ctx);

  checkpoint_routes(const checkpoint_routes&) = delete;
  checkpoint_routes& operator=(const checkpoint_routes&) = delete;

private:
  static std::string checkpoints(served_job& j);
  static std::string exceptions(served_job& j);

  server_context& ctx_;
};

} // namespace weir::server::internal
