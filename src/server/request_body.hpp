// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "connection.hpp"

#include <httplib.h>

#include <cstddef>
#include <cstdint>
#include <string>

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

/// A request body, or why it was refused.
struct request_body {
  std::string bytes;
  int status = 200; ///< 200: read whole; else the status to answer
  std::string error;

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
/// longer than the read timeout: 408. Errors leave the connection to be
/// closed after the response; success marks the body read.
request_body read_request_body(const httplib::Request& req, connection& c, std::size_t limit);

} // namespace weir::server::internal
