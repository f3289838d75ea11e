// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <httplib.h>

#include <cstddef>
#include <string>

namespace weir::server::internal {

/// HTTP ingest into the http source kind (src/kinds/sources/http/,
/// docs/kinds/sources/http.md): `POST /ingest/{source}` hands the body,
/// whatever its Content-Type, to the http source of that name of a running
/// job (a running one before one that is over) and answers its
/// `ingest_result`: `{"source", "request_id", "ack", "accepted", "bad",
/// "bad_examples": [{"line","reason"}], ["duplicate"], ["checkpoint_id"],
/// ["errors"]}`. 202 accepted, 200 a duplicate `Idempotency-Key`, 400 a bad
/// body, 404 no such source, 413 a body above the source's `max_body` (at
/// most `server_options::max_ingest_body_bytes`), 429 a full queue, 503
/// with Retry-After a job not running or an acknowledgement timed out.
class ingest_routes {
public:
  /// Registers the route on `ctx.routes` (and turns Nagle's algorithm off).
  explicit ingest_routes(server_context& ctx);

  ingest_routes(const ingest_routes&) = delete;
  ingest_routes& operator=(const ingest_routes&) = delete;

private:
  /// The largest body `POST /ingest/{source}` takes: the source's
  /// max_body, at most max_ingest_body_bytes.
  std::size_t body_limit(const std::string& source) const;
  void ingest(const httplib::Request& req, httplib::Response& res);

  server_context& ctx_;
};

} // namespace weir::server::internal
