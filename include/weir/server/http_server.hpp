// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"
#include "weir/core/expected.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace weir::server {

/// Options of the HTTP server (`weir serve`, docs/operations/server.md).
struct server_options {
  /// Address to listen on. Loopback ("127.0.0.1", "::1", "localhost", any
  /// 127.x.y.z) by default; any other address needs a `token`.
  std::string host = "127.0.0.1";
  int port = 8081; ///< 0 = any free port (see `http_server::port`)
  /// Bearer token every request but `GET /healthz` must carry
  /// (`Authorization: Bearer T`, or `?access_token=T` for the dashboard in
  /// a browser); empty = none (loopback only).
  std::string token;
  /// Largest body of `POST /jobs`, `POST /jobs/{id}/savepoints` and `POST
  /// /jobs/{id}/stop` (bytes), counted as it is read and again as it is
  /// decompressed (Content-Encoding gzip or deflate), whatever its framing
  /// (Content-Length or chunked): the read stops at the limit with 413.
  std::size_t max_body_bytes = std::size_t{1} << 20;
  /// Largest body of `POST /ingest/{source}` (bytes, counted the same way):
  /// the http source's `max_body`, at most this.
  std::size_t max_ingest_body_bytes = std::size_t{256} << 20;
  /// Request body bytes held in memory at once over all connections (bodies
  /// being read, decompressed or handled). A body that would pass it gets
  /// 503 with Retry-After, unless it is the only one held: memory stays
  /// bounded however many clients send at once.
  std::size_t max_body_bytes_in_flight = std::size_t{64} << 20;
  /// Rows a live-results (SSE) client may have queued; rows arriving while
  /// it is full are skipped and the client told how many (never blocking
  /// the job).
  std::size_t stream_queue_rows = 10'000;
  /// Longest a request's line and headers may take to arrive, from its
  /// first byte (Go's ReadHeaderTimeout); later: 408 and the connection is
  /// closed. Bounds what a slowloris client holds.
  std::chrono::milliseconds header_timeout{10'000};
  /// Longest pause between two reads of a request body; longer: 408, closed.
  std::chrono::milliseconds read_timeout{10'000};
  /// Longest a client may leave response bytes untaken (a stalled reader,
  /// an SSE client that stopped reading); longer: the connection is closed.
  std::chrono::milliseconds write_timeout{10'000};
  /// Longest an open connection may wait for its next request (keep-alive).
  std::chrono::milliseconds idle_timeout{5'000};
  /// Largest request line plus headers (bytes); larger: 431, closed.
  std::size_t max_header_bytes = std::size_t{64} << 10;
  /// Connections open at once, each served by a thread of its own (an SSE
  /// stream holds one while it lasts); one more is answered 503 with
  /// Retry-After and closed without being read.
  std::size_t max_connections = 512;
  /// Connections open at once from one client address; one more: 429 with
  /// Retry-After, closed without being read.
  std::size_t max_connections_per_client = 32;
  /// Requests served on one keep-alive connection (pipelined or not)
  /// before it is closed.
  std::size_t max_requests_per_connection = 1000;
  /// Rate samples kept per job for the throughput chart (one a second).
  std::size_t rate_history = 300;
  /// Root of every savepoint written through the API (`POST
  /// /jobs/{id}/savepoints`, `POST /jobs/{id}/stop`) or restored through
  /// it (`POST /jobs?savepointPath=`); Flink's `state.savepoints.dir`. A
  /// request's target directory (or `savepointPath`) is resolved
  /// inside it: a relative path under it, an absolute one only if it lies
  /// under it; `..`, backslashes, NUL and anything leading outside
  /// (symbolic links included) are refused with 400. Without a target the
  /// savepoint goes to `savepoint-<job id prefix>-<trigger id>` under it.
  /// Empty = `savepoints` in the working directory; a relative root is made
  /// absolute against the working directory at construction.
  std::string savepoint_dir;
  /// Longest wait for a subtask's answer to a state query (`GET
  /// /jobs/{id}/state/{operator}`) before 503.
  std::chrono::milliseconds state_query_timeout{10'000};
};

/// The TOML text a served job was made from, kept for `GET
/// /jobs/{id}/config`.
struct pipeline_source {
  std::string file; ///< its file name: as given to `weir serve`, or `POST /jobs?file=`
  std::string toml; ///< the pipeline text as read or submitted
};

/// weir's server mode as a class a host program can run in itself: a
/// Flink-shaped JSON API over the jobs it runs (queryable state and
/// savepoints among it), Prometheus metrics, live sink output as Server-Sent
/// Events and the web dashboard (the endpoints are listed in README.md,
/// "Server mode"). Jobs run as `running_job`s; the
/// server samples each once a second for rates. Thread-safe.
class http_server {
public:
  explicit http_server(server_options opts);
  /// Stops serving and cancels jobs still running (call `shutdown` first
  /// for a graceful stop).
  ~http_server();

  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  /// Binds and starts serving on threads of its own; returns at once.
  /// Errors: `errc::invalid_argument` for a non-loopback host without a
  /// token; `errc::io_error` when the address cannot be bound.
  [[nodiscard]] expected<std::monostate> start();

  /// The port bound (the chosen one when `port` was 0); 0 before `start`.
  int port() const noexcept;

  /// Starts `j` in the background and serves it; returns its id (32 hex
  /// digits, as Flink's job ids).
  std::string submit(std::unique_ptr<job> j);

  /// As `submit`, keeping the pipeline text `source` it was loaded from
  /// (`GET /jobs/{id}/config` answers it).
  std::string submit(std::unique_ptr<job> j, pipeline_source source);

  /// Stops every running job gracefully (`running_job::stop`), waits for
  /// them, then stops serving. Idempotent.
  void shutdown();

  /// The job called `id`, if the server has it.
  running_job* find(const std::string& id);

  /// The `job` behind `id` (for `job::query_state`, `trigger_savepoint`,
  /// a push source's handle), if the server has it. The server owns it: the
  /// pointer is valid until the server is destroyed.
  job* find_job(const std::string& id);

private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// Whether `host` is a loopback address or name.
bool is_loopback(const std::string& host) noexcept;

} // namespace weir::server
