// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Kafka source (`type = "kafka"`): its spec `weir::kafka::source`
// and `weir::kafka::add_source`, which `job::from` calls (src/kinds/sources/kafka/).

#include "weir/api/job.hpp"
#include "weir/api/source_options.hpp"
#include "weir/format/format.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weir {

/// Where a Kafka source starts reading a partition it has no checkpointed
/// offset for (Flink's `OffsetsInitializer`).
enum class kafka_start_offset {
  earliest,  ///< the partition's first offset
  latest,    ///< its end when the source starts (only new records)
  committed, ///< the group's committed offset (`group_id`); else auto.offset.reset
  timestamp, ///< the first record whose timestamp is >= `start_timestamp_ms`
};

/// The Kafka message metadata a source reads into fields: each member names
/// the field that receives it (empty: not read). The fields follow the
/// value's fields in the output schema, in this order.
struct kafka_metadata_fields {
  std::string key;       ///< string: the message key (null when none)
  std::string topic;     ///< string
  std::string partition; ///< int64
  std::string offset;    ///< int64
  std::string timestamp; ///< timestamp: the record's timestamp (ms)
  std::string headers;   ///< string: a JSON object {"name": "value", ...}
};

} // namespace weir

namespace weir::kafka {

/// A Kafka source (librdkafka). Partitions are assigned to subtasks
/// explicitly, without consumer-group rebalancing: partition p of topic t
/// belongs to subtask `(hash(t) + p) % parallelism` (a fixed hash), so the
/// mapping is stable across runs. Offsets are the source's checkpointed
/// positions; on recovery each partition rewinds to its checkpointed offset.
struct source {
  std::vector<std::string> topics; ///< the topics; or:
  std::string topic_pattern;       ///< an ECMAScript regex matching whole topic names
  std::string bootstrap_servers;
  /// librdkafka configuration passed through as-is (after weir's defaults:
  /// isolation.level=read_committed, auto.offset.reset=earliest).
  std::vector<std::pair<std::string, std::string>> properties;
  /// jsonl or csv with a schema; `raw` instead gives one string field `value`.
  format::decoder_options decoder;
  bool raw = false;
  kafka_start_offset start = kafka_start_offset::earliest;
  std::int64_t start_timestamp_ms = 0; ///< for kafka_start_offset::timestamp
  /// Stop at the end offsets current when the source starts (Flink's
  /// `setBounded(OffsetsInitializer.latest())`): the job finishes.
  bool bounded = false;
  /// How often each subtask looks for new partitions (0: never; never when
  /// bounded). New partitions are read from their earliest offset.
  std::chrono::milliseconds partition_discovery_interval{std::chrono::seconds{30}};
  /// Offsets of completed checkpoints are committed to this group (for
  /// monitoring; weir never reads them back except for `start = committed`).
  /// Empty: nothing is committed.
  std::string group_id;
  std::string event_time_field; ///< a timestamp or int64 field (value or metadata)
  bool event_time_from_kafka = false; ///< event time = the record's Kafka timestamp
  kafka_metadata_fields metadata;
  watermark_options watermark;
  /// How long the source waits for the brokers at start (metadata, offsets)
  /// before failing the job.
  std::chrono::milliseconds connect_timeout{std::chrono::seconds{15}};
  /// Rows per second over all subtasks (each reads its share); 0: as fast as
  /// the brokers deliver. Replays a topic at a steady pace, as the file
  /// source's `rate` does (Flink's `RateLimiterStrategy`, FLIP-238); the
  /// checkpointed offsets are those of the rows emitted.
  double rate = 0;
};

/// Adds a Kafka source to `j` (what `job::from` calls; Flink's
/// `StreamExecutionEnvironment.fromSource`): its stream, named `opts.name`
/// (generated when empty). Errors (`errc::invalid_argument`): a duplicate
/// name, neither or both of topics and topic_pattern, a pattern
/// that is not a regex, no bootstrap servers, a missing schema, a field name
/// used twice, an event-time field that is absent or not a timestamp/int64,
/// `start = committed` without a group, or a property weir manages
/// (group.id, enable.auto.commit, ...). The brokers are first contacted when
/// the job runs.
[[nodiscard]] expected<data_stream> add_source(job& j, source spec, operator_options opts = {});

} // namespace weir::kafka

namespace weir {

/// The output schema of a Kafka source: the value's fields (or `value`
/// string for raw), then the metadata fields. Errors:
/// `errc::invalid_argument` for a missing schema or a name used twice.
[[nodiscard]] expected<schema_ptr> kafka_source_schema(const kafka::source& spec);

} // namespace weir
