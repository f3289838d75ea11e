// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/connectors/source_reader.hpp"

#include <cstdio>
#include <mutex>
#include <string>

namespace weir::runtime {

/// Appends bad records to a JSONL file, one object per record:
/// `{"origin": "path:line", "file": ..., "line": N, "offset": N, "reason": ...,
/// "raw": ...}`. Thread-safe: source subtasks of a job share one queue.
/// The file is created (with parent directories) on construction;
/// writes are flushed on each record so a crash loses none.
class dead_letter_queue {
public:
  /// Throws std::runtime_error naming the path if the file cannot be created.
  /// With `append` (a job resuming from a checkpoint) earlier bad records are
  /// kept; otherwise the file starts empty.
  explicit dead_letter_queue(std::string path, bool append = false);
  ~dead_letter_queue();
  dead_letter_queue(const dead_letter_queue&) = delete;
  dead_letter_queue& operator=(const dead_letter_queue&) = delete;

  /// Throws std::runtime_error if the write fails.
  void write(const bad_record& r);

  const std::string& path() const noexcept { return path_; }

private:
  std::string path_;
  std::FILE* file_ = nullptr;
  std::mutex mutex_;
};

} // namespace weir::runtime
