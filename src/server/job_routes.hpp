// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "server_context.hpp"

#include <httplib.h>

#include <optional>
#include <string>

namespace weir::server::internal {

/// Jobs and their submission (docs/operations/rest.md):
///
/// - `GET /overview`: Flink's cluster overview (jobs by state);
/// - `GET /jobs`: `{"jobs":[{"id","name","status","start-time","duration"}]}`;
/// - `POST /jobs[?file=NAME][&savepointPath=DIR[&allowNonRestoredState=B]]`:
///   a TOML pipeline as the body, 202 `{"jobid"}`; 400 with the loader's
///   `errors` and `diagnostics` (file:line:col), or with a refused restore;
/// - `GET /jobs/{id}`: state, times, vertices with their metrics per
///   operator and subtask, the throughput history, the result once over;
/// - `GET /jobs/{id}/config`: `{"jid","name","file","toml"}`;
/// - `GET /jobs/{id}/vertices/{vertex}/subtasks`: one vertex's subtasks;
/// - `DELETE /jobs/{id}`: cancel, 202 `{"status":"CANCELING"}`.
class job_routes {
public:
  /// Registers the routes on `ctx.routes`.
  explicit job_routes(server_context& ctx);

  job_routes(const job_routes&) = delete;
  job_routes& operator=(const job_routes&) = delete;

  /// Starts `j` and serves it; its id.
  std::string add(std::unique_ptr<job> j, std::optional<pipeline_source> source);

private:
  std::string overview() const;
  std::string job_list() const;
  std::string job_detail(served_job& j) const;
  std::optional<std::string> vertex_subtasks(served_job& j, const std::string& vertex) const;
  static std::string job_config(const served_job& j);
  void submit_request(const httplib::Request& req, httplib::Response& res);
  void submit_restored(const httplib::Request& req, httplib::Response& res,
                       std::unique_ptr<job> j, pipeline_source source);

  server_context& ctx_;
};

} // namespace weir::server::internal
