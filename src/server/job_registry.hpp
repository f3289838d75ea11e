// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "http_util.hpp"
#include "served_job.hpp"
#include "weir/http/source.hpp"

#include <httplib.h>

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace weir::server::internal {

/// The jobs a server runs, in submission order, and their http sources.
/// Jobs are only added; each stays (and its `running_job` with it) until
/// the registry is destroyed, which cancels those still running.
/// Thread-safe.
class job_registry {
public:
  job_registry() = default;
  job_registry(const job_registry&) = delete;
  job_registry& operator=(const job_registry&) = delete;

  /// Starts `j` in the background with a fresh id, its http sources fed by
  /// this server; not yet served (`add`).
  static std::shared_ptr<served_job> start(std::unique_ptr<job> j,
                                           std::optional<pipeline_source> source);

  /// Serves `j`.
  void add(std::shared_ptr<served_job> j);

  /// The job called `id`; null if there is none.
  std::shared_ptr<served_job> find(const std::string& id) const;

  /// Every job, in submission order (a copy of the list).
  std::vector<std::shared_ptr<served_job>> all() const;

  /// Forgets every job: cancels those still running and waits for them.
  void clear();

  /// The job serving http source `source` (a running one before one that is
  /// over) and the source's handle; nulls when no job has it.
  std::pair<std::shared_ptr<served_job>, http_source_handle_ptr>
  find_http_source_of(const std::string& source) const;

  /// Closes the http sources of jobs that are over: requests waiting for a
  /// checkpoint answer 503, later ones too (called each second and at
  /// shutdown).
  void close_http_sources_of_ended_jobs() const;

private:
  mutable std::mutex mutex_;
  std::vector<std::shared_ptr<served_job>> jobs_;
};

/// Calls `f(job)` for the job named by the route's first capture, or
/// answers 404.
template <class F>
void with_job(const job_registry& jobs, const httplib::Request& req, httplib::Response& res,
              F f) {
  auto j = jobs.find(req.matches[1]);
  if (!j) {
    json_error(res, 404, "no job " + std::string{req.matches[1]});
    return;
  }
  f(*j);
}

/// True when `j` runs; else the refusal of `what` is in `res`: 409 for a
/// job that is over, 503 with Retry-After for one not yet running or
/// restarting.
bool require_running(served_job& j, httplib::Response& res, const char* what);

} // namespace weir::server::internal

