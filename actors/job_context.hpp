// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/api/running_job.hpp"
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/checkpoint/remote_checkpoints.hpp"
#include "weir/runtime/dead_letter_queue.hpp"
#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/job_metrics.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <unistd.h>

namespace weir::runtime {

/// What the job manager records for observers while the job runs (the
/// server, `running_job::status`): its phase, the checkpoint history and
/// the failures. Written by the job manager only; read from any thread.
class job_journal {
public:
  /// Entries kept of each history; older ones are dropped.
  static constexpr std::size_t max_entries = 100;

  void set_state(job_state s) noexcept { state_.store(s, std::memory_order_relaxed); }
  job_state state() const noexcept { return state_.load(std::memory_order_relaxed); }

  void checkpoint_triggered(std::uint64_t id, std::int64_t trigger_ms) {
    std::lock_guard lock{mutex_};
    checkpoint_record r;
    r.checkpoint_id = id;
    r.trigger_ms = trigger_ms;
    checkpoints_.push_back(std::move(r));
    if (checkpoints_.size() > max_entries)
      checkpoints_.pop_front();
  }

  void checkpoint_completed(std::uint64_t id, std::int64_t duration_ms, std::uint64_t size_bytes,
                            std::int64_t alignment_ms) {
    std::lock_guard lock{mutex_};
    ++completed_;
    if (auto* r = find(id)) {
      r->status = checkpoint_record::status_kind::completed;
      r->duration_ms = duration_ms;
      r->size_bytes = size_bytes;
      r->alignment_ms = alignment_ms;
    }
    add(summary_.end_to_end_duration, duration_ms);
    add(summary_.state_size, static_cast<std::int64_t>(size_bytes));
    add(summary_.alignment_duration, alignment_ms);
  }

  /// The job restored checkpoint `id` (a savepoint's when `is_savepoint`)
  /// from the directory `path`.
  void restored(std::uint64_t id, std::int64_t now_ms, bool is_savepoint, std::string path) {
    std::lock_guard lock{mutex_};
    ++restores_;
    restored_ = restored_checkpoint{id, now_ms, is_savepoint, std::move(path)};
  }

  void checkpoint_failed(std::uint64_t id, std::int64_t now_ms, const std::string& reason) {
    std::lock_guard lock{mutex_};
    auto* r = find(id);
    if (!r || r->status != checkpoint_record::status_kind::in_progress)
      return;
    ++failed_;
    r->status = checkpoint_record::status_kind::failed;
    r->duration_ms = now_ms - r->trigger_ms;
    r->failure_reason = reason;
  }

  /// A subtask of operator `task_name` failed with `message` (as it is
  /// passed to `job_context::fail`): an exception of that message recorded
  /// later names the subtask.
  void subtask_failed(const std::string& message, std::string task_name,
                      std::size_t subtask_index) {
    std::lock_guard lock{mutex_};
    origins_.push_back({message, std::move(task_name), subtask_index});
    if (origins_.size() > max_origins)
      origins_.pop_front();
  }

  /// A failure of the job (`restarted`: it restarts from its last
  /// checkpoint). When a subtask reported `message` (`subtask_failed`),
  /// the entry names its operator, index and location.
  void exception(std::int64_t now_ms, std::string message, bool restarted) {
    std::lock_guard lock{mutex_};
    job_exception e{now_ms, std::move(message), restarted, {}, std::nullopt, {}};
    for (auto it = origins_.rbegin(); it != origins_.rend(); ++it)
      if (it->message == e.message) {
        e.task_name = it->task_name;
        e.subtask_index = it->subtask_index;
        e.location = process_location();
        break;
      }
    exceptions_.push_back(std::move(e));
    if (exceptions_.size() > max_entries) {
      exceptions_.pop_front();
      truncated_ = true;
    }
  }

  /// Fills the history part of `out`.
  void copy_to(job_status& out) const {
    std::lock_guard lock{mutex_};
    out.checkpoints.assign(checkpoints_.begin(), checkpoints_.end());
    out.exceptions.assign(exceptions_.begin(), exceptions_.end());
    out.exceptions_truncated = truncated_;
    out.checkpoints_completed = completed_;
    out.checkpoints_failed = failed_;
    out.checkpoint_stats.end_to_end_duration = summary_of(summary_.end_to_end_duration);
    out.checkpoint_stats.state_size = summary_of(summary_.state_size);
    out.checkpoint_stats.alignment_duration = summary_of(summary_.alignment_duration);
    out.checkpoints_restored = restores_;
    out.restored = restored_;
  }

private:
  struct running_stat {
    std::int64_t min = 0, max = 0, sum = 0;
    std::uint64_t count = 0;
  };
  struct running_summary {
    running_stat end_to_end_duration, state_size, alignment_duration;
  };

  static void add(running_stat& s, std::int64_t v) {
    s.min = s.count == 0 ? v : std::min(s.min, v);
    s.max = s.count == 0 ? v : std::max(s.max, v);
    s.sum += v;
    ++s.count;
  }

  static checkpoint_stat_summary summary_of(const running_stat& s) {
    if (s.count == 0)
      return {};
    return {s.min, s.sum / static_cast<std::int64_t>(s.count), s.max};
  }

  /// This process as `host:pid`: where every subtask runs.
  static std::string process_location() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0')
      std::snprintf(host, sizeof host, "localhost");
    return std::string{host} + ":" + std::to_string(::getpid());
  }

  /// Subtask failures remembered to name the subtask of an exception.
  static constexpr std::size_t max_origins = 16;
  struct failure_origin {
    std::string message;
    std::string task_name;
    std::size_t subtask_index = 0;
  };

  checkpoint_record* find(std::uint64_t id) {
    for (auto it = checkpoints_.rbegin(); it != checkpoints_.rend(); ++it)
      if (it->checkpoint_id == id)
        return &*it;
    return nullptr;
  }

  std::atomic<job_state> state_{job_state::created};
  mutable std::mutex mutex_;
  std::deque<checkpoint_record> checkpoints_;
  std::deque<job_exception> exceptions_;
  bool truncated_ = false;
  std::deque<failure_origin> origins_;
  std::uint64_t completed_ = 0;
  std::uint64_t failed_ = 0;
  running_summary summary_;
  std::uint64_t restores_ = 0;
  std::optional<restored_checkpoint> restored_;
};

/// What every actor of one job execution shares: the graph, its physical
/// plan, the metrics, the dead-letter queue and the first failure.
struct job_context {
  explicit job_context(std::shared_ptr<const job_graph> g)
    : graph(std::move(g)), plan(build_execution_plan(*graph)), metrics(*graph) {}

  std::shared_ptr<const job_graph> graph;
  execution_plan plan;
  job_metrics metrics;
  std::unique_ptr<dead_letter_queue> dead_letters;
  job_journal journal;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  /// Batches a receiver grants each input channel (docs/internals/architecture.md).
  std::uint32_t credits_per_channel = 8;

  /// True when some source takes processing time from its input: the whole
  /// job then runs on the replay clock, carried in-band.
  bool replay_clock() const {
    for (const auto& n : graph->nodes)
      if (n.processing_time_field)
        return true;
    return false;
  }

  /// Records the first failure as `fail(message)`, and that subtask
  /// `subtask_index` (0-based) of operator `task_name` reported it, for the
  /// exception history (`job_journal::subtask_failed`).
  void fail(std::string message, std::string task_name, std::size_t subtask_index) {
    journal.subtask_failed(message, std::move(task_name), subtask_index);
    fail(std::move(message));
  }

  /// Records the first failure; later ones are dropped (they are usually
  /// consequences of the first).
  void fail(std::string message) {
    std::lock_guard<std::mutex> guard{mutex_};
    if (!failure_)
      failure_ = std::move(message);
  }

  std::optional<std::string> failure() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return failure_;
  }

  /// A subtask failed with `unrecoverable_error`: the job does not restart.
  void mark_unrecoverable() {
    std::lock_guard<std::mutex> guard{mutex_};
    unrecoverable_ = true;
  }

  bool unrecoverable() const {
    std::lock_guard<std::mutex> guard{mutex_};
    return unrecoverable_;
  }

  /// Forgets the failure before a restart (it stays in the log).
  void clear_failure() {
    std::lock_guard<std::mutex> guard{mutex_};
    failure_.reset();
    unrecoverable_ = false;
  }

  /// Checkpoint storage; null when checkpoints are off. Opened once per
  /// process: LMDB allows one environment handle per directory.
  std::shared_ptr<checkpoint::lmdb_checkpoint_store> store;
  /// The durable copy in object storage (`checkpoint_options::remote`); null
  /// when local only. The state writer uploads every checkpoint there
  /// before committing it.
  std::shared_ptr<checkpoint::remote_checkpoints> remote;
  /// The savepoint to restore (`checkpoint_options::from_savepoint`, read
  /// only); null when none. Used until the job's first own checkpoint
  /// completes: a restart before that restores the savepoint again.
  std::shared_ptr<checkpoint::lmdb_checkpoint_store> savepoint;

  /// Filled in by the job manager as it ends.
  struct outcome {
    std::uint64_t checkpoints_completed = 0;
    std::uint64_t checkpoints_aborted = 0;
    std::uint64_t checkpoints_failed = 0;
    std::uint64_t last_checkpoint_id = 0;
    std::uint64_t restored_checkpoint_id = 0;
    /// The highest checkpoint id in the checkpoint dir (or the savepoint
    /// restored) when the job started: its ids follow it (0 = from #1).
    std::uint64_t checkpoint_ids_after = 0;
    std::size_t restarts = 0;
    std::vector<std::string> warnings;
    bool stopped = false;                ///< stopped gracefully (job::stop)
    std::uint64_t stop_checkpoint_id = 0; ///< the stop's final checkpoint; 0 = none
  };
  outcome result;

private:
  mutable std::mutex mutex_;
  std::optional<std::string> failure_;
  bool unrecoverable_ = false;
};

} // namespace weir::runtime
