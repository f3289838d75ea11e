// SPDX-License-Identifier: Apache-2.0
// weir's HTTP server (docs/operations/server.md): a Flink-shaped JSON API, Prometheus
// metrics, live sink output as Server-Sent Events and the dashboard, over
// jobs run as `running_job`s. cpp-httplib (Debian's libcpp-httplib) serves.
#include "weir/server/http_server.hpp"

#include "dashboard_files.hpp"
#include "guarded_server.hpp"
#include "json_writer.hpp"
#include "request_body.hpp"
#include "weir/config/loader.hpp"
#include "weir/http/source.hpp"
#include "weir/core/log.hpp"
#include "weir/format/format.hpp"

#include <httplib.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <arpa/inet.h>
#include <filesystem>
#include <future>
#include <simdjson.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <regex>
#include <strings.h>
#include <thread>

namespace weir::server {

using internal::json_writer;

bool is_loopback(const std::string& host) noexcept {
  if (host == "localhost" || host == "::1" || host == "[::1]")
    return true;
  in_addr a{};
  if (::inet_pton(AF_INET, host.c_str(), &a) == 1)
    return (ntohl(a.s_addr) >> 24) == 127;
  return false;
}

namespace {

/// How long a stopping server waits for its jobs' http sources to take the
/// records they accepted before it stops the jobs.
constexpr std::chrono::seconds shutdown_drain_timeout{10};

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

internal::connection_limits limits_of(const server_options& o) {
  internal::connection_limits l;
  l.header_timeout = o.header_timeout;
  l.read_timeout = o.read_timeout;
  l.write_timeout = o.write_timeout;
  l.idle_timeout = o.idle_timeout;
  l.max_header_bytes = o.max_header_bytes;
  l.max_connections = o.max_connections;
  l.max_connections_per_client = o.max_connections_per_client;
  l.max_requests_per_connection = o.max_requests_per_connection;
  return l;
}

std::string new_job_id() {
  static std::mutex m;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock{m};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

/// Flink's error shape: {"errors": ["..."]}.
void json_error(httplib::Response& res, int status, const std::string& message) {
  json_writer w;
  w.begin_object().key("errors").begin_array().value(message).end_array().end_object();
  res.status = status;
  res.set_content(w.take(), "application/json");
}

void json_reply(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), "application/json");
}

/// Constant-time comparison, so a wrong token's timing says nothing of
/// the right one.
bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

/// Totals of one operator over its subtasks, from a status snapshot.
struct operator_totals {
  std::uint64_t records_in = 0, records_out = 0, bytes_in = 0, bytes_out = 0;
  std::uint64_t late = 0, bad = 0, backpressured_ms = 0, state_bytes = 0;
  std::optional<std::int64_t> watermark; ///< min over subtasks that have one
  bool all_have_watermark = true;
};

operator_totals sum(const operator_status& op) {
  operator_totals t;
  for (const auto& s : op.subtasks) {
    t.records_in += s.records_in;
    t.records_out += s.records_out;
    t.bytes_in += s.bytes_in;
    t.bytes_out += s.bytes_out;
    t.late += s.late_records;
    t.bad += s.bad_records;
    t.backpressured_ms += s.backpressured_ms;
    t.state_bytes += s.state_bytes;
    if (!s.watermark)
      t.all_have_watermark = false;
    else if (!t.watermark || *s.watermark < *t.watermark)
      t.watermark = s.watermark;
  }
  if (!t.all_have_watermark)
    t.watermark.reset();
  return t;
}

/// One live-results (SSE) client: a bounded queue of batches the sink's
/// thread fills and the client's HTTP thread drains.
struct stream_client {
  struct item {
    record_batch_ptr batch;
    std::size_t subtask = 0;
    std::uint64_t first_row = 0;
  };
  std::mutex mutex;
  std::condition_variable cv;
  std::deque<item> queue;
  std::size_t queued_rows = 0;
  std::size_t max_rows = 0;
  std::uint64_t skipped = 0; ///< rows skipped since the last notice

  /// On the sink's thread: never blocks beyond the lock.
  void offer(const record_batch_ptr& b, std::size_t subtask, std::uint64_t first_row) {
    {
      std::lock_guard lock{mutex};
      if (queued_rows + b->num_rows > max_rows) {
        skipped += b->num_rows;
      } else {
        queued_rows += b->num_rows;
        queue.push_back(item{b, subtask, first_row});
      }
    }
    cv.notify_one();
  }
};

} // namespace

/// A job the server runs, and what it samples of it for rates.
struct served_job {
  std::string id;
  std::unique_ptr<job> owner;
  std::unique_ptr<running_job> run;

  struct sample {
    std::int64_t t_ms = 0;
    double records_in_per_s = 0;  ///< into the sinks
    double records_out_per_s = 0; ///< out of the sources
  };
  std::mutex mutex;
  /// Per operator (graph order): last totals, and rates over the last interval.
  std::vector<operator_totals> last;
  std::int64_t last_ms = 0;
  std::vector<double> in_rate, out_rate, backpressure_ratio;
  std::deque<sample> history;
};

struct http_server::impl {
  explicit impl(server_options o)
    : opts(std::move(o)), http(limits_of(opts)), body_budget(opts.max_body_bytes_in_flight) {}

  server_options opts;
  internal::guarded_server http;
  internal::body_budget body_budget;
  std::thread http_thread;
  std::thread sampler;
  std::atomic<int> bound_port{0};
  std::atomic<bool> stopping{false};
  std::mutex sampler_mutex;
  std::condition_variable sampler_cv;

  mutable std::mutex jobs_mutex;
  std::vector<std::shared_ptr<served_job>> jobs; ///< submission order

  std::shared_ptr<served_job> find(const std::string& id) const {
    std::lock_guard lock{jobs_mutex};
    for (const auto& j : jobs)
      if (j->id == id)
        return j;
    return nullptr;
  }

  std::vector<std::shared_ptr<served_job>> all() const {
    std::lock_guard lock{jobs_mutex};
    return jobs;
  }

  void sample_all() {
    for (const auto& j : all()) {
      auto st = j->run->status();
      auto now = wall_ms();
      std::lock_guard lock{j->mutex};
      const auto n = st.operators.size();
      std::vector<operator_totals> cur;
      for (const auto& op : st.operators)
        cur.push_back(sum(op));
      if (j->last.size() == n && j->last_ms > 0 && now > j->last_ms) {
        const double secs = static_cast<double>(now - j->last_ms) / 1000.0;
        j->in_rate.assign(n, 0);
        j->out_rate.assign(n, 0);
        j->backpressure_ratio.assign(n, 0);
        double src_out = 0, sink_in = 0;
        for (std::size_t k = 0; k < n; ++k) {
          auto d = [&](std::uint64_t a, std::uint64_t b) {
            return a >= b ? static_cast<double>(a - b) / secs : 0.0;
          };
          j->in_rate[k] = d(cur[k].records_in, j->last[k].records_in);
          j->out_rate[k] = d(cur[k].records_out, j->last[k].records_out);
          auto par = std::max<std::size_t>(1, st.operators[k].parallelism);
          j->backpressure_ratio[k] = std::min(
            1.0, d(cur[k].backpressured_ms, j->last[k].backpressured_ms) / 1000.0
                   / static_cast<double>(par));
          if (st.operators[k].is_source)
            src_out += j->out_rate[k];
          if (st.operators[k].is_sink)
            sink_in += j->in_rate[k];
        }
        if (!is_terminal(st.state)) {
          j->history.push_back({now, sink_in, src_out});
          while (j->history.size() > opts.rate_history)
            j->history.pop_front();
        }
      }
      j->last = std::move(cur);
      j->last_ms = now;
    }
  }

  // -- JSON renderings ---------------------------------------------------------

  std::string overview() const {
    std::size_t running = 0, finished = 0, canceled = 0, failed = 0;
    for (const auto& j : all()) {
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

  std::string job_list() const {
    json_writer w;
    w.begin_object().key("jobs").begin_array();
    for (const auto& j : all()) {
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

  static void write_totals(json_writer& w, const operator_totals& t) {
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

  std::string job_detail(served_job& j) const {
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
    for (std::size_t k = 0; k < st.operators.size(); ++k) {
      const auto& op = st.operators[k];
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
      w.key("subtasks").begin_array();
      for (const auto& s : op.subtasks) {
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
          .end_object();
      }
      w.end_array().end_object();
    }
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

  static void write_checkpoint(json_writer& w, const checkpoint_record& c) {
    w.begin_object()
      .field("id", c.checkpoint_id)
      .field("status", to_string(c.status))
      .field("trigger_timestamp", c.trigger_ms)
      .field("end_to_end_duration", c.duration_ms)
      .field("state_size", c.size_bytes)
      .field("alignment_duration", c.alignment_ms);
    if (c.status == checkpoint_record::status_kind::failed)
      w.field("failure_message", c.failure_reason);
    else
      w.key("failure_message").null();
    w.end_object();
  }

  std::string checkpoints(served_job& j) const {
    auto st = j.run->status();
    std::uint64_t in_progress = 0;
    const checkpoint_record* last_done = nullptr;
    const checkpoint_record* last_failed = nullptr;
    for (const auto& c : st.checkpoints) {
      if (c.status == checkpoint_record::status_kind::in_progress)
        ++in_progress;
      else if (c.status == checkpoint_record::status_kind::completed)
        last_done = &c;
      else
        last_failed = &c;
    }
    json_writer w;
    w.begin_object().field("enabled", st.checkpointing);
    w.key("counts").begin_object()
      .field("total", st.checkpoints_completed + st.checkpoints_failed + in_progress)
      .field("in_progress", in_progress)
      .field("completed", st.checkpoints_completed)
      .field("failed", st.checkpoints_failed)
      .field("restored", static_cast<std::uint64_t>(
                           st.result ? st.result->restored_checkpoint_id != 0 : 0))
      .end_object();
    w.key("latest").begin_object();
    w.key("completed");
    if (last_done)
      write_checkpoint(w, *last_done);
    else
      w.null();
    w.key("failed");
    if (last_failed)
      write_checkpoint(w, *last_failed);
    else
      w.null();
    w.end_object();
    w.key("history").begin_array();
    for (auto it = st.checkpoints.rbegin(); it != st.checkpoints.rend(); ++it)
      write_checkpoint(w, *it);
    w.end_array().end_object();
    return w.take();
  }

  std::string exceptions(served_job& j) const {
    auto st = j.run->status();
    json_writer w;
    w.begin_object();
    if (!st.exceptions.empty())
      w.field("root-exception", st.exceptions.back().message)
        .field("timestamp", st.exceptions.back().timestamp_ms);
    else
      w.key("root-exception").null().key("timestamp").null();
    w.key("entries").begin_array();
    for (auto it = st.exceptions.rbegin(); it != st.exceptions.rend(); ++it)
      w.begin_object()
        .field("timestamp", it->timestamp_ms)
        .field("message", it->message)
        .field("restarted", it->restarted)
        .end_object();
    w.end_array().end_object();
    return w.take();
  }

  // -- Prometheus ----------------------------------------------------------------

  static std::string label_value(std::string_view v) {
    std::string out;
    for (char c : v) {
      if (c == '\\' || c == '"')
        out += '\\', out += c;
      else if (c == '\n')
        out += "\\n";
      else
        out += c;
    }
    return out;
  }

  std::string metrics_text() const {
    struct family {
      const char* name;
      const char* type;
      const char* help;
      std::string lines;
    };
    std::vector<family> f = {
      {"weir_records_in_total", "counter", "Records received by the subtask (Flink numRecordsIn).", {}},
      {"weir_records_out_total", "counter", "Records emitted by the subtask (Flink numRecordsOut).", {}},
      {"weir_bytes_in_total", "counter", "Bytes received, columnar payload (Flink numBytesIn).", {}},
      {"weir_bytes_out_total", "counter", "Bytes emitted, columnar payload (Flink numBytesOut).", {}},
      {"weir_late_records_total", "counter", "Records behind the watermark (Flink numLateRecordsDropped).", {}},
      {"weir_bad_records_total", "counter", "Input records that could not be decoded.", {}},
      {"weir_backpressured_seconds_total", "counter", "Time blocked on output credit (Flink backPressuredTimeMsPerSecond, summed).", {}},
      {"weir_watermark_seconds", "gauge", "Current input watermark, seconds since the epoch (Flink currentInputWatermark).", {}},
      {"weir_watermark_lag_seconds", "gauge", "Wall clock minus the current watermark.", {}},
      {"weir_state_size_bytes", "gauge", "State stored at the subtask's last checkpoint (Flink checkpointedSize).", {}},
      {"weir_checkpoints_completed_total", "counter", "Completed checkpoints (Flink numberOfCompletedCheckpoints).", {}},
      {"weir_checkpoints_failed_total", "counter", "Failed or aborted checkpoints (Flink numberOfFailedCheckpoints).", {}},
      {"weir_last_checkpoint_duration_seconds", "gauge", "Duration of the last completed checkpoint (Flink lastCheckpointDuration).", {}},
      {"weir_last_checkpoint_size_bytes", "gauge", "Size of the last completed checkpoint (Flink lastCheckpointSize).", {}},
      {"weir_last_checkpoint_alignment_seconds", "gauge", "Longest barrier alignment of the last completed checkpoint.", {}},
      {"weir_job_restarts_total", "counter", "Restarts from a checkpoint (Flink numRestarts).", {}},
      {"weir_job_uptime_seconds", "gauge", "Time since the job started (Flink uptime).", {}},
      {"weir_job_running", "gauge", "1 while the job runs or restarts, else 0.", {}},
      {"weir_source_lag_records", "gauge", "Records the source has yet to read: Kafka consumer lag (Flink pendingRecords).", {}},
    };
    auto add = [&](std::size_t i, const std::string& labels, double v) {
      f[i].lines += f[i].name;
      f[i].lines += '{';
      f[i].lines += labels;
      f[i].lines += "} ";
      std::string num;
      format::append_json_double(v, num);
      f[i].lines += num;
      f[i].lines += '\n';
    };
    auto addu = [&](std::size_t i, const std::string& labels, std::uint64_t v) {
      f[i].lines += f[i].name;
      f[i].lines += '{';
      f[i].lines += labels;
      f[i].lines += "} ";
      f[i].lines += std::to_string(v);
      f[i].lines += '\n';
    };
    const auto now = wall_ms();
    for (const auto& j : all()) {
      auto st = j->run->status();
      const std::string jl =
        "job=\"" + label_value(st.name) + "\",job_id=\"" + label_value(j->id) + "\"";
      for (const auto& op : st.operators) {
        for (const auto& s : op.subtasks) {
          const std::string l = jl + ",operator=\"" + label_value(op.name) + "\",subtask=\""
                                + std::to_string(s.subtask) + "\"";
          addu(0, l, s.records_in);
          addu(1, l, s.records_out);
          addu(2, l, s.bytes_in);
          addu(3, l, s.bytes_out);
          addu(4, l, s.late_records);
          addu(5, l, s.bad_records);
          add(6, l, static_cast<double>(s.backpressured_ms) / 1000.0);
          if (s.watermark && *s.watermark != max_watermark) {
            add(7, l, static_cast<double>(*s.watermark) / 1000.0);
            add(8, l, static_cast<double>(now - *s.watermark) / 1000.0);
          }
          addu(9, l, s.state_bytes);
          if (s.source_lag)
            addu(18, l, static_cast<std::uint64_t>(*s.source_lag));
        }
      }
      addu(10, jl, st.checkpoints_completed);
      addu(11, jl, st.checkpoints_failed);
      for (auto it = st.checkpoints.rbegin(); it != st.checkpoints.rend(); ++it)
        if (it->status == checkpoint_record::status_kind::completed) {
          add(12, jl, static_cast<double>(it->duration_ms) / 1000.0);
          addu(13, jl, it->size_bytes);
          add(14, jl, static_cast<double>(it->alignment_ms) / 1000.0);
          break;
        }
      addu(15, jl, st.restarts);
      add(16, jl, static_cast<double>(st.duration_ms) / 1000.0);
      addu(17, jl, is_terminal(st.state) ? 0 : 1);
    }
    std::string out;
    for (const auto& fam : f) {
      out += "# HELP ";
      out += fam.name;
      out += ' ';
      out += fam.help;
      out += "\n# TYPE ";
      out += fam.name;
      out += ' ';
      out += fam.type;
      out += '\n';
      out += fam.lines;
    }
    return out;
  }

  // -- routes ----------------------------------------------------------------------

  bool authorized(const httplib::Request& req) const {
    if (opts.token.empty())
      return true;
    // The scheme is case-insensitive (RFC 7235 §2.1).
    auto h = req.get_header_value("Authorization");
    const std::string bearer = "Bearer ";
    if (h.size() > bearer.size() && ::strncasecmp(h.c_str(), bearer.c_str(), bearer.size()) == 0)
      return same_secret(h.substr(bearer.size()), opts.token);
    if (req.has_param("access_token"))
      return same_secret(req.get_param_value("access_token"), opts.token);
    return false;
  }

  /// A path segment ".." (or a backslash, or a NUL) anywhere: refused.
  static bool is_traversal(const std::string& path) {
    if (path.find('\\') != std::string::npos || path.find('\0') != std::string::npos)
      return true;
    std::size_t start = 0;
    while (start <= path.size()) {
      auto end = path.find('/', start);
      if (end == std::string::npos)
        end = path.size();
      if (path.compare(start, end - start, "..") == 0)
        return true;
      start = end + 1;
    }
    return false;
  }

  // -- the route table and the checks before a body is read ----------------------

  /// A route as the checks before routing see it (httplib's own table is
  /// not readable): method, path pattern, whether it takes a body.
  struct route {
    std::string method;
    std::regex pattern;
    bool takes_body = false;
  };
  std::vector<route> route_table;

  void get(const char* pattern, httplib::Server::Handler h) {
    route_table.push_back({"GET", std::regex{pattern}, false});
    http.Get(pattern, std::move(h));
  }

  void del(const char* pattern, httplib::Server::Handler h) {
    route_table.push_back({"DELETE", std::regex{pattern}, false});
    http.Delete(pattern, std::move(h));
  }

  /// A route taking a body: `h` reads it with `read_body` (httplib never
  /// reads it: its reader trusts Content-Length alone, caps form bodies at
  /// 8 KiB and inflates gzip whole).
  void post(const char* pattern, httplib::Server::Handler h) {
    route_table.push_back({"POST", std::regex{pattern}, true});
    http.Post(pattern, httplib::Server::HandlerWithContentReader{
                         [h = std::move(h)](const httplib::Request& req, httplib::Response& res,
                                            const httplib::ContentReader&) { h(req, res); }});
  }

  enum class route_match { none, other_method, without_body, with_body };

  /// How `method` `path` matches the table; `allow` gets the methods the
  /// path takes when it is `other_method`.
  route_match match_route(const std::string& method, const std::string& path,
                          std::string& allow) const {
    const std::string& m = method == "HEAD" ? std::string{"GET"} : method;
    bool known = false;
    for (const auto& r : route_table) {
      if (!std::regex_match(path, r.pattern))
        continue;
      if (r.method == m)
        return r.takes_body ? route_match::with_body : route_match::without_body;
      known = true;
      if (allow.find(r.method) == std::string::npos)
        allow += (allow.empty() ? "" : ", ") + r.method;
    }
    return known ? route_match::other_method : route_match::none;
  }

  /// The largest body `req`'s route takes: an ingest route its source's
  /// max_body (at most max_ingest_body_bytes), the others max_body_bytes.
  std::size_t body_limit(const httplib::Request& req) const {
    const std::string prefix = "/ingest/";
    if (req.path.compare(0, prefix.size(), prefix) != 0)
      return opts.max_body_bytes;
    auto limit = opts.max_ingest_body_bytes;
    if (auto h = find_http_source_of(req.path.substr(prefix.size())).second)
      limit = std::min(limit, h->spec().max_body);
    return limit;
  }

  /// What is refused before routing and before a body byte is read, in
  /// this order: path traversal 400, a missing or wrong token 401, an
  /// unknown path 404, another method 405 (with Allow), a body framing
  /// httplib would misread 400 / 501, a body on a route taking none 413.
  /// True when `res` holds the refusal. A refused request's body is left
  /// unread, so its connection closes after the answer.
  bool refused_before_routing(const httplib::Request& req, httplib::Response& res) const {
    const auto framing = internal::framing_of(req);
    if (auto* c = internal::connection::current())
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

  /// The body of a request to a route taking one, read from its connection
  /// (request_body.hpp: at most `limit` bytes on the wire and decoded); it
  /// holds its share of `body_budget` until destroyed. nullopt once the
  /// refusal is in `res`.
  std::optional<internal::request_body> read_body(const httplib::Request& req,
                                                  httplib::Response& res, std::size_t limit) {
    auto* c = internal::connection::current();
    if (c == nullptr) {
      json_error(res, 500, "internal error: a request body without its connection");
      return std::nullopt;
    }
    auto body = internal::read_request_body(req, *c, limit, body_budget);
    if (!body.ok()) {
      if (body.status == 503)
        res.set_header("Retry-After", "1");
      json_error(res, body.status, body.error);
      return std::nullopt;
    }
    return body;
  }

  void routes() {
    // Only the routes registered with post() take bodies, and they read
    // them themselves (read_body); httplib's reader is never reached.
    http.set_payload_max_length(opts.max_body_bytes);
    http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
      return refused_before_routing(req, res) ? httplib::Server::HandlerResponse::Handled
                                              : httplib::Server::HandlerResponse::Unhandled;
    });
    // Expect: 100-continue (curl sends it for large bodies): the same
    // checks and the route's limit against Content-Length before the
    // client sends the body.
    http.set_expect_100_continue_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        if (refused_before_routing(req, res))
          return res.status;
        const auto framing = internal::framing_of(req);
        const auto limit = body_limit(req);
        if (framing.how == internal::body_framing::kind::length && framing.length > limit) {
          json_error(res, 413, "request body larger than " + std::to_string(limit) + " bytes");
          return 413;
        }
        return 100;
      });
    // A connection that cannot carry another request says so.
    http.set_post_routing_handler([](const httplib::Request&, httplib::Response& res) {
      auto* c = internal::connection::current();
      if (c != nullptr && c->closes_after_response()) {
        res.headers.erase("Keep-Alive");
        if (!res.has_header("Connection"))
          res.set_header("Connection", "close");
      }
    });
    http.set_error_handler(httplib::Server::HandlerWithResponse{
      [](const httplib::Request& req, httplib::Response& res) {
      if (!res.body.empty())
        return httplib::Server::HandlerResponse::Unhandled;
      // httplib's own refusals (a malformed request line or header, a URI
      // over 8 KiB): what follows on the connection cannot be trusted.
      if (auto* c = internal::connection::current())
        c->close_after_response();
      std::string what = res.status == 404   ? "not found: " + req.method + " " + req.path
                         : res.status == 413 ? "request body too large"
                         : res.status == 414 ? "request line longer than 8192 bytes"
                         : res.status == 405 ? "method not allowed"
                                             : "bad request";
      json_error(res, res.status, what);
      return httplib::Server::HandlerResponse::Handled;
    }});
    http.set_exception_handler(
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

    get("/healthz", [](const httplib::Request&, httplib::Response& res) {
      json_reply(res, 200, R"({"status":"ok"})");
    });
    get("/overview", [this](const httplib::Request&, httplib::Response& res) {
      json_reply(res, 200, overview());
    });
    get("/jobs", [this](const httplib::Request&, httplib::Response& res) {
      json_reply(res, 200, job_list());
    });
    post("/jobs", [this](const httplib::Request& req, httplib::Response& res) {
      submit_request(req, res);
    });
    get(R"(/jobs/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](served_job& j) { json_reply(res, 200, job_detail(j)); });
    });
    get(R"(/jobs/([0-9a-f]+)/checkpoints)",
        [this](const httplib::Request& req, httplib::Response& res) {
          with_job(req, res, [&](served_job& j) { json_reply(res, 200, checkpoints(j)); });
        });
    get(R"(/jobs/([0-9a-f]+)/exceptions)",
        [this](const httplib::Request& req, httplib::Response& res) {
          with_job(req, res, [&](served_job& j) { json_reply(res, 200, exceptions(j)); });
        });
    state_and_savepoint_routes();
    del(R"(/jobs/([0-9a-f]+))", [this](const httplib::Request& req, httplib::Response& res) {
      with_job(req, res, [&](served_job& j) {
        j.run->cancel();
        json_reply(res, 202, R"({"status":"CANCELING"})");
      });
    });
    get(R"(/jobs/([0-9a-f]+)/sinks/([^/]+)/stream)",
        [this](const httplib::Request& req, httplib::Response& res) { stream(req, res); });
    ingest_routes();
    get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
      res.set_content(metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
    });
    get(R"(/(|index\.html|app\.js|style\.css))",
        [](const httplib::Request& req, httplib::Response& res) {
          std::string name = req.matches[1];
          if (name.empty())
            name = "index.html";
          const auto* file = internal::find_dashboard_file(name);
          if (!file) {
            json_error(res, 404, "not found: " + req.path);
            return;
          }
          res.set_header("Cache-Control", "no-cache");
          res.set_content(std::string{file->content}, file->content_type);
        });
  }

  // -- queryable state and savepoints ----------------------------------------------
  // GET /jobs/{id}/state/{operator}?key=..., POST /jobs/{id}/savepoints,
  // GET /jobs/{id}/savepoints/{trigger}, POST /jobs/{id}/stop (with a body:
  // stop with a savepoint). Kept apart from the other routes.

  /// One savepoint asked through the API (Flink's asynchronous operation
  /// behind a trigger id).
  struct savepoint_trigger {
    std::string job_id;
    std::string location; ///< the resolved target directory
    bool stop = false;    ///< stop-with-savepoint
    std::shared_future<expected<savepoint_result>> result;
  };
  std::filesystem::path savepoint_root; ///< absolute; see server_options::savepoint_dir
  std::mutex savepoints_mutex;
  std::map<std::string, savepoint_trigger> savepoint_triggers; ///< by trigger id

  void init_savepoint_root() {
    std::filesystem::path root =
      opts.savepoint_dir.empty() ? std::filesystem::path{"savepoints"}
                                 : std::filesystem::path{opts.savepoint_dir};
    std::error_code ec;
    if (root.is_relative())
      root = std::filesystem::current_path(ec) / root;
    savepoint_root = root.lexically_normal();
    if (!savepoint_root.has_filename())
      savepoint_root = savepoint_root.parent_path();
  }

  /// A request's `target` resolved inside `savepoint_root` (the rule in
  /// server_options::savepoint_dir); empty `target`: `fallback` under it.
  /// Errors: a message for the 400.
  expected<std::filesystem::path> resolve_savepoint_target(const std::string& target,
                                                           const std::string& fallback) const {
    namespace fs = std::filesystem;
    auto refuse = [&](const std::string& why) {
      return make_error(errc::invalid_argument,
                        "savepoint target '" + target + "' refused: " + why
                          + " (savepoints are written under " + savepoint_root.string() + ")");
    };
    if (target.find('\0') != std::string::npos || target.find('\\') != std::string::npos)
      return refuse("no backslash or NUL");
    fs::path p = target.empty() ? fs::path{fallback} : fs::path{target};
    for (const auto& part : p)
      if (part == "..")
        return refuse("'..' is not allowed");
    fs::path full = p.is_absolute() ? p.lexically_normal() : (savepoint_root / p).lexically_normal();
    if (!full.has_filename())
      full = full.parent_path();
    auto inside = [](const fs::path& root, const fs::path& q) {
      auto rel = q.lexically_relative(root);
      return !rel.empty() && rel != "." && *rel.begin() != "..";
    };
    if (!inside(savepoint_root, full))
      return refuse(p.is_absolute() ? "an absolute path outside the savepoint directory"
                                    : "not below the savepoint directory");
    // Symbolic links: what the path resolves to must stay inside as well.
    std::error_code ec;
    auto real_root = fs::weakly_canonical(savepoint_root, ec);
    auto real = ec ? fs::path{} : fs::weakly_canonical(full, ec);
    if (ec || !inside(real_root, real))
      return refuse("it resolves outside the savepoint directory");
    return full;
  }

  /// A JSON request body as an object (empty body: an empty object).
  static expected<simdjson::dom::element> parse_body(simdjson::dom::parser& parser,
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
  static expected<std::string> string_field(simdjson::dom::element obj,
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
  static expected<bool> bool_field(simdjson::dom::element obj,
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

  /// 409 for a job that is over, 503 (Retry-After) for one not yet running
  /// or restarting; true when it runs.
  static bool require_running(served_job& j, httplib::Response& res, const char* what) {
    auto s = j.run->state();
    if (s == job_state::running)
      return true;
    if (is_terminal(s)) {
      json_error(res, 409, std::string{what} + ": job " + j.id + " is " + to_string(s)
                             + "; only a running job can be asked");
    } else {
      res.set_header("Retry-After", "1");
      json_error(res, 503, std::string{what} + ": job " + j.id + " is " + to_string(s)
                             + "; try again once it runs");
    }
    return false;
  }

  void query_state_request(const httplib::Request& req, httplib::Response& res) {
    auto j = find(req.matches[1]);
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
    if (f.wait_for(opts.state_query_timeout) != std::future_status::ready) {
      res.set_header("Retry-After", "1");
      json_error(res, 503, "state query of '" + op + "': no answer from the subtask within "
                             + std::to_string(opts.state_query_timeout.count()) + " ms");
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

  /// Starts a savepoint (or stop-with-savepoint) of `j` into `target`
  /// (resolved; empty: a directory generated under the savepoint root) and
  /// answers 202 {"request-id": trigger, "location": the directory}.
  void start_savepoint(served_job& j, const std::string& target, bool stop,
                       httplib::Response& res) {
    const char* what = stop ? "stop with savepoint" : "savepoint";
    // The request first (400), then the job (409, 503).
    const auto trigger = new_job_id();
    auto path = resolve_savepoint_target(target, "savepoint-" + j.id.substr(0, 6) + "-"
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
      std::lock_guard lock{savepoints_mutex};
      // Bounded: past 1,000 triggers the finished ones are forgotten (their
      // status then answers 404; the savepoints stay on disk).
      if (savepoint_triggers.size() >= 1000)
        std::erase_if(savepoint_triggers, [](const auto& kv) {
          return kv.second.result.wait_for(std::chrono::seconds{0}) == std::future_status::ready;
        });
      savepoint_triggers.emplace(trigger, std::move(t));
    }
    log::runtime().info("server: {} of job {} to {} (trigger {})", what, j.id, path->string(),
                        trigger);
    json_writer w;
    w.begin_object().field("request-id", trigger).field("location", path->string()).end_object();
    json_reply(res, 202, w.take());
  }

  void savepoint_request(const httplib::Request& req, httplib::Response& res) {
    with_job(req, res, [&](served_job& j) {
      auto text = read_body(req, res, opts.max_body_bytes);
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

  void savepoint_status(const httplib::Request& req, httplib::Response& res) {
    with_job(req, res, [&](served_job& j) {
      const std::string trigger = req.matches[2];
      std::optional<savepoint_trigger> t;
      {
        std::lock_guard lock{savepoints_mutex};
        auto it = savepoint_triggers.find(trigger);
        if (it != savepoint_triggers.end() && it->second.job_id == j.id)
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
  void stop_request(const httplib::Request& req, httplib::Response& res) {
    with_job(req, res, [&](served_job& j) {
      auto text = read_body(req, res, opts.max_body_bytes);
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

  void state_and_savepoint_routes() {
    get(R"(/jobs/([0-9a-f]+)/state/([^/]+))",
        [this](const httplib::Request& req, httplib::Response& res) {
          query_state_request(req, res);
        });
    post(R"(/jobs/([0-9a-f]+)/savepoints)",
         [this](const httplib::Request& req, httplib::Response& res) {
           savepoint_request(req, res);
         });
    get(R"(/jobs/([0-9a-f]+)/savepoints/([^/]+))",
        [this](const httplib::Request& req, httplib::Response& res) {
          savepoint_status(req, res);
        });
    post(R"(/jobs/([0-9a-f]+)/stop)",
         [this](const httplib::Request& req, httplib::Response& res) {
           stop_request(req, res);
         });
  }

  template <class F>
  void with_job(const httplib::Request& req, httplib::Response& res, F f) {
    auto j = find(req.matches[1]);
    if (!j) {
      json_error(res, 404, "no job " + std::string{req.matches[1]});
      return;
    }
    f(*j);
  }

  /// `POST /jobs`: the body, whatever its Content-Type, a TOML pipeline.
  void submit_request(const httplib::Request& req, httplib::Response& res) {
    std::string file = req.has_param("file") ? req.get_param_value("file") : "submitted.toml";
    if (is_traversal(file) || file.find('/') != std::string::npos || file.empty()) {
      json_error(res, 400, "file must be a plain file name, got '" + file + "'");
      return;
    }
    auto text = read_body(req, res, opts.max_body_bytes);
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
    auto id = add(std::move(*loaded));
    json_writer w;
    w.begin_object().field("jobid", id).end_object();
    json_reply(res, 202, w.take());
  }

  std::string add(std::unique_ptr<job> j) {
    // Served jobs print no status line; their progress is the API's.
    j->options().status_interval = std::chrono::milliseconds{0};
    attach_http_sources(*j);
    auto sj = std::make_shared<served_job>();
    sj->id = new_job_id();
    sj->run = std::make_unique<running_job>(j->start());
    sj->owner = std::move(j);
    {
      std::lock_guard lock{jobs_mutex};
      jobs.push_back(sj);
    }
    log::runtime().info("server: job '{}' started as {}", sj->owner->options().name, sj->id);
    return sj->id;
  }

  // -- HTTP ingest (the http source kind, src/kinds/sources/http/) ---------------

  /// Every http source of `j` is fed by this server (a job run without one
  /// fails at start).
  static void attach_http_sources(job& j) {
    for (const auto& h : http_sources(j))
      h->attach();
  }

  /// Closes the http sources of jobs that are over: requests waiting for a
  /// checkpoint answer 503, later ones too (called each second and at
  /// shutdown).
  void close_http_sources_of_ended_jobs() {
    for (const auto& j : all())
      if (is_terminal(j->run->state()))
        for (const auto& h : http_sources(*j->owner))
          h->close();
  }

  /// The job serving http source `source`: a running one first.
  std::pair<std::shared_ptr<served_job>, http_source_handle_ptr>
  find_http_source_of(const std::string& source) const {
    std::pair<std::shared_ptr<served_job>, http_source_handle_ptr> found;
    for (const auto& j : all()) {
      auto h = find_http_source(*j->owner, source);
      if (!h)
        continue;
      if (!found.second || !is_terminal(j->run->state()))
        found = {j, h};
      if (!is_terminal(j->run->state()))
        break;
    }
    return found;
  }

  void ingest_routes() {
    // Without it a small answer waits on Nagle's algorithm and the client's
    // delayed ACK: 40 ms per request on a keep-alive connection.
    http.set_tcp_nodelay(true);
    post(R"(/ingest/([^/]+))", [this](const httplib::Request& req, httplib::Response& res) {
      ingest(req, res);
    });
  }

  /// `POST /ingest/{source}`: the body, whatever its Content-Type, to the
  /// job's http source; the answer is the source's `ingest_result` as JSON.
  void ingest(const httplib::Request& req, httplib::Response& res) {
    const std::string source = req.matches[1];
    auto [j, h] = find_http_source_of(source);
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
    auto body = read_body(req, res, body_limit(req));
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

  void stream(const httplib::Request& req, httplib::Response& res) {
    auto j = find(req.matches[1]);
    if (!j) {
      json_error(res, 404, "no job " + std::string{req.matches[1]});
      return;
    }
    const std::string sink = req.matches[2];
    auto schema = j->run->sink_schema(sink);
    if (!schema) {
      json_error(res, 404, "job " + j->id + " has no sink '" + sink + "'");
      return;
    }
    auto client = std::make_shared<stream_client>();
    client->max_rows = opts.stream_queue_rows;
    auto sub = j->run->subscribe_sink(
      sink, [client](const record_batch_ptr& b, std::size_t subtask, std::uint64_t first) {
        client->offer(b, subtask, first);
      });
    if (!sub) {
      json_error(res, 404, "job " + j->id + " has no sink '" + sink + "'");
      return;
    }
    auto encoder = std::shared_ptr<format::record_encoder>(
      format::make_encoder(format::format_kind::jsonl));
    auto opened = std::make_shared<bool>(false);
    res.set_header("Cache-Control", "no-cache");
    res.set_header("X-Accel-Buffering", "no");
    res.set_chunked_content_provider(
      "text/event-stream",
      [this, j, client, encoder, opened, sink](std::size_t, httplib::DataSink& out) {
        std::string text;
        if (!*opened) {
          *opened = true;
          json_writer w;
          w.begin_object().field("job", j->id).field("sink", sink).end_object();
          text = "event: subscribed\ndata: " + w.take() + "\n\n";
          return out.write(text.data(), text.size());
        }
        // Terminal before draining: every row the sink got is queued by now.
        const bool over = is_terminal(j->run->state()) || stopping.load();
        std::deque<stream_client::item> items;
        std::uint64_t skipped = 0;
        {
          std::unique_lock lock{client->mutex};
          if (!over)
            client->cv.wait_for(lock, std::chrono::milliseconds{500}, [&] {
              return !client->queue.empty() || client->skipped > 0 || stopping.load();
            });
          items.swap(client->queue);
          client->queued_rows = 0;
          skipped = client->skipped;
          client->skipped = 0;
        }
        if (skipped > 0)
          text += "event: skipped\ndata: {\"skipped_rows\":" + std::to_string(skipped)
                  + "}\n\n";
        std::string line;
        for (const auto& it : items) {
          for (std::size_t r = 0; r < it.batch->num_rows; ++r) {
            line.clear();
            encoder->encode(*it.batch, r, line);
            if (!line.empty() && line.back() == '\n')
              line.pop_back();
            text += "id: ";
            text += std::to_string(it.subtask);
            text += ':';
            text += std::to_string(it.first_row + r);
            text += "\ndata: ";
            text += line;
            text += "\n\n";
          }
        }
        if (text.empty()) {
          if (over) {
            json_writer w;
            w.begin_object().field("state", to_string(j->run->state())).end_object();
            text = "event: end\ndata: " + w.take() + "\n\n";
            out.write(text.data(), text.size());
            out.done();
            return true;
          }
          text = ": keep-alive\n\n"; // also finds clients that have gone
        }
        return out.write(text.data(), text.size());
      },
      [j, sink, id = *sub](bool) { j->run->unsubscribe_sink(sink, id); });
  }
};

http_server::http_server(server_options opts)
  : impl_(std::make_unique<impl>(std::move(opts))) {
  impl_->init_savepoint_root();
  impl_->routes();
}

http_server::~http_server() {
  impl_->stopping = true;
  impl_->http.stop();
  if (impl_->http_thread.joinable())
    impl_->http_thread.join();
  {
    std::lock_guard lock{impl_->sampler_mutex};
  }
  impl_->sampler_cv.notify_all();
  if (impl_->sampler.joinable())
    impl_->sampler.join();
  // running_job's destructor cancels a job still running.
  std::lock_guard lock{impl_->jobs_mutex};
  impl_->jobs.clear();
}

expected<std::monostate> http_server::start() {
  auto& o = impl_->opts;
  if (!is_loopback(o.host) && o.token.empty())
    return make_error(errc::invalid_argument,
                      "listening on " + o.host + ", which is not a loopback address, needs a "
                        "bearer token (--token): anyone who can reach it could submit jobs");
  const int port = impl_->http.bind_listener(o.host, o.port);
  if (port <= 0)
    return make_error(errc::io_error,
                      "cannot listen on " + o.host + ":" + std::to_string(o.port));
  impl_->bound_port = port;
  impl_->http_thread = std::thread{[this] { impl_->http.listen_after_bind(); }};
  impl_->sampler = std::thread{[this] {
    std::unique_lock lock{impl_->sampler_mutex};
    while (!impl_->stopping) {
      lock.unlock();
      impl_->sample_all();
      impl_->close_http_sources_of_ended_jobs();
      lock.lock();
      impl_->sampler_cv.wait_for(lock, std::chrono::seconds{1},
                                 [this] { return impl_->stopping.load(); });
    }
  }};
  return std::monostate{};
}

int http_server::port() const noexcept { return impl_->bound_port; }

std::string http_server::submit(std::unique_ptr<job> j) { return impl_->add(std::move(j)); }

running_job* http_server::find(const std::string& id) {
  auto j = impl_->find(id);
  return j ? j->run.get() : nullptr;
}

job* http_server::find_job(const std::string& id) {
  auto j = impl_->find(id);
  return j ? j->owner.get() : nullptr;
}

void http_server::shutdown() {
  auto jobs = impl_->all();
  // Records answered 202 are the jobs' to process: refuse new ones, let each
  // running job's http sources take what they accepted (a bounded wait: a
  // job stuck behind backpressure keeps them in its final checkpoint's
  // state), then stop the jobs, whose stop barrier follows those records.
  std::vector<http_source_handle_ptr> intake;
  for (const auto& j : jobs)
    if (!is_terminal(j->run->state()))
      for (const auto& h : http_sources(*j->owner)) {
        h->stop_intake();
        intake.push_back(h);
      }
  const auto deadline = std::chrono::steady_clock::now() + shutdown_drain_timeout;
  for (const auto& h : intake)
    while (h->ready() && h->queued() > 0 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds{5});
  for (const auto& j : jobs)
    if (!is_terminal(j->run->state()))
      j->run->stop();
  for (const auto& j : jobs)
    j->run->wait();
  impl_->close_http_sources_of_ended_jobs();
  {
    std::lock_guard lock{impl_->sampler_mutex};
    impl_->stopping = true;
  }
  impl_->sampler_cv.notify_all();
  impl_->http.stop();
  if (impl_->http_thread.joinable())
    impl_->http_thread.join();
  if (impl_->sampler.joinable())
    impl_->sampler.join();
}

} // namespace weir::server
