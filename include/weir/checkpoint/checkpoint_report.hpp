// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/checkpoint/lmdb_checkpoint_store.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace weir::checkpoint {

/// Renders bytes for people: "812 B", "1.5 KiB", "3.2 MiB", "1.0 GiB".
std::string format_bytes(std::uint64_t bytes);

/// The table of `weir checkpoints list`: one row per checkpoint, oldest
/// first: id, status (complete, incomplete, damaged), trigger time (UTC),
/// duration and alignment (ms), state size in total and per operator, and
/// the sources' positions; then one line per problem found. "no
/// checkpoints" when empty.
std::string format_checkpoint_list(const std::vector<checkpoint_listing>& all);

/// The report of `weir checkpoints show`: the checkpoint's figures, state
/// size per operator, then one row per operator subtask (key groups, keyed
/// and operator state bytes, source position).
std::string format_checkpoint_details(const checkpoint_listing& one);

/// Runs `weir checkpoints list DIR` (`verb` = "list") or `weir checkpoints
/// show DIR [ID]` (`verb` = "show"; without `id` the newest restorable
/// checkpoint, else the newest one). Opens `dir` read-only and verifies
/// every checksum. Writes the report to `out` and problems to `err`; returns
/// the exit code: 0 done, 1 no such directory, checkpoint or LMDB error.
int run_checkpoints_command(const std::string& verb, const std::string& dir,
                            std::optional<std::uint64_t> id, std::string& out,
                            std::string& err);

} // namespace weir::checkpoint
