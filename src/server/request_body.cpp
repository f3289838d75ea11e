// SPDX-License-Identifier: Apache-2.0
#include "request_body.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

namespace weir::server::internal {

namespace {

std::string lower_trimmed(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t'))
    v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t'))
    v.remove_suffix(1);
  std::string out{v};
  for (auto& ch : out)
    ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

/// Every value of header `name`, its comma-separated lists joined.
std::string joined(const httplib::Request& req, const char* name) {
  std::string all;
  const auto n = req.get_header_value_count(name);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0)
      all += ',';
    all += req.get_header_value(name, i);
  }
  return all;
}

std::vector<std::string> split_list(const std::string& v) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto comma = v.find(',', start);
    out.push_back(lower_trimmed(std::string_view{v}.substr(
      start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos)
      return out;
    start = comma + 1;
  }
}

request_body refuse(connection& c, int status, std::string error) {
  c.close_after_response();
  request_body r;
  r.status = status;
  r.error = std::move(error);
  return r;
}

/// Raw body bytes off the connection, chunked or of a known length, at most
/// `limit` of them.
class raw_reader {
public:
  raw_reader(connection& c, const body_framing& f, std::size_t limit)
    : c_(c), chunked_(f.how == body_framing::kind::chunked), limit_(limit),
      left_(f.how == body_framing::kind::length ? f.length : 0) {}

  /// Up to `n` body bytes into `buf`; 0 at the end of the body; -1 on
  /// error (`status`, `error` say which).
  long next(char* buf, std::size_t n) {
    if (chunked_ && left_ == 0 && !last_chunk_ && !next_chunk())
      return -1;
    if (left_ == 0)
      return 0;
    const auto want = static_cast<std::size_t>(std::min<std::uint64_t>(left_, n));
    const auto got = c_.read_body(buf, want);
    if (got <= 0)
      return fail_read();
    left_ -= static_cast<std::uint64_t>(got);
    total_ += static_cast<std::uint64_t>(got);
    if (chunked_ && left_ == 0 && !end_of_chunk())
      return -1;
    return got;
  }

  std::uint64_t total() const noexcept { return total_; }
  int status = 0;
  std::string error;

private:
  long fail(int s, std::string e) {
    status = s;
    error = std::move(e);
    return -1;
  }

  long fail_read() {
    if (c_.timed_out())
      return fail(408, "the request body paused longer than the read timeout");
    return fail(400, "the request body ended early: the client closed the connection");
  }

  /// One CRLF-terminated line (CR dropped) of at most `cap` bytes.
  bool line(std::string& out, std::size_t cap) {
    out.clear();
    for (;;) {
      char ch = 0;
      if (c_.read_body(&ch, 1) != 1) {
        fail_read();
        return false;
      }
      if (ch == '\n')
        break;
      if (out.size() == cap) {
        fail(400, "a chunk-size line or trailer of the chunked body is longer than "
                    + std::to_string(cap) + " bytes");
        return false;
      }
      out += ch;
    }
    if (!out.empty() && out.back() == '\r')
      out.pop_back();
    return true;
  }

  /// Reads a chunk-size line; at the last chunk also the trailers.
  bool next_chunk() {
    std::string text;
    if (!line(text, 1024))
      return false;
    std::uint64_t size = 0;
    std::size_t digits = 0;
    for (char ch : text) {
      int v = -1;
      if (ch >= '0' && ch <= '9')
        v = ch - '0';
      else if (ch >= 'a' && ch <= 'f')
        v = ch - 'a' + 10;
      else if (ch >= 'A' && ch <= 'F')
        v = ch - 'A' + 10;
      if (v < 0)
        break;
      if (++digits > 15)
        return fail(413, "a chunk of the request body is larger than "
                           + std::to_string(limit_) + " bytes") >= 0;
      size = size * 16 + static_cast<std::uint64_t>(v);
    }
    // After the size: optional whitespace, then a chunk extension or nothing.
    auto rest = std::string_view{text}.substr(digits);
    while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t'))
      rest.remove_prefix(1);
    if (digits == 0 || (!rest.empty() && rest.front() != ';'))
      return fail(400, "malformed chunk size '" + text.substr(0, 40) + "' in the chunked body")
             >= 0;
    if (size > limit_ - std::min<std::uint64_t>(limit_, total_))
      return fail(413, "request body larger than " + std::to_string(limit_) + " bytes") >= 0;
    if (size > 0) {
      left_ = size;
      return true;
    }
    last_chunk_ = true;
    // Trailer fields, dropped, until the empty line.
    for (std::size_t bytes = 0;;) {
      if (!line(text, 8192))
        return false;
      if (text.empty())
        return true;
      bytes += text.size();
      if (bytes > 8192)
        return fail(400, "the chunked body's trailers exceed 8192 bytes") >= 0;
    }
  }

  /// The CRLF after a chunk's data.
  bool end_of_chunk() {
    std::string text;
    if (!line(text, 2))
      return false;
    if (!text.empty())
      return fail(400, "a chunk of the chunked body is longer than its size") >= 0;
    return true;
  }

  connection& c_;
  bool chunked_;
  std::size_t limit_;
  std::uint64_t left_;
  std::uint64_t total_ = 0;
  bool last_chunk_ = false;
};

struct inflater {
  z_stream zs{};
  bool ready = false;
  inflater() { ready = inflateInit2(&zs, 15 + 32) == Z_OK; } // zlib or gzip header
  ~inflater() {
    if (ready)
      inflateEnd(&zs);
  }
  inflater(const inflater&) = delete;
  inflater& operator=(const inflater&) = delete;
};

} // namespace

bool body_budget::take(std::size_t n, std::size_t held) {
  auto used = used_.load();
  for (;;) {
    if (used + n > bytes_ && used != held)
      return false;
    if (used_.compare_exchange_weak(used, used + n))
      return true;
  }
}

void body_budget::give(std::size_t n) noexcept { used_.fetch_sub(n); }

budget_lease& budget_lease::operator=(budget_lease&& o) noexcept {
  if (this != &o) {
    if (budget_ != nullptr)
      budget_->give(held_);
    budget_ = std::exchange(o.budget_, nullptr);
    held_ = std::exchange(o.held_, 0);
  }
  return *this;
}

budget_lease::~budget_lease() {
  if (budget_ != nullptr)
    budget_->give(held_);
}

bool budget_lease::cover(std::size_t total) {
  if (total <= held_ || budget_ == nullptr)
    return true;
  constexpr std::size_t step = std::size_t{64} << 10;
  const auto n = ((total - held_ + step - 1) / step) * step;
  if (!budget_->take(n, held_))
    return false;
  held_ += n;
  return true;
}

body_framing framing_of(const httplib::Request& req) {
  body_framing f;
  auto refuse_framing = [&](int status, std::string error) {
    f.status = status;
    f.error = std::move(error);
    return f;
  };
  const bool has_te = req.has_header("Transfer-Encoding");
  const bool has_cl = req.has_header("Content-Length");
  if (has_te) {
    const auto te = joined(req, "Transfer-Encoding");
    if (has_cl)
      return refuse_framing(400, "a request with both Transfer-Encoding and Content-Length");
    if (split_list(te) != std::vector<std::string>{"chunked"})
      return refuse_framing(501, "Transfer-Encoding '" + te.substr(0, 60)
                                   + "' is not supported: send chunked or a Content-Length");
    f.how = body_framing::kind::chunked;
    return f;
  }
  if (!has_cl)
    return f;
  const auto cl = joined(req, "Content-Length");
  std::optional<std::uint64_t> value;
  for (const auto& v : split_list(cl)) {
    if (v.empty() || v.size() > 15
        || !std::all_of(v.begin(), v.end(), [](char ch) { return ch >= '0' && ch <= '9'; }))
      return refuse_framing(400, "Content-Length '" + cl.substr(0, 40)
                                   + "' is not a number of bytes");
    const auto n = std::stoull(v);
    if (value && *value != n)
      return refuse_framing(400, "Content-Length headers that differ: '" + cl.substr(0, 40)
                                   + "'");
    value = n;
  }
  f.how = body_framing::kind::length;
  f.length = *value;
  return f;
}

request_body read_request_body(const httplib::Request& req, connection& c, std::size_t limit,
                               body_budget& budget) {
  const auto framing = framing_of(req);
  if (framing.status != 0)
    return refuse(c, framing.status, framing.error);
  const auto type = lower_trimmed(req.get_header_value("Content-Type"));
  if (type.rfind("multipart/", 0) == 0)
    return refuse(c, 415, "a multipart form is not read: send the file as the raw body "
                          "(curl --data-binary @file), not as a form field (curl -F)");
  const auto encoding = joined(req, "Content-Encoding");
  const auto codings = split_list(encoding);
  bool inflate_body = false;
  if (codings.size() == 1 && (codings[0].empty() || codings[0] == "identity")) {
  } else if (codings.size() == 1
             && (codings[0] == "gzip" || codings[0] == "x-gzip" || codings[0] == "deflate")) {
    inflate_body = true;
  } else {
    return refuse(c, 415, "Content-Encoding '" + encoding.substr(0, 60)
                            + "' is not supported: send the body uncompressed (identity), "
                              "gzip or deflate");
  }
  const auto too_large = [&](bool decoded) {
    return refuse(c, 413, "request body larger than " + std::to_string(limit) + " bytes"
                            + (decoded ? " once decompressed" : ""));
  };
  if (framing.how == body_framing::kind::length && framing.length > limit)
    return too_large(false);

  const auto over_budget = [&] {
    return refuse(c, 503, "the server holds " + std::to_string(budget.capacity())
                            + " bytes of request bodies, its limit: try again");
  };
  request_body body;
  body.lease = budget_lease{budget};
  raw_reader raw{c, framing, limit};
  std::unique_ptr<inflater> z;
  if (inflate_body) {
    z = std::make_unique<inflater>();
    if (!z->ready)
      return refuse(c, 500, "cannot start zlib");
  } else if (framing.how == body_framing::kind::length) {
    if (!body.lease.cover(static_cast<std::size_t>(framing.length)))
      return over_budget();
    body.bytes.reserve(static_cast<std::size_t>(framing.length));
  }
  bool stream_ended = false;
  char in[16 * 1024];
  char out[16 * 1024];
  for (;;) {
    const auto n = raw.next(in, sizeof in);
    if (n < 0)
      return refuse(c, raw.status, raw.error);
    if (n == 0)
      break;
    if (raw.total() > limit)
      return too_large(false);
    if (!z) {
      if (!body.lease.cover(body.bytes.size() + static_cast<std::size_t>(n)))
        return over_budget();
      body.bytes.append(in, static_cast<std::size_t>(n));
      continue;
    }
    z->zs.next_in = reinterpret_cast<Bytef*>(in);
    z->zs.avail_in = static_cast<uInt>(n);
    do {
      if (stream_ended) {
        // Another gzip member after the end of one.
        inflateReset(&z->zs);
        stream_ended = false;
      }
      z->zs.next_out = reinterpret_cast<Bytef*>(out);
      z->zs.avail_out = sizeof out;
      const int r = inflate(&z->zs, Z_NO_FLUSH);
      if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
        return refuse(c, 400, std::string{"the request body is not valid "}
                                + (codings[0] == "deflate" ? "deflate (zlib)" : "gzip") + ": "
                                + (z->zs.msg ? z->zs.msg : "corrupt data"));
      const auto produced = sizeof out - z->zs.avail_out;
      if (body.bytes.size() + produced > limit)
        return too_large(true);
      if (!body.lease.cover(body.bytes.size() + produced))
        return over_budget();
      body.bytes.append(out, produced);
      if (r == Z_STREAM_END)
        stream_ended = true;
      if (r == Z_BUF_ERROR && produced == 0)
        break; // needs more input
    } while (z->zs.avail_in > 0 || z->zs.avail_out == 0);
  }
  if (z && raw.total() > 0 && !stream_ended)
    return refuse(c, 400, "the compressed request body is truncated (it ends before its "
                          "compressed stream does)");
  c.set_body_unread(false);
  return body;
}

} // namespace weir::server::internal
