// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/format/format.hpp"
#include "weir/operators/stream_operator.hpp"

#include <string>

namespace weir {

/// A file sink; parallelism is always 1 (one output file).
struct file_sink_spec {
  std::string path;
  format::format_kind format = format::format_kind::jsonl;
  /// Timestamp fields (window_start and window_end too) as integer ms or
  /// ISO-8601 UTC text.
  format::timestamp_format timestamp_format = format::timestamp_format::epoch_ms;
};

/// The stdout sink's options (`data_stream::print`).
struct stdout_sink_spec {
  format::timestamp_format timestamp_format = format::timestamp_format::epoch_ms;
};

/// Makes a sink operator that writes every row it receives to the file
/// `path`, encoded as `format` (jsonl or csv, see `format::make_encoder`),
/// timestamp fields as `ts`.
///
/// `open()` creates missing parent directories, truncates the file and writes
/// the header (CSV: the field names of `input_schema`, or of the first batch
/// when `input_schema` is null). `process_batch` encodes rows into a buffer
/// that is written once it exceeds 1 MiB; `finish()` writes the rest and
/// closes the file. The operator emits nothing downstream (neither batches
/// nor watermarks). Any open or write error throws
/// `std::runtime_error("cannot write <path>: <strerror>")`, failing the
/// subtask. Output is at-least-once: rows are written as they arrive (for
/// exactly-once output see `make_transactional_file_sink`).
///
/// Errors: `errc::invalid_argument` for `apache_combined`, which is a
/// read-only format. The path itself is only checked in `open()`.
[[nodiscard]] expected<stream_operator_ptr>
make_file_sink(std::string path, format::format_kind format,
               schema_ptr input_schema = nullptr,
               format::timestamp_format ts = format::timestamp_format::epoch_ms);

/// Makes a sink operator that writes rows to stdout (fwrite) in `format`,
/// jsonl or csv, the header as for `make_file_sink`; each batch is written
/// and flushed as it arrives. Precondition: `format` is not apache_combined
/// (then the sink falls back to jsonl). Emits nothing downstream.
stream_operator_ptr make_stdout_sink(format::format_kind format,
                                     schema_ptr input_schema = nullptr,
                                     format::timestamp_format ts = format::timestamp_format::epoch_ms);

} // namespace weir
