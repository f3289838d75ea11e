// SPDX-License-Identifier: Apache-2.0
#pragma once
// One file read in parallel: byte-range splits cut at line boundaries, each a
// partition with its own watermark, spread over the source's subtasks
// (Flink's `FileSource` splits of a splittable format).

#include "weir/format/format.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::format {

/// Whether a file source splits one file (`split = "..."`).
enum class file_split_mode : std::uint8_t {
  automatic, ///< jsonl and apache_combined split when the source sets parallelism > 1
  lines,     ///< split at line boundaries at the source's parallelism (csv too)
  none,      ///< one reader in file order (parallelism 1)
};

/// The nominal byte range of one split: it holds the lines that *start* in
/// `(begin, end]` (`[0, end]` for the first split), so it begins just after
/// the first newline at or after `begin` and ends at the first newline at or
/// after `end`. Consecutive splits share their bound, so every line belongs
/// to exactly one split, whatever the bounds.
struct file_split {
  std::uint64_t begin = 0;
  std::uint64_t end = 0;

  /// The split's name in checkpoints and watermark partitions:
  /// "<path>@<begin>-<end>".
  std::string name(const std::string& path) const;

  friend bool operator==(const file_split&, const file_split&) = default;
};

/// The split a reader of one file reads (`make_file_split_source_reader`).
struct file_split_range {
  file_split range;
  bool first = false; ///< the file's first split: its lines start in [0, end]
  std::string name;   ///< its position's split name (`file_split::name`)
};

/// Makes a reader over one split of a file: as `make_file_source_reader`,
/// but only the lines that start in `(range.begin, range.end]` (`[0, end]`
/// for the first split) are read. It seeks to its first line (or to
/// `opts.start_offset`, its resume point) instead of splitting the records
/// before it, reads a CSV header from the file's start, counts the lines
/// before it only when a bad record needs its line number, names its
/// position `split.name`, and throws std::runtime_error from `poll_next` on a
/// record spanning several lines. Errors: those of `make_file_source_reader`,
/// and `errc::io_error` when the file is not a regular file.
[[nodiscard]] expected<source_reader_ptr>
make_file_split_source_reader(const file_source_options& opts, const file_split_range& split,
                              bad_record_handler on_bad);

/// The splits of a file of `size` bytes: `count` splits of equal nominal
/// size (at least 1; some may hold no line when the file is short), or, when
/// `split_size` > 0, as many splits of `split_size` bytes as cover the file
/// (at least one). The last split's `end` is `size`.
std::vector<file_split> plan_file_splits(std::uint64_t size, std::size_t count,
                                         std::uint64_t split_size = 0);

/// The subtask of `parallelism` that reads split number `index` (round robin).
inline std::size_t split_subtask(std::size_t index, std::size_t parallelism) noexcept {
  return parallelism == 0 ? 0 : index % parallelism;
}

/// Options of a reader over the splits of one file.
struct file_split_options {
  file_source_options file;     ///< the file (start_offset and split are set per split)
  std::size_t count = 1;        ///< splits when split_size is 0
  std::uint64_t split_size = 0; ///< bytes per split; 0: `count` splits
  std::size_t subtask = 0;
  std::size_t parallelism = 1;
};

/// Makes a reader over the splits of `opts.file.path` that `split_subtask`
/// gives this subtask, planned from the file's size when the reader is made
/// (`plan_file_splits`). The splits are read a batch from each in turn, each
/// reported as a split (`batch_split`, `take_split_changes`) with its own
/// watermark. A CSV header is read from the file's start by every split.
/// `positions()`: one per split, the byte offset of its next record (finished
/// ones where they ended); bad records carry their exact line, counted on
/// demand from the file's start. A record spanning several lines (a quoted
/// CSV field holding a newline) fails the job: the split bounds may lie inside
/// it. Errors: `errc::io_error` when the file cannot be opened or is not a
/// regular file; `errc::invalid_argument` for a decoder that cannot be made.
/// `seek` throws when the checkpoint's splits are not this file's (its size
/// changed, or another split_size).
[[nodiscard]] expected<source_reader_ptr> make_file_split_reader(file_split_options opts,
                                                                 bad_record_handler on_bad);

} // namespace weir::format
