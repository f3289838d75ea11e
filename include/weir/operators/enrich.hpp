// SPDX-License-Identifier: Apache-2.0
#pragma once
// The enrich operator's spec (`type = "enrich"`, `data_stream::enrich`;
// src/kinds/operators/enrich/).

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace weir {

/// What happens to a record whose key has no table row at its event time.
enum class enrich_missing {
  wait, ///< keep it in keyed state until a row comes or the watermark passes ts + max_wait
  null, ///< emit it at once with null table fields
  drop, ///< drop it (counted)
};

/// An enrichment of a stream with the latest row per key of a second
/// stream, the table (Flink's `KeyedCoProcessFunction` enrichment of the
/// fraud-detection primer; with event time, Flink SQL's event-time temporal
/// join `FOR SYSTEM_TIME AS OF`): each record of the stream is joined with
/// the table row for its key that is the latest in event time at the
/// record's time (a row is valid from its timestamp on; rows of equal
/// timestamps: the later arrival wins; a row at the record's own time
/// counts). Both sides are kept in keyed state (snapshotted with
/// checkpoints, restored by key group) and applied in event-time order as
/// the operator's watermark (the minimum of both inputs') passes them, so the
/// result does not depend on how the two inputs interleave. Without event
/// time (a batch without timestamps), rows and records are applied as they
/// arrive and `wait` acts as `null`.
///
/// Output: the stream's fields, in order, then `fields` of the table, each
/// named `prefix + name`; rows carry the record's timestamp.
struct enrich_spec {
  std::vector<std::string> key_by;    ///< key fields of the stream
  std::vector<std::string> table_key; ///< key fields of the table; empty = key_by's names
  /// Table fields to add; empty = every table field that is not a table key.
  std::vector<std::string> fields;
  std::string prefix; ///< prepended to the added fields' names
  enrich_missing on_missing = enrich_missing::wait;
  /// With `wait`: how long past its timestamp (event time) a record waits
  /// for its key's first row; the output watermark is held back this much.
  std::chrono::milliseconds max_wait{0};
  /// With `wait`, when the wait ends without a row: true emits the record
  /// with null table fields, false drops it (counted).
  bool emit_on_timeout = true;
  /// Time-to-live of a key's table row in keyed state, in processing time
  /// since it was written (`state::state_ttl_config`; Flink's
  /// `StateTtlConfig`): records of a key whose row expired find no row
  /// (`on_missing` applies) and the row is dropped from memory and from
  /// checkpoints. None: kept forever.
  std::optional<std::chrono::milliseconds> state_ttl;
};

} // namespace weir
