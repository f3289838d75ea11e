// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Elasticsearch-compatible sink (`type = "elasticsearch"`): its spec
// `weir::elasticsearch::sink` and `weir::elasticsearch::add_sink`, which
// `data_stream::sink_to` calls (src/kinds/sinks/elasticsearch/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace weir::elasticsearch {

/// An Elasticsearch or OpenSearch sink: each row becomes one `index` action
/// of the `_bulk` API (its document: the row as a JSON object, fields in
/// schema order, timestamps as integer ms), sent over HTTP by one client per
/// subtask (Flink's `ElasticsearchSink` with its `BulkProcessor` options).
///
/// Delivery: at least once. Every action sent before checkpoint barrier n is
/// acknowledged (or dead-lettered) before the sink's part of checkpoint n is
/// taken, so a restore replays only rows that may not have arrived. With
/// `document_id` the ids are deterministic, so a replayed row overwrites its
/// own document: the index ends as an exactly-once run leaves it (an
/// idempotent effect). Without it the server assigns ids and a replay adds
/// documents again.
struct sink {
  /// Base URLs, `http://host:port` or `https://host:port`, optionally with a
  /// path prefix (`http://proxy/es`). Requests go to the first; a connection
  /// failure moves the next attempt to the next one.
  std::vector<std::string> hosts;
  /// The index every document goes to; or, when empty, `index_expression`.
  std::string index;
  /// An expression (docs/concepts/records.md) giving each row's index (a string, or any
  /// value as its text). A null index makes the row a bad record.
  std::string index_expression;
  /// An expression giving each row's `_id` (a string, or any value as its
  /// text); empty: the server assigns ids. A null id makes the row a bad
  /// record.
  std::string document_id;
  /// A bulk request goes out once this many actions are buffered (>= 1).
  std::size_t max_actions = 1000;
  /// ... or once the buffered request body reaches this many bytes (>= 1).
  std::size_t max_bytes = 5 * 1024 * 1024;
  /// ... or once the oldest buffered action is this old (processing time);
  /// 0: only on size, at barriers and at the end.
  std::chrono::milliseconds flush_interval{1000};
  /// Failed actions (per-item 429 or 5xx, or the whole request failing with
  /// 429, 502, 503, 504 or no connection) are retried this many times, the
  /// k-th retry after `retry_delay * 2^(k-1)`, at most `max_retry_delay`;
  /// then the subtask fails. 0: no retries.
  std::uint32_t max_retries = 5;
  std::chrono::milliseconds retry_delay{100};
  std::chrono::milliseconds max_retry_delay{10000};
  /// Connect, read and write timeout of one HTTP request.
  std::chrono::milliseconds request_timeout{30000};
};

/// Adds a Elasticsearch sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, and those of `make_elasticsearch_sink` checked
/// against `in`'s schema. Parallelism as for operators: one HTTP client per
/// subtask.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::elasticsearch

namespace weir {

/// Makes one subtask's Elasticsearch sink. It emits nothing downstream.
///
/// Runtime: a document the server rejects with any other 4xx (a mapping
/// error: 400 `mapper_parsing_exception`) is a bad record of the sink,
/// handled by the job's `on_bad_record` (dead-lettered with origin
/// `index/id`, the server's reason and the document; skipped; or failing the
/// job). Actions still failing after `max_retries`, or a request the server
/// refuses as a whole (401, 404, 413, ...), throw std::runtime_error naming
/// the sink, the subtask, the index and id and the server's reason.
/// Retries block the subtask (backpressure reaches the sources).
///
/// Errors: `errc::invalid_argument` for no hosts, a host that is not an
/// http(s) URL, neither or both of `index` and `index_expression`,
/// `max_actions` or `max_bytes` of 0, or a retry delay above the maximum;
/// an expression that does not compile keeps its `errc` and offset.
[[nodiscard]] expected<stream_operator_ptr>
make_elasticsearch_sink(const elasticsearch::sink& spec, schema_ptr input_schema);

} // namespace weir
