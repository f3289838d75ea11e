// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"
#include "weir/format/format.hpp"
#include "weir/operators/stream_operator.hpp"

#include <string>

namespace weir {

/// Makes an exactly-once file sink: a two-phase-commit sink (Flink's
/// `FileSink` with `TwoPhaseCommittingSink`) whose output is a directory.
///
/// Layout: `path` becomes a directory. Readers take the committed part files
/// `path/part-<subtask>-<checkpoint>.<ext>` (checkpoint id zero-padded to 12
/// digits, so `ls`/glob order is commit order within a subtask; each CSV
/// part starts with its header) and ignore `path/.staging/`, where the open
/// part (`part-<subtask>.inprogress`) and pre-committed parts
/// (`part-<subtask>-<checkpoint>.pending`) live.
///
/// Protocol: rows go to the in-progress part. `snapshot_state(n)` closes it
/// (fsync) and renames it to a pending part of n (pre-commit) and stores the
/// list of pending checkpoints as operator state;
/// `notify_checkpoint_complete(n)` renames every pending part <= n into the
/// directory (rename is atomic, the directory is fsync'd): a reader never
/// sees a part of an uncommitted checkpoint or half a part. `restore_state`
/// (from checkpoint n) completes the commits pending in n, then deletes every
/// staging file and every committed part newer than n of the subtasks it
/// restored (and its own index; subtask 0 also those of indices >=
/// parallelism), so the rows replayed after n are written once. Without a
/// restore, the first row or snapshot starts fresh: that subtask's old parts
/// are deleted (as the at-least-once sink truncates its file). `finish()`
/// commits everything at once, the last part as checkpoint (latest seen + 1).
///
/// Precondition: when the job restores from a checkpoint, `restore_state` is
/// called on this operator (even with no operator state for it) before any
/// element. I/O errors throw `std::runtime_error("cannot write <file>: ...")`,
/// failing the subtask. The operator emits nothing downstream.
///
/// Errors: `errc::invalid_argument` for `apache_combined` or an empty path.
[[nodiscard]] expected<stream_operator_ptr>
make_transactional_file_sink(std::string path, format::format_kind format,
                             schema_ptr input_schema = nullptr,
                             format::timestamp_format ts = format::timestamp_format::epoch_ms);

} // namespace weir
