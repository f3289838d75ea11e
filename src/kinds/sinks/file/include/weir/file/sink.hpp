// SPDX-License-Identifier: Apache-2.0
#pragma once
// The file sink (`type = "file"`): its spec `weir::file::sink`
// and `weir::file::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/file/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/format/format.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <string>

namespace weir::file {

/// A file sink; parallelism is always 1 (one output file).
struct sink {
  std::string path;
  format::format_kind format = format::format_kind::jsonl;
  /// Without checkpoints: written output reaches the file at least this
  /// often (0: after every batch).
  std::chrono::milliseconds flush_interval{1000};
  /// Timestamp fields (window_start and window_end too) as integer ms or
  /// ISO-8601 UTC text.
  format::timestamp_format timestamp_format = format::timestamp_format::epoch_ms;
};

/// Adds a file sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, `apache_combined` (read-only), an empty path. Parallelism 1;
/// exactly once (`make_transactional_file_sink`) when the job checkpoints
/// exactly once, else at least once (`make_file_sink`).
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::file

namespace weir {

/// Makes a sink operator that writes every row it receives to the file
/// `path`, encoded as `format` (jsonl or csv, see `format::make_encoder`),
/// timestamp fields as `ts`.
///
/// The output is written under the in-progress name `<path>.inprogress`
/// and renamed to `path` only by `finish()` (the input ended) or `stop()`
/// (the job was stopped gracefully), as Flink's file sink marks its part
/// files: after a failure only the in-progress file is there, recognisably
/// incomplete. A `path` that exists and is not a regular file (a FIFO,
/// /dev/stdout) is written directly.
///
/// `open()` creates missing parent directories, removes an earlier output
/// at `path` (a new run replaces it), truncates the in-progress file and
/// writes the header (CSV: the field names of `input_schema`, or of the
/// first batch when `input_schema` is null). `process_batch` encodes rows
/// into a buffer that is written once it exceeds 1 MiB or `flush_interval`
/// has passed since the last flush (then flushed to the OS, so `tail -f`
/// sees it); `next_processing_timer()` asks for a wake-up then, so output
/// that waits for no further batch is flushed on time too (under the wall
/// clock). `finish()` and `stop()` write the rest, close and rename. The
/// operator emits nothing downstream (neither batches nor watermarks). Any
/// open, write or rename error throws
/// `std::runtime_error("cannot write <path>: <strerror>")`, failing the
/// subtask. Output is at-least-once: rows are written as they arrive (for
/// exactly-once output see `make_transactional_file_sink`).
///
/// Errors: `errc::invalid_argument` for `apache_combined`, which is a
/// read-only format. The path itself is only checked in `open()`.
[[nodiscard]] expected<stream_operator_ptr>
make_file_sink(std::string path, format::format_kind format,
               schema_ptr input_schema = nullptr,
               std::chrono::milliseconds flush_interval = std::chrono::seconds{1},
               format::timestamp_format ts = format::timestamp_format::epoch_ms);

/// The in-progress name `make_file_sink` writes `path` under.
std::string in_progress_path(const std::string& path);

/// Makes a sink operator that writes rows to stdout (fwrite) in `format`,
/// jsonl or csv, the header as for `make_file_sink`; each batch is written
/// and flushed as it arrives. Precondition: `format` is not apache_combined
/// (then the sink falls back to jsonl). Emits nothing downstream.
stream_operator_ptr make_stdout_sink(format::format_kind format,
                                     schema_ptr input_schema = nullptr,
                                     format::timestamp_format ts = format::timestamp_format::epoch_ms);

} // namespace weir
