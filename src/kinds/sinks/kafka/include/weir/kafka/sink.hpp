// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Kafka sink (`type = "kafka"`): its spec `weir::kafka::sink`
// and `weir::kafka::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/kafka/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/format/format.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <string>
#include <utility>
#include <vector>

namespace weir {

/// What a Kafka sink promises (Flink's `DeliveryGuarantee`).
enum class kafka_delivery {
  none,          ///< produced as rows arrive; never flushed at barriers
  at_least_once, ///< flushed at every barrier: a checkpoint covers every row before it
  exactly_once,  ///< a transaction per checkpoint, committed when it completes
};

} // namespace weir

namespace weir::kafka {

/// A Kafka sink: one producer per subtask writing `topic`.
struct sink {
  std::string topic;
  std::string bootstrap_servers;
  /// librdkafka properties passed through as given (Flink's Kafka properties),
  /// e.g. {"linger.ms", "5"}, {"transaction.timeout.ms", "120000"}.
  std::vector<std::pair<std::string, std::string>> properties;
  /// An expression (docs/concepts/records.md) giving each message's key; empty = no key.
  /// A string is sent as its bytes, any other type as its text; null = no key.
  std::string key;
  /// The message value: jsonl (one JSON object, no newline), csv (one line,
  /// no header) or avro (one binary datum of the schema generated from the
  /// input's, `format::avro_encoder`; framed for `schema_registry` when set).
  format::format_kind format = format::format_kind::jsonl;
  /// avro: the full name of the generated record; empty =
  /// `<job>.<sink>` with characters outside `[A-Za-z0-9_]` replaced by '_'.
  std::string avro_record_name;
  /// avro: when `url` is set, the generated schema is registered under the
  /// subject of `schema_registry.strategy` when the sink opens (or looked up
  /// when `schema_registry_lookup_only`), and each value is framed with its
  /// id (Confluent's wire format). A refusal fails the subtask naming the
  /// subject and the registry's message.
  format::schema_registry_options schema_registry;
  bool schema_registry_lookup_only = false;
  /// Header name -> expression; a null value sends the header without a value.
  std::vector<std::pair<std::string, std::string>> headers;
  kafka_delivery delivery = kafka_delivery::at_least_once;
  /// exactly_once: the transactional.id of subtask i is
  /// `<prefix>-<job>-<sink>-<i>`.
  std::string transactional_id_prefix = "weir";
  /// exactly_once: where each transaction also writes its marker (key = the
  /// transactional id, value = the checkpoint id); empty = `<topic>.weir-progress`.
  /// Created (compacted, one partition per sink subtask) when missing.
  std::string progress_topic;
};

/// Adds a Kafka sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, an empty topic or bootstrap_servers, apache_combined;
/// a key or header expression that does not compile keeps its `errc` and
/// offset. Parallelism as for operators: one producer per subtask.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::kafka

namespace weir {

/// What the runtime knows of the job when it makes a sink subtask.
struct kafka_sink_job {
  std::string job_name;
  std::string sink_name;
  bool checkpoints = false;
  std::chrono::milliseconds checkpoint_interval{0};
};

/// Makes one subtask's Kafka sink. The delivery guarantees, the recovery
/// protocol of exactly_once and the errors are described in
/// src/kinds/sinks/kafka/README.md. The operator emits nothing downstream;
/// any Kafka failure throws std::runtime_error naming the topic (and the
/// partition when there is one), failing the subtask.
///
/// Errors: `errc::invalid_argument` for apache_combined, an empty topic or
/// bootstrap_servers, `exactly_once` without checkpoints, or a key or header
/// expression that does not compile against `input_schema` (its offset kept).
[[nodiscard]] expected<stream_operator_ptr>
make_kafka_sink(const kafka::sink& spec, const kafka_sink_job& job,
                schema_ptr input_schema);

} // namespace weir
