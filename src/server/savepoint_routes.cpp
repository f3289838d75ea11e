// SPDX-License-Identifier: Apache-2.0
#include "savepoint_routes.hpp"

#include "http_util.hpp"
#include "json_writer.hpp"
#include "weir/core/log.hpp"

#include <simdjson.h>
#include <spdlog/logger.h>

#include <chrono>
#include <filesystem>
#include <initializer_list>
#include <optional>

namespace weir::server::internal {

namespace {

/// A JSON request body as an object. Errors: `errc::not_found` for an
/// empty body, `errc::invalid_argument` for anything but a JSON object.
expected<simdjson::dom::element> parse_body(simdjson::dom::parser& parser,
                                            const std::string& body) {
  if (body.find_first_not_of(" \t\r\n") == std::string::npos)
    return make_error(errc::not_found, "no body");
  auto doc = parser.parse(body);
  if (doc.error() || !doc.value().is_object())
    return make_error(errc::invalid_argument, "the request body must be a JSON object");
  return doc.value();
}

/// The first of `names` present in `obj`: a string, or null/absent (empty).
/// Errors: present and not a string.
expected<std::string> string_field(simdjson::dom::element obj,
                                   std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto v = obj[n];
    if (v.error())
      continue;
    if (v.value().is_null())
      return std::string{};
    if (!v.value().is_string())
      return make_error(errc::invalid_argument, std::string{"'"} + n + "' must be a string");
    return std::string{std::string_view{v.value().get_string().value()}};
  }
  return std::string{};
}

/// As `string_field` for a boolean (absent: false).
expected<bool> bool_field(simdjson::dom::element obj,
                          std::initializer_list<const char*> names) {
  for (const char* n : names) {
    auto v = obj[n];
    if (v.error() || v.value().is_null())
      continue;
    if (!v.value().is_bool())
      return make_error(errc::invalid_argument, std::string{"'"} + n + "' must be a boolean");
    return v.value().get_bool().value();
  }
  return false;
}

} // namespace

savepoint_routes::savepoint_routes(server_context& ctx) : ctx_(ctx) {
  auto& r = ctx_.routes;
  r.post(R"(/jobs/([0-9a-f]+)/savepoints)",
         [this](const httplib::Request& req, httplib::Response& res) {
           savepoint_request(req, res);
         });
  r.get(R"(/jobs/([0-9a-f]+)/savepoints/([^/]+))",
        [this](const httplib::Request& req, httplib::Response& res) {
          savepoint_status(req, res);
        });
  r.post(R"(/jobs/([0-9a-f]+)/stop)",
         [this](const httplib::Request& req, httplib::Response& res) {
           stop_request(req, res);
         });
}

/// Starts a savepoint (or stop-with-savepoint) of `j` into `target`
/// (resolved; empty: a directory generated under the savepoint root) and
/// answers 202 {"request-id": trigger, "location": the directory}.
void savepoint_routes::start_savepoint(served_job& j, const std::string& target, bool stop,
                                       httplib::Response& res) {
  const char* what = stop ? "stop with savepoint" : "savepoint";
  // The request first (400), then the job (409, 503).
  const auto trigger = new_id();
  auto path = ctx_.savepoints.resolve(target, "savepoint-" + j.id.substr(0, 6) + "-"
                                                + trigger.substr(0, 12));
  if (!path) {
    json_error(res, 400, path.error().message);
    return;
  }
  if (!require_running(j, res, what))
    return;
  if (!j.run->status().checkpointing) {
    json_error(res, 409, std::string{what} + ": job " + j.id
                           + " runs without checkpoints; a savepoint needs [checkpoint]");
    return;
  }
  std::error_code ec;
  if (std::filesystem::exists(*path, ec) && !std::filesystem::is_empty(*path, ec)) {
    json_error(res, 409, std::string{what} + ": " + path->string()
                           + " exists and is not empty (a savepoint is never overwritten)");
    return;
  }
  std::filesystem::create_directories(path->parent_path(), ec);
  savepoint_trigger t;
  t.job_id = j.id;
  t.location = path->string();
  t.stop = stop;
  t.result = (stop ? j.owner->stop_with_savepoint(t.location)
                   : j.owner->trigger_savepoint(t.location))
               .share();
  {
    std::lock_guard lock{mutex_};
    // Bounded: past 1,000 triggers the finished ones are forgotten (their
    // status then answers 404; the savepoints stay on disk).
    if (triggers_.size() >= 1000)
      std::erase_if(triggers_, [](const auto& kv) {
        return kv.second.result.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
      });
    triggers_.emplace(trigger, std::move(t));
  }
  log::runtime().info("server: {} of job {} to {} (trigger {})", what, j.id, path->string(),
                      trigger);
  json_writer w;
  w.begin_object().field("request-id", trigger).field("location", path->string()).end_object();
  json_reply(res, 202, w.take());
}

void savepoint_routes::savepoint_request(const httplib::Request& req, httplib::Response& res) {
  with_job(ctx_.jobs, req, res, [&](served_job& j) {
    auto text = ctx_.routes.read_body(req, res);
    if (!text)
      return;
    simdjson::dom::parser parser;
    auto body = parse_body(parser, text->bytes);
    std::string target;
    bool cancel = false;
    if (body) {
      auto t = string_field(*body, {"target-directory", "target_directory", "targetDirectory"});
      auto c = bool_field(*body, {"cancel-job", "cancel_job", "cancelJob"});
      if (!t || !c) {
        json_error(res, 400, "savepoint: " + (!t ? t.error() : c.error()).message);
        return;
      }
      target = *t;
      cancel = *c;
    } else if (body.error().code != errc::not_found) {
      json_error(res, 400, "savepoint: " + body.error().message);
      return;
    }
    start_savepoint(j, target, cancel, res);
  });
}

void savepoint_routes::savepoint_status(const httplib::Request& req, httplib::Response& res) {
  with_job(ctx_.jobs, req, res, [&](served_job& j) {
    const std::string trigger = req.matches[2];
    std::optional<savepoint_trigger> t;
    {
      std::lock_guard lock{mutex_};
      auto it = triggers_.find(trigger);
      if (it != triggers_.end() && it->second.job_id == j.id)
        t = it->second;
    }
    if (!t) {
      json_error(res, 404, "job " + j.id + " has no savepoint trigger " + trigger);
      return;
    }
    json_writer w;
    w.begin_object();
    if (t->result.wait_for(std::chrono::seconds{0}) != std::future_status::ready) {
      w.key("status").begin_object().field("id", "IN_PROGRESS").end_object();
      w.key("operation").null();
    } else if (const auto& r = t->result.get(); r) {
      w.key("status").begin_object().field("id", "COMPLETED").end_object();
      w.key("operation").begin_object()
        .field("location", r->path)
        .field("checkpoint-id", r->checkpoint_id)
        .field("size", r->size_bytes)
        .field("stop", t->stop)
        .end_object();
    } else {
      w.key("status").begin_object().field("id", "FAILED").end_object();
      w.key("operation").begin_object();
      w.key("failure-cause").begin_object()
        .field("class", "weir::error")
        .field("stack-trace", r.error().message)
        .end_object();
      w.field("location", t->location).end_object();
    }
    w.end_object();
    json_reply(res, 200, w.take());
  });
}

/// `POST /jobs/{id}/stop`: without a body a plain graceful stop (202
/// {"status":"STOPPING"}); with a JSON body (Flink's {"targetDirectory",
/// "drain"}) a stop with a savepoint, answered as `POST .../savepoints`.
void savepoint_routes::stop_request(const httplib::Request& req, httplib::Response& res) {
  with_job(ctx_.jobs, req, res, [&](served_job& j) {
    auto text = ctx_.routes.read_body(req, res);
    if (!text)
      return;
    simdjson::dom::parser parser;
    auto body = parse_body(parser, text->bytes);
    if (!body && body.error().code == errc::not_found) {
      j.run->stop();
      json_reply(res, 202, R"({"status":"STOPPING"})");
      return;
    }
    if (!body) {
      json_error(res, 400, "stop: " + body.error().message);
      return;
    }
    auto t = string_field(*body, {"targetDirectory", "target-directory", "target_directory"});
    auto d = bool_field(*body, {"drain"});
    if (!t || !d) {
      json_error(res, 400, "stop: " + (!t ? t.error() : d.error()).message);
      return;
    }
    if (*d) {
      json_error(res, 400, "stop: \"drain\": true is not supported (weir's stop never fires "
                           "windows early as Flink's --drain does); send \"drain\": false");
      return;
    }
    start_savepoint(j, *t, true, res);
  });
}

state_routes::state_routes(server_context& ctx) : ctx_(ctx) {
  ctx_.routes.get(R"(/jobs/([0-9a-f]+)/state/([^/]+))",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    query_state_request(req, res);
                  });
}

void state_routes::query_state_request(const httplib::Request& req, httplib::Response& res) {
  auto j = ctx_.jobs.find(req.matches[1]);
  if (!j) {
    json_error(res, 404, "no job " + std::string{req.matches[1]});
    return;
  }
  const std::string op = req.matches[2];
  const auto n = req.get_param_value_count("key");
  if (n == 0) {
    json_error(res, 400, "state query of '" + op
                           + "': the key is missing (?key=VALUE, one key= per key_by field "
                             "in key_by order)");
    return;
  }
  std::vector<std::string> key;
  for (std::size_t i = 0; i < n; ++i)
    key.push_back(req.get_param_value("key", i));
  if (!require_running(*j, res, "state query"))
    return;
  auto f = j->owner->query_state(op, std::move(key));
  if (f.wait_for(ctx_.opts.state_query_timeout) != std::future_status::ready) {
    res.set_header("Retry-After", "1");
    json_error(res, 503, "state query of '" + op + "': no answer from the subtask within "
                           + std::to_string(ctx_.opts.state_query_timeout.count()) + " ms");
    return;
  }
  auto r = f.get();
  if (!r) {
    const auto& e = r.error();
    if (e.code == errc::not_found) {
      json_error(res, 404, "job " + j->id + ": " + e.message);
    } else if (e.code == errc::invalid_argument || e.code == errc::type_error) {
      json_error(res, 400, "state query of '" + op + "': " + e.message);
    } else if (is_terminal(j->run->state())) {
      json_error(res, 409, "state query of '" + op + "': " + e.message);
    } else {
      res.set_header("Retry-After", "1");
      json_error(res, 503, "state query of '" + op + "': " + e.message);
    }
    return;
  }
  json_reply(res, 200, r->to_json());
}

} // namespace weir::server::internal
