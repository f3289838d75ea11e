// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "connection.hpp"

#include <httplib.h>

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace weir::server::internal {

/// cpp-httplib's task queue with a thread per connection, up to
/// `max_threads`: a connection never waits in a queue behind others (with
/// httplib's fixed pool of 32, 32 slow clients stop the server). Threads
/// start when needed and end after 30 s idle. With every thread busy the
/// task runs at once on the accepting thread with `is_overflow()` true, so
/// it can refuse the connection without reading from it.
class connection_pool final : public httplib::TaskQueue {
public:
  explicit connection_pool(std::size_t max_threads);
  ~connection_pool() override;

  void enqueue(std::function<void()> fn) override;
  /// Waits for every running task to end.
  void shutdown() override;

  /// True on the accepting thread while it runs a task no thread could take.
  static bool is_overflow() noexcept;

private:
  void work(std::list<std::thread>::iterator self);
  void reap();

  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::list<std::thread> threads_;
  std::deque<std::list<std::thread>::iterator> ended_; ///< to join
  std::size_t max_threads_;
  std::size_t idle_ = 0;
  bool shutdown_ = false;
};

/// cpp-httplib's server with connections served by `connection` (header
/// deadline, header cap, read and write timeouts, pipelining) and admitted
/// against `max_connections` (more: 503, Retry-After) and
/// `max_connections_per_client` per peer address (more: 429): a refused
/// connection gets its answer and is closed without a byte read. Requests
/// run through httplib's routing as before.
class guarded_server final : public httplib::Server {
public:
  explicit guarded_server(const connection_limits& limits);

  /// Binds `host`:`port` (0: a free port) and listens with a backlog of
  /// `max_connections` (httplib's is 5: a burst of connections beyond it
  /// waits a second for the SYN retry). The port bound, or -1.
  int bind_listener(const std::string& host, int port);

  const connection_limits& limits() const noexcept { return limits_; }
  /// Connections open now (admitted, not yet closed).
  std::size_t open_connections() const;

private:
  /// Replaces httplib's loop over one connection's requests.
  bool process_and_close_socket(socket_t sock) override;
  /// Admits the connection from `ip`, or answers it and returns false.
  bool admit(connection& c);
  void release(const std::string& ip);

  connection_limits limits_;
  mutable std::mutex mutex_;
  std::size_t open_ = 0;
  std::map<std::string, std::size_t> per_client_;
};

} // namespace weir::server::internal
