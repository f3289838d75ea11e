// SPDX-License-Identifier: Apache-2.0
#pragma once
// The http source (src/kinds/sources/http/): records POSTed to `weir serve`
// (`POST /ingest/{source}`), through a bounded queue, acknowledged when
// accepted or when a completed checkpoint covers them.

#include "weir/api/job.hpp"
#include "weir/api/source_options.hpp"
#include "weir/connectors/source_reader.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/format/format.hpp"

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir {

/// When `POST /ingest/{source}` answers.
enum class http_ack {
  /// 202 once the records are in the source's queue (at most once across a
  /// crash: queued records not yet covered by a checkpoint are lost with the
  /// process; an in-process restart replays them).
  accepted,
  /// 202 once a *completed* checkpoint covers the records (they are then in
  /// the output of every exactly-once sink, or will be after its commit).
  /// Needs checkpoints. With an `Idempotency-Key` and a client that retries
  /// on any error, exactly once end to end (see `http_source_handle`).
  checkpoint,
};

} // namespace weir

namespace weir::http {

/// `http::add_source` (`job::from`): a source fed by HTTP requests (`weir serve`, or a host
/// running `weir::server::http_server`).
struct source {
  /// Decoding of each body line: `kind` jsonl (one JSON object per line) or
  /// csv (one record per line, fields by position unless `csv_header`:
  /// then each body's first line names the columns); `schema` required.
  format::decoder_options decoder;
  /// A timestamp or int64 field giving each record's event time; empty: none.
  std::string event_time_field;
  watermark_options watermark;
  http_ack ack = http_ack::accepted;
  /// Largest body (bytes) a request may have; larger answers 413.
  std::size_t max_body = std::size_t{16} << 20;
  /// Records queued and not yet taken by the source, at most (the queue
  /// bound): a request that does not fit answers 429 with `Retry-After`
  /// (a request is queued whole or not at all; one request larger than the
  /// bound is queued only into an empty queue). At least 1.
  std::size_t max_queued_records = 100'000;
  /// How long an `ack = checkpoint` request waits for a completed
  /// checkpoint before answering 503 (its records may still be committed
  /// later: a retry with the same key is then answered 200).
  std::chrono::milliseconds ack_timeout{30'000};
  /// `Retry-After` of a 429 or 503 answer, rounded up to whole seconds.
  std::chrono::milliseconds retry_after{1000};
  /// Idempotency keys of covered requests kept (oldest dropped first): a
  /// retry whose key was dropped is ingested again.
  std::size_t idempotency_keys = 10'000;
};

/// Adds a http source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, a missing schema, a format other than jsonl or csv,
/// an event-time field that is absent or not a timestamp/int64, or
/// `ack = checkpoint` without checkpoints. Parallelism 1; `weir serve` (or
/// a host's `server::http_server`) hands it the bodies POSTed to
/// `/ingest/{name}`.
[[nodiscard]] expected<data_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::http

namespace weir {

/// What `http_source_handle::ingest` did with one request.
struct ingest_result {
  enum class outcome {
    accepted,      ///< queued (ack = accepted), or covered (ack = checkpoint): 202
    duplicate,     ///< its idempotency key was ingested before: 200, nothing queued
    bad_body,      ///< not the format at all, empty, or a bad record under on_bad_record = "fail": 400
    too_large,     ///< over max_body: 413
    queue_full,    ///< the queue lacks room: 429
    not_running,   ///< the job is starting, restoring, restarting or over: 503
    ack_timeout,   ///< ack = checkpoint and no checkpoint covered it in time: 503
  };
  outcome what = outcome::accepted;
  std::string request_id;  ///< the Idempotency-Key, or one made up ("r-<hex>-<n>")
  std::uint64_t accepted = 0; ///< records decoded and queued
  std::uint64_t bad = 0;      ///< records that did not decode
  struct bad_example {
    std::uint64_t line = 0; ///< 1-based line of the body
    std::string reason;
  };
  std::vector<bad_example> bad_examples; ///< the first 10
  /// ack = checkpoint: the completed checkpoint that covered the records.
  std::optional<std::uint64_t> checkpoint_id;
  std::string message; ///< why, for the refusals
};

/// The thread-safe end of an http source that the HTTP server (or a host)
/// hands request bodies to. Flink has no HTTP source; it plays the part of a
/// Kafka topic that only this job reads, with the producer's acks.
///
/// Records are numbered in queue order from the source's restored position
/// (their sequence numbers, as `push_source_handle`'s); a request's records
/// are consecutive and the source takes a request whole, so a checkpoint
/// barrier never falls inside a request: a completed checkpoint covers every
/// record of a request or none.
///
/// Exactly once with `ack = checkpoint`. A client sends each request with
/// an `Idempotency-Key` and retries it with the same key on any error or
/// lost connection until it gets a 2xx. The source keeps the keys of the
/// requests it has taken in its checkpointed state (with their counts), so:
/// - a retry of a request some completed checkpoint covers (the answer was
///   lost, the server crashed after the checkpoint) finds its key in the
///   restored or live state and is answered 200 `duplicate` without being
///   queued again;
/// - a retry of a request whose earlier attempt no completed checkpoint
///   covers (the process crashed first) finds no key, since a restore
///   returns to that checkpoint's state, whose records and keys both leave
///   the attempt out; it is ingested again, once;
/// - a retry arriving while the earlier attempt is still queued or awaiting
///   its checkpoint in this process waits for that attempt instead of
///   queueing a second copy.
/// So every acknowledged request is in the output once, and an
/// unacknowledged one at most once. Keys are kept for the latest
/// `idempotency_keys` requests; a request without a key is ingested on
/// every attempt (at least once under retries).
///
/// Every member may be called from any thread, concurrently.
class http_source_handle {
public:
  http_source_handle(std::string name, http::source spec);

  const std::string& name() const noexcept { return name_; }
  const http::source& spec() const noexcept { return spec_; }

  /// Decodes `body` and queues its records whole, then returns (ack =
  /// accepted) or waits until a completed checkpoint covers them (ack =
  /// checkpoint), the job stops, or `ack_timeout`. `idempotency_key`: empty,
  /// or 1 to 200 characters of printable ASCII without spaces (else
  /// bad_body). Bad records are counted in the result; under on_bad_record
  /// = "fail" a body with one is refused whole (bad_body) and the job
  /// keeps running, else the source reports them when it takes the request
  /// (skipped or dead-lettered with origin `http source 'NAME' request ID`
  /// and the body's line).
  ingest_result ingest(std::string_view body, const std::string& idempotency_key = {});

  /// Records queued and not yet taken.
  std::size_t queued() const;
  /// The source subtask reads (open and restored): requests are accepted.
  bool ready() const;
  /// Whether a server or host feeds this source; a job whose http source
  /// is not attached fails at start (`weir run` has no HTTP server).
  bool attached() const;
  void attach();

  /// Ends the input for good (the job is over): pending requests answer
  /// not_running, later ones too.
  void close();
  /// The server is stopping: requests are refused (503) from now on, while
  /// the source goes on taking what was accepted, so that a graceful stop
  /// processes every record answered 202 (`queued()` reaches 0).
  void stop_intake();

  // -- the source's side (src/kinds/sources/http/http_source.cpp) ------------
  //
  // Sequence numbers count requests: the source's position is the number of
  // requests taken (its checkpoints list it as "event N").

  struct entry {
    std::uint64_t first = 0; ///< the request's sequence number
    record_batch_ptr batch;  ///< its good records
    std::vector<bad_record> bad;
    std::string key;         ///< idempotency key, or empty
  };
  /// A reader opens (`policy`: the job's on_bad_record; `retain`: keep taken
  /// requests until covered, for a replay): not ready until its first take.
  void reader_opened(bad_record_policy policy, bool retain);
  /// The token of the reader opened last; `reader_closed(token)` by that
  /// reader (a restart, the end) makes the handle not ready.
  std::uint64_t reader_token() const;
  void reader_closed(std::uint64_t token);
  /// Takes whole requests, at least one if any is queued and then as long
  /// as the rows stay within `max_rows`; sets `cursor` to the position after
  /// them. Makes the handle ready.
  std::vector<entry> take(std::size_t max_rows, std::uint64_t& cursor);
  /// The source restores at sequence number `seq`, with the keys of
  /// `keys_state` (what `snapshot_keys` wrote). Throws std::runtime_error on
  /// a malformed state.
  void restore(std::uint64_t seq, std::string_view keys_state);
  /// The idempotency keys of the requests taken so far (the source's
  /// state), one line each: "<end> <accepted> <bad> <key>".
  std::string snapshot_keys() const;
  /// The next sequence number the source takes.
  std::uint64_t cursor() const {
    std::lock_guard lock{mutex_};
    return cursor_;
  }
  /// Checkpoint `id` completed covering the requests before `covered`:
  /// answers those waiting for it, drops what no replay needs.
  void complete(std::uint64_t id, std::uint64_t covered);
  /// Input closed and everything taken.
  bool exhausted() const;

private:
  struct key_info {
    std::uint64_t end = 0; ///< the request's sequence number + 1
    std::uint64_t accepted = 0, bad = 0;
    bool taken = false;    ///< by the source (in the snapshots from then on)
  };
  /// Waits (lock held) until `end` is covered, the handle closes, a restore
  /// drops the request, or `ack_timeout`; fills `r` accordingly.
  void await_cover(std::unique_lock<std::mutex>& lock, std::uint64_t end,
                   std::uint64_t generation, ingest_result& r);
  void evict_keys();

  std::string name_;
  http::source spec_;
  std::string id_prefix_;
  mutable std::mutex mutex_;
  std::condition_variable progress_;
  bool closed_ = false;
  bool intake_stopped_ = false; ///< stop_intake(): the server is stopping
  bool attached_ = false;
  bool ready_ = false;
  bool retain_ = false;
  bad_record_policy policy_ = bad_record_policy::fail;
  std::uint64_t reader_token_ = 0;
  std::uint64_t next_request_ = 0;
  /// `entries_[i]` has sequence number `base_ + i`; those before `cursor_`
  /// were taken and are kept (retain_) until a completed checkpoint covers
  /// them.
  std::deque<entry> entries_;
  std::uint64_t base_ = 0;
  std::uint64_t cursor_ = 0;
  std::size_t queued_records_ = 0; ///< good records of the entries from cursor_ on
  std::uint64_t covered_ = 0;      ///< the last completed checkpoint covers [.., covered_)
  std::uint64_t covered_checkpoint_ = 0;
  /// Bumped when a restore drops queued requests (they are answered 503).
  std::uint64_t generation_ = 0;
  std::map<std::string, key_info, std::less<>> keys_;
  /// Taken keys with their end, oldest first (eviction, snapshot order).
  std::deque<std::pair<std::string, std::uint64_t>> key_order_;
};

using http_source_handle_ptr = std::shared_ptr<http_source_handle>;

/// The handle of `j`'s http source called `name`; null if it has none.
http_source_handle_ptr find_http_source(const job& j, std::string_view name);
/// Every http source of `j`, in name order.
std::vector<http_source_handle_ptr> http_sources(const job& j);

} // namespace weir
