// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/log_level.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/api/source_options.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/window/window_operator.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
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
} // namespace runtime

namespace state {
class keyed_process_function; // include/weir/state/keyed_process_function.hpp
} // namespace state

/// What happens to a record that cannot be decoded (DESIGN.md §8).
enum class bad_record_policy { fail, skip, dead_letter };

/// Job-wide settings (`[job]` in TOML).
/// How barriers are handled at multi-input subtasks (DESIGN.md §7).
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
  bool fresh = false; ///< start over: discard what `dir` holds instead of resuming
  /// Failed checkpoints in a row the job survives (storage failed: disk or
  /// map full, I/O error; or timed out); the next one fails the job, which
  /// then restarts per `restart_options` or stops (Flink's tolerable
  /// checkpoint failure number). 0: the first failed checkpoint fails it.
  std::size_t tolerable_failures = 0;
  /// Most bytes the LMDB environment may hold (its map size; the file grows
  /// only as used). A checkpoint that does not fit fails.
  std::size_t max_size = std::size_t{64} << 30;
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


// Each connector's spec is declared in its kind's public header, which the
// caller of the method taking it includes:
struct file_source_spec;    // weir/connectors/file_source.hpp
struct kafka_source_spec;   // weir/connectors/kafka_source.hpp
struct file_sink_spec;      // weir/connectors/file_sink.hpp
struct kafka_sink_spec;     // weir/connectors/kafka_sink.hpp
struct elasticsearch_sink_spec; // weir/connectors/elasticsearch_sink.hpp
struct stdout_sink_spec;    // weir/connectors/file_sink.hpp
struct blackhole_sink_spec; // weir/connectors/blackhole_sink.hpp
struct summary_sink_spec;   // weir/connectors/summary_sink.hpp

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

private:
  const record_batch* batch_;
  std::size_t row_;
};

class job;
class keyed_stream;
class connected_streams;
// The benchmark generators' specs (bench/kinds/sources/{generator,nexmark}/):
// `job::from_generator` and `job::from_nexmark` are defined there, in
// weir_bench_kinds, outside the core.
struct generator_source_spec;
struct nexmark_source_spec;

/// A stream produced by a source or an operator (Flink's `DataStream`).
/// Cheap to copy; it refers to a node of its job's graph.
class data_stream {
public:
  const schema_ptr& output_schema() const;
  const std::string& name() const;

  /// Keeps the rows where `condition` (expression, DESIGN.md §3) is true.
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

  /// Partitions by the hash of the key fields into key groups (DESIGN.md §2).
  [[nodiscard]] expected<keyed_stream> key_by(std::vector<std::string> fields) const;

  /// Merges this stream with `others`, which must have the same schema; the
  /// result's watermark is the minimum over its inputs.
  [[nodiscard]] expected<data_stream> union_with(const std::vector<data_stream>& others,
                                                 operator_options opts = {}) const;

  /// Connects this stream (input 1) with `other` (input 2) for a
  /// two-input operator (Flink's `DataStream.connect`); the schemas may
  /// differ.
  connected_streams connect(const data_stream& other) const;

  /// Adds a custom operator; `factory` makes one instance per subtask.
  data_stream transform(std::string kind, schema_ptr output_schema,
                        std::function<stream_operator_ptr()> factory,
                        operator_options opts = {}) const;

  /// Writes the stream to a file.
  [[nodiscard]] expected<std::monostate> sink_to_file(file_sink_spec spec, operator_options opts = {}) const;

  /// Writes the stream to a Kafka topic, one message per row (the kafka
  /// sink kind; weir/connectors/kafka_sink.hpp). Parallelism as for
  /// operators: one producer per subtask. Errors: `errc::invalid_argument`
  /// for an empty topic or bootstrap_servers or apache_combined; a key or
  /// header expression that does not compile keeps its `errc` and offset.
  [[nodiscard]] expected<std::monostate> sink_to_kafka(kafka_sink_spec spec,
                                                       operator_options opts = {}) const;

  /// Indexes the stream into Elasticsearch or OpenSearch through the `_bulk`
  /// API, one document per row (the elasticsearch sink kind;
  /// weir/connectors/elasticsearch_sink.hpp: at least once, idempotent with
  /// deterministic document ids). Parallelism as for operators: one HTTP
  /// client per subtask. Errors: as `make_elasticsearch_sink`.
  [[nodiscard]] expected<std::monostate>
  sink_to_elasticsearch(elasticsearch_sink_spec spec, operator_options opts = {}) const;

  /// Prints the stream as JSON lines on stdout.
  void print(operator_options opts = {}) const;
  /// As `print`, with the sink's options (timestamp format).
  void print(const stdout_sink_spec& spec, operator_options opts = {}) const;

  /// Prints a summary table on stdout at the end of the job.
  [[nodiscard]] expected<std::monostate> sink_to_summary(summary_sink_spec spec,
                                                operator_options opts = {}) const;

  /// Drops the stream (a benchmark sink); parallelism as for operators, so
  /// it chains to its input. Errors: `errc::invalid_argument` for a
  /// negative rate or a latency_field that is not an int64 field.
  [[nodiscard]] expected<std::monostate> sink_to_blackhole(blackhole_sink_spec spec,
                                                  operator_options opts = {}) const;
  /// As above with the default spec (every row dropped, nothing reported).
  [[nodiscard]] expected<std::monostate> sink_to_blackhole() const;

private:
  friend class job;
  friend class keyed_stream;
  friend class connected_streams;
  data_stream(std::shared_ptr<runtime::job_graph> g, std::size_t node, std::size_t port)
    : graph_(std::move(g)), node_(node), port_(port) {}

  std::shared_ptr<runtime::job_graph> graph_;
  std::size_t node_ = 0;
  std::size_t port_ = 0;
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
  [[nodiscard]] expected<data_stream> count(std::string output_field = "count",
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
};

struct job_result {
  bool ok = false;
  std::string error;              ///< why the job failed, naming operator and subtask
  std::uint64_t records_read = 0; ///< rows emitted by all sources
  std::uint64_t records_written = 0; ///< rows received by all sinks
  std::uint64_t bad_records = 0;
  std::uint64_t late_records = 0;
  std::chrono::milliseconds duration{0};
  std::uint64_t checkpoints_completed = 0;
  std::uint64_t checkpoints_aborted = 0;
  /// Of the aborted ones, those that failed (storage, timeout): what
  /// `checkpoint_options::tolerable_failures` counts.
  std::uint64_t checkpoints_failed = 0;
  std::uint64_t last_checkpoint_id = 0;   ///< 0 = none
  std::uint64_t restored_checkpoint_id = 0; ///< where the last attempt started; 0 = fresh
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

/// A job under construction and its runner (Flink's
/// `StreamExecutionEnvironment`). The TOML loader builds jobs through this
/// same API.
class job {
public:
  explicit job(job_options opts = {});

  const job_options& options() const;

  /// Mutable options; changes take effect at the next `execute()`.
  job_options& options();

  /// Adds a file source. Errors: `errc::invalid_argument` for a duplicate
  /// name, a missing schema, or an event-time field that is absent or not a
  /// timestamp/int64.
  [[nodiscard]] expected<data_stream> from_file(file_source_spec spec,
                                                operator_options opts = {});

  /// Adds a Kafka source (src/kinds/sources/kafka/). Errors:
  /// `errc::invalid_argument` for a duplicate name, neither or both of topics
  /// and topic_pattern, a pattern that is not a regex, no bootstrap servers, a
  /// missing schema, a field name used twice, an event-time field that is
  /// absent or not a timestamp/int64, `start = committed` without a group, or
  /// a property weir manages (group.id, enable.auto.commit, ...). The brokers
  /// are first contacted when the job runs.
  [[nodiscard]] expected<data_stream> from_kafka(kafka_source_spec spec,
                                                 operator_options opts = {});

  /// Adds a generator source. Errors: `errc::invalid_argument` for a
  /// duplicate name, no fields, a duplicate field, a negative rate, an
  /// event-time field that is absent or not a timestamp/int64, or a
  /// generation_time_field that clashes with a field; a field expression
  /// that does not compile keeps its `errc` and `offset`, and the message
  /// names the field ("field 'x': ...").
  [[nodiscard]] expected<data_stream> from_generator(generator_source_spec spec,
                                                     operator_options opts = {});

  /// Adds a Nexmark source. Errors: `errc::invalid_argument` for a duplicate
  /// name, a negative rate, or a non-positive event_rate, proportion, hot
  /// ratio or average size.
  [[nodiscard]] expected<data_stream> from_nexmark(nexmark_source_spec spec,
                                                   operator_options opts = {});

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

  /// The logical graph (for the runtime and tests).
  const std::shared_ptr<runtime::job_graph>& graph() const noexcept { return graph_; }

private:
  std::shared_ptr<runtime::job_graph> graph_;
  std::shared_ptr<runtime::stop_request> stop_;
};

} // namespace weir
