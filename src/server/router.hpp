// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "guarded_server.hpp"
#include "request_body.hpp"
#include "weir/server/http_server.hpp"

#include <httplib.h>

#include <cstddef>
#include <functional>
#include <optional>
#include <regex>
#include <string>
#include <vector>

namespace weir::server::internal {

/// The server's route table over cpp-httplib, and everything refused
/// before a route's handler runs. Routes are added before the server
/// starts; afterwards the table is only read (from any connection thread).
///
/// Before routing, and before a body byte is read, in this order: path
/// traversal 400, a missing or wrong bearer token 401 (but `GET /healthz`),
/// an unknown path 404, another method 405 (with Allow), a body framing
/// httplib would misread 400 / 501, a body on a route taking none 413. A
/// refused request's body is left unread, so its connection closes after
/// the answer. `Expect: 100-continue` gets the same checks plus the
/// route's body limit against Content-Length. httplib's own refusals and
/// a handler's exception are answered as JSON errors too.
class router {
public:
  /// The largest body a request to a route takes (bytes on the wire and
  /// decoded).
  using body_limit_fn = std::function<std::size_t(const httplib::Request&)>;

  /// Installs the checks on `http`; `opts` (token, max_body_bytes) and
  /// `budget` must outlive the router.
  router(guarded_server& http, const server_options& opts, body_budget& budget);

  router(const router&) = delete;
  router& operator=(const router&) = delete;

  void get(const char* pattern, httplib::Server::Handler h);
  void del(const char* pattern, httplib::Server::Handler h);

  /// A route taking a body of at most `limit(req)` bytes (default
  /// `server_options::max_body_bytes`): `h` reads it with `read_body`
  /// (httplib never reads it: its reader trusts Content-Length alone, caps
  /// form bodies at 8 KiB and inflates gzip whole).
  void post(const char* pattern, httplib::Server::Handler h, body_limit_fn limit = {});

  /// The body of a request to a route taking one, read from its connection
  /// (request_body.hpp: at most `limit` bytes on the wire and decoded); it
  /// holds its share of the body budget until destroyed. nullopt once the
  /// refusal is in `res`.
  std::optional<request_body> read_body(const httplib::Request& req, httplib::Response& res,
                                        std::size_t limit);

  /// As above, with the limit of `req`'s route.
  std::optional<request_body> read_body(const httplib::Request& req, httplib::Response& res);

private:
  /// A route as the checks before routing see it (httplib's own table is
  /// not readable).
  struct route {
    std::string method;
    std::regex pattern;
    bool takes_body = false;
    body_limit_fn limit; ///< empty: max_body_bytes
  };
  enum class route_match { none, other_method, without_body, with_body };

  void install_checks();
  bool authorized(const httplib::Request& req) const;
  /// How `method` `path` matches the table; `allow` gets the methods the
  /// path takes when it is `other_method`; `found` the route matched.
  route_match match_route(const std::string& method, const std::string& path,
                          std::string& allow, const route** found = nullptr) const;
  std::size_t body_limit(const httplib::Request& req) const;
  /// True when `res` holds a refusal (the class comment's list).
  bool refused_before_routing(const httplib::Request& req, httplib::Response& res) const;

  guarded_server& http_;
  const server_options& opts_;
  body_budget& budget_;
  std::vector<route> routes_;
};

} // namespace weir::server::internal
