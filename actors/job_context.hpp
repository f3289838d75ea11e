// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/runtime/dead_letter_queue.hpp"
#include "weir/runtime/execution_plan.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/job_metrics.hpp"

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace weir::runtime {

/// What every actor of one job execution shares: the graph, its physical
/// plan, the metrics, the dead-letter queue and the first failure.
struct job_context {
  explicit job_context(std::shared_ptr<const job_graph> g)
    : graph(std::move(g)), plan(build_execution_plan(*graph)), metrics(*graph) {}

  std::shared_ptr<const job_graph> graph;
  execution_plan plan;
  job_metrics metrics;
  std::unique_ptr<dead_letter_queue> dead_letters;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();

  /// Batches a receiver grants each input channel (DESIGN.md §5).
  std::uint32_t credits_per_channel = 8;

  /// True when some source takes processing time from its input: the whole
  /// job then runs on the replay clock, carried in-band.
  bool replay_clock() const {
    for (const auto& n : graph->nodes)
      if (n.processing_time_field)
        return true;
    return false;
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
