// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "router.hpp"

namespace weir::server::internal {

/// The routes that answer the same whatever the jobs: `GET /healthz`
/// (`{"status":"ok"}`, the one route needing no token) and the web
/// dashboard, `GET /` (index.html), `/index.html`, `/app.js`,
/// `/style.css`, compiled into the binary (dashboard_files.hpp) and sent
/// with `Cache-Control: no-cache`.
void add_static_routes(router& routes);

} // namespace weir::server::internal
