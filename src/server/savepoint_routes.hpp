// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <httplib.h>

#include <future>
#include <map>
#include <mutex>
#include <string>

namespace weir::server::internal {

/// Savepoints of running jobs (docs/operations/rest.md, Flink's
/// asynchronous savepoint operations), written under the server's
/// savepoint root:
///
/// - `POST /jobs/{id}/savepoints` (body `{"target-directory",
///   "cancel-job"}`, or none): 202 `{"request-id", "location"}`;
/// - `GET /jobs/{id}/savepoints/{trigger}`: `{"status": {"id":
///   "IN_PROGRESS" | "COMPLETED" | "FAILED"}, "operation"}`;
/// - `POST /jobs/{id}/stop`: without a body a graceful stop (202
///   `{"status":"STOPPING"}`); with `{"targetDirectory", "drain": false}`
///   a stop with a savepoint, answered as `POST .../savepoints`.
///
/// 400 for a bad body or a target outside the root; 409 for a job that is
/// over, runs without checkpoints or a target that is not empty; 503 with
/// Retry-After for a job not yet running.
class savepoint_routes {
public:
  /// Registers the routes on `ctx.routes`.
  explicit savepoint_routes(server_context& ctx);

  savepoint_routes(const savepoint_routes&) = delete;
  savepoint_routes& operator=(const savepoint_routes&) = delete;

private:
  /// One savepoint asked through the API (Flink's asynchronous operation
  /// behind a trigger id).
  struct savepoint_trigger {
    std::string job_id;
    std::string location; ///< the resolved target directory
    bool stop = false;    ///< stop-with-savepoint
    std::shared_future<expected<savepoint_result>> result;
  };

  void start_savepoint(served_job& j, const std::string& target, bool stop,
                       httplib::Response& res);
  void savepoint_request(const httplib::Request& req, httplib::Response& res);
  void savepoint_status(const httplib::Request& req, httplib::Response& res);
  void stop_request(const httplib::Request& req, httplib::Response& res);

  server_context& ctx_;
  std::mutex mutex_;
  std::map<std::string, savepoint_trigger> triggers_; ///< by trigger id
};

/// Queryable state: `GET /jobs/{id}/state/{operator}?key=V[&key=W...]`
/// (one `key=` per `key_by` field, in order) answers one key's live state
/// as `state_query_result::to_json`. 400 for a missing, ill-typed or
/// wrong-arity key or an operator that is not keyed; 404 for an unknown job
/// or operator; 409 once the job is over; 503 with Retry-After while it is
/// not running or when the subtask does not answer within
/// `server_options::state_query_timeout`.
class state_routes {
public:
  /// Registers the route on `ctx.routes`.
  explicit state_routes(server_context& ctx);

  state_routes(const state_routes&) = delete;
  state_routes& operator=(const state_routes&) = delete;

private:
  void query_state_request(const httplib::Request& req, httplib::Response& res);

  server_context& ctx_;
};

} // namespace weir::server::internal
