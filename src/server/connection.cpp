// SPDX-License-Identifier: Apache-2.0
#include "connection.hpp"

#include "json_writer.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace weir::server::internal {

namespace {

using clock = std::chrono::steady_clock;

thread_local connection* current_connection = nullptr;

constexpr auto poll_slice = std::chrono::milliseconds{200};

void address_of(const sockaddr_storage& a, std::string& ip, int& port) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto* v4 = reinterpret_cast<const sockaddr_in*>(&a);
    ::inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
    port = ntohs(v4->sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto* v6 = reinterpret_cast<const sockaddr_in6*>(&a);
    ::inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
    port = ntohs(v6->sin6_port);
  }
  ip = text;
}

const char* reason(int status) {
  switch (status) {
    case 400: return "Bad Request";
    case 408: return "Request Timeout";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}

} // namespace

connection::connection(int fd, const connection_limits& limits,
                       std::function<bool()> stopping)
  : fd_(fd), limits_(limits), stopping_(std::move(stopping)) {
  if (int flags = ::fcntl(fd_, F_GETFL); flags >= 0)
    ::fcntl(fd_, F_SETFL, flags | O_NONBLOCK);
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (::getpeername(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    address_of(a, peer_ip_, peer_port_);
  len = sizeof a;
  if (::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    address_of(a, local_ip_, local_port_);
}

connection::~connection() {
  if (current_connection == this)
    current_connection = nullptr;
}

connection* connection::current() noexcept { return current_connection; }

void connection::set_current(connection* c) noexcept { current_connection = c; }

int connection::wait(short events, clock::time_point deadline) const {
  for (;;) {
    if (stopping_())
      return -1;
    const auto now = clock::now();
    if (now >= deadline)
      return 0;
    const auto slice = std::min<clock::duration>(deadline - now, poll_slice);
    pollfd p{fd_, events, 0};
    const int ms =
      static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(slice).count());
    const int r = ::poll(&p, 1, ms);
    if (r > 0)
      return 1;
    if (r < 0 && errno != EINTR)
      return -1;
  }
}

ssize_t connection::fill(clock::time_point deadline) {
  begin_ = end_ = 0;
  for (;;) {
    const int w = wait(POLLIN, deadline);
    if (w <= 0) {
      timed_out_ = w == 0;
      return -1;
    }
    const auto n = ::recv(fd_, buffer_, buffer_size, 0);
    if (n > 0) {
      end_ = static_cast<std::size_t>(n);
      return n;
    }
    if (n == 0)
      return 0;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
      return -1;
  }
}

bool connection::wait_for_request() {
  phase_ = phase::idle;
  if (broken_)
    return false;
  if (begin_ < end_)
    return true;
  return fill(clock::now() + limits_.idle_timeout) > 0;
}

void connection::begin_request() {
  phase_ = phase::head;
  head_deadline_ = clock::now() + limits_.header_timeout;
  head_bytes_ = head_lines_ = line_length_ = 0;
  previous_ = 0;
  wrote_ = answered_ = timed_out_ = close_after_ = body_unread_ = false;
}

ssize_t connection::read(char* ptr, size_t size) {
  if (broken_ || size == 0)
    return -1;
  if (phase_ != phase::head)
    return read_body(ptr, size);
  if (begin_ == end_) {
    const auto n = fill(head_deadline_);
    if (n <= 0) {
      if (timed_out_)
        answer(408, "the request line and headers took longer than "
                      + std::to_string(limits_.header_timeout.count()) + " ms");
      broken_ = true;
      return n;
    }
  }
  // Deliver up to the end of the head only (httplib reads it a byte at a
  // time), counting it against the cap.
  std::size_t k = 0;
  const std::size_t avail = std::min(size, end_ - begin_);
  while (k < avail) {
    if (head_bytes_ == limits_.max_header_bytes) {
      answer(431, "the request line and headers are larger than "
                    + std::to_string(limits_.max_header_bytes) + " bytes");
      broken_ = true;
      return -1;
    }
    const char c = buffer_[begin_ + k++];
    ++head_bytes_;
    const char before = previous_;
    previous_ = c;
    if (c != '\n') {
      ++line_length_;
      continue;
    }
    // A line that is exactly CRLF after the request line ends the head.
    const bool blank = line_length_ == 1 && before == '\r';
    line_length_ = 0;
    if (blank && head_lines_ > 0) {
      phase_ = phase::body;
      break;
    }
    ++head_lines_;
  }
  std::memcpy(ptr, buffer_ + begin_, k);
  begin_ += k;
  return static_cast<ssize_t>(k);
}

ssize_t connection::read_body(char* ptr, std::size_t size) {
  if (broken_)
    return -1;
  if (begin_ == end_) {
    const auto n = fill(clock::now() + limits_.read_timeout);
    if (n <= 0) {
      // The answer (408, 400) can still go out; nothing more is read.
      close_after_ = true;
      return n;
    }
  }
  const std::size_t k = std::min(size, end_ - begin_);
  std::memcpy(ptr, buffer_ + begin_, k);
  begin_ += k;
  return static_cast<ssize_t>(k);
}

bool connection::send_all(const char* p, std::size_t n) {
  std::size_t done = 0;
  auto deadline = clock::now() + limits_.write_timeout;
  while (done < n) {
    const auto r = ::send(fd_, p + done, n - done, MSG_NOSIGNAL);
    if (r > 0) {
      done += static_cast<std::size_t>(r);
      deadline = clock::now() + limits_.write_timeout;
      continue;
    }
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (wait(POLLOUT, deadline) > 0)
        continue;
    }
    return false;
  }
  return true;
}

ssize_t connection::write(const char* ptr, size_t size) {
  if (broken_ || answered_)
    return -1;
  wrote_ = true;
  if (!send_all(ptr, size)) {
    broken_ = true;
    return -1;
  }
  return static_cast<ssize_t>(size);
}

void connection::answer(int status, std::string_view message) {
  close_after_ = true;
  if (wrote_ || answered_ || broken_)
    return;
  json_writer w;
  w.begin_object().key("errors").begin_array().value(message).end_array().end_object();
  const auto body = w.take();
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + reason(status)
                     + "\r\nContent-Type: application/json\r\nContent-Length: "
                     + std::to_string(body.size()) + "\r\nConnection: close\r\n";
  if (status == 429 || status == 503)
    head += "Retry-After: 1\r\n";
  head += "\r\n";
  wrote_ = answered_ = true;
  if (!send_all(head.data(), head.size()) || !send_all(body.data(), body.size()))
    broken_ = true;
}

void connection::linger(std::chrono::milliseconds most) {
  ::shutdown(fd_, SHUT_WR);
  const auto deadline = clock::now() + most;
  char drop[4096];
  for (std::size_t dropped = 0; dropped < (std::size_t{64} << 20);) {
    const auto n = ::recv(fd_, drop, sizeof drop, 0);
    if (n > 0) {
      dropped += static_cast<std::size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
      break;
    if (wait(POLLIN, deadline) <= 0)
      break;
  }
}

bool connection::is_readable() const {
  return begin_ < end_ || wait(POLLIN, clock::now() + limits_.read_timeout) > 0;
}

bool connection::is_writable() const {
  return !broken_ && wait(POLLOUT, clock::now() + limits_.write_timeout) > 0;
}

void connection::get_remote_ip_and_port(std::string& ip, int& port) const {
  ip = peer_ip_;
  port = peer_port_;
}

void connection::get_local_ip_and_port(std::string& ip, int& port) const {
  ip = local_ip_;
  port = local_port_;
}

socket_t connection::socket() const { return fd_ < FD_SETSIZE ? fd_ : 0; }

} // namespace weir::server::internal
