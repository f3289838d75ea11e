// SPDX-License-Identifier: Apache-2.0
// The server's request body reader (src/server/request_body.hpp) on a real
// socket pair: framing, chunked decoding, inflate, the limits counted as
// bytes arrive and as they are decompressed, the body budget, timeouts.
#include "request_body.hpp"

#include <doctest/doctest.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

using namespace weir::server::internal;

namespace {

/// A connection over one end of a socket pair; `send` writes the other
/// from a thread of its own (a body can be larger than the socket buffer).
struct socket_pair {
  int fds[2] = {-1, -1};
  connection_limits limits;
  std::unique_ptr<connection> c;
  std::thread writer;

  explicit socket_pair(std::chrono::milliseconds read_timeout = std::chrono::milliseconds{2000}) {
    REQUIRE(::socketpair(AF_UNIX, SOCK_STREAM, 0, fds) == 0);
    limits.read_timeout = read_timeout;
    c = std::make_unique<connection>(fds[0], limits, [] { return false; });
  }
  ~socket_pair() {
    c.reset();
    ::close(fds[0]); // a writer still blocked gets EPIPE
    if (writer.joinable())
      writer.join();
    ::close(fds[1]);
  }
  void send(std::string data) {
    writer = std::thread{[fd = fds[1], data = std::move(data)] {
      std::size_t done = 0;
      while (done < data.size()) {
        const auto n = ::send(fd, data.data() + done, data.size() - done, MSG_NOSIGNAL);
        if (n <= 0)
          return;
        done += static_cast<std::size_t>(n);
      }
    }};
  }
};

httplib::Request request(std::initializer_list<std::pair<const char*, std::string>> headers) {
  httplib::Request r;
  r.method = "POST";
  for (const auto& [k, v] : headers)
    r.headers.emplace(k, v);
  return r;
}

std::string gzip(const std::string& in, int window_bits = 15 + 16) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) == Z_OK);
  std::string out(compressBound(static_cast<uLong>(in.size())) + 64, '\0');
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  REQUIRE(deflate(&zs, Z_FINISH) == Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

std::string chunked(const std::string& body, std::size_t piece) {
  std::string out;
  for (std::size_t i = 0; i < body.size(); i += piece) {
    const auto part = body.substr(i, piece);
    char size[32];
    std::snprintf(size, sizeof size, "%zx", part.size());
    out += std::string{size} + "\r\n" + part + "\r\n";
  }
  return out + "0\r\n\r\n";
}

} // namespace

TEST_CASE("request body: Content-Length, chunked and none") {
  body_budget budget{1 << 20};
  {
    socket_pair p;
    p.send("hello, world");
    p.c->set_body_unread(true);
    auto b = read_request_body(request({{"Content-Length", "12"}}), *p.c, 100, budget);
    CHECK(b.ok());
    CHECK(b.bytes == "hello, world");
    CHECK_FALSE(p.c->body_unread());
  }
  {
    socket_pair p;
    const std::string body(5000, 'x');
    // Chunk extensions and trailer fields are dropped.
    auto wire = chunked(body, 999);
    wire.insert(wire.find("\r\n"), ";name=value");
    wire.replace(wire.size() - 2, 2, "Trailer-Field: 1\r\n\r\n");
    p.send(wire);
    auto b = read_request_body(request({{"Transfer-Encoding", "chunked"}}), *p.c, 10'000, budget);
    CHECK(b.ok());
    CHECK(b.bytes == body);
  }
  {
    // Neither header: an empty body, at once (never "until the client closes").
    socket_pair p;
    auto b = read_request_body(request({}), *p.c, 100, budget);
    CHECK(b.ok());
    CHECK(b.bytes.empty());
  }
}

TEST_CASE("request body: limits on the wire") {
  body_budget budget{1 << 20};
  {
    socket_pair p;
    auto b = read_request_body(request({{"Content-Length", "101"}}), *p.c, 100, budget);
    CHECK(b.status == 413);
    CHECK(p.c->closes_after_response());
  }
  {
    socket_pair p;
    p.send(chunked(std::string(300, 'y'), 64));
    auto b = read_request_body(request({{"Transfer-Encoding", "chunked"}}), *p.c, 200, budget);
    CHECK(b.status == 413);
    CHECK(b.bytes.size() <= 200);
  }
  {
    // A chunk size too large for the limit is refused before its data.
    socket_pair p;
    p.send("fffffffffffffff\r\n");
    auto b = read_request_body(request({{"Transfer-Encoding", "chunked"}}), *p.c, 200, budget);
    CHECK(b.status == 413);
  }
  for (const char* bad : {"zz\r\n", "5 x\r\nhello\r\n0\r\n\r\n", "3\r\nhello\r\n0\r\n\r\n"}) {
    socket_pair p;
    p.send(bad);
    auto b = read_request_body(request({{"Transfer-Encoding", "chunked"}}), *p.c, 200, budget);
    CHECK_MESSAGE(b.status == 400, bad);
  }
  {
    // A chunk-size line without end.
    socket_pair p;
    p.send(std::string(2000, '1'));
    auto b = read_request_body(request({{"Transfer-Encoding", "chunked"}}), *p.c, 1 << 20,
                               budget);
    CHECK(b.status != 200);
  }
}

TEST_CASE("request body: inflated as it arrives, the limit on what it inflates to") {
  body_budget budget{8 << 20};
  const std::string text(200'000, 'a');
  {
    socket_pair p;
    const auto z = gzip(text);
    p.send(z);
    auto b = read_request_body(
      request({{"Content-Encoding", "gzip"}, {"Content-Length", std::to_string(z.size())}}),
      *p.c, 300'000, budget);
    CHECK(b.ok());
    CHECK(b.bytes == text);
  }
  {
    // A bomb: 10 MiB of zeros in about 10 KiB, limit 1 MiB.
    socket_pair p;
    const auto z = gzip(std::string(10 << 20, '\0'));
    CHECK(z.size() < 64 * 1024);
    p.send(chunked(z, 4096));
    auto b = read_request_body(request({{"Content-Encoding", "gzip"},
                                        {"Transfer-Encoding", "chunked"}}),
                               *p.c, 1 << 20, budget);
    CHECK(b.status == 413);
    CHECK(b.error.find("decompressed") != std::string::npos);
    CHECK(b.bytes.size() <= (1u << 20));
  }
  {
    // Two gzip members; deflate (zlib format).
    socket_pair p;
    const auto z = gzip("first ") + gzip("second");
    p.send(z);
    auto b = read_request_body(
      request({{"Content-Encoding", "x-gzip"}, {"Content-Length", std::to_string(z.size())}}),
      *p.c, 100, budget);
    CHECK(b.ok());
    CHECK(b.bytes == "first second");
  }
  {
    socket_pair p;
    const auto z = gzip(text, 15);
    p.send(z);
    auto b = read_request_body(
      request({{"Content-Encoding", "deflate"}, {"Content-Length", std::to_string(z.size())}}),
      *p.c, 300'000, budget);
    CHECK(b.ok());
    CHECK(b.bytes == text);
  }
  {
    socket_pair p;
    const auto z = gzip(text).substr(0, 100);
    p.send(z);
    auto b = read_request_body(
      request({{"Content-Encoding", "gzip"}, {"Content-Length", std::to_string(z.size())}}),
      *p.c, 300'000, budget);
    CHECK(b.status == 400);
    CHECK(b.error.find("truncated") != std::string::npos);
  }
  for (const char* encoding : {"br", "zstd", "gzip, gzip"}) {
    socket_pair p;
    auto b = read_request_body(
      request({{"Content-Encoding", encoding}, {"Content-Length", "4"}}), *p.c, 100, budget);
    CHECK_MESSAGE(b.status == 415, encoding);
  }
}

TEST_CASE("request body: framing that would be misread is refused") {
  CHECK(framing_of(request({{"Transfer-Encoding", "chunked"}, {"Content-Length", "3"}})).status
        == 400);
  CHECK(framing_of(request({{"Transfer-Encoding", "gzip, chunked"}})).status == 501);
  CHECK(framing_of(request({{"Transfer-Encoding", "Chunked"}})).how
        == body_framing::kind::chunked);
  CHECK(framing_of(request({{"Content-Length", "abc"}})).status == 400);
  CHECK(framing_of(request({{"Content-Length", "-1"}})).status == 400);
  CHECK(framing_of(request({{"Content-Length", "5, 6"}})).status == 400);
  auto same = framing_of(request({{"Content-Length", "5, 5"}}));
  CHECK(same.status == 0);
  CHECK(same.length == 5);
  CHECK_FALSE(framing_of(request({{"Content-Length", "0"}})).has_body());
  CHECK_FALSE(framing_of(request({})).has_body());
  body_budget budget{1 << 20};
  socket_pair p;
  auto b = read_request_body(request({{"Content-Type", "multipart/form-data; boundary=x"},
                                      {"Content-Length", "4"}}),
                             *p.c, 100, budget);
  CHECK(b.status == 415);
}

TEST_CASE("request body: the budget of bytes held at once") {
  body_budget budget{256 * 1024};
  budget_lease first{budget};
  CHECK(first.cover(200 * 1024));
  {
    // Another body past what is left: 503.
    socket_pair p;
    p.send(std::string(100 * 1024, 'z'));
    auto b = read_request_body(request({{"Content-Length", "102400"}}), *p.c, 1 << 20, budget);
    CHECK(b.status == 503);
  }
  first = budget_lease{};
  {
    // Alone, a body may pass the budget (its route's limit still holds).
    socket_pair p;
    const std::string body(300 * 1024, 'z');
    p.send(body);
    auto b = read_request_body(request({{"Content-Length", "307200"}}), *p.c, 1 << 20, budget);
    CHECK(b.ok());
    CHECK(b.bytes == body);
  }
  // Given back when the bodies are gone.
  budget_lease again{budget};
  CHECK(again.cover(256 * 1024));
}

TEST_CASE("request body: a pause longer than the read timeout is 408") {
  body_budget budget{1 << 20};
  socket_pair p{std::chrono::milliseconds{100}};
  p.send("12345");
  const auto t0 = std::chrono::steady_clock::now();
  auto b = read_request_body(request({{"Content-Length", "10"}}), *p.c, 100, budget);
  CHECK(b.status == 408);
  CHECK(std::chrono::steady_clock::now() - t0 >= std::chrono::milliseconds{100});
  CHECK(p.c->timed_out());
}
