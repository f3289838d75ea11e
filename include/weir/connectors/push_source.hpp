// SPDX-License-Identifier: Apache-2.0
#pragma once
// The push source (src/api/push_source.cpp): records the host program's
// threads hand to a running job, through a bounded queue.

#include "weir/api/job.hpp"
#include "weir/api/source_options.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/format/format.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace weir::push {

/// `push::add_source` (`job::from`): a source fed by the host program (an embedding service)
/// rather than read from a file or a broker.
struct source {
  /// Fields and types of every record (required).
  schema_ptr schema;
  /// How pushed text is decoded: jsonl (one object per `push`) or csv (one
  /// line, fields by position: `decoder.csv_header` is ignored).
  format::format_kind format = format::format_kind::jsonl;
  /// A timestamp or int64 field giving each record's event time; empty:
  /// no event time.
  std::string event_time_field;
  watermark_options watermark;
  /// Records the queue holds before `push` blocks and `try_push` refuses
  /// (backpressure). At least 1.
  std::size_t capacity = 10000;
};

/// Adds a push source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, a missing schema, a format other than jsonl or csv, or an
/// event-time field that is absent or not a timestamp/int64. Parallelism 1;
/// the host's threads write records into the returned handle while the job
/// runs; event time from `spec.event_time_field` with the usual watermark
/// generator.
[[nodiscard]] expected<push_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::push

namespace weir {

/// The thread-safe end of a push source that the host's threads write into
/// (Flink has no direct equivalent; it plays the part of a Kafka topic that
/// only this job reads).
///
/// Records are numbered in push order from 0 (their *sequence number*,
/// returned by `push`). A checkpoint covers a prefix of that sequence: the
/// records the source had taken from the queue when checkpoint n's barrier
/// left it, which precede the barrier downstream and so are in the
/// checkpoint (exactly-once); records still queued are not.
/// `on_checkpoint_complete` reports, for each completed checkpoint, the
/// sequence number up to which (exclusive) it covers the input.
///
/// Restarts. Inside one process (a restart strategy) the handle keeps every
/// record taken since the last completed checkpoint and replays them after
/// the restore: nothing is lost or doubled, and the host does nothing.
/// Across processes (a new `execute()` resuming from a checkpoint, or a
/// savepoint) the handle is new and holds none of them: the source restores
/// at the checkpoint's sequence number S, calls `on_restore(S)`, and numbers
/// the records pushed from then on from S; the host re-pushes its records
/// from the S-th on (it knows S from what `on_checkpoint_complete` told it
/// before the crash, or from `on_restore`). Records pushed before the
/// restore (before `execute()` started) are numbered from S too.
///
/// Every member may be called from any thread, concurrently.
class push_source_handle {
public:
  explicit push_source_handle(std::size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  /// Queues one record as text (a JSON object for jsonl, one CSV line,
  /// without a newline), waiting while the queue holds `capacity` records
  /// (backpressure: the job is behind). Returns its sequence number, or
  /// nullopt once the input is closed. A record that does not decode is a
  /// bad record of the source (`on_bad_record`).
  std::optional<std::uint64_t> push(std::string record) {
    return push_item(item{std::move(record), {}, false}, true);
  }
  /// As `push(std::string)` for a record given as values in schema order (a
  /// value of another type than its field's is a bad record; fewer values
  /// leave the rest null).
  std::optional<std::uint64_t> push(std::vector<value> row) {
    return push_item(item{{}, std::move(row), true}, true);
  }
  /// As `push`, but returns nullopt at once instead of waiting when the
  /// queue is full (or the input is closed).
  std::optional<std::uint64_t> try_push(std::string record) {
    return push_item(item{std::move(record), {}, false}, false);
  }
  std::optional<std::uint64_t> try_push(std::vector<value> row) {
    return push_item(item{{}, std::move(row), true}, false);
  }

  /// Ends the input: the source emits what is queued, then ends (a bounded
  /// input: the final watermark fires every window, and a job whose sources
  /// have all ended finishes). Later pushes return nullopt; blocked pushes
  /// wake and return nullopt.
  void close() {
    std::lock_guard lock{mutex_};
    closed_ = true;
    not_full_.notify_all();
  }

  bool closed() const {
    std::lock_guard lock{mutex_};
    return closed_;
  }

  /// Records queued and not yet taken by the source.
  std::size_t queued() const {
    std::lock_guard lock{mutex_};
    return static_cast<std::size_t>(base_ + items_.size() - cursor_);
  }

  /// The sequence number the next pushed record gets.
  std::uint64_t next_sequence() const {
    std::lock_guard lock{mutex_};
    return base_ + items_.size();
  }

  /// Called (on the source subtask's thread) when checkpoint `id` is
  /// complete with the sequence number `covered`: records `[0, covered)`
  /// are in it. Must be quick and must not push (it may block the source).
  void on_checkpoint_complete(std::function<void(std::uint64_t id, std::uint64_t covered)> fn) {
    std::lock_guard lock{mutex_};
    on_complete_ = std::move(fn);
  }

  /// Called (on the source subtask's thread) when the source restores from
  /// a checkpoint or savepoint at sequence number `from` (see the class
  /// comment). Same rules as `on_checkpoint_complete`.
  void on_restore(std::function<void(std::uint64_t from)> fn) {
    std::lock_guard lock{mutex_};
    on_restore_ = std::move(fn);
  }

  // -- the source's side (src/api/push_source.cpp) -----------------------------

  /// One queued record: text, or values.
  struct item {
    std::string text;
    std::vector<value> row;
    bool is_row = false;
  };

  /// Moves up to `max` queued records into `out` (their first sequence number
  /// is returned). With `retain`, keeps them for a replay until a checkpoint
  /// covering them completes. Wakes blocked pushes.
  std::uint64_t take(std::size_t max, bool retain, std::vector<item>& out);
  /// The queue is closed and empty (the source ends).
  bool exhausted() const;
  /// The source restores at sequence number `seq` (see the class comment);
  /// `announce`: call the `on_restore` hook.
  void rewind(std::uint64_t seq, bool announce = true);
  /// Checkpoint `id` completed covering `[0, covered)`: drops the retained
  /// records before `covered` and tells the host.
  void complete(std::uint64_t id, std::uint64_t covered);
  /// The next sequence number the source takes.
  std::uint64_t cursor() const {
    std::lock_guard lock{mutex_};
    return cursor_;
  }

private:
  std::optional<std::uint64_t> push_item(item it, bool wait);

  mutable std::mutex mutex_;
  std::condition_variable not_full_;
  std::size_t capacity_;
  bool closed_ = false;
  /// `items_[i]` has sequence number `base_ + i`. Those before `cursor_`
  /// were taken by the source and are kept (with checkpoints) until a
  /// completed checkpoint covers them; those from `cursor_` on are queued.
  std::deque<item> items_;
  std::uint64_t base_ = 0;
  std::uint64_t cursor_ = 0;
  std::function<void(std::uint64_t, std::uint64_t)> on_complete_;
  std::function<void(std::uint64_t)> on_restore_;
};

using push_source_handle_ptr = std::shared_ptr<push_source_handle>;

} // namespace weir
