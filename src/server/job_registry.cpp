// SPDX-License-Identifier: Apache-2.0
#include "job_registry.hpp"

#include "http_util.hpp"

#include <chrono>

namespace weir::server::internal {

std::shared_ptr<served_job> job_registry::start(std::unique_ptr<job> j,
                                                std::optional<pipeline_source> source) {
  // Served jobs print no status line; their progress is the API's.
  j->options().status_interval = std::chrono::milliseconds{0};
  // Every http source of a served job is fed by this server (a job run
  // without one fails at start).
  for (const auto& h : http_sources(*j))
    h->attach();
  auto sj = std::make_shared<served_job>();
  sj->id = new_id();
  sj->source = std::move(source);
  sj->run = std::make_unique<running_job>(j->start());
  sj->owner = std::move(j);
  return sj;
}

void job_registry::add(std::shared_ptr<served_job> j) {
  std::lock_guard lock{mutex_};
  jobs_.push_back(std::move(j));
}

std::shared_ptr<served_job> job_registry::find(const std::string& id) const {
  std::lock_guard lock{mutex_};
  for (const auto& j : jobs_)
    if (j->id == id)
      return j;
  return nullptr;
}

std::vector<std::shared_ptr<served_job>> job_registry::all() const {
  std::lock_guard lock{mutex_};
  return jobs_;
}

void job_registry::clear() {
  // running_job's destructor cancels a job still running.
  std::lock_guard lock{mutex_};
  jobs_.clear();
}

std::pair<std::shared_ptr<served_job>, http_source_handle_ptr>
job_registry::find_http_source_of(const std::string& source) const {
  std::pair<std::shared_ptr<served_job>, http_source_handle_ptr> found;
  for (const auto& j : all()) {
    auto h = find_http_source(*j->owner, source);
    if (!h)
      continue;
    if (!found.second || !is_terminal(j->run->state()))
      found = {j, h};
    if (!is_terminal(j->run->state()))
      break;
  }
  return found;
}

void job_registry::close_http_sources_of_ended_jobs() const {
  for (const auto& j : all())
    if (is_terminal(j->run->state()))
      for (const auto& h : http_sources(*j->owner))
        h->close();
}

bool require_running(served_job& j, httplib::Response& res, const char* what) {
  auto s = j.run->state();
  if (s == job_state::running)
    return true;
  if (is_terminal(s)) {
    json_error(res, 409, std::string{what} + ": job " + j.id + " is " + to_string(s)
                           + "; only a running job can be asked");
  } else {
    res.set_header("Retry-After", "1");
    json_error(res, 503, std::string{what} + ": job " + j.id + " is " + to_string(s)
                           + "; try again once it runs");
  }
  return false;
}

} // namespace weir::server::internal
