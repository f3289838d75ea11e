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
#include <string_view>
#include <utility>
#include <vector>

namespace weir {

/// Which kind of source a bad record came from: it decides the origin
/// fields its dead letter carries (`format::append_bad_record_json`).
enum class bad_record_source : std::uint8_t {
  other, ///< an operator or sink, a push source: `origin` and the reason only
  file,  ///< a file: path (`origin`), 1-based line, byte offset
  kafka, ///< a Kafka record: topic, partition, offset, key, timestamp
  http,  ///< an http ingest request: source name, request id, 1-based line
};

/// A record that could not be decoded, with where it came from
/// (docs/concepts/bad-input.md).
struct bad_record {
  bad_record() = default;
  /// A record of `bad_record_source::other` (or a file, setting `source`).
  bad_record(std::string origin_, std::uint64_t line_, std::uint64_t offset_,
             std::string reason_, std::string raw_)
    : origin(std::move(origin_)),
      line(line_),
      offset(offset_),
      reason(std::move(reason_)),
      raw(std::move(raw_)) {}

  std::string origin; ///< file path, "topic/partition", or a description
  std::uint64_t line = 0;   ///< 1-based line number of the record's first line (0 = n/a)
  std::uint64_t offset = 0; ///< byte offset (files) or Kafka offset
  std::string reason;       ///< why it was rejected, e.g. "unterminated quote in agent"
  std::string raw;          ///< the raw text, without the trailing newline
  bad_record_source source = bad_record_source::other;
  std::string topic;                      ///< kafka: the topic
  std::int32_t partition = -1;            ///< kafka: the partition
  std::optional<std::string> key;         ///< kafka: the key; nullopt = none (null)
  std::optional<std::int64_t> timestamp;  ///< kafka: the record's timestamp (ms); nullopt = none
  std::string source_name;                ///< http: the source's name
  std::string request_id;                 ///< http: the request's id
};

/// Called by a reader for every bad record. It may throw to fail the job
/// (`on_bad_record = "fail"`), or count and dead-letter and return.
using bad_record_handler = std::function<void(const bad_record&)>;

/// What a source position counts.
enum class position_unit : std::uint8_t {
  byte_offset,      ///< a file's byte offset ("byte")
  event_number,     ///< a generated source's next event number ("event")
  partition_offset, ///< a partitioned log's next offset, e.g. Kafka ("offset")
};

/// "byte", "event" or "offset".
inline std::string_view to_string(position_unit u) noexcept {
  switch (u) {
    case position_unit::byte_offset: return "byte";
    case position_unit::event_number: return "event";
    case position_unit::partition_offset: return "offset";
  }
  return "?";
}

/// The inverse of `to_string`; nullopt for any other word.
inline std::optional<position_unit> parse_position_unit(std::string_view s) noexcept {
  for (auto u : {position_unit::byte_offset, position_unit::event_number,
                 position_unit::partition_offset})
    if (to_string(u) == s)
      return u;
  return std::nullopt;
}

/// Where a source resumes in one of its splits (Flink's `SourceSplit` with
/// its position): a file's byte offset, a generator's next event number, a
/// Kafka partition's next offset. A reader reports one per split it reads.
struct source_position {
  /// The split: a file's path, "topic/partition"; empty for a reader's only
  /// sequence (a generator subtask's events). No newline.
  std::string split;
  position_unit unit = position_unit::byte_offset;
  std::uint64_t value = 0;
  /// The split was read to its end and is not read again (a file of a
  /// directory source; `value` is where it ended).
  bool finished = false;

  friend bool operator==(const source_position&, const source_position&) = default;
};

/// "byte 1234 of a.log", "event 5000" (for `weir checkpoints show`).
inline std::string describe(const source_position& p) {
  auto out = std::string{to_string(p.unit)} + " " + std::to_string(p.value);
  if (!p.split.empty())
    out += " of " + p.split;
  if (p.finished)
    out += " (finished)";
  return out;
}

/// The value to resume split `split` from, out of `to`: the entry of that
/// split; else, for a reader of one split, the sole entry (a file moved
/// between runs; an entry with an empty split and no unit check comes from a
/// checkpoint of source-state format version 1, which kept one bare value).
/// Throws std::runtime_error naming the split when there is none, or when
/// the entry counts another unit.
inline std::uint64_t select_position(const std::vector<source_position>& to,
                                     std::string_view split, position_unit unit) {
  const source_position* found = nullptr;
  for (const auto& p : to)
    if (p.split == split)
      found = &p;
  if (!found && to.size() == 1)
    found = &to.front();
  if (!found)
    throw std::runtime_error("the checkpoint has no position for split '" + std::string{split}
                             + "'");
  if (found->unit != unit && !(found->split.empty() && to.size() == 1))
    throw std::runtime_error("the checkpoint's position of split '" + std::string{split}
                             + "' counts " + std::string{to_string(found->unit)}
                             + "s, this source counts " + std::string{to_string(unit)} + "s");
  return found->value;
}

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

  /// Where to resume after the records returned so far: one entry per split
  /// the reader reads (a file's byte offset, a generator's next event
  /// number); recorded in checkpoints.
  virtual std::vector<source_position> positions() const = 0;

  /// The value of the first split's position (0 when none): a shorthand for
  /// readers of one split.
  std::uint64_t position() const {
    auto all = positions();
    return all.empty() ? 0 : all.front().value;
  }

  /// Resumes from `positions()` recorded in a checkpoint (see
  /// `select_position`); called after `open` and before the first
  /// `poll_next`. Throws std::runtime_error when the reader cannot resume.
  virtual void seek(const std::vector<source_position>& to) {
    (void) to;
    throw std::runtime_error("this source cannot resume from a position");
  }

  /// A replay-clock advance (processing time, ms) read from the input after
  /// the rows of the batch just returned, and cleared by this call; the source
  /// subtask sends it in-band, in order with the records.
  virtual std::optional<event_time> take_processing_time_advance() {
    return std::nullopt;
  }

  /// Lines of text read so far by a reader of text (a file's lines, its
  /// header, blank and bad lines included; not those skipped to resume from
  /// a checkpoint); nullopt for a reader of anything else (a generator).
  virtual std::optional<std::uint64_t> lines_read() const { return std::nullopt; }

  /// Records the source has yet to read where that is known (Kafka: the
  /// partitions' high watermarks minus the next offsets, Flink's
  /// `pendingRecords`); nullopt elsewhere. Called at most every 100 ms; must
  /// not block (the Kafka reader uses librdkafka's cached watermarks).
  virtual std::optional<std::int64_t> lag() { return std::nullopt; }

  /// After `poll_next` returned a batch of 0 rows: how long the source
  /// subtask may wait before polling again because nothing can be emitted
  /// sooner (a rate-limited generator between batches). 0 = poll again at
  /// once (the default).
  virtual std::chrono::nanoseconds next_poll_delay() const {
    return std::chrono::nanoseconds{0};
  }

  /// True for a reader whose splits are watermark partitions (a file source
  /// reading each file as a partition) once it knows its splits: with none
  /// begun or all finished, its subtask is idle rather than holding the
  /// watermark back.
  virtual bool has_split_partitions() const { return false; }

  /// For such a reader: the split the batch just returned came from.
  /// nullopt (the default): partitions come from the source's partition_by
  /// field, or there is one.
  virtual std::optional<std::string> batch_split() const { return std::nullopt; }

  /// Splits begun (they hold back the watermark until they produce or go
  /// idle) and finished (they no longer do) since the last call; for readers
  /// whose splits are watermark partitions.
  struct split_changes {
    std::vector<std::string> begun;
    std::vector<std::string> finished;
  };
  virtual split_changes take_split_changes() { return {}; }

  /// A reader of several partitions with a watermark each (Kafka;
  /// docs/concepts/event-time.md): the partitions it reads now, by name. The source
  /// subtask declares each new one to its watermark generator (an unseen partition holds
  /// the watermark back until it produces or goes idle) and forgets each that
  /// left (a bounded partition that reached its end). An empty list marks the
  /// source idle (a subtask that owns no partition). Null (the default): the
  /// reader declares none (one partition, or a `partition_by` field).
  virtual const std::vector<std::string>* partitions() const { return nullptr; }

  /// Rows `[previous run's end, end)` of the batch just returned came from
  /// partition `*partition` (a name that stays valid while the reader lives).
  struct partition_run {
    std::size_t end = 0;
    const std::string* partition = nullptr;
  };

  /// With `partitions()`: the batch just returned, as runs of rows by
  /// partition, covering every row in order; the subtask feeds each run's
  /// largest timestamp to that partition's watermark generator.
  virtual const std::vector<partition_run>* partition_runs() const { return nullptr; }

  /// State of the reader beyond its positions, recorded with them in every
  /// checkpoint (source state format version 4): opaque bytes, empty = none
  /// (every reader but the http source, which keeps the idempotency keys of
  /// the requests it has taken). Called right before `positions()`.
  virtual std::string snapshot_state() const { return {}; }

  /// Restores what `snapshot_state` returned (empty for a checkpoint without
  /// it); called after `open` and right before `seek`.
  virtual void restore_state(std::string_view state) { (void) state; }

  /// Checkpoint `checkpoint_id` recorded `positions()` just now (called right
  /// after it, on the same thread).
  virtual void on_checkpoint(std::uint64_t checkpoint_id) { (void) checkpoint_id; }

  /// Checkpoint `checkpoint_id` is complete (durable): a reader may tell its
  /// system what it covered (Kafka commits its offsets to the consumer
  /// group). Flink's `SourceReader::notifyCheckpointComplete`.
  virtual void notify_checkpoint_complete(std::uint64_t checkpoint_id) {
    (void) checkpoint_id;
  }
};

using source_reader_ptr = std::unique_ptr<source_reader>;

} // namespace weir
