// SPDX-License-Identifier: Apache-2.0
// A service that embeds weir (docs/embedding.md): two of its threads push
// purchase events into a running job, a third reads live per-user
// aggregates by key while the job runs, and a callback sink receives the
// per-minute results. At the end it checks that what it read adds up.
// Optionally it serves weir's HTTP API and dashboard from inside itself
// (weir::server::http_server on the job it runs).
//
// usage: embedded_service [events-per-thread [port]]
//
// With a port (0 = any free one) it prints "serving on http://127.0.0.1:N/"
// and "job ID" on stdout, serves the dashboard, /jobs, /metrics and
// /jobs/ID/state/purchases_per_user?key=ada while the job runs, and once the
// job has ended keeps serving until its stdin is closed.
//
// Prints the live answers and the final totals; exits 1 if a query failed,
// or if the totals differ from what was pushed.
#include "weir/api/job.hpp"
#include "weir/blackhole/sink.hpp"
#include "weir/connectors/push_source.hpp"
#include "weir/server/http_server.hpp"
#include "weir/window/tumbling_windows.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  using namespace std::chrono_literals;
  const int per_thread = argc > 1 ? std::atoi(argv[1]) : 20000;
  const int port = argc > 2 ? std::atoi(argv[2]) : -1; // -1: no HTTP server
  const std::vector<std::string> users = {"ada", "grace", "alan", "edsger", "barbara"};

  weir::job_options opts;
  opts.name = "purchases";
  opts.parallelism = 2;
  opts.status_interval = 0ms;
  opts.quiet = true;
  // The server (when serving) owns the job; the host keeps a reference.
  auto owned = std::make_unique<weir::job>(opts);
  weir::job& job = *owned;

  // The push source: the service's threads write into it.
  weir::push::source spec;
  spec.schema = weir::make_schema({{"user", weir::type_id::string},
                                   {"ts", weir::type_id::timestamp},
                                   {"amount", weir::type_id::int64}});
  spec.event_time_field = "ts";
  // The two threads push at their own pace: a generous bound keeps one
  // thread's events from being late to the other's watermark.
  spec.watermark.max_out_of_orderness = 24h;
  spec.capacity = 1000;
  auto events = job.from(spec, {"purchases", 0});
  if (!events) {
    std::fprintf(stderr, "push source: %s\n", events.error().message.c_str());
    return 1;
  }
  auto by_user = events->stream.key_by({"user"});
  // Live per-user totals (queried while running) ...
  auto running = by_user->count("purchases", {"purchases_per_user", 0});
  // ... and per-minute revenue, delivered to a callback.
  auto minutes = by_user->window(
    std::make_shared<const weir::window::tumbling_event_time_windows>(
      *weir::window::tumbling_event_time_windows::make(1min)),
    {{"n", "count(*)"}, {"revenue", "sum(amount)"}}, {}, {"revenue_per_minute", 0});
  if (!running || !minutes) {
    std::fprintf(stderr, "building the job failed\n");
    return 1;
  }
  std::mutex m;
  std::map<std::string, std::int64_t> window_counts;
  if (!running->sink_to(weir::blackhole::sink{}) ||
      !minutes->sink_to_callback(
        [&](const weir::row_view& row) {
          std::lock_guard lock{m};
          window_counts[std::string{*row.get_string("user")}] += *row.get_int("n");
        },
        {"minutes_out", 1})) {
    std::fprintf(stderr, "adding the sinks failed\n");
    return 1;
  }

  // Started in the background: by the HTTP server inside this program, or
  // directly (`job::start`).
  std::optional<weir::server::http_server> server;
  std::optional<weir::running_job> started;
  weir::running_job* run = nullptr;
  if (port >= 0) {
    weir::server::server_options so;
    so.port = port;
    so.savepoint_dir = "embedded-savepoints";
    server.emplace(so);
    if (auto ok = server->start(); !ok) {
      std::fprintf(stderr, "http server: %s\n", ok.error().message.c_str());
      return 1;
    }
    auto id = server->submit(std::move(owned));
    run = server->find(id);
    std::printf("serving on http://127.0.0.1:%d/\njob %s\n", server->port(), id.c_str());
    std::fflush(stdout);
  } else {
    started.emplace(job.start());
    run = &*started;
  }

  // Two producer threads; event time advances 100 ms per event.
  std::atomic<int> finished{0};
  auto producer = [&](int id) {
    for (int i = 0; i < per_thread; ++i) {
      const auto& user = users[static_cast<std::size_t>(i + id) % users.size()];
      std::int64_t ts = std::int64_t{i} * 100;
      events->handle->push(std::vector<weir::value>{user, ts, std::int64_t{1 + i % 7}});
    }
    ++finished;
  };
  std::thread a{producer, 0};
  std::thread b{producer, 1};

  // A reader of live aggregates, as a dashboard would be.
  int failures = 0;
  int answers = 0;
  while (finished < 2) {
    for (const auto& u : users) {
      auto r = job.query_state("purchases_per_user", {u}).get();
      if (!r) {
        std::fprintf(stderr, "query %s: %s\n", u.c_str(), r.error().message.c_str());
        ++failures;
        continue;
      }
      ++answers;
      if (answers % 50 == 1)
        std::printf("live %s\n", r->to_json().c_str());
    }
    std::this_thread::sleep_for(20ms);
  }
  a.join();
  b.join();
  events->handle->close();
  const weir::job_result result = run->wait();
  if (!result.ok) {
    std::fprintf(stderr, "job failed: %s\n", result.error.c_str());
    return 1;
  }
  std::map<std::string, std::int64_t> pushed;
  for (int id = 0; id < 2; ++id)
    for (int i = 0; i < per_thread; ++i)
      ++pushed[users[static_cast<std::size_t>(i + id) % users.size()]];
  bool ok = failures == 0 && answers > 0;
  for (const auto& u : users) {
    std::printf("final %s pushed %lld windows %lld\n", u.c_str(),
                static_cast<long long>(pushed[u]), static_cast<long long>(window_counts[u]));
    ok = ok && pushed[u] == window_counts[u];
  }
  std::printf("%d live answers, %d failed queries, %llu records read\n", answers, failures,
              static_cast<unsigned long long>(result.records_read));
  if (server) {
    // Keep serving the finished job (its final metrics) until stdin closes.
    std::printf("job ended; serving until stdin is closed\n");
    std::fflush(stdout);
    for (std::string line; std::getline(std::cin, line);) {
    }
    server->shutdown();
  }
  return ok ? 0 : 1;
}
