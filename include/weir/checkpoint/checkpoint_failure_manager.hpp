// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace weir::checkpoint {

/// How many failed checkpoints in a row a job tolerates (Flink's
/// `CheckpointFailureManager` and `setTolerableCheckpointFailureNumber`;
/// `[checkpoint] tolerable_failures`). A checkpoint counts as failed when
/// storing it failed (a subtask's state or the manifest could not be
/// written: disk or LMDB map full, I/O error) or when it timed out; a
/// checkpoint aborted for other reasons (a source finished, alignment
/// cancelled, subsumed, a subtask failed) does not count. A completed
/// checkpoint starts the count over. Not thread-safe (the job manager owns
/// it).
class checkpoint_failure_manager {
public:
  /// `tolerable`: consecutive failed checkpoints the job survives; the next
  /// one fails it (0: the first failed checkpoint fails the job).
  explicit checkpoint_failure_manager(std::size_t tolerable) noexcept
    : tolerable_(tolerable) {}

  /// Checkpoint `checkpoint_id` failed because of `reason`. Returns the
  /// job's failure message once more than `tolerable` checkpoints in a row
  /// have failed; nullopt while the job may continue. A checkpoint that has
  /// already been counted, or that is older than the last completed one,
  /// is not counted again (several subtasks may report the same failure).
  std::optional<std::string> failed(std::uint64_t checkpoint_id, const std::string& reason);

  /// Checkpoint `checkpoint_id` completed: the failures before it are
  /// forgiven.
  void completed(std::uint64_t checkpoint_id) noexcept;

  /// Failed checkpoints since the last completed one.
  std::size_t consecutive() const noexcept { return consecutive_; }
  /// Failed checkpoints in all (what the summary reports).
  std::uint64_t total() const noexcept { return total_; }
  std::size_t tolerable() const noexcept { return tolerable_; }

private:
  std::size_t tolerable_;
  std::size_t consecutive_ = 0;
  std::uint64_t total_ = 0;
  std::uint64_t last_completed_ = 0;
  std::uint64_t last_failed_ = 0; // the highest counted id
};

} // namespace weir::checkpoint
