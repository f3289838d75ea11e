// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <httplib.h>

namespace weir::server::internal {

/// Live results: `GET /jobs/{id}/sinks/{sink}/stream` as Server-Sent
/// Events. First `event: subscribed` (`{"job","sink"}`), then one `data:`
/// JSON row per row the sink receives from then on, with `id:
/// SUBTASK:ROW` (the row's number among those the sink subtask received);
/// `event: skipped` (`{"skipped_rows"}`) when the client fell more than
/// `server_options::stream_queue_rows` rows behind (the job never waits for
/// a client); a keep-alive comment after 500 ms without rows; `event: end`
/// (`{"state"}`) once the job is over and every row is out. 404 for an
/// unknown job or sink.
class sink_stream_routes {
public:
  /// Registers the route on `ctx.routes`.
  explicit sink_stream_routes(server_context& ctx);

  sink_stream_routes(const sink_stream_routes&) = delete;
  sink_stream_routes& operator=(const sink_stream_routes&) = delete;

private:
  void stream(const httplib::Request& req, httplib::Response& res);

  server_context& ctx_;
};

} // namespace weir::server::internal
