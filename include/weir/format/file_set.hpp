// SPDX-License-Identifier: Apache-2.0
#pragma once
// A file source over many files: a directory or a glob, read as one stream in
// name order or each file as a partition, optionally watched for new files
// (Flink's `FileSource` with `monitorContinuously`).

#include "weir/format/format.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace weir::format {

/// How a file source reads the files its path names (`files = "..."`).
enum class file_set_mode : std::uint8_t {
  sequential,  ///< one stream: the files one after another, in name order
  partitioned, ///< each file a partition with its own watermark, spread over subtasks
};

/// True when the last component of `path` holds a glob character (`*`, `?`, `[`)
/// or any component does.
bool is_glob(std::string_view path) noexcept;

/// The files `path` names, in name (byte) order: a directory's regular files
/// (not its subdirectories, not names starting with '.' or '_', as Flink's
/// default file filter), or the regular files a glob matches (glob(3): `*`,
/// `?`, `[..]` in any component; names starting with '.' or '_' only when
/// the pattern's last component starts with that character too).
/// Names holding a newline are left out (they cannot be a checkpoint split).
/// Errors: `errc::io_error` when the directory cannot be listed or the glob
/// fails other than by matching nothing.
[[nodiscard]] expected<std::vector<std::string>> list_files(const std::string& path);

/// The subtask of `parallelism` that reads `file` (its path below the
/// directory, or below a glob's directory part) in partitioned mode: by a
/// hash, so every subtask decides alone, alike, whenever it finds the file.
std::size_t file_subtask(std::string_view file, std::size_t parallelism) noexcept;

/// Options of a reader over a set of files.
struct file_set_options {
  std::string path;         ///< a directory or a glob
  file_source_options file; ///< for every file (path and start_offset are set per file)
  file_set_mode mode = file_set_mode::sequential;
  /// How often to look for new files; 0: the files found at the start only
  /// (bounded). Files are immutable once seen: a file is read to the end it
  /// has when the reader reaches it, and what is appended later is ignored.
  std::chrono::milliseconds monitor_interval{0};
  std::size_t subtask = 0;     ///< partitioned: this reader's subtask
  std::size_t parallelism = 1; ///< partitioned: the source's subtasks
};

/// Makes a reader over the files `opts.path` names (see `list_files`).
/// Sequential: one file at a time, in name order (a restored file being read
/// first); partitioned: the files `file_subtask` gives this subtask, read a
/// batch from each in turn (at most 256 open at once), each reported as a
/// split (`batch_split`, `take_split_changes`) with its own watermark. New
/// files found while monitoring are read in name order among the unread ones.
/// `positions()`: one per file begun (byte offset) or finished (where it
/// ended, `finished`); files not begun are found again on restore. Bad
/// records name their file. Errors: `errc::invalid_argument` for a decoder
/// that cannot be made. Listing and read errors throw from `poll_next`.
[[nodiscard]] expected<source_reader_ptr> make_file_set_reader(file_set_options opts,
                                                               bad_record_handler on_bad);

} // namespace weir::format
