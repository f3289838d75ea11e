// SPDX-License-Identifier: Apache-2.0
#pragma once
// The PostgreSQL sink (`type = "postgres"`): its spec `weir::postgres::sink`
// and `weir::postgres::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/postgres/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/operators/stream_operator.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace weir {

/// How rows reach the table.
enum class postgres_write_mode {
  insert, ///< INSERT: a replay (at_least_once) inserts again
  upsert, ///< INSERT ... ON CONFLICT (key_columns) DO UPDATE: the last row per key wins
};

/// What a PostgreSQL sink promises (Flink's `DeliveryGuarantee`).
enum class postgres_delivery {
  at_least_once, ///< batches committed as they go; flushed at every barrier
  exactly_once,  ///< a prepared transaction per checkpoint, committed when it completes
};

} // namespace weir

namespace weir::postgres {

/// A PostgreSQL sink: one libpq connection per subtask (two with
/// exactly_once: rows and commits) writing `table` in multi-row INSERTs
/// (Flink's JDBC sink; exactly_once as its `JdbcSink.exactlyOnceSink` over
/// XA, here PostgreSQL's PREPARE TRANSACTION / COMMIT PREPARED).
struct sink {
  /// libpq connection string: "host=127.0.0.1 port=5432 dbname=app user=weir"
  /// or a URI "postgresql://weir@127.0.0.1:5432/app" (libpq's rules,
  /// environment variables PGHOST, PGPASSWORD, ... included).
  std::string connection;
  /// The table written, as SQL writes it: `clicks` or `"Clicks"` or
  /// `app.clicks` (passed verbatim; it must exist).
  std::string table;
  /// Column name -> expression over the input row, in order. Empty: every
  /// input field into the column of its name. A string is sent as text, a
  /// number as its decimal text, a timestamp as ISO-8601 UTC
  /// ("2015-05-17T10:05:03.000Z": a timestamptz or timestamp column), a bool
  /// as true/false, null as NULL; PostgreSQL converts to the column's type.
  std::vector<std::pair<std::string, std::string>> columns;
  postgres_write_mode mode = postgres_write_mode::insert;
  /// upsert: the conflict target, a primary key or unique constraint of the
  /// table; each must be one of the columns. Within a batch only the last
  /// row per key is sent (ON CONFLICT DO UPDATE may not touch a row twice).
  std::vector<std::string> key_columns;
  postgres_delivery delivery = postgres_delivery::at_least_once;
  /// Rows per INSERT statement (at most 65,535 parameters: fewer rows for
  /// wide rows).
  std::size_t batch_size = 1000;
  /// at_least_once: buffered rows are committed at least this often.
  std::chrono::milliseconds flush_interval{1000};
  /// exactly_once: the table of end-of-input markers (created when missing):
  /// one row per sink subtask whose input ended and was committed in full,
  /// so that a restore after that does not write the replay again.
  std::string progress_table = "weir_sink_progress";
  /// Connection attempts (the first included) before the job fails; the
  /// wait between attempts doubles from 100 ms up to 5 s.
  std::size_t max_attempts = 6;
};

/// Adds a PostgreSQL sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, and those of `make_postgres_sink` checked against
/// `in`'s schema. Parallelism as for operators: one connection per subtask.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::postgres

namespace weir {

/// What the runtime knows of the job when it makes a sink subtask.
struct postgres_sink_job {
  std::string job_name;
  bool checkpoints = false;
};

/// Makes one subtask's PostgreSQL sink. The delivery guarantees, the
/// recovery of exactly_once and the errors are described in
/// src/kinds/sinks/postgres/README.md. The operator emits nothing
/// downstream; a server error throws std::runtime_error with the server's
/// message and the table, failing the subtask.
///
/// Errors: `errc::invalid_argument` for an empty connection or table, upsert
/// without key_columns or with a key column that is not a column, a column
/// named twice, batch_size 0, exactly_once without checkpoints; a column
/// expression that does not compile keeps its `errc` and offset, its
/// message prefixed with "columns.<name>: ".
[[nodiscard]] expected<stream_operator_ptr>
make_postgres_sink(const postgres::sink& spec, const postgres_sink_job& job,
                   schema_ptr input_schema);

} // namespace weir
