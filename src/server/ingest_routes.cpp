// SPDX-License-Identifier: Apache-2.0
#include "ingest_routes.hpp"

#include "http_util.hpp"
#include "json_writer.hpp"

#include <algorithm>
#include <string_view>

namespace weir::server::internal {

ingest_routes::ingest_routes(server_context& ctx) : ctx_(ctx) {
  // Without it a small answer waits on Nagle's algorithm and the client's
  // delayed ACK: 40 ms per request on a keep-alive connection.
  ctx_.http.set_tcp_nodelay(true);
  ctx_.routes.post(
    R"(/ingest/([^/]+))",
    [this](const httplib::Request& req, httplib::Response& res) { ingest(req, res); },
    // Also asked before routing (Expect: 100-continue), when `req.matches`
    // is not yet filled: the source is read from the path.
    [this](const httplib::Request& req) {
      return body_limit(req.path.substr(std::string_view{"/ingest/"}.size()));
    });
}

std::size_t ingest_routes::body_limit(const std::string& source) const {
  auto limit = ctx_.opts.max_ingest_body_bytes;
  if (auto h = ctx_.jobs.find_http_source_of(source).second)
    limit = std::min(limit, h->spec().max_body);
  return limit;
}

void ingest_routes::ingest(const httplib::Request& req, httplib::Response& res) {
  const std::string source = req.matches[1];
  auto [j, h] = ctx_.jobs.find_http_source_of(source);
  if (!h) {
    json_error(res, 404, "no job has an http source '" + source + "'");
    return;
  }
  auto retry_after = [&] {
    auto ms = h->spec().retry_after.count();
    res.set_header("Retry-After", std::to_string(std::max<std::int64_t>(1, (ms + 999) / 1000)));
  };
  const auto state = j->run->state();
  if (state != job_state::running) {
    retry_after();
    json_error(res, 503, "the job of http source '" + source + "' is "
                           + std::string{to_string(state)});
    return;
  }
  // The body, read only now: an unknown source or a job not running is
  // answered without reading it.
  auto body = ctx_.routes.read_body(req, res, body_limit(source));
  if (!body)
    return;
  auto key = req.get_header_value("Idempotency-Key");
  auto r = h->ingest(body->bytes, key);
  using oc = ingest_result::outcome;
  json_writer w;
  w.begin_object();
  if (r.what != oc::accepted && r.what != oc::duplicate)
    w.key("errors").begin_array().value(r.message).end_array();
  w.field("source", source).field("request_id", r.request_id);
  w.field("ack", h->spec().ack == http_ack::checkpoint ? "checkpoint" : "accepted");
  w.field("accepted", r.accepted).field("bad", r.bad);
  w.key("bad_examples").begin_array();
  for (const auto& b : r.bad_examples)
    w.begin_object().field("line", b.line).field("reason", b.reason).end_object();
  w.end_array();
  if (r.what == oc::duplicate)
    w.field("duplicate", true);
  if (r.checkpoint_id)
    w.field("checkpoint_id", *r.checkpoint_id);
  w.end_object();
  int status = 202;
  switch (r.what) {
    case oc::accepted: status = 202; break;
    case oc::duplicate: status = 200; break;
    case oc::bad_body: status = 400; break;
    case oc::too_large: status = 413; break;
    case oc::queue_full: status = 429; break;
    case oc::not_running:
    case oc::ack_timeout: status = 503; break;
  }
  if (status == 429 || status == 503)
    retry_after();
  json_reply(res, status, w.take());
}

} // namespace weir::server::internal
