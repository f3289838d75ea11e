// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/connectors/source_reader.hpp"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace weir::runtime {

/// Appends bad records to a JSONL file, one object per record with the
/// origin fields of its source kind (`format::append_bad_record_json`).
/// Thread-safe: the subtasks of a job share one queue, each writing as its
/// own writer (its task index).
///
/// Two commit modes follow the job's checkpointing mode:
/// - `direct` (no checkpoints, at-least-once): each record is appended and
///   flushed at once, so a crash loses none; after a restore the records
///   replayed are written again.
/// - `two_phase` (exactly-once): Flink's two-phase-commit sink, as the
///   exactly-once file sink. A writer's records are buffered in memory until
///   its snapshot of checkpoint n (`seal`), which writes them to
///   `<dir>/.<name>.staging/<n>-<writer>.pending` (pre-commit, fsynced);
///   when checkpoint n completes (`commit`) the pending files of checkpoints
///   <= n are appended to the dead-letter file in checkpoint and writer
///   order, and `committed.log` in the staging directory records the file's
///   length after checkpoint n. A restore from checkpoint m (`restore`)
///   truncates the file to its length after m, completes the commits of
///   checkpoints <= m that a crash interrupted, and discards every record
///   staged after m (the sources replay them): each bad record is in the file
///   once, whatever the restores. Memory: the records of one checkpoint
///   interval per writer.
class dead_letter_queue {
public:
  enum class commit_mode { direct, two_phase };

  /// Throws std::runtime_error naming the path if the file cannot be created.
  /// `direct`: with `append` (a job resuming from a checkpoint) earlier bad
  /// records are kept, otherwise the file starts empty. `two_phase`: the
  /// file is left as is until `restore`.
  dead_letter_queue(std::string path, commit_mode mode, bool append = false);
  ~dead_letter_queue();
  dead_letter_queue(const dead_letter_queue&) = delete;
  dead_letter_queue& operator=(const dead_letter_queue&) = delete;

  /// Writes (direct) or stages (two-phase) `r` for `writer` of restart
  /// `attempt`; a write of an earlier attempt than the last `restore`'s is
  /// dropped (a subtask still winding down). Throws std::runtime_error if
  /// the write fails.
  void write(const bad_record& r, std::uint32_t writer = 0, std::size_t attempt = 0);

  /// Two-phase: `writer` snapshots checkpoint `checkpoint_id`; its records
  /// since its last seal are pre-committed under that id. No-op in direct
  /// mode. Throws std::runtime_error on an I/O error.
  void seal(std::uint32_t writer, std::size_t attempt, std::uint64_t checkpoint_id);

  /// Two-phase: `writer` ended its input (its final state answers for every
  /// later checkpoint): its records are pre-committed under the checkpoint
  /// after its last seal.
  void seal_final(std::uint32_t writer, std::size_t attempt);

  /// Two-phase: checkpoint `checkpoint_id` is complete; commits the pending
  /// records of it and of every earlier checkpoint. Throws on an I/O error.
  void commit(std::uint64_t checkpoint_id);

  /// Two-phase: the job (re)starts at `attempt` from checkpoint
  /// `checkpoint_id` (0: from nothing, the file starts empty). Throws on an
  /// I/O error.
  void restore(std::uint64_t checkpoint_id, std::size_t attempt);

  /// Two-phase: the job finished its input: everything staged is committed
  /// (as the checkpoint after the last one, as the file sink's last part).
  void finish();

  /// Bad records committed to the file by checkpoints up to the last one
  /// restored or committed (two-phase); 0 in direct mode.
  std::uint64_t committed_count() const;

  const std::string& path() const noexcept { return path_; }

private:
  struct log_entry {
    std::uint64_t checkpoint_id = 0;
    std::uint64_t length = 0;
    std::uint64_t count = 0;
  };
  void append_or_throw(const std::string& bytes);
  void commit_locked(std::uint64_t checkpoint_id, bool recovering);
  void seal_locked(std::uint32_t writer, std::uint64_t checkpoint_id);
  void write_log_locked();

  std::string path_;
  commit_mode mode_;
  std::filesystem::path staging_;
  std::FILE* file_ = nullptr;
  mutable std::mutex mutex_;
  std::size_t attempt_ = 0;
  struct writer_state {
    std::string buffer;
    std::uint64_t count = 0;
    std::uint64_t last_sealed = 0;
  };
  std::map<std::uint32_t, writer_state> writers_;
  std::vector<log_entry> log_;  // ascending checkpoint ids
  std::uint64_t restored_ = 0;
  std::uint64_t highest_ = 0;   // the highest checkpoint id sealed or restored
};

} // namespace weir::runtime
