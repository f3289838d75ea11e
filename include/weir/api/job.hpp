// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/log_level.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/api/source_options.hpp"
#include "weir/cep/pattern.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/window/window_operator.hpp"

#include <chrono>
#include <concepts>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace weir {

namespace runtime {
struct job_graph;
class stop_request; // weir/runtime/stop_request.hpp
struct background_run; // actors/background_run.hpp
class job_control;  // weir/runtime/job_control.hpp
} // namespace runtime

class running_job; // weir/api/running_job.hpp

namespace state {
class keyed_process_function; // include/weir/state/keyed_process_function.hpp
class keyed_co_process_function; // include/weir/state/keyed_co_process_function.hpp
} // namespace state

/// What happens to a record that cannot be decoded (docs/concepts/bad-input.md).
enum class bad_record_policy { fail, skip, dead_letter };

/// Job-wide settings (`[job]` in TOML).
/// How barriers are handled at multi-input subtasks (docs/concepts/checkpoints.md).
enum class checkpointing_mode {
  exactly_once,  ///< aligned barriers (Flink's aligned checkpoints)
  at_least_once, ///< barriers tracked, never blocking
};

/// `[checkpoint]` in TOML: periodic asynchronous barrier snapshots into LMDB
/// (Carbone et al. 2015).
struct checkpoint_options {
  bool enabled = false;
  std::chrono::milliseconds interval{1000};
  checkpointing_mode mode = checkpointing_mode::exactly_once;
  std::string dir;                          ///< the job's LMDB environment
  std::size_t retain = 3;                   ///< completed checkpoints kept
  std::chrono::milliseconds timeout{60000}; ///< a checkpoint not complete by then is aborted
  std::chrono::milliseconds min_pause{0};   ///< between one completion and the next trigger
  /// Start over from no state instead of resuming (`--fresh`). What `dir`
  /// holds is deleted once the new run's first checkpoint completes, or it
  /// finishes its input (at once when `dir` cannot even be opened); until
  /// then a run without the flag starts from no state too, and one with
  /// `allow_rollback` restores the old checkpoints.
  bool fresh = false;
  /// Restore from this savepoint (`--from-savepoint`, a directory written by
  /// `job::trigger_savepoint`) instead of `dir`'s checkpoints, which are
  /// superseded as with `fresh` once the restored job's first checkpoint
  /// completes; empty: none. Operator state is matched by operator name, key
  /// groups spread over any parallelism.
  std::string from_savepoint;
  /// Permit restoring an older checkpoint than the newest one `dir` records
  /// when the newest cannot be restored (`--allow-rollback`): output the
  /// sinks committed and input the sources acknowledged after it are taken
  /// back. Without it such a start refuses (docs/concepts/recovery.md).
  bool allow_rollback = false;
  /// With `from_savepoint`: state of operators the job no longer has is
  /// skipped (`--allow-non-restored-state`) instead of failing the job.
  bool allow_non_restored_state = false;
  /// Failed checkpoints in a row the job survives (storage failed: disk or
  /// map full, I/O error; or timed out); the next one fails the job, which
  /// then restarts per `restart_options` or stops (Flink's tolerable
  /// checkpoint failure number). 0: the first failed checkpoint fails it.
  std::size_t tolerable_failures = 0;
  /// Most bytes the LMDB environment may hold (its map size; the file grows
  /// only as used). A checkpoint that does not fit fails.
  std::size_t max_size = std::size_t{64} << 30;
  /// The durable copy in object storage, `s3://bucket/prefix` (Flink's
  /// `state.checkpoints.dir = s3://...`); empty: local only. `dir` stays the
  /// working copy: a checkpoint is written there, uploaded, and complete only
  /// once uploaded. A run whose `dir` holds no checkpoint downloads the
  /// newest complete one (docs/operations/object-storage.md).
  std::string remote;
  /// `http(s)://host:port` of an S3-compatible store (path-style requests);
  /// empty: `AWS_ENDPOINT_URL`, else AWS's regional endpoint.
  std::string remote_endpoint;
  /// Signing region; empty: `AWS_REGION`, else `us-east-1`.
  std::string remote_region;
};

/// Restart strategy after a subtask failure (Flink's fixed-delay strategy):
/// the whole job restarts from its latest completed checkpoint, at most
/// `attempts` times, waiting `delay` before each. Needs checkpoints.
struct restart_options {
  std::size_t attempts = 0;
  std::chrono::milliseconds delay{1000};
};

/// For tests of recovery: the named operator's subtask 0 throws once its
/// input reaches `after_records` rows, in the first attempt only.
struct failure_injection {
  std::string operator_name;
  std::uint64_t after_records = 0;
};

struct job_options {
  std::string name = "weir-job";
  std::size_t parallelism = 1;       ///< default for every operator
  std::size_t max_parallelism = 128; ///< number of key groups, 1..32768
  std::size_t batch_size = 1024;     ///< rows per batch a source emits
  std::chrono::milliseconds buffer_timeout{10};
  bad_record_policy on_bad_record = bad_record_policy::fail;
  std::string dead_letter_path;      ///< JSONL file, for dead_letter
  std::chrono::milliseconds status_interval{1000}; ///< 0 = no status line
  /// What weir logs on stderr (`[job] log_level`, `--log-level`), for the
  /// whole process while `execute()` runs: `info` shows progress
  /// ("restoring from checkpoint N"), `warn` only what went wrong.
  weir::log_level log_level = weir::log_level::info;
  /// No progress messages on stderr: `execute()` logs at `warn` at least
  /// (the CLI's -q also turns the status line and the summary off, and
  /// leaves the level to `--log-level` when that is given).
  bool quiet = false;
  std::size_t worker_threads = 0;    ///< CAF scheduler threads; 0 = cores
  checkpoint_options checkpoint;
  restart_options restart;
  std::optional<failure_injection> inject_failure;
  /// Loss made visible (`[job] warn_ratio`, `max_bad_ratio`, `max_late_ratio`,
  /// `--strict`): a source whose bad records, or an operator whose late
  /// records, exceed this share of its input is named in a warning on the
  /// status line and in the summary (`job_result::loss_warnings`).
  double warn_ratio = 0.01;
  /// Above these shares the job fails instead, naming the source or
  /// operator: checked at the end and, once the source or operator has
  /// seen `min_records_for_ratio` records, at every status interval.
  std::optional<double> max_bad_ratio;
  std::optional<double> max_late_ratio;
  /// Set by `--strict` (both limits 0): named in the failure message.
  bool strict = false;
};

/// Records a source or operator must have seen before a periodic check
/// (while the job runs) fails the job or warns: the first bad record of a
/// job must not fail it for `max_bad_ratio = 0.5`. The check at the end of a
/// bounded job takes every count.
constexpr std::uint64_t min_records_for_ratio = 1000;

/// Per-operator settings.
struct operator_options {
  std::string name;            ///< unique stream name; generated if empty
  std::size_t parallelism = 0; ///< 0 = the job's default
};


struct enrich_spec; // weir/operators/enrich.hpp
class push_source_handle; // weir/connectors/push_source.hpp

namespace internal {
struct stream_access; // src/api/internal/graph.hpp: what a kind's planning needs
} // namespace internal

/// Read-only access to one row, for user functions (lambda filters).
class row_view {
public:
  row_view(const record_batch& batch, std::size_t row) : batch_(&batch), row_(row) {}
  /// The value of field `name` (monostate for null); throws std::out_of_range
  /// for an unknown field.
  value get(std::string_view name) const;
  std::optional<std::int64_t> get_int(std::string_view name) const;
  std::optional<std::string_view> get_string(std::string_view name) const;
  event_time timestamp() const;
  /// The row as one compact JSON object, fields in schema order (as the
  /// jsonl sink writes it, timestamps as integer ms).
  std::string to_json() const;
  const record_batch& batch() const noexcept { return *batch_; }
  std::size_t row() const noexcept { return row_; }

private:
  const record_batch* batch_;
  std::size_t row_;
};

class job;
class data_stream;
class keyed_stream;
class connected_streams;

/// A source spec `job::from` takes: a struct of a kind's public header
/// (`weir::kafka::source` in weir/kafka/source.hpp, `weir::file::source`,
/// ...), which declares, in the spec's own namespace,
///
///     expected<data_stream> add_source(job&, Spec, operator_options);
///
/// (`expected<push_stream>` for `weir::push::source`), found by
/// argument-dependent lookup. A kind is thus its folder and its header: no
/// header of the core names it.
template <class Spec>
concept source_spec = requires(job& j, Spec spec, operator_options opts) {
  add_source(j, std::move(spec), std::move(opts));
};

/// A sink spec `data_stream::sink_to` takes (`weir::file::sink`,
/// `weir::kafka::sink`, ...): its kind's header declares, in the spec's
/// namespace, `expected<std::monostate> add_sink(const data_stream&, Spec,
/// operator_options)`.
template <class Spec>
concept sink_spec = requires(const data_stream& in, Spec spec, operator_options opts) {
  { add_sink(in, std::move(spec), std::move(opts)) } -> std::same_as<expected<std::monostate>>;
};

/// A stream produced by a source or an operator (Flink's `DataStream`).
/// Cheap to copy; it refers to a node of its job's graph.
class data_stream {
public:
  const schema_ptr& output_schema() const;
  const std::string& name() const;

  /// Keeps the rows where `condition` (expression, docs/concepts/records.md) is true.
  [[nodiscard]] expected<data_stream> filter(std::string_view condition,
                                             operator_options opts = {}) const;

  /// Keeps the rows for which `predicate` returns true.
  data_stream filter(std::function<bool(const row_view&)> predicate,
                     operator_options opts = {}) const;

  /// Outputs exactly the listed fields, each computed by an expression.
  [[nodiscard]] expected<data_stream>
  select(std::vector<std::pair<std::string, std::string>> fields,
         operator_options opts = {}) const;

  /// Keeps every input field and adds (or replaces) computed fields.
  [[nodiscard]] expected<data_stream>
  map(std::vector<std::pair<std::string, std::string>> fields,
      operator_options opts = {}) const;

  /// One output row per part of the string field `field` cut at
  /// `separator` (the field holds the part; other fields are copied; a null
  /// field gives no row; empty parts are dropped unless `keep_empty`).
  [[nodiscard]] expected<data_stream> split(std::string field, std::string separator,
                                            bool keep_empty = false,
                                            operator_options opts = {}) const;

  /// One output row per element of the JSON array held as text in the string
  /// field `field` (jsonl keeps arrays as JSON text in string fields): the
  /// field holds the element (a string unquoted, anything else as JSON);
  /// other fields are copied; null or `[]` gives no row. A value that is not
  /// a JSON array fails the subtask.
  [[nodiscard]] expected<data_stream> explode(std::string field,
                                              operator_options opts = {}) const;

  /// Partitions by the hash of the key fields into key groups
  /// (docs/internals/architecture.md).
  [[nodiscard]] expected<keyed_stream> key_by(std::vector<std::string> fields) const;

  /// Merges this stream with `others`, which must have the same schema; the
  /// result's watermark is the minimum over its inputs.
  [[nodiscard]] expected<data_stream> union_with(const std::vector<data_stream>& others,
                                                 operator_options opts = {}) const;

  /// Connects this stream (input 1) with `other` (input 2) for a
  /// two-input operator (Flink's `DataStream.connect`); the schemas may
  /// differ.
  connected_streams connect(const data_stream& other) const;

  /// Joins each record with the latest row of `table` for its key at the
  /// record's event time (the enrich kind; `enrich_spec` in
  /// weir/operators/enrich.hpp gives the semantics and the output shape:
  /// this stream's fields, then the chosen table fields, `prefix` + name).
  /// Errors: `errc::type_error` for an unknown key or table field or key
  /// types that differ; `errc::invalid_argument` for no key, a negative
  /// max_wait, an added field whose name clashes, or a duplicate name.
  [[nodiscard]] expected<data_stream> enrich(const data_stream& table, enrich_spec spec,
                                             operator_options opts = {}) const;

  /// Adds a custom operator; `factory` makes one instance per subtask.
  data_stream transform(std::string kind, schema_ptr output_schema,
                        std::function<stream_operator_ptr()> factory,
                        operator_options opts = {}) const;

  /// Adds the sink `spec` describes, fed by this stream (Flink's
  /// `DataStream.sinkTo(sink)`): `weir::file::sink` (weir/file/sink.hpp),
  /// `weir::kafka::sink`, `weir::redis::sink`, `weir::postgres::sink`,
  /// `weir::elasticsearch::sink`, `weir::summary::sink`,
  /// `weir::blackhole::sink`, `weir::print::sink`, or any kind whose header
  /// declares `add_sink` (`sink_spec`). The spec's header documents its
  /// delivery guarantee and parallelism (`opts.parallelism`, 0: the job's,
  /// where the kind allows more than 1). Errors: the kind's checks of the
  /// spec against this stream's schema (`errc::invalid_argument`, or an
  /// expression's `errc` and offset), and `errc::invalid_argument` for a
  /// duplicate `opts.name`. The TOML loader plans `[[sinks]]` through it.
  template <sink_spec Spec>
  [[nodiscard]] expected<std::monostate> sink_to(Spec spec, operator_options opts = {}) const {
    return add_sink(*this, std::move(spec), std::move(opts));
  }

  /// Hands every row to `fn` (a callback sink, for a host program that
  /// embeds weir). Threading: `fn` runs on the sink subtask's thread (a CAF
  /// worker), one row after another per subtask; with parallelism above 1
  /// (the job's default unless `opts.parallelism` says 1) subtasks call it
  /// concurrently, so it must be thread-safe then. The row is valid only
  /// during the call (copy what you keep, e.g. `row.to_json()`). `fn` must
  /// be quick and must not block on the job (no `push` into a push source
  /// of the same job, no waiting on `query_state`): while it runs, its
  /// subtask processes nothing, and a slow callback backpressures the job
  /// back to its sources. An exception thrown by `fn` fails the job naming
  /// the sink. Rows reach it once each while the job runs without failure;
  /// after a restart from a checkpoint, rows emitted since that checkpoint
  /// come again (at-least-once: the callback is no transactional sink).
  /// Errors: `errc::invalid_argument` for an empty `fn` or a duplicate name.
  [[nodiscard]] expected<std::monostate>
  sink_to_callback(std::function<void(const row_view&)> fn, operator_options opts = {}) const;

  /// As `sink_to_callback`, with each batch whole (its rows in order; the
  /// batch is immutable and may be kept by its shared pointer).
  [[nodiscard]] expected<std::monostate>
  sink_batches_to_callback(std::function<void(const record_batch_ptr&)> fn,
                           operator_options opts = {}) const;
  /// Prints the stream as JSON lines on stdout (Flink's `DataStream.print`):
  /// `sink_to(weir::print::sink{})` (weir/print/sink.hpp, which also sets
  /// the timestamp format). Throws std::invalid_argument for a duplicate
  /// `opts.name`.
  void print(operator_options opts = {}) const;

private:
  friend class job;
  friend class keyed_stream;
  friend class connected_streams;
  friend struct internal::stream_access;
  data_stream(std::shared_ptr<runtime::job_graph> g, std::size_t node, std::size_t port)
    : graph_(std::move(g)), node_(node), port_(port) {}

  std::shared_ptr<runtime::job_graph> graph_;
  std::size_t node_ = 0;
  std::size_t port_ = 0;
};

/// A push source's stream and the handle the host's threads push into
/// (`job::from` of a `weir::push::source`; weir/connectors/push_source.hpp).
struct push_stream {
  data_stream stream;
  std::shared_ptr<push_source_handle> handle;
};

/// Options of a window operator beyond its assigner and aggregates.
struct window_options {
  std::chrono::milliseconds allowed_lateness{0};
  std::string late_output; ///< name of the late-record stream; empty = none
  /// When the window fires; null = the assigner's default trigger.
  std::shared_ptr<const window::trigger> trigger;
  /// Drops records of a window when it fires; null = none.
  std::shared_ptr<const window::evictor> evictor;
  /// Two-phase aggregation when the window supports it
  /// (`window_plan::supports_local_aggregation`) and has no `late_output`:
  /// a local phase chained after the input folds rows per key and slice
  /// before the key-by exchange, and the window merges the partial results
  /// (Flink SQL's local/global aggregation). Same results, far fewer rows
  /// through the exchange when keys repeat within a slice; slower when most
  /// keys occur once or twice per slice (each becomes a partial row). Off by
  /// default, as Flink SQL's two-phase aggregation needs mini-batch turned on.
  bool local_aggregation = false;
};

/// The rows a join (interval or window) emits, one per joined pair.
///
/// With `select` empty: every left field, then every right field except the
/// right key fields (equal to the left's); a right field whose name a left
/// field has is renamed `right_<name>` (a join whose renamed field clashes
/// again is refused: write a `select`). A window join appends `window_start`
/// and `window_end` (ms, the window `[start, end)`).
///
/// With `select` (name = expression, in output order): exactly those fields,
/// each an expression (docs/concepts/records.md) over `left.<field>` and
/// `right.<field>` (every field of either input, qualified), `timestamp`
/// (the pair's event time, below) and, in a window join, `window_start` and
/// `window_end`.
///
/// A row's event time is the larger of the two rows' (interval join, as
/// Flink's `IntervalJoinOperator`) or the window's last instant, `end - 1`
/// (window join, Flink's `TimeWindow.maxTimestamp()`).
using join_select = std::vector<std::pair<std::string, std::string>>;

/// Options of `keyed_stream::interval_join` (Flink's
/// `KeyedStream.intervalJoin(other).between(lower, upper)`): a left row at
/// `l.ts` and a right row with the same key at `r.ts` join when
/// `l.ts + lower <= r.ts <= l.ts + upper` (ms, event time; both bounds
/// inclusive unless marked exclusive).
struct interval_join_options {
  std::chrono::milliseconds lower{0};
  std::chrono::milliseconds upper{0};
  bool lower_bound_exclusive = false; ///< `l.ts + lower < r.ts`
  bool upper_bound_exclusive = false; ///< `r.ts < l.ts + upper`
  join_select select;                 ///< empty: the default row (`join_select`)
  /// Streams of the left / right rows that were late on arrival (event time
  /// below the join's watermark, so they could match nothing); empty: only
  /// counted (Flink's `sideOutputLeftLateData` / `sideOutputRightLateData`).
  std::string left_late_output;
  std::string right_late_output;
};

/// Options of `keyed_stream::window_join` (Flink's
/// `DataStream.join(other).where(..).equalTo(..).window(assigner)`).
struct window_join_options {
  join_select select; ///< empty: the default row (`join_select`)
  /// Streams of the rows whose every window had already fired when they
  /// arrived (Flink drops them); empty: only counted.
  std::string left_late_output;
  std::string right_late_output;
};

/// A stream partitioned by key (Flink's `KeyedStream`).
class keyed_stream {
public:
  const std::vector<std::string>& key_fields() const noexcept { return keys_; }

  /// Windowed aggregation; see `window::window_plan` for the output shape and
  /// semantics. Late records are always counted; if `late_output` is named
  /// they are also emitted on that stream (reachable by `job::stream`).
  [[nodiscard]] expected<data_stream>
  window(std::shared_ptr<const window::window_assigner> assigner,
         std::vector<window::aggregate_spec> aggregates,
         window_options wopts = {}, operator_options opts = {}) const;

  /// Running count per key: emits {keys..., count} for every input row.
  /// With `state_ttl`, a key's count expires that long (processing time,
  /// ms) after it was last written (`state::state_ttl_config`): a key not
  /// seen for that long counts from 1 again, and its state is dropped.
  /// Errors: `errc::invalid_argument` for an output field that clashes
  /// with a key or a state_ttl that is not positive.
  [[nodiscard]] expected<data_stream>
  count(std::string output_field = "count", operator_options opts = {},
        std::optional<std::chrono::milliseconds> state_ttl = std::nullopt) const;

  /// Flink CEP on this keyed stream, in event time (`weir::cep::pattern_spec`,
  /// docs/concepts/multi-stream.md): records are buffered per key until the watermark
  /// passes them, then matched in event-time order. Main output, one row per match:
  /// the key fields, `match_start` and `match_end` (timestamps of its first
  /// and last event; the row's event time is `match_end`), then the
  /// `select` fields (default: `<step>.count` and `<step>.<field>` of each
  /// step's last event, for every normal step and non-key field). The
  /// `timeout_output` stream has the same fields with `timed_out_at` (first
  /// event + within, its event time) after `match_end`; the `late_output`
  /// stream has the input's schema. Errors: those of
  /// `cep::compiled_pattern::make` (steps, conditions: `errc::parse_error`
  /// or `type_error` with the offset into the condition), a select
  /// expression that does not compile ("select.<name>: ..."), an output
  /// field there twice, a timeout_output without within, a duplicate
  /// stream name (`errc::invalid_argument`).
  [[nodiscard]] expected<data_stream> pattern(cep::pattern_spec spec,
                                              operator_options opts = {}) const;

  /// Runs a user `state::keyed_process_function` (Flink's
  /// `KeyedStream.process`): `factory` makes one instance per subtask; each
  /// gets keyed state and timers for its key groups (snapshotted with
  /// checkpoints) and emits rows of `output_schema`. Event-time timers fire
  /// as the watermark passes them, before it is forwarded.
  /// Errors: `errc::invalid_argument` for a null schema or factory, or a
  /// duplicate name.
  [[nodiscard]] expected<data_stream>
  process(std::string name, schema_ptr output_schema,
          std::function<std::unique_ptr<state::keyed_process_function>()> factory,
          operator_options opts = {}) const;

  /// Joins this stream (left) with `right` by key over a time interval
  /// (Flink's `IntervalJoin`, event time only): every pair of a left and a
  /// right row with equal keys and `l.ts + lower <= r.ts <= l.ts + upper`
  /// is emitted once, as soon as its second row arrives, shaped by
  /// `opts.select` (`join_select`). Both inputs are buffered in keyed state
  /// (checkpointed and rescaled by key group) until the watermark passes
  /// the last time a row could still match; a row whose event time is below
  /// the join's watermark when it arrives matches nothing and is late
  /// (counted, and routed to the named late stream). The two key lists must
  /// have the same length and types pairwise.
  /// Errors: `errc::invalid_argument` for `lower > upper` (after exclusive
  /// bounds), streams of different jobs or a duplicate stream name;
  /// `errc::type_error` for key types that differ or a `select` expression
  /// that does not compile (the message names the field).
  [[nodiscard]] expected<data_stream> interval_join(const keyed_stream& right,
                                                    interval_join_options jopts,
                                                    operator_options opts = {}) const;

  /// Joins this stream (left) with `right` by key within event-time windows
  /// of `assigner` (tumbling, sliding or session; Flink's window join):
  /// when a window fires (the watermark reaches its `end - 1`), every pair
  /// of a left and a right row of one key in that window is emitted, left
  /// rows in arrival order, for each the right rows in arrival order (an
  /// inner join: a window with rows on one side only emits nothing). A row
  /// all of whose windows had fired when it arrived is late. Errors as
  /// `interval_join`, and `errc::invalid_argument` for an assigner that is
  /// not an event-time time-window assigner.
  [[nodiscard]] expected<data_stream>
  window_join(const keyed_stream& right, std::shared_ptr<const window::window_assigner> assigner,
              window_join_options jopts = {}, operator_options opts = {}) const;

private:
  friend class data_stream;
  keyed_stream(data_stream in, std::vector<std::string> keys, std::vector<std::size_t> idx)
    : input_(std::move(in)), keys_(std::move(keys)), key_idx_(std::move(idx)) {}
  data_stream input_;
  std::vector<std::string> keys_;
  std::vector<std::size_t> key_idx_;
};

/// Two streams feeding one two-input operator (Flink's `ConnectedStreams`):
/// input 1 and input 2 keep their own watermarks (the operator's is their
/// minimum) and checkpoint barriers align across both.
class connected_streams {
public:
  const data_stream& first() const noexcept { return first_; }
  const data_stream& second() const noexcept { return second_; }
  bool is_keyed() const noexcept { return !first_keys_.empty(); }

  /// Keys input 1 by `first_fields` and input 2 by `second_fields` (same
  /// count, same types, pairwise): both are hashed into the same key groups,
  /// so rows with equal keys from either input reach the same subtask.
  /// Errors: `errc::type_error` for an unknown field or a type mismatch,
  /// `errc::invalid_argument` for lists of different length or none.
  [[nodiscard]] expected<connected_streams> key_by(std::vector<std::string> first_fields,
                                                   std::vector<std::string> second_fields) const;

  /// Adds a two-input operator of kind `kind` fed by both inputs (keyed if
  /// `key_by` was called, else forwarded or rebalanced as for one input);
  /// `factory` makes one instance per subtask. Errors:
  /// `errc::invalid_argument` for a null schema or factory, streams of
  /// different jobs, or a duplicate name.
  [[nodiscard]] expected<data_stream>
  transform(std::string kind, schema_ptr output_schema,
            std::function<std::unique_ptr<two_input_stream_operator>()> factory,
            operator_options opts = {}) const;

  /// Runs a user `state::keyed_co_process_function` over the keyed inputs
  /// (Flink's `ConnectedStreams.process` after `keyBy`): `factory` makes one
  /// instance per subtask; each gets keyed state and timers for its key
  /// groups, shared by both inputs (snapshotted with checkpoints, restored
  /// by key group at any parallelism), and emits rows of `output_schema`.
  /// The operator is named `name` (its kind is "co_process"). Errors:
  /// `errc::invalid_argument` if `key_by` was not called, for a null schema
  /// or factory, streams of different jobs, or a duplicate name.
  [[nodiscard]] expected<data_stream>
  process(std::string name, schema_ptr output_schema,
          std::function<std::unique_ptr<state::keyed_co_process_function>()> factory,
          operator_options opts = {}) const;

private:
  friend class data_stream;
  connected_streams(data_stream a, data_stream b) : first_(std::move(a)), second_(std::move(b)) {}
  data_stream first_;
  data_stream second_;
  std::vector<std::size_t> first_keys_;  ///< empty = not keyed
  std::vector<std::size_t> second_keys_;
};

/// Counters of a finished (or failed) job.
/// What one source or operator counted (this process, since its start or
/// last restore).
struct node_counts {
  std::string name;
  bool is_source = false;
  /// Sources reading text (files): lines read, headers and blank lines
  /// included; nullopt for generated sources.
  std::optional<std::uint64_t> lines_read;
  std::uint64_t records_in = 0;  ///< operators: rows received, late ones included
  std::uint64_t records_out = 0; ///< sources: records decoded; operators: rows emitted
  std::uint64_t bad_records = 0;
  std::uint64_t late_records = 0;
  /// Pattern operators: partial matches dropped at `max_partial_matches`.
  std::uint64_t partial_matches_dropped = 0;
};

struct job_result {
  bool ok = false;
  std::string error;              ///< why the job failed, naming operator and subtask
  std::uint64_t records_read = 0; ///< rows emitted by all sources
  std::uint64_t records_written = 0; ///< rows received by all sinks
  /// Bad records of this process (since it started or restored; with
  /// restarts inside it, those read again after a restart count again).
  std::uint64_t bad_records = 0;
  /// The job's bad records since its fresh start, over every restore, where
  /// known: exactly-once with dead letters (those in the dead-letter file
  /// at the end). nullopt elsewhere.
  std::optional<std::uint64_t> job_bad_records;
  std::uint64_t late_records = 0;
  std::chrono::milliseconds duration{0};
  std::uint64_t checkpoints_completed = 0;
  std::uint64_t checkpoints_aborted = 0;
  /// Of the aborted ones, those that failed (storage, timeout): what
  /// `checkpoint_options::tolerable_failures` counts.
  std::uint64_t checkpoints_failed = 0;
  std::uint64_t last_checkpoint_id = 0;   ///< 0 = none
  std::uint64_t restored_checkpoint_id = 0; ///< where the last attempt started; 0 = fresh
  /// The highest checkpoint id already in the checkpoint dir (or of the
  /// savepoint restored) when the job started: this run's ids follow it,
  /// also after --fresh (ids are never reused). 0 = this run's ids start at 1.
  std::uint64_t checkpoint_ids_after = 0;
  std::size_t restarts = 0;
  std::vector<std::string> warnings;      ///< e.g. a damaged checkpoint skipped
  /// Each source (lines read, records decoded, bad records) and each
  /// operator that found late records, in graph order.
  std::vector<node_counts> counts;
  /// Sources and operators above `job_options::warn_ratio`, one sentence
  /// each ("source 'logs': 2,665 of 2,665 records bad (100.0%), above
  /// job.warn_ratio 1%").
  std::vector<std::string> loss_warnings;
  /// Stopped by `job::stop` (a graceful stop) rather than run to the end of
  /// its input; `ok` unless something failed while stopping.
  bool stopped = false;
  /// The stop's final checkpoint (complete when it equals
  /// `last_checkpoint_id`); 0 = none (checkpoints off, or none possible).
  std::uint64_t stop_checkpoint_id = 0;
};

/// The live state of one key in one keyed operator of a running job
/// (`job::query_state`): what the subtask that owns the key's key group
/// holds between two batches.
struct state_query_result {
  std::string operator_name;
  std::vector<std::string> key; ///< as asked, one text per key field
  std::size_t subtask = 0;      ///< the owning subtask, 0-based
  std::size_t parallelism = 1;
  std::uint16_t key_group = 0;
  /// The operator's current (input) watermark, ms; `min_watermark` before
  /// the first one.
  event_time watermark = min_watermark;
  /// The last checkpoint the subtask knows complete (0 = none): the state
  /// shown includes everything that checkpoint covers.
  std::uint64_t checkpoint_id = 0;
  /// Whether the key has state; `state` is `null` when not.
  bool found = false;
  /// The state as JSON: a running count `{"count":3}`; a window operator
  /// `{"windows":[{"window_start":..,"window_end":..,<aggregates>...}]}`
  /// (open windows in start order, aggregates as they would fire now); a
  /// keyed process function's value states by name.
  std::string state = "null";
  /// The whole answer as one JSON object: {"operator","key","subtask",
  /// "parallelism","key_group","watermark" (ms, null before the first),
  /// "checkpoint_id","found","state"}.
  std::string to_json() const;
};

/// A savepoint taken (`job::trigger_savepoint`).
struct savepoint_result {
  std::string path;                ///< its directory (an LMDB environment)
  std::uint64_t checkpoint_id = 0; ///< the checkpoint it holds
  std::uint64_t size_bytes = 0;    ///< state bytes
};

/// A job under construction and its runner (Flink's
/// `StreamExecutionEnvironment`). The TOML loader builds jobs through this
/// same API.
class job {
public:
  explicit job(job_options opts = {});

  const job_options& options() const;

  /// Mutable options; changes take effect at the next `execute()`.
  job_options& options();

  /// Adds the source `spec` describes (Flink's
  /// `StreamExecutionEnvironment.fromSource(source, watermarkStrategy,
  /// name)`: the spec carries the event-time field and watermark options,
  /// `opts.name` the stream's name): `weir::file::source`
  /// (weir/file/source.hpp), `weir::kafka::source`, `weir::http::source`,
  /// `weir::push::source` (weir/connectors/push_source.hpp), or any kind
  /// whose header declares `add_source` (`source_spec`). Returns the
  /// source's stream: `expected<data_stream>`, or `expected<push_stream>`
  /// for a push source (the stream and the handle the host pushes into).
  /// Errors: the kind's checks of the spec (`errc::invalid_argument`: a
  /// missing schema or path, an event-time field that is absent or not a
  /// timestamp/int64, ...; each spec's header lists them) and
  /// `errc::invalid_argument` for a duplicate `opts.name`. The TOML loader
  /// plans `[[sources]]` through it.
  template <source_spec Spec>
  [[nodiscard]] auto from(Spec spec, operator_options opts = {}) {
    return add_source(*this, std::move(spec), std::move(opts));
  }

  /// The stream called `name` (an operator's main output or a side output).
  std::optional<data_stream> stream(std::string_view name) const;

  /// Runs the job to completion on an actor system of its own; blocks.
  /// Returns a failed result (never throws) if a subtask fails.
  job_result execute();

  /// Stops a running `execute()` gracefully (Flink's stop-with-savepoint
  /// without `--drain`): the sources stop reading, every operator hands on
  /// what it has emitted and the sinks flush and close, but nothing fires
  /// that only the end of the input would (an unfinished window is dropped).
  /// With checkpoints on, the sources first take a final checkpoint, which
  /// the sinks commit before the job ends: a rerun resumes from it exactly.
  /// `execute()` then returns with `stopped` set. Asked before `execute()`,
  /// the next `execute()` stops as soon as it has started. Thread-safe;
  /// returns at once. Not async-signal-safe: from a signal handler, wake a
  /// thread that calls it (as the `weir` executable does).
  void stop();

  /// Runs the job in the background, on threads of its own, and returns at
  /// once: the handle (weir/api/running_job.hpp) reports its status and
  /// metrics while it runs, stops, cancels or waits for it. The job must not
  /// be started or executed again while that run goes on (it shares this
  /// job's graph). Never throws for a failing job: the failure is in
  /// `running_job::wait()`'s result.
  running_job start();
  /// Asks the running `execute()` for the state of `key` in keyed operator
  /// `operator_name` (a window, a running count, a keyed process function):
  /// the job manager routes the question by message to the subtask that
  /// owns the key's key group, which answers between two batches without
  /// stopping (consistent for that key). `key` holds one text per key field
  /// in key_by order, parsed by the field's type (int64 and timestamp as
  /// integers, float64, bool as true/false, string as is). Thread-safe;
  /// returns at once; the future is ready when the subtask has answered.
  /// Errors in the future: `errc::not_found` for an operator the job does
  /// not have; `errc::invalid_argument` for an operator that is not keyed
  /// or has no queryable state, or a key of the wrong arity or type;
  /// `errc::runtime_error` when no `execute()` runs (or it ends first).
  std::future<expected<state_query_result>>
  query_state(std::string operator_name, std::vector<std::string> key) const;

  /// Takes a savepoint of the running `execute()` (Flink's savepoint): a
  /// checkpoint like the periodic ones, copied once complete into its own
  /// LMDB environment in directory `path` (created; must not exist or be
  /// empty), which retention never deletes and which can be copied
  /// elsewhere. `weir run --from-savepoint` (`checkpoint_options::
  /// from_savepoint`) restores it, at any parallelism. Needs checkpoints on
  /// (`[checkpoint]`). Thread-safe; returns at once; the future is ready
  /// when the savepoint is written. Errors in the future:
  /// `errc::invalid_argument` (checkpoints off; `path` not empty, or the
  /// checkpoint dir); `errc::io_error` (writing it);
  /// `errc::runtime_error` (the checkpoint was aborted, or no `execute()`
  /// runs).
  std::future<expected<savepoint_result>> trigger_savepoint(std::string path);

  /// As `trigger_savepoint`, then stops the job gracefully (`stop`) once the
  /// savepoint is written: Flink's stop-with-savepoint. On error the job
  /// keeps running.
  std::future<expected<savepoint_result>> stop_with_savepoint(std::string path);

  /// The logical graph (for the runtime and tests).
  const std::shared_ptr<runtime::job_graph>& graph() const noexcept { return graph_; }

private:
  friend class running_job;
  friend struct internal::stream_access;
  /// `execute`, reporting to `control` (null: nobody watches).
  job_result execute_with(runtime::background_run* control);

  std::shared_ptr<runtime::job_graph> graph_;
  std::shared_ptr<runtime::stop_request> stop_;
  std::shared_ptr<runtime::job_control> control_;
};

} // namespace weir
