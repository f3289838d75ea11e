// SPDX-License-Identifier: Apache-2.0
#include "checkpoint_routes.hpp"

#include "http_util.hpp"
#include "json_writer.hpp"

namespace weir::server::internal {

namespace {

/// One entry of `history` (and of `latest`), Flink's checkpoint statistics.
void write_checkpoint(json_writer& w, const checkpoint_record& c) {
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

} // namespace

checkpoint_routes::checkpoint_routes(server_context& ctx) : ctx_(ctx) {
  ctx_.routes.get(R"(/jobs/([0-9a-f]+)/checkpoints)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    with_job(ctx_.jobs, req, res,
                             [&](served_job& j) { json_reply(res, 200, checkpoints(j)); });
                  });
  ctx_.routes.get(R"(/jobs/([0-9a-f]+)/exceptions)",
                  [this](const httplib::Request& req, httplib::Response& res) {
                    with_job(ctx_.jobs, req, res,
                             [&](served_job& j) { json_reply(res, 200, exceptions(j)); });
                  });
}

std::string checkpoint_routes::checkpoints(served_job& j) {
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
    .field("restored", st.checkpoints_restored)
    .end_object();
  // Flink's summary: min / avg / max over every completed checkpoint.
  auto stat = [&](const char* name, const checkpoint_stat_summary& v) {
    w.key(name).begin_object()
      .field("min", v.min)
      .field("avg", v.avg)
      .field("max", v.max)
      .end_object();
  };
  w.key("summary").begin_object();
  stat("end_to_end_duration", st.checkpoint_stats.end_to_end_duration);
  stat("state_size", st.checkpoint_stats.state_size);
  stat("alignment_duration", st.checkpoint_stats.alignment_duration);
  w.end_object();
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
  w.key("restored");
  if (st.restored)
    w.begin_object()
      .field("id", st.restored->checkpoint_id)
      .field("restore_timestamp", st.restored->restore_ms)
      .field("is_savepoint", st.restored->is_savepoint)
      .field("external_path", st.restored->path)
      .end_object();
  else
    w.null();
  w.end_object();
  w.key("history").begin_array();
  for (auto it = st.checkpoints.rbegin(); it != st.checkpoints.rend(); ++it)
    write_checkpoint(w, *it);
  w.end_array().end_object();
  return w.take();
}

std::string checkpoint_routes::exceptions(served_job& j) {
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

} // namespace weir::server::internal
