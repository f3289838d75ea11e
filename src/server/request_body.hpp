// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "connection.hpp"

#include <httplib.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace weir::server::internal {

/// How a request's body is delimited (RFC 9112 §6): by Content-Length, by
/// chunked transfer coding, or absent (no Content-Length and no
/// Transfer-Encoding: an empty body, never "read until the client
/// closes").
struct body_framing {
  enum class kind { none, length, chunked } how = kind::none;
  std::uint64_t length = 0; ///< kind::length
  int status = 0;           ///< 0, or the status refusing the framing
  std::string error;

  /// Whether the request carries body bytes.
  bool has_body() const noexcept { return how == kind::chunked || length > 0; }
};

/// The framing of `req`. Refused: a Transfer-Encoding other than
/// `chunked` (501); both Transfer-Encoding and Content-Length, a
/// Content-Length that is not a decimal number below 2^53, or several that
/// differ (400: request smuggling's ingredients).
body_framing framing_of(const httplib::Request& req);

/// The request body bytes the server holds at once over all connections
/// (bodies being read or handled), so that memory stays bounded however
/// many clients send at the same time. Thread-safe.
class body_budget {
public:
  explicit body_budget(std::size_t bytes) : bytes_(bytes) {}

  /// Takes `n` more bytes for a request holding `held` already: true when
  /// they fit, or when that request is the only one holding any (a body
  /// within its route's limit is never refused for being alone).
  bool take(std::size_t n, std::size_t held);
  void give(std::size_t n) noexcept;
  std::size_t capacity() const noexcept { return bytes_; }

private:
  std::size_t bytes_;
  std::atomic<std::size_t> used_{0};
};

/// What one request holds of a `body_budget`, given back when it ends.
class budget_lease {
public:
  budget_lease() = default;
  explicit budget_lease(body_budget& b) : budget_(&b) {}
  budget_lease(budget_lease&& o) noexcept
    : budget_(std::exchange(o.budget_, nullptr)), held_(std::exchange(o.held_, 0)) {}
  budget_lease& operator=(budget_lease&& o) noexcept;
  ~budget_lease();

  /// Holds at least `total` bytes (taken in steps of 64 KiB); false when
  /// the budget is spent.
  bool cover(std::size_t total);

private:
  body_budget* budget_ = nullptr;
  std::size_t held_ = 0;
};

/// A request body, or why it was refused.
struct request_body {
  std::string bytes;
  int status = 200; ///< 200: read whole; else the status to answer
  std::string error;
  budget_lease lease; ///< its share of the server's body_budget

  bool ok() const noexcept { return status == 200; }
};

/// Reads the body of `req` from `c`, the connection it came on, counting
/// bytes as they arrive and as they are decompressed: at most `limit` bytes
/// on the wire and at most `limit` once decoded, else the read stops at the
/// limit and the answer is 413 (a Content-Length over it: 413 before a
/// byte is read). Content-Encoding `identity`, `gzip`, `x-gzip` and
/// `deflate` (zlib; a gzip body may have several members) are decoded by
/// streaming inflate; others 415, a corrupt or truncated stream 400. Any
/// Content-Type is read as raw bytes but multipart forms (415). A pause
/// longer than the read timeout: 408. Bytes held count against `budget`
/// (decoded bytes, and raw ones while they are read); past it 503. Errors
/// leave the connection to be closed after the response; success marks
/// the body read.
request_body read_request_body(const httplib::Request& req, connection& c, std::size_t limit,
                               body_budget& budget);

} // namespace weir::server::internal
