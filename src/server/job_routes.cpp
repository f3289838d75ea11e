// SPDX-License-Identifier: Apache-2.0
#include "job_routes.hpp"

#include "http_util.hpp"
#include "json_writer.hpp"
#include "weir/config/loader.hpp"
#include "weir/core/log.hpp"

#include <spdlog/logger.h>

#include <chrono>
#include <filesystem>
#include <thread>

namespace weir::server::internal {

namespace {

/// Longest `POST /jobs?savepointPath=` waits for the restore to be read
/// before answering 202 anyway (the job goes on restoring).
constexpr std::chrono::seconds restore_answer_timeout{30};

/// An operator's counters summed over its subtasks, as fields.
void write_totals(json_writer& w, const operator_totals& t) {
  w.field("read-records", t.records_in)
    .field("write-records", t.records_out)
    .field("read-bytes", t.bytes_in)
    .field("write-bytes", t.bytes_out)
    .field("late-records", t.late)
    .field("bad-records", t.bad)
    .field("backpressured-ms", t.backpressured_ms)
    .field("watermark", t.watermark)
    .field("state-size", t.state_bytes);
}

/// The `subtasks` array of operator `k` of `j`: each subtask's counters and
/// its rates over the last sample interval (zero before the second sample).
/// Caller holds `j.mutex`.
void write_subtasks(json_writer& w, const served_job& j, const operator_status& op,
                    std::size_t k) {
  w.key("subtasks").begin_array();
  for (const auto& s : op.subtasks) {
    served_job::subtask_rates r;
    if (k < j.subtask_rate.size() && s.subtask < j.subtask_rate[k].size())
      r = j.subtask_rate[k][s.subtask];
    w.begin_object()
      .field("subtask", static_cast<std::uint64_t>(s.subtask))
      .field("read-records", s.records_in)
      .field("write-records", s.records_out)
      .field("read-bytes", s.bytes_in)
      .field("write-bytes", s.bytes_out)
      .field("late-records", s.late_records)
      .field("bad-records", s.bad_records)
      .field("backpressured-ms", s.backpressured_ms)
      .field("watermark", s.watermark)
      .field("state-size", s.state_bytes)
      .field("source-lag", s.source_lag)
      .field("read-records-per-second", r.in)
      .field("write-records-per-second", r.out)
      .field("backpressure-ratio", r.backpressure_ratio)
      .end_object();
  }
  w.end_array();
}

/// Operator `k` of `j` as a vertex of `GET /jobs/{id}`. Caller holds
/// `j.mutex`.
void write_vertex(json_writer& w, const served_job& j, const operator_status& op,
                  std::size_t k) {
  w.begin_object()
    .field("id", static_cast<std::uint64_t>(k))
    .field("name", op.name)
    .field("kind", op.kind)
    .field("parallelism", static_cast<std::uint64_t>(op.parallelism))
    .field("is-source", op.is_source)
    .field("is-sink", op.is_sink);
  w.key("inputs").begin_array();
  for (const auto& in : op.inputs)
    w.value(in);
  w.end_array();
  w.key("metrics").begin_object();
  write_totals(w, sum(op));
  auto rate = [&](const std::vector<double>& v) { return k < v.size() ? v[k] : 0.0; };
  w.field("read-records-per-second", rate(j.in_rate))
    .field("write-records-per-second", rate(j.out_rate))
    .field("backpressure-ratio", rate(j.backpressure_ratio));
  w.end_object();
  write_subtasks(w, j, op, k);
  w.end_object();
}

} // namespace

job_routes::job_routes(server_context& ctx) : ctx_(ctx) {
  auto& r = ctx_.routes;
  r.get("/overview", [this](const httplib::Request&, httplib::Response& res) {
    json_reply(res, 200, overview());
  });
  r.get("/jobs", [this](const httplib::Request&, httplib::Response& res) {
    json_reply(res, 200, job_list());
  });
  r.post("/jobs", [this](const httplib::Request& req, httplib::Response& res) {
    submit_request(req, res);
  });
  r.get(R"(/jobs/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
    with_job(ctx_.jobs, req, res, [&](served_job& j) { json_reply(res, 200, job_detail(j)); });
  });
  r.get(R"(/jobs/([0-9a-f]+)/config)",
        [this](const httplib::Request& req, httplib::Response& res) {
          with_job(ctx_.jobs, req, res,
                   [&](served_job& j) { json_reply(res, 200, job_config(j)); });
        });
  r.get(R"(/jobs/([0-9a-f]+)/vertices/([^/]+)/subtasks)",
        [this](const httplib::Request& req, httplib::Response& res) {
          with_job(ctx_.jobs, req, res, [&](served_job& j) {
            const std::string vertex = req.matches[2];
            if (auto body = vertex_subtasks(j, vertex))
              json_reply(res, 200, std::move(*body));
            else
              json_error(res, 404, "job " + j.id + " has no vertex '" + vertex + "'");
          });
        });
  r.del(R"(/jobs/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
    with_job(ctx_.jobs, req, res, [&](served_job& j) {
      j.run->cancel();
      json_reply(res, 202, R"({"status":"CANCELING"})");
    });
  });
}

std::string job_routes::add(std::unique_ptr<job> j, std::optional<pipeline_source> source) {
  auto sj = job_registry::start(std::move(j), std::move(source));
  ctx_.jobs.add(sj);
  log::runtime().info("server: job '{}' started as {}", sj->owner->options().name, sj->id);
  return sj->id;
}

std::string job_routes::overview() const {
  std::size_t running = 0, finished = 0, canceled = 0, failed = 0;
  for (const auto& j : ctx_.jobs.all()) {
    auto s = j->run->state();
    if (!is_terminal(s))
      ++running;
    else if (s == job_state::finished || s == job_state::stopped)
      ++finished;
    else if (s == job_state::canceled)
      ++canceled;
    else
      ++failed;
  }
  json_writer w;
  w.begin_object()
    .field("taskmanagers", 1)
    .field("slots-total", static_cast<std::uint64_t>(std::thread::hardware_concurrency()))
    .field("jobs-running", static_cast<std::uint64_t>(running))
    .field("jobs-finished", static_cast<std::uint64_t>(finished))
    .field("jobs-cancelled", static_cast<std::uint64_t>(canceled))
    .field("jobs-failed", static_cast<std::uint64_t>(failed))
    .field("weir-version", "0.1.0")
    .end_object();
  return w.take();
}

std::string job_routes::job_list() const {
  json_writer w;
  w.begin_object().key("jobs").begin_array();
  for (const auto& j : ctx_.jobs.all()) {
    auto st = j->run->status();
    w.begin_object()
      .field("id", j->id)
      .field("name", st.name)
      .field("status", to_string(st.state))
      .field("start-time", st.start_ms)
      .field("duration", st.duration_ms)
      .end_object();
  }
  w.end_array().end_object();
  return w.take();
}

/// `GET /jobs/{id}/vertices/{vertex}/subtasks`: `vertex` is the vertex
/// id (its index) or its name; nullopt when the job has no such vertex.
std::optional<std::string> job_routes::vertex_subtasks(served_job& j,
                                                       const std::string& vertex) const {
  auto st = j.run->status();
  std::size_t k = 0;
  while (k < st.operators.size() && st.operators[k].name != vertex
         && std::to_string(k) != vertex)
    ++k;
  if (k == st.operators.size())
    return std::nullopt;
  const auto& op = st.operators[k];
  json_writer w;
  w.begin_object()
    .field("jid", j.id)
    .field("id", static_cast<std::uint64_t>(k))
    .field("name", op.name)
    .field("parallelism", static_cast<std::uint64_t>(op.parallelism))
    .field("now", wall_ms());
  std::lock_guard lock{j.mutex};
  write_subtasks(w, j, op, k);
  w.end_object();
  return w.take();
}

/// `GET /jobs/{id}/config`: the pipeline text it runs.
std::string job_routes::job_config(const served_job& j) {
  json_writer w;
  w.begin_object().field("jid", j.id).field("name", j.owner->options().name);
  if (j.source)
    w.field("file", j.source->file).field("toml", j.source->toml);
  else
    w.key("file").null().key("toml").null();
  w.end_object();
  return w.take();
}

std::string job_routes::job_detail(served_job& j) const {
  auto st = j.run->status();
  json_writer w;
  w.begin_object()
    .field("jid", j.id)
    .field("name", st.name)
    .field("state", to_string(st.state))
    .field("start-time", st.start_ms)
    .field("end-time", is_terminal(st.state) ? st.start_ms + st.duration_ms : std::int64_t{-1})
    .field("duration", st.duration_ms)
    .field("now", wall_ms())
    .field("restarts", static_cast<std::uint64_t>(st.restarts));
  std::lock_guard lock{j.mutex};
  w.key("vertices").begin_array();
  for (std::size_t k = 0; k < st.operators.size(); ++k)
    write_vertex(w, j, st.operators[k], k);
  w.end_array();
  w.key("throughput").begin_array();
  for (const auto& s : j.history)
    w.begin_object()
      .field("t", s.t_ms)
      .field("in", s.records_in_per_s)
      .field("out", s.records_out_per_s)
      .end_object();
  w.end_array();
  if (st.result) {
    const auto& r = *st.result;
    w.key("result").begin_object()
      .field("ok", r.ok)
      .field("error", r.error)
      .field("stopped", r.stopped)
      .field("records-read", r.records_read)
      .field("records-written", r.records_written)
      .field("bad-records", r.bad_records)
      .field("late-records", r.late_records)
      .field("checkpoints-completed", r.checkpoints_completed)
      .field("last-checkpoint-id", r.last_checkpoint_id)
      .end_object();
  } else {
    w.key("result").null();
  }
  w.end_object();
  return w.take();
}

/// `POST /jobs`: the body, whatever its Content-Type, a TOML pipeline.
void job_routes::submit_request(const httplib::Request& req, httplib::Response& res) {
  std::string file = req.has_param("file") ? req.get_param_value("file") : "submitted.toml";
  if (is_traversal(file) || file.find('/') != std::string::npos || file.empty()) {
    json_error(res, 400, "file must be a plain file name, got '" + file + "'");
    return;
  }
  auto text = ctx_.routes.read_body(req, res);
  if (!text)
    return;
  if (text->bytes.empty()) {
    json_error(res, 400, "the request body must be a TOML pipeline");
    return;
  }
  auto loaded = config::load_pipeline(text->bytes, file);
  if (!loaded) {
    const auto& ds = loaded.error();
    json_writer w;
    w.begin_object().key("errors").begin_array();
    for (const auto& d : ds)
      w.value(d.to_string());
    w.end_array().key("diagnostics").begin_array();
    for (const auto& d : ds) {
      w.begin_object()
        .field("file", d.file)
        .field("line", static_cast<std::uint64_t>(d.line))
        .field("column", static_cast<std::uint64_t>(d.column))
        .field("message", d.message);
      w.key("notes").begin_array();
      for (const auto& n : d.notes)
        w.value(n);
      w.end_array().end_object();
    }
    w.end_array().end_object();
    json_reply(res, 400, w.take());
    return;
  }
  pipeline_source source{file, std::move(text->bytes)};
  if (!req.has_param("savepointPath")) {
    auto id = add(std::move(*loaded), std::move(source));
    json_writer w;
    w.begin_object().field("jobid", id).end_object();
    json_reply(res, 202, w.take());
    return;
  }
  submit_restored(req, res, std::move(*loaded), std::move(source));
}

/// `POST /jobs?savepointPath=DIR[&allowNonRestoredState=true]`: the job
/// restored from the savepoint `DIR` (resolved as a savepoint target:
/// under the savepoint root). Answered once the restore is read: 202
/// {"jobid"}, or 400 with the restore's refusal (the job is then not
/// kept).
void job_routes::submit_restored(const httplib::Request& req, httplib::Response& res,
                                 std::unique_ptr<job> j, pipeline_source source) {
  const auto target = req.get_param_value("savepointPath");
  if (target.empty()) {
    json_error(res, 400, "savepointPath must name a savepoint directory under "
                           + ctx_.savepoints.path().string());
    return;
  }
  auto path = ctx_.savepoints.resolve(target, "", "savepointPath");
  if (!path) {
    json_error(res, 400, path.error().message);
    return;
  }
  std::error_code ec;
  if (!std::filesystem::is_regular_file(*path / "data.mdb", ec)) {
    json_error(res, 400, "savepointPath '" + target + "': no savepoint at " + path->string());
    return;
  }
  bool allow_non_restored = false;
  if (req.has_param("allowNonRestoredState")) {
    const auto v = req.get_param_value("allowNonRestoredState");
    if (v != "true" && v != "false") {
      json_error(res, 400, "allowNonRestoredState must be true or false, got '" + v + "'");
      return;
    }
    allow_non_restored = v == "true";
  }
  auto& cp = j->options().checkpoint;
  cp.from_savepoint = path->string();
  cp.allow_non_restored_state = allow_non_restored;
  cp.fresh = false;
  auto sj = job_registry::start(std::move(j), std::move(source));
  // The restore is read before the job deploys; a refused one ends the
  // job at once.
  const auto deadline = std::chrono::steady_clock::now() + restore_answer_timeout;
  for (;;) {
    auto st = sj->run->status();
    if (st.restored)
      break;
    if (is_terminal(st.state)) {
      auto why = st.result && !st.result->error.empty() ? st.result->error
                                                        : std::string{to_string(st.state)};
      log::runtime().warn("server: job '{}' not restored from {}: {}",
                          sj->owner->options().name, path->string(), why);
      json_error(res, 400, "restore from savepoint " + path->string() + " refused: " + why);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline || ctx_.stopping)
      break;
    std::this_thread::sleep_for(std::chrono::milliseconds{10});
  }
  ctx_.jobs.add(sj);
  log::runtime().info("server: job '{}' started from savepoint {} as {}",
                      sj->owner->options().name, path->string(), sj->id);
  json_writer w;
  w.begin_object().field("jobid", sj->id).end_object();
  json_reply(res, 202, w.take());
}

} // namespace weir::server::internal
