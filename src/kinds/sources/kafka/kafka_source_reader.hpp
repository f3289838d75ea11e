// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runtime of a Kafka source subtask: a librdkafka consumer with an
// explicit assignment (no group rebalancing), decoding each message into a
// row (src/kinds/sources/kafka/).

#include "weir/kafka/source.hpp"
#include "weir/connectors/source_reader.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace weir::kafka {

/// The subtask that reads partition `partition` of `topic` among
/// `parallelism`: `(fnv1a64(topic) + partition) % parallelism`. Stable across
/// runs, builds and machines; spreads one topic's partitions round-robin.
std::size_t owner_of(std::string_view topic, std::int32_t partition, std::size_t parallelism);

/// What a Kafka source subtask reads.
struct reader_options {
  kafka::source spec;
  schema_ptr output;          ///< kafka_source_schema(spec)
  std::string source_name;    ///< for messages: "kafka source 'logs'"
  std::string job_name;       ///< the client.id names it
  std::size_t subtask = 0;
  std::size_t parallelism = 1;
};

/// Makes the reader of one subtask. Nothing is contacted before `open`,
/// which fetches the topics' metadata (failing with std::runtime_error
/// naming the topic when a topic is missing or not authorized, or the
/// brokers when they cannot be reached within `connect_timeout`). The first
/// `poll_next` resolves start (and, bounded, end) offsets and assigns the
/// subtask's partitions; `seek` before it resumes from checkpointed offsets.
///
/// Positions: one `offset` entry per partition, split "topic/partition", the
/// next offset to read; bounded sources add "topic/partition@end", the stop
/// offset, so a restored source stops where the first run would have.
/// Bad records go to `on_bad` with origin "topic/partition" and the offset.
source_reader_ptr make_reader(reader_options opts, bad_record_handler on_bad);

} // namespace weir::kafka
