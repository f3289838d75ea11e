// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/server/http_server.hpp"

#include <httplib.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace weir::server::internal {

/// The limits of one connection, taken from `server_options` (which holds
/// the defaults and their meaning).
struct connection_limits {
  explicit connection_limits(const server_options& o = server_options{})
    : header_timeout(o.header_timeout),
      read_timeout(o.read_timeout),
      write_timeout(o.write_timeout),
      idle_timeout(o.idle_timeout),
      max_header_bytes(o.max_header_bytes),
      max_connections(o.max_connections),
      max_connections_per_client(o.max_connections_per_client),
      max_requests_per_connection(o.max_requests_per_connection) {}

  std::chrono::milliseconds header_timeout;
  std::chrono::milliseconds read_timeout;
  std::chrono::milliseconds write_timeout;
  std::chrono::milliseconds idle_timeout;
  std::size_t max_header_bytes;
  std::size_t max_connections;
  std::size_t max_connections_per_client;
  std::size_t max_requests_per_connection;
};

/// One accepted TCP connection as cpp-httplib's `Stream`, read through a
/// buffer that lives as long as the connection (pipelined requests are
/// kept, where httplib 0.11's own stream drops what it read ahead after
/// each request). It enforces, per request:
///
/// - a header deadline: the request line and headers must arrive within
///   `header_timeout` of the request's first byte (Go's ReadHeaderTimeout,
///   Apache's mod_reqtimeout), else 408 and the connection is closed;
/// - a header size: at most `max_header_bytes` of request line and headers,
///   else 431 and closed (httplib alone buffers a line of any length and any
///   number of header lines);
/// - a read timeout: a body pausing longer than `read_timeout` between two
///   reads ends the read (`timed_out()`; the body reader answers 408);
/// - a write timeout: a client not taking response bytes for
///   `write_timeout` ends the connection.
///
/// Every wait is a poll(2) in slices of at most 200 ms that also ends when
/// `stopping()` is true, so a stopping server never waits on a client. Used on
/// the one worker thread serving the connection; `current()` is it.
class connection final : public httplib::Stream {
public:
  /// Takes `fd` (made non-blocking) and its peer; does not close it.
  connection(int fd, const connection_limits& limits, std::function<bool()> stopping);
  ~connection() override;

  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // -- httplib::Stream ---------------------------------------------------------------
  bool is_readable() const override;
  bool is_writable() const override;
  ssize_t read(char* ptr, size_t size) override;
  ssize_t write(const char* ptr, size_t size) override;
  void get_remote_ip_and_port(std::string& ip, int& port) const override;
  void get_local_ip_and_port(std::string& ip, int& port) const override;
  /// The descriptor, or 0 when it is FD_SETSIZE or above: httplib answers
  /// 500 to a descriptor select(2) cannot watch, but this stream only polls.
  socket_t socket() const override;

  // -- the connection's request loop -------------------------------------------------

  /// Waits up to `idle_timeout` for the first byte of the next request (at
  /// once when a pipelined one is buffered). False: the client closed, went
  /// idle too long, or the server is stopping.
  bool wait_for_request();
  /// Starts a request: its header deadline runs from now.
  void begin_request();

  /// Writes a complete JSON error response `{"errors":[message]}` with
  /// `Connection: close` (and `Retry-After: 1` for 429 and 503) unless part
  /// of a response is out already; later writes of this request are
  /// dropped, and the connection closes after it.
  void answer(int status, std::string_view message);

  /// Reads at most `size` bytes of the request body: > 0 bytes, 0 at the
  /// end of input, -1 on a timeout (`timed_out()`), an error or a stop.
  ssize_t read_body(char* ptr, std::size_t size);
  bool timed_out() const noexcept { return timed_out_; }

  /// Marks the connection to be closed after this request's response.
  void close_after_response() noexcept { close_after_ = true; }
  /// Whether it closes after this response: marked so, broken, or with a
  /// request body left unread.
  bool closes_after_response() const noexcept { return close_after_ || broken_ || body_unread_; }
  /// Whether the request has a body not read to its end (set by the
  /// pre-routing checks, cleared by the body reader): the connection cannot
  /// carry another request.
  void set_body_unread(bool unread) noexcept { body_unread_ = unread; }
  bool body_unread() const noexcept { return body_unread_; }

  /// Half-closes, then reads and drops what the client still sends for at
  /// most `most` (0: only what has arrived), so a response sent before the
  /// end of a request is not lost to a TCP reset (Apache's lingering close).
  void linger(std::chrono::milliseconds most);

  const std::string& peer_ip() const noexcept { return peer_ip_; }
  int fd() const noexcept { return fd_; }

  /// The connection served on this thread, or null.
  static connection* current() noexcept;
  /// Makes `c` (or none) the current connection of this thread.
  static void set_current(connection* c) noexcept;

private:
  enum class phase { idle, head, body };
  /// Refills the buffer: bytes read, 0 at end of input, -1 on timeout,
  /// error or stop.
  ssize_t fill(std::chrono::steady_clock::time_point deadline);
  /// poll(2) for `events` until `deadline` in slices; > 0 ready, 0 timed
  /// out, < 0 error or stopping.
  int wait(short events, std::chrono::steady_clock::time_point deadline) const;
  bool send_all(const char* p, std::size_t n);

  int fd_;
  connection_limits limits_;
  std::function<bool()> stopping_;
  std::string peer_ip_, local_ip_;
  int peer_port_ = 0, local_port_ = 0;

  static constexpr std::size_t buffer_size = 16 * 1024;
  char buffer_[buffer_size];
  std::size_t begin_ = 0, end_ = 0; ///< unread bytes: buffer_[begin_, end_)

  phase phase_ = phase::idle;
  std::chrono::steady_clock::time_point head_deadline_{};
  std::size_t head_bytes_ = 0;
  std::size_t head_lines_ = 0; ///< complete lines of the head read so far
  std::size_t line_length_ = 0;
  char previous_ = 0;           ///< the head's last byte read
  bool wrote_ = false;      ///< part of this request's response is out
  bool answered_ = false;   ///< `answer` wrote this request's response
  bool broken_ = false;     ///< the connection cannot carry another byte
  bool timed_out_ = false;
  bool close_after_ = false;
  bool body_unread_ = false;
};

} // namespace weir::server::internal
