// SPDX-License-Identifier: Apache-2.0
#include "router.hpp"

#include "http_util.hpp"

#include <exception>
#include <strings.h>

namespace weir::server::internal {

router::router(guarded_server& http, const server_options& opts, body_budget& budget)
  : http_(http), opts_(opts), budget_(budget) {
  install_checks();
}

void router::get(const char* pattern, httplib::Server::Handler h) {
  routes_.push_back({"GET", std::regex{pattern}, false, {}});
  http_.Get(pattern, std::move(h));
}

void router::del(const char* pattern, httplib::Server::Handler h) {
  routes_.push_back({"DELETE", std::regex{pattern}, false, {}});
  http_.Delete(pattern, std::move(h));
}

void router::post(const char* pattern, httplib::Server::Handler h, body_limit_fn limit) {
  routes_.push_back({"POST", std::regex{pattern}, true, std::move(limit)});
  http_.Post(pattern, httplib::Server::HandlerWithContentReader{
                        [h = std::move(h)](const httplib::Request& req, httplib::Response& res,
                                           const httplib::ContentReader&) { h(req, res); }});
}

bool router::authorized(const httplib::Request& req) const {
  if (opts_.token.empty())
    return true;
  // The scheme is case-insensitive (RFC 7235 §2.1).
  auto h = req.get_header_value("Authorization");
  const std::string bearer = "Bearer ";
  if (h.size() > bearer.size() && ::strncasecmp(h.c_str(), bearer.c_str(), bearer.size()) == 0)
    return same_secret(h.substr(bearer.size()), opts_.token);
  if (req.has_param("access_token"))
    return same_secret(req.get_param_value("access_token"), opts_.token);
  return false;
}

router::route_match router::match_route(const std::string& method, const std::string& path,
                                        std::string& allow, const route** found) const {
  const std::string& m = method == "HEAD" ? std::string{"GET"} : method;
  bool known = false;
  for (const auto& r : routes_) {
    if (!std::regex_match(path, r.pattern))
      continue;
    if (r.method == m) {
      if (found)
        *found = &r;
      return r.takes_body ? route_match::with_body : route_match::without_body;
    }
    known = true;
    if (allow.find(r.method) == std::string::npos)
      allow += (allow.empty() ? "" : ", ") + r.method;
  }
  return known ? route_match::other_method : route_match::none;
}

std::size_t router::body_limit(const httplib::Request& req) const {
  std::string allow;
  const route* r = nullptr;
  match_route(req.method, req.path, allow, &r);
  return r && r->limit ? r->limit(req) : opts_.max_body_bytes;
}

bool router::refused_before_routing(const httplib::Request& req,
                                    httplib::Response& res) const {
  const auto framing = framing_of(req);
  if (auto* c = connection::current())
    c->set_body_unread(framing.has_body() || framing.status != 0);
  if (is_traversal(req.path) || is_traversal(req.target)) {
    json_error(res, 400, "path traversal refused: " + req.path);
    return true;
  }
  if (req.path != "/healthz" && !authorized(req)) {
    res.set_header("WWW-Authenticate", "Bearer");
    json_error(res, 401, "a bearer token is required (Authorization: Bearer <token>)");
    return true;
  }
  std::string allow;
  const auto match = match_route(req.method, req.path, allow);
  if (match == route_match::none) {
    json_error(res, 404, "not found: " + req.method + " " + req.path.substr(0, 200));
    return true;
  }
  if (match == route_match::other_method) {
    res.set_header("Allow", allow);
    json_error(res, 405, "method not allowed: " + req.method + " " + req.path.substr(0, 200)
                           + " (allowed: " + allow + ")");
    return true;
  }
  if (framing.status != 0) {
    json_error(res, framing.status, framing.error);
    return true;
  }
  if (match == route_match::without_body && framing.has_body()) {
    json_error(res, 413, req.method + " " + req.path.substr(0, 200)
                           + " takes no request body");
    return true;
  }
  return false;
}

std::optional<request_body> router::read_body(const httplib::Request& req,
                                              httplib::Response& res, std::size_t limit) {
  auto* c = connection::current();
  if (c == nullptr) {
    json_error(res, 500, "internal error: a request body without its connection");
    return std::nullopt;
  }
  auto body = read_request_body(req, *c, limit, budget_);
  if (!body.ok()) {
    if (body.status == 503)
      res.set_header("Retry-After", "1");
    json_error(res, body.status, body.error);
    return std::nullopt;
  }
  return body;
}

std::optional<request_body> router::read_body(const httplib::Request& req,
                                              httplib::Response& res) {
  return read_body(req, res, body_limit(req));
}

void router::install_checks() {
  // Only the routes registered with post() take bodies, and they read
  // them themselves (read_body); httplib's reader is never reached.
  http_.set_payload_max_length(opts_.max_body_bytes);
  http_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    return refused_before_routing(req, res) ? httplib::Server::HandlerResponse::Handled
                                            : httplib::Server::HandlerResponse::Unhandled;
  });
  // Expect: 100-continue (curl sends it for large bodies): the same
  // checks and the route's limit against Content-Length before the
  // client sends the body.
  http_.set_expect_100_continue_handler(
    [this](const httplib::Request& req, httplib::Response& res) {
      if (refused_before_routing(req, res))
        return res.status;
      const auto framing = framing_of(req);
      const auto limit = body_limit(req);
      if (framing.how == body_framing::kind::length && framing.length > limit) {
        json_error(res, 413, "request body larger than " + std::to_string(limit) + " bytes");
        return 413;
      }
      return 100;
    });
  // A connection that cannot carry another request says so.
  http_.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
    auto* c = connection::current();
    if (c != nullptr && c->closes_after_response()) {
      res.headers.erase("Keep-Alive");
      if (!res.has_header("Connection"))
        res.set_header("Connection", "close");
    }
  });
  http_.set_error_handler(httplib::Server::HandlerWithResponse{
    [](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty())
      return httplib::Server::HandlerResponse::Unhandled;
    // httplib's own refusals (a malformed request line or header, a URI
    // over 8 KiB): what follows on the connection cannot be trusted.
    if (auto* c = connection::current())
      c->close_after_response();
    std::string what = res.status == 404   ? "not found: " + req.method + " " + req.path
                       : res.status == 413 ? "request body too large"
                       : res.status == 414 ? "request line longer than 8192 bytes"
                       : res.status == 405 ? "method not allowed"
                                           : "bad request";
    json_error(res, res.status, what);
    return httplib::Server::HandlerResponse::Handled;
  }});
  http_.set_exception_handler(
    [](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
      std::string what = "internal error";
      try {
        if (ep)
          std::rethrow_exception(ep);
      } catch (const std::exception& e) {
        what += std::string{": "} + e.what();
      } catch (...) {
      }
      json_error(res, 500, what);
    });
}

} // namespace weir::server::internal
