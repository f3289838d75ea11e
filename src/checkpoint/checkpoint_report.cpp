// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_report.hpp"
#include "weir/checkpoint/remote_checkpoints.hpp"

#include "weir/core/timestamp.hpp"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <utility>

namespace weir::checkpoint {

namespace {

/// A source position's lines (one per split; docs/concepts/checkpoints.md).
std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at < text.size()) {
    auto nl = text.find('\n', at);
    out.push_back(text.substr(at, nl == std::string::npos ? std::string::npos : nl - at));
    at = nl == std::string::npos ? text.size() : nl + 1;
  }
  return out;
}

/// A source position's splits on one line, for the list view.
std::string one_line(const std::string& text) {
  std::string out;
  for (const auto& l : lines_of(text))
    out += (out.empty() ? "" : ", ") + l;
  return out;
}

std::string status_of(const checkpoint_listing& l) {
  if (l.restorable)
    return "complete";
  if (l.superseded && l.problem.empty())
    return "superseded";
  if (l.manifest && l.manifest->status != checkpoint_status::completed)
    return "incomplete";
  return "damaged";
}

std::string pad_left(std::string s, std::size_t width) {
  if (s.size() < width)
    s.insert(0, width - s.size(), ' ');
  return s;
}

std::string pad_right(std::string s, std::size_t width) {
  if (s.size() < width)
    s.append(width - s.size(), ' ');
  return s;
}

/// Lays out rows as columns two spaces apart; columns in `right` are
/// right-aligned (numbers).
std::string render_table(const std::vector<std::vector<std::string>>& rows,
                         const std::vector<bool>& right) {
  std::vector<std::size_t> width;
  for (const auto& r : rows)
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c)
        width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (std::size_t c = 0; c < r.size(); ++c) {
      if (c > 0)
        line += "  ";
      bool last = c + 1 == r.size();
      if (c < right.size() && right[c])
        line += pad_left(r[c], width[c]);
      else
        line += last ? r[c] : pad_right(r[c], width[c]);
    }
    while (!line.empty() && line.back() == ' ')
      line.pop_back();
    out += line;
    out += '\n';
  }
  return out;
}

std::string ms(std::int64_t v) {
  return std::to_string(v) + " ms";
}

/// State bytes per operator, in the order operators first appear.
std::vector<std::pair<std::string, std::uint64_t>>
size_by_operator(const snapshot_manifest& m) {
  std::vector<std::pair<std::string, std::uint64_t>> out;
  for (const auto& h : m.handles) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& p) { return p.first == h.operator_uid; });
    if (it == out.end())
      out.emplace_back(h.operator_uid, h.size_bytes());
    else
      it->second += h.size_bytes();
  }
  return out;
}

/// The manifest's handles in a stable order: operators as they first appear
/// (subtasks acknowledge in any order), then by subtask.
std::vector<const operator_state_handle*> ordered_handles(const snapshot_manifest& m) {
  std::vector<std::string_view> uids;
  for (const auto& h : m.handles)
    if (std::find(uids.begin(), uids.end(), h.operator_uid) == uids.end())
      uids.push_back(h.operator_uid);
  const auto rank = [&uids](const operator_state_handle* h) {
    return std::pair{std::find(uids.begin(), uids.end(), h->operator_uid) - uids.begin(),
                     h->subtask};
  };
  std::vector<const operator_state_handle*> out;
  for (const auto& h : m.handles)
    out.push_back(&h);
  std::stable_sort(out.begin(), out.end(),
                   [&](const auto* a, const auto* b) { return rank(a) < rank(b); });
  return out;
}

/// "logs" for a single subtask, "logs[1/4]" otherwise (0-based: the subtask
/// index, as in the REST API and the metrics, and Flink).
std::string subtask_label(const operator_state_handle& h) {
  if (h.parallelism <= 1)
    return h.operator_uid;
  return h.operator_uid + "[" + std::to_string(h.subtask) + "/"
         + std::to_string(h.parallelism) + "]";
}

} // namespace

std::string format_bytes(std::uint64_t bytes) {
  static constexpr const char* units[] = {"KiB", "MiB", "GiB", "TiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double v = static_cast<double>(bytes) / 1024.0;
  std::size_t u = 0;
  while (v >= 1024.0 && u + 1 < std::size(units)) {
    v /= 1024.0;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  return buf;
}

std::string format_checkpoint_list(const std::vector<checkpoint_listing>& listed) {
  // Checkpoints a start over superseded: named below the table, not in it
  // (a plain run never restores them).
  std::vector<checkpoint_listing> all;
  std::string superseded;
  for (const auto& l : listed) {
    if (l.superseded)
      superseded += (superseded.empty() ? "" : ", ") + std::to_string(l.checkpoint_id);
    else
      all.push_back(l);
  }
  if (!superseded.empty())
    superseded = "superseded: " + superseded
                 + " (a start over, --fresh or --from-savepoint, has not completed a "
                   "checkpoint yet; --allow-rollback restores them, its first checkpoint "
                   "deletes them)\n";
  if (all.empty())
    return "no checkpoints\n" + superseded;
  std::vector<std::vector<std::string>> rows;
  rows.push_back({"ID", "STATUS", "TRIGGERED (UTC)", "DURATION", "ALIGNMENT", "SIZE",
                  "STATE BY OPERATOR", "SOURCE POSITIONS"});
  std::string problems;
  for (const auto& l : all) {
    std::vector<std::string> r{std::to_string(l.checkpoint_id), status_of(l)};
    if (l.manifest) {
      const auto& m = *l.manifest;
      r.push_back(format_iso8601(m.trigger_ms));
      r.push_back(ms(m.duration_ms()));
      r.push_back(ms(m.alignment_ms));
      r.push_back(format_bytes(m.size_bytes()));
      std::string per_op;
      for (const auto& [uid, bytes] : size_by_operator(m))
        per_op += (per_op.empty() ? "" : ", ") + uid + " " + format_bytes(bytes);
      r.push_back(per_op.empty() ? "-" : per_op);
      std::string positions;
      for (const auto* h : ordered_handles(m))
        if (!h->source_position.empty())
          positions += (positions.empty() ? "" : "; ") + subtask_label(*h) + ": "
                       + one_line(h->source_position);
      r.push_back(positions.empty() ? "-" : positions);
    } else {
      r.insert(r.end(), {"-", "-", "-", "-", "-", "-"});
    }
    rows.push_back(std::move(r));
    if (!l.problem.empty())
      problems += "checkpoint " + std::to_string(l.checkpoint_id) + ": " + l.problem + "\n";
  }
  return render_table(rows, {true, false, false, true, true, true, false, false}) + problems
         + superseded;
}

std::string format_checkpoint_details(const checkpoint_listing& l) {
  std::string out = "checkpoint " + std::to_string(l.checkpoint_id) + "  " + status_of(l)
                    + "\n";
  if (!l.problem.empty())
    out += "  problem     " + l.problem + "\n";
  if (!l.manifest)
    return out;
  const auto& m = *l.manifest;
  out += "  triggered   " + format_iso8601(m.trigger_ms) + "\n";
  out += "  completed   " + format_iso8601(m.completion_ms) + "\n";
  out += "  duration    " + ms(m.duration_ms()) + "\n";
  out += "  alignment   " + ms(m.alignment_ms) + " (longest of any subtask)\n";
  out += "  size        " + format_bytes(m.size_bytes()) + " ("
         + std::to_string(m.size_bytes()) + " bytes)\n";

  out += "\nstate per operator\n";
  std::vector<std::vector<std::string>> ops{{"OPERATOR", "SIZE"}};
  for (const auto& [uid, bytes] : size_by_operator(m))
    ops.push_back({uid, format_bytes(bytes)});
  out += render_table(ops, {false, true});

  out += "\nsubtasks\n";
  std::vector<std::vector<std::string>> rows{
    {"OPERATOR", "SUBTASK", "KEY GROUPS", "KEYED", "OPERATOR STATE", "SOURCE POSITION"}};
  for (const auto* hp : ordered_handles(m)) {
    const auto& h = *hp;
    std::uint64_t keyed = h.size_bytes() - h.operator_state_bytes;
    // One line per split of a source; the first beside its subtask.
    auto splits = lines_of(h.source_position);
    rows.push_back({h.operator_uid,
                    std::to_string(h.subtask) + "/" + std::to_string(h.parallelism),
                    std::to_string(h.key_groups.size()), format_bytes(keyed),
                    h.has_operator_state ? format_bytes(h.operator_state_bytes) : "-",
                    splits.empty() ? "-" : splits.front()});
    for (std::size_t i = 1; i < splits.size(); ++i)
      rows.push_back({"", "", "", "", "", splits[i]});
  }
  out += render_table(rows, {false, true, true, true, true, false});
  return out;
}

int run_checkpoints_command(const std::string& verb, const std::string& dir,
                            std::optional<std::uint64_t> id, std::string& out,
                            std::string& err) {
  expected<std::vector<checkpoint_listing>> all{std::vector<checkpoint_listing>{}};
  if (dir.rfind("s3://", 0) == 0) {
    // The remote copy: endpoint and region from AWS_ENDPOINT_URL and
    // AWS_REGION, as the AWS CLI takes them.
    auto remote = open_remote_checkpoints({dir, {}, {}});
    if (!remote) {
      err += "weir: " + remote.error().message + "\n";
      return 1;
    }
    all = (*remote)->list();
  } else {
    store_options opts;
    opts.dir = dir;
    opts.read_only = true;
    auto store = lmdb_checkpoint_store::open(opts);
    if (!store) {
      err += "weir: " + store.error().message + "\n";
      return 1;
    }
    all = (*store)->list(true);
  }
  if (!all) {
    err += "weir: " + all.error().message + "\n";
    return 1;
  }
  if (verb == "list") {
    out += format_checkpoint_list(*all);
    return 0;
  }
  const checkpoint_listing* chosen = nullptr;
  for (const auto& l : *all) {
    if (id ? l.checkpoint_id == *id : l.restorable)
      chosen = &l;
  }
  if (!chosen && !id && !all->empty())
    chosen = &all->back();
  if (!chosen) {
    err += "weir: " + (id ? "no checkpoint " + std::to_string(*id) : "no checkpoints")
           + " in " + dir + "\n";
    return 1;
  }
  out += format_checkpoint_details(*chosen);
  return 0;
}

} // namespace weir::checkpoint
