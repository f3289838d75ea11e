// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_coordinator.hpp"

#include <algorithm>
#include <utility>

namespace weir::checkpoint {

checkpoint_coordinator::checkpoint_coordinator(coordinator_options opts,
                                               std::uint32_t tasks)
  : opts_(opts), tasks_(tasks), finished_(tasks, false), lost_(tasks, false) {
  opts_.max_concurrent = std::max<std::size_t>(opts_.max_concurrent, 1);
}

void checkpoint_coordinator::resume_after(std::uint64_t latest_id) noexcept {
  next_id_ = std::max(next_id_, latest_id + 1);
}

trigger_result checkpoint_coordinator::trigger(std::chrono::milliseconds now,
                                               bool final_checkpoint) {
  trigger_result r;
  if (any_finished_) {
    r.refusal = trigger_refusal::task_finished;
    r.reason = "a subtask ended without its final state; no further checkpoints";
    return r;
  }
  if (pending_.size() >= opts_.max_concurrent) {
    r.refusal = trigger_refusal::too_many;
    r.reason = std::to_string(pending_.size()) + " checkpoint(s) in flight (max "
               + std::to_string(opts_.max_concurrent) + ")";
    return r;
  }
  if (!final_checkpoint && last_completion_ && now - *last_completion_ < opts_.min_pause) {
    r.refusal = trigger_refusal::min_pause;
    r.reason = "only " + std::to_string((now - *last_completion_).count())
               + " ms since the last completed checkpoint (min pause "
               + std::to_string(opts_.min_pause.count()) + " ms)";
    return r;
  }
  pending_checkpoint p;
  p.checkpoint_id = next_id_++;
  p.trigger_ms = now.count();
  p.acked.assign(tasks_, false);
  p.remaining = tasks_;
  r.checkpoint_id = p.checkpoint_id;
  pending_.emplace(p.checkpoint_id, std::move(p));
  return r;
}

ack_result checkpoint_coordinator::acknowledge(std::uint64_t checkpoint_id,
                                               std::uint32_t task, task_ack ack,
                                               std::chrono::milliseconds now) {
  ack_result r;
  auto it = pending_.find(checkpoint_id);
  if (it == pending_.end()) {
    r.reason = "checkpoint " + std::to_string(checkpoint_id)
               + " is not in flight (aborted, subsumed or unknown)";
    return r;
  }
  auto& p = it->second;
  if (task >= tasks_) {
    r.reason = "task " + std::to_string(task) + " is not part of the job ("
               + std::to_string(tasks_) + " tasks)";
    return r;
  }
  if (p.finalizing || p.acked[task]) {
    r.reason = "task " + std::to_string(task) + " already acknowledged checkpoint "
               + std::to_string(checkpoint_id);
    return r;
  }
  p.acked[task] = true;
  --p.remaining;
  p.alignment_ms = std::max<std::int64_t>(p.alignment_ms, ack.alignment.count());
  for (auto& h : ack.operators)
    p.handles.push_back(std::move(h));
  if (p.remaining > 0) {
    r.status = ack_status::accepted;
    return r;
  }
  p.finalizing = true;
  snapshot_manifest m;
  m.status = checkpoint_status::completed;
  m.checkpoint_id = checkpoint_id;
  m.trigger_ms = p.trigger_ms;
  m.completion_ms = now.count();
  m.alignment_ms = p.alignment_ms;
  m.handles = p.handles;
  r.status = ack_status::all_acked;
  r.manifest = std::move(m);
  return r;
}

std::optional<aborted_checkpoint>
checkpoint_coordinator::decline(std::uint64_t checkpoint_id, std::uint32_t task,
                                std::string reason) {
  auto it = pending_.find(checkpoint_id);
  if (it == pending_.end() || it->second.finalizing)
    return std::nullopt;
  return abort(it, "declined by task " + std::to_string(task) + ": " + reason);
}

std::vector<aborted_checkpoint>
checkpoint_coordinator::expire(std::chrono::milliseconds now) {
  std::vector<aborted_checkpoint> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto& p = it->second;
    auto age = now.count() - p.trigger_ms;
    if (p.finalizing || age < opts_.timeout.count()) {
      ++it;
      continue;
    }
    auto acked = tasks_ - p.remaining;
    auto next = std::next(it);
    out.push_back(abort(it, "timed out after " + std::to_string(age) + " ms with "
                              + std::to_string(acked) + " of "
                              + std::to_string(tasks_)
                              + " subtasks acknowledged"));
    it = next;
  }
  return out;
}

std::vector<aborted_checkpoint> checkpoint_coordinator::abort_waiting(const std::string& reason) {
  std::vector<aborted_checkpoint> out;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto next = std::next(it);
    if (!it->second.finalizing)
      out.push_back(abort(it, reason));
    it = next;
  }
  return out;
}

std::optional<std::chrono::milliseconds> checkpoint_coordinator::next_timeout() const {
  std::optional<std::chrono::milliseconds> t;
  for (const auto& [id, p] : pending_) {
    if (p.finalizing)
      continue;
    auto due = std::chrono::milliseconds{p.trigger_ms} + opts_.timeout;
    if (!t || due < *t)
      t = due;
  }
  return t;
}

std::optional<completion_result>
checkpoint_coordinator::manifest_committed(std::uint64_t checkpoint_id,
                                           std::chrono::milliseconds now) {
  auto it = pending_.find(checkpoint_id);
  if (it == pending_.end() || !it->second.finalizing)
    return std::nullopt;
  completion_result r;
  const auto& p = it->second;
  r.stats.checkpoint_id = checkpoint_id;
  r.stats.trigger_ms = p.trigger_ms;
  r.stats.duration_ms = now.count() - p.trigger_ms;
  r.stats.alignment_ms = p.alignment_ms;
  for (const auto& h : p.handles)
    r.stats.size_bytes += h.size_bytes();
  pending_.erase(it);
  // Flink subsumes older pending checkpoints once a newer one completes.
  while (!pending_.empty() && pending_.begin()->first < checkpoint_id)
    r.subsumed.push_back(abort(pending_.begin(), "subsumed by checkpoint "
                                                   + std::to_string(checkpoint_id)));
  last_completion_ = now;
  last_completed_ = r.stats;
  ++completed_;
  return r;
}

std::optional<aborted_checkpoint>
checkpoint_coordinator::manifest_failed(std::uint64_t checkpoint_id, std::string reason) {
  auto it = pending_.find(checkpoint_id);
  if (it == pending_.end())
    return std::nullopt;
  return abort(it, std::move(reason));
}

std::vector<aborted_checkpoint> checkpoint_coordinator::task_finished(std::uint32_t task) {
  std::vector<aborted_checkpoint> out;
  if (task >= tasks_ || finished_[task])
    return out;
  finished_[task] = true;
  lost_[task] = true;
  any_finished_ = true;
  for (auto it = pending_.begin(); it != pending_.end();) {
    auto next = std::next(it);
    if (!it->second.finalizing && !it->second.acked[task])
      out.push_back(abort(it, "task " + std::to_string(task)
                                + " finished before acknowledging"));
    it = next;
  }
  return out;
}

std::vector<std::uint64_t> checkpoint_coordinator::task_finished_with_state(std::uint32_t task) {
  std::vector<std::uint64_t> out;
  if (task >= tasks_ || finished_[task])
    return out;
  finished_[task] = true;
  for (const auto& [id, p] : pending_)
    if (!p.finalizing && !p.acked[task])
      out.push_back(id);
  return out;
}

aborted_checkpoint
checkpoint_coordinator::abort(std::map<std::uint64_t, pending_checkpoint>::iterator it,
                              std::string reason) {
  aborted_checkpoint a{it->first, std::move(reason)};
  pending_.erase(it);
  ++aborted_;
  return a;
}

} // namespace weir::checkpoint
