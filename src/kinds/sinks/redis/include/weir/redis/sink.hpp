// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Redis sink (`type = "redis"`): its spec `weir::redis::sink`
// and `weir::redis::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/redis/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

namespace weir {

/// The Redis command each row becomes.
enum class redis_command {
  set,  ///< SET <key> <value>
  hset, ///< HSET <key> <field> <value>
  zadd, ///< ZADD <key> <score> <value> (the value is the member)
};

} // namespace weir

namespace weir::redis {

/// A Redis sink: one connection per subtask, writes pipelined.
///
/// Every write sets an absolute value (SET, HSET, ZADD), so the effect is
/// idempotent: rows replayed after a restore overwrite what their first
/// delivery wrote instead of adding to it. Delivery is at least once (every
/// row before a checkpoint barrier is acknowledged by Redis before the
/// subtask acknowledges the checkpoint); the final state equals an
/// uninterrupted run's when the rows themselves are deterministic (event
/// time, not processing time). Flink matched: the Bahir `RedisSink` with
/// `RedisCommand.SET` / `HSET` / `ZADD`, flushed at checkpoints.
struct sink {
  std::string host = "127.0.0.1";
  std::uint16_t port = 6379;
  std::int64_t db = 0;          ///< SELECT db after connecting (0..): 0 = the default
  std::string username;         ///< AUTH username password (Redis 6 ACLs); empty: none
  std::string password;         ///< AUTH password; empty: no AUTH
  /// Connect and reply timeout per attempt.
  std::chrono::milliseconds timeout{5000};
  redis_command command = redis_command::set;
  /// Expressions (docs/concepts/records.md) over the input row. `key` and `value` always;
  /// `field` for hset; `score` (a number or timestamp) for zadd. A string is
  /// written as its bytes, a number as its decimal text, a timestamp as its
  /// epoch milliseconds, a bool as true/false. A row where any of them is
  /// null is skipped and counted.
  std::string key;
  std::string field;
  std::string value;
  std::string score;
  /// Commands buffered before a pipelined flush (also at every barrier, at
  /// the end of the input and every `flush_interval`).
  std::size_t batch_size = 1000;
  std::chrono::milliseconds flush_interval{1000};
  /// Connection attempts per flush (the first included) before the job
  /// fails; the wait between attempts doubles from 100 ms up to 5 s.
  std::size_t max_attempts = 6;
};

/// Adds a Redis sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, a missing key, value, field (hset) or score
/// (zadd); an expression that does not compile keeps its `errc` and offset.
/// Parallelism as for operators: one connection per subtask.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::redis

namespace weir {

/// Makes one subtask's Redis sink. The operator emits nothing downstream;
/// it throws std::runtime_error naming host:port when Redis stays unreachable
/// for `max_attempts` connection attempts, or at once when Redis answers a
/// command with an error (WRONGTYPE, NOAUTH, OOM), failing the subtask.
///
/// Errors: `errc::invalid_argument` for an empty host or key, a missing
/// value, field (hset) or score (zadd), a field or score given to a command
/// that takes none, batch_size 0; `errc::type_error` for a score that is not
/// a number or timestamp; an expression that does not compile against
/// `input_schema` keeps its `errc` and offset, its message prefixed with
/// the key ("field: unknown field ...").
[[nodiscard]] expected<stream_operator_ptr> make_redis_sink(const redis::sink& spec,
                                                            schema_ptr input_schema);

} // namespace weir
