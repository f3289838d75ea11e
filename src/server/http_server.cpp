// SPDX-License-Identifier: Apache-2.0
// weir's HTTP server (docs/operations/server.md): a Flink-shaped JSON API, Prometheus
// metrics, live sink output as Server-Sent Events and the dashboard, over
// jobs run as `running_job`s. cpp-httplib (Debian's libcpp-httplib) serves.
// The routes are grouped by what they serve, each group a class over the
// shared server_context (server_context.hpp); this file starts and stops
// the server, its sampler and its jobs.
#include "weir/server/http_server.hpp"

#include "checkpoint_routes.hpp"
#include "ingest_routes.hpp"
#include "job_routes.hpp"
#include "metrics_routes.hpp"
#include "savepoint_routes.hpp"
#include "server_context.hpp"
#include "sink_stream_routes.hpp"
#include "static_routes.hpp"

#include <arpa/inet.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace weir::server {

bool is_loopback(const std::string& host) noexcept {
  if (host == "localhost" || host == "::1" || host == "[::1]")
    return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1)
    return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

namespace {

/// How long a stopping server waits for its jobs' http sources to take the
/// records they accepted before it stops the jobs.
constexpr std::chrono::seconds shutdown_drain_timeout{10};

} // namespace

/// The server's context and its route groups (registered as they are
/// built), its listener and its sampler threads.
struct http_server::impl {
  explicit impl(server_options o)
    : ctx(std::move(o)),
      job_api(ctx),
      checkpoint_api(ctx),
      state_api(ctx),
      savepoint_api(ctx),
      sink_streams(ctx),
      ingest(ctx),
      metrics(ctx) {
    internal::add_static_routes(ctx.routes);
  }

  internal::server_context ctx;
  internal::job_routes job_api;
  internal::checkpoint_routes checkpoint_api;
  internal::state_routes state_api;
  internal::savepoint_routes savepoint_api;
  internal::sink_stream_routes sink_streams;
  internal::ingest_routes ingest;
  internal::metrics_routes metrics;

  std::thread http_thread;
  std::thread sampler;
  std::atomic<int> bound_port{0};
  std::mutex sampler_mutex;
  std::condition_variable sampler_cv;

  void sample_all() {
    for (const auto& j : ctx.jobs.all())
      j->sample(ctx.opts.rate_history);
  }
};

http_server::http_server(server_options opts)
  : impl_(std::make_unique<impl>(std::move(opts))) {}

http_server::~http_server() {
  impl_->ctx.stopping = true;
  impl_->ctx.http.stop();
  if (impl_->http_thread.joinable())
    impl_->http_thread.join();
  {
    std::lock_guard lock{impl_->sampler_mutex};
  }
  impl_->sampler_cv.notify_all();
  if (impl_->sampler.joinable())
    impl_->sampler.join();
  impl_->ctx.jobs.clear();
}

expected<std::monostate> http_server::start() {
  const auto& o = impl_->ctx.opts;
  if (!is_loopback(o.host) && o.token.empty())
    return make_error(errc::invalid_argument,
                      "listening on " + o.host + ", which is not a loopback address, needs a "
                        "bearer token (--token): anyone who can reach it could submit jobs");
  const int port = impl_->ctx.http.bind_listener(o.host, o.port);
  if (port <= 0)
    return make_error(errc::io_error,
                      "cannot listen on " + o.host + ":" + std::to_string(o.port));
  impl_->bound_port = port;
  impl_->http_thread = std::thread{[this] { impl_->ctx.http.listen_after_bind(); }};
  impl_->sampler = std::thread{[this] {
    std::unique_lock lock{impl_->sampler_mutex};
    while (!impl_->ctx.stopping) {
      lock.unlock();
      impl_->sample_all();
      impl_->ctx.jobs.close_http_sources_of_ended_jobs();
      lock.lock();
      impl_->sampler_cv.wait_for(lock, std::chrono::seconds{1},
                                 [this] { return impl_->ctx.stopping.load(); });
    }
  }};
  return std::monostate{};
}

int http_server::port() const noexcept { return impl_->bound_port; }

std::string http_server::submit(std::unique_ptr<job> j) {
  return impl_->job_api.add(std::move(j), std::nullopt);
}

std::string http_server::submit(std::unique_ptr<job> j, pipeline_source source) {
  return impl_->job_api.add(std::move(j), std::move(source));
}

running_job* http_server::find(const std::string& id) {
  auto j = impl_->ctx.jobs.find(id);
  return j ? j->run.get() : nullptr;
}

job* http_server::find_job(const std::string& id) {
  auto j = impl_->ctx.jobs.find(id);
  return j ? j->owner.get() : nullptr;
}

void http_server::shutdown() {
  auto jobs = impl_->ctx.jobs.all();
  // Records answered 202 are the jobs' to process: refuse new ones, let each
  // running job's http sources take what they accepted (a bounded wait: a
  // job stuck behind backpressure keeps them in its final checkpoint's
  // state), then stop the jobs, whose stop barrier follows those records.
  std::vector<http_source_handle_ptr> intake;
  for (const auto& j : jobs)
    if (!is_terminal(j->run->state()))
      for (const auto& h : http_sources(*j->owner)) {
        h->stop_intake();
        intake.push_back(h);
      }
  const auto deadline = std::chrono::steady_clock::now() + shutdown_drain_timeout;
  for (const auto& h : intake)
    while (h->ready() && h->queued() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
  for (const auto& j : jobs)
    if (!is_terminal(j->run->state()))
      j->run->stop();
  for (const auto& j : jobs)
    j->run->wait();
  impl_->ctx.jobs.close_http_sources_of_ended_jobs();
  {
    std::lock_guard lock{impl_->sampler_mutex};
    impl_->ctx.stopping = true;
  }
  impl_->sampler_cv.notify_all();
  impl_->ctx.http.stop();
  if (impl_->http_thread.joinable())
    impl_->http_thread.join();
  if (impl_->sampler.joinable())
    impl_->sampler.join();
}

} // namespace weir::server
