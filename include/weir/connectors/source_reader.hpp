// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>

namespace weir {

/// A record that could not be decoded, with where it came from (DESIGN.md §8).
struct bad_record {
  std::string origin; ///< file path, or topic/partition
  std::uint64_t line = 0;   ///< 1-based line number of the record's first line (0 = n/a)
  std::uint64_t offset = 0; ///< byte offset (files) or Kafka offset
  std::string reason;       ///< why it was rejected, e.g. "unterminated quote in agent"
  std::string raw;          ///< the raw text, without the trailing newline
};

/// Called by a reader for every bad record. It may throw to fail the job
/// (`on_bad_record = "fail"`), or count and dead-letter and return.
using bad_record_handler = std::function<void(const bad_record&)>;

/// Reads one split of a source (a file, a Kafka partition) into batches; the
/// source subtask polls it and generates watermarks from the timestamps.
/// Flink's `SourceReader`, pull-based and single-threaded.
class source_reader {
public:
  virtual ~source_reader() = default;

  virtual void open(const operator_context& ctx) { (void) ctx; }

  /// Schema of every batch this reader returns.
  virtual const schema_ptr& output_schema() const = 0;

  /// Returns the next batch of at most `max_rows` rows, with `timestamps` set
  /// when the source has an event-time field. The batch may have 0 rows when
  /// every record read was bad. Returns nullptr once the input is exhausted.
  /// Throws std::runtime_error on I/O errors (the job fails naming the source).
  virtual record_batch_ptr poll_next(std::size_t max_rows) = 0;

  /// Position to resume from after the records returned so far (byte offset
  /// for files); recorded in checkpoints.
  virtual std::uint64_t position() const = 0;

  /// Resumes from a `position()` recorded in a checkpoint; called after
  /// `open` and before the first `poll_next`. Throws std::runtime_error when
  /// the reader cannot resume.
  virtual void seek(std::uint64_t position) {
    (void) position;
    throw std::runtime_error("this source cannot resume from a position");
  }

  /// A replay-clock advance (processing time, ms) read from the input after
  /// the rows of the batch just returned, and cleared by this call; the source
  /// subtask sends it in-band, in order with the records.
  virtual std::optional<event_time> take_processing_time_advance() {
    return std::nullopt;
  }

  /// After `poll_next` returned a batch of 0 rows: how long the source
  /// subtask may wait before polling again because nothing can be emitted
  /// sooner (a rate-limited generator between batches). 0 = poll again at
  /// once (the default).
  virtual std::chrono::nanoseconds next_poll_delay() const {
    return std::chrono::nanoseconds{0};
  }
};

using source_reader_ptr = std::unique_ptr<source_reader>;

} // namespace weir
