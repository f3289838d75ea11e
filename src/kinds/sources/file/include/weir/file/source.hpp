// SPDX-License-Identifier: Apache-2.0
#pragma once
// The file source (`type = "file"`): its spec `weir::file::source`
// and `weir::file::add_source`, which `job::from` calls (src/kinds/sources/file/).

#include "weir/api/job.hpp"
#include "weir/api/source_options.hpp"
#include "weir/format/file_set.hpp"
#include "weir/format/file_split.hpp"
#include "weir/format/format.hpp"

#include <chrono>

#include <string>
#include <vector>

namespace weir::file {

/// A file source: one split per file (or byte-range splits of one file), read in chunks.
struct source {
  /// A file, a directory (its files, not its subdirectories; names starting
  /// with '.' or '_' left out) or a glob: see format::list_files.
  std::string path;
  /// A directory or glob: its files as one stream in name order, or each a
  /// partition with its own watermark (parallelism may then exceed 1).
  format::file_set_mode files = format::file_set_mode::sequential;
  /// A directory or glob: look for new files this often (0: bounded).
  std::chrono::milliseconds monitor_interval{0};
  /// One file: read in parallel as byte-range splits cut at line boundaries,
  /// each a partition with its own watermark (format/file_split.hpp).
  /// `automatic`: jsonl and apache_combined split when the source's own
  /// parallelism (`operator_options::parallelism`) is above 1 (csv then is an
  /// error: a quoted field may hold a newline); `lines`: split at the
  /// source's parallelism, the job's default included, csv too; `none`: one
  /// reader in file order.
  format::file_split_mode split = format::file_split_mode::automatic;
  /// One file split: bytes per split (the splits then spread round robin
  /// over the subtasks); 0: one split per subtask.
  std::uint64_t split_size = 0;
  format::decoder_options decoder;
  std::string event_time_field; ///< empty: records carry no event time
  watermark_options watermark;
  /// Splits the file into partitions by this field's value, each with its
  /// own watermark generator and idleness, as Kafka partitions behave.
  std::string partition_by;
  /// The partitions' values when known up front: a declared partition holds
  /// the watermark back until it produces (or goes idle). Empty: discovered.
  std::vector<std::string> partitions;
  /// Replay clock: processing time (ms) is taken from this int64/timestamp
  /// field of each record (and from `{"control": "advance_processing_time",
  /// "proc_time": N}` lines in jsonl), carried in-band to every operator.
  std::string processing_time_field;
  /// Rows per second over all subtasks (each reads its share); 0: as fast as
  /// possible. Replays a file at a steady pace (a demo, a load test, a job
  /// that must outlive a few checkpoints); a batch goes out when full or when
  /// its oldest row has waited the job's buffer_timeout. Flink's
  /// `RateLimiterStrategy` (FLIP-238).
  double rate = 0;
};

/// Adds a file source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, a missing path or schema, an event-time field that is absent or not a
/// timestamp/int64, monitor_interval on a single file, split options on a
/// directory or glob, csv split by lines without `split = lines`.
[[nodiscard]] expected<data_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::file

