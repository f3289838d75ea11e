// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "guarded_server.hpp"
#include "job_registry.hpp"
#include "request_body.hpp"
#include "router.hpp"
#include "savepoint_root.hpp"
#include "weir/server/http_server.hpp"

#include <atomic>

namespace weir::server::internal {

/// What every route group of one server shares: its options, the HTTP
/// server and its route table, the jobs, the savepoint root and the stop
/// flag. Built once by `http_server`, outliving every route group.
struct server_context {
  explicit server_context(server_options o)
    : opts(std::move(o)),
      http(connection_limits{opts}),
      budget(opts.max_body_bytes_in_flight),
      savepoints(opts.savepoint_dir),
      routes(http, opts, budget) {}

  server_context(const server_context&) = delete;
  server_context& operator=(const server_context&) = delete;

  const server_options opts;
  guarded_server http;
  body_budget budget; ///< request body bytes held at once, over all connections
  job_registry jobs;
  savepoint_root savepoints;
  router routes;
  /// Set once the server stops: long-lived answers (SSE) end.
  std::atomic<bool> stopping{false};
};

} // namespace weir::server::internal
