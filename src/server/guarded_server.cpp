// SPDX-License-Identifier: Apache-2.0
#include "guarded_server.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <system_error>

namespace weir::server::internal {

namespace {

thread_local bool running_overflow = false;

/// How long a worker thread waits for a new connection before it ends.
constexpr auto idle_thread_life = std::chrono::seconds{30};

} // namespace

// -- connection_pool -----------------------------------------------------------------

connection_pool::connection_pool(std::size_t max_threads)
  : max_threads_(std::max<std::size_t>(1, max_threads)) {}

connection_pool::~connection_pool() { shutdown(); }

bool connection_pool::is_overflow() noexcept { return running_overflow; }

void connection_pool::reap() {
  while (!ended_.empty()) {
    auto it = ended_.front();
    ended_.pop_front();
    // It ended its loop under the lock held here: it is returning.
    if (it->joinable())
      it->join();
    threads_.erase(it);
  }
}

void connection_pool::enqueue(std::function<void()> fn) {
  {
    std::lock_guard lock{mutex_};
    reap();
    const std::size_t live = threads_.size() - ended_.size();
    if (!shutdown_ && idle_ > tasks_.size()) {
      tasks_.push_back(std::move(fn));
      cv_.notify_one();
      return;
    }
    if (!shutdown_ && live < max_threads_) {
      threads_.emplace_back();
      auto it = std::prev(threads_.end());
      try {
        *it = std::thread{[this, it] { work(it); }};
        tasks_.push_back(std::move(fn));
        return;
      } catch (const std::system_error&) {
        threads_.erase(it); // no thread to be had: refused below
      }
    }
  }
  running_overflow = true;
  fn();
  running_overflow = false;
}

void connection_pool::work(std::list<std::thread>::iterator self) {
  std::unique_lock lock{mutex_};
  for (;;) {
    if (tasks_.empty()) {
      if (shutdown_)
        break;
      ++idle_;
      const bool woken = cv_.wait_for(lock, idle_thread_life,
                                      [this] { return !tasks_.empty() || shutdown_; });
      --idle_;
      if (!woken)
        break;
      continue;
    }
    auto fn = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    fn();
    lock.lock();
  }
  if (!shutdown_)
    ended_.push_back(self);
}

void connection_pool::shutdown() {
  std::list<std::thread> all;
  {
    std::lock_guard lock{mutex_};
    shutdown_ = true;
    reap();
    all.swap(threads_);
    ended_.clear();
  }
  cv_.notify_all();
  for (auto& t : all)
    if (t.joinable())
      t.join();
}

// -- guarded_server --------------------------------------------------------------------

guarded_server::guarded_server(const connection_limits& limits) : limits_(limits) {
  new_task_queue = [n = limits_.max_connections] { return new connection_pool(n); };
  // What the Keep-Alive response header announces; the loop below keeps it.
  set_keep_alive_max_count(limits_.max_requests_per_connection);
  set_keep_alive_timeout(
    std::max<time_t>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout)
                          .count()));
}

int guarded_server::bind_listener(const std::string& host, int port) {
  if (port == 0)
    port = bind_to_any_port(host);
  else if (!bind_to_port(host, port))
    port = -1;
  if (port > 0) {
    const auto backlog = std::min<std::size_t>(limits_.max_connections, SOMAXCONN);
    ::listen(svr_sock_, static_cast<int>(backlog));
  }
  return port;
}

std::size_t guarded_server::open_connections() const {
  std::lock_guard lock{mutex_};
  return open_;
}

bool guarded_server::admit(connection& c) {
  int status = 0;
  {
    std::lock_guard lock{mutex_};
    auto& mine = per_client_[c.peer_ip()];
    if (open_ >= limits_.max_connections)
      status = 503;
    else if (mine >= limits_.max_connections_per_client)
      status = 429;
    if (status == 0) {
      ++mine;
      ++open_;
      return true;
    }
    if (mine == 0)
      per_client_.erase(c.peer_ip());
  }
  if (status == 503)
    c.answer(503, "the server has " + std::to_string(limits_.max_connections)
                    + " connections open, its limit (--max-connections)");
  else
    c.answer(429, c.peer_ip() + " has " + std::to_string(limits_.max_connections_per_client)
                    + " connections open, the limit per client "
                      "(--max-connections-per-client)");
  return false;
}

void guarded_server::release(const std::string& ip) {
  std::lock_guard lock{mutex_};
  --open_;
  auto it = per_client_.find(ip);
  if (it != per_client_.end() && --it->second == 0)
    per_client_.erase(it);
}

bool guarded_server::process_and_close_socket(socket_t sock) {
  connection c{sock, limits_, [this] { return svr_sock_ == INVALID_SOCKET; }};
  bool ok = false;
  if (connection_pool::is_overflow()) {
    // On the accepting thread: answer, never wait.
    c.answer(503, "the server has " + std::to_string(limits_.max_connections)
                    + " connections open, its limit (--max-connections)");
    c.linger(std::chrono::milliseconds{0});
  } else if (!admit(c)) {
    c.linger(std::chrono::milliseconds{0});
  } else {
    for (std::size_t n = 0; n < limits_.max_requests_per_connection; ++n) {
      if (!c.wait_for_request())
        break;
      c.begin_request();
      bool client_closes = false;
      connection::set_current(&c);
      ok = process_request(c, n + 1 == limits_.max_requests_per_connection, client_closes,
                           nullptr);
      connection::set_current(nullptr);
      if (!ok || client_closes || c.closes_after_response())
        break;
    }
    // Input the server did not read (a refused body, a broken request):
    // let the client read the answer before the close.
    if (c.body_unread() || c.closes_after_response())
      c.linger(std::chrono::seconds{1});
    release(c.peer_ip());
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

} // namespace weir::server::internal
