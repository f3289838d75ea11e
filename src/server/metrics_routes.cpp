// SPDX-License-Identifier: Apache-2.0
#include "metrics_routes.hpp"

#include "http_util.hpp"
#include "weir/format/format.hpp"

#include <string_view>
#include <vector>

namespace weir::server::internal {

namespace {

/// `v` escaped as a Prometheus label value.
std::string label_value(std::string_view v) {
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

} // namespace

metrics_routes::metrics_routes(server_context& ctx) : ctx_(ctx) {
  ctx_.routes.get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });
}

std::string metrics_routes::metrics_text() const {
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
  for (const auto& j : ctx_.jobs.all()) {
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

} // namespace weir::server::internal
