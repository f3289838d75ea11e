// SPDX-License-Identifier: Apache-2.0
#pragma once

// weir's loggers, one per component, for weir's own .cpp files: this header
// declares them without spdlog's headers (the caller includes
// <spdlog/logger.h> to log) and no public header includes it.

#include "weir/core/log_level.hpp"

#include <memory>

namespace spdlog {
class logger;
namespace sinks {
class sink;
} // namespace sinks
} // namespace spdlog

namespace weir::log {

/// The logger of the subtask runtime and the job manager (deploy, restarts,
/// the job's outcome, broken invariants of expression evaluation), named
/// `weir.runtime`.
///
/// Every logger of this header writes through one shared, thread-safe sink to
/// stderr, one line a message:
///
///     [14:02:11.532] [warning] weir.checkpoint: job 'clicks': checkpoint 8 failed: ...
///
/// (the level in colour only when stderr is a terminal). A message names what
/// it is about as format arguments: the job, then the operator and subtask
/// (`"job '{}': operator '{}' subtask {}/{}: ..."`, subtasks counted from 1)
/// and the checkpoint id where one applies. Levels: `log_level`.
///
/// Thread-safe: callable from any actor or thread; a message is one locked
/// write to stderr, so log nothing per record or per batch above `debug`.
/// The loggers live until the process exits (function-local statics).
[[nodiscard]] spdlog::logger& runtime();

/// The logger of checkpointing (`weir.checkpoint`): restores, failed or
/// aborted checkpoints, damage found in the checkpoint store.
[[nodiscard]] spdlog::logger& checkpoint();

/// The logger of sources and sinks (`weir.connectors`).
[[nodiscard]] spdlog::logger& connectors();

/// The logger of keyed state (`weir.state`): broken invariants of the
/// copy-on-write state map.
[[nodiscard]] spdlog::logger& state();

/// The logger of pipeline configuration (`weir.config`). Configuration errors
/// themselves are diagnostics the loader returns, not log messages.
[[nodiscard]] spdlog::logger& config();

/// Sets the level of every logger above, process-wide (two jobs executing
/// at once in one program share it). `job::execute()` calls it with
/// `job_options::log_level`. Thread-safe (an atomic store per logger).
/// Like every function here it may throw `std::bad_alloc` on its first call,
/// which creates the loggers.
void set_log_level(log_level level);

/// The level `set_log_level` set last; `log_level::info` before any call.
[[nodiscard]] log_level current_log_level();

/// Sends every logger's messages to `sink` instead of stderr (null: back to
/// stderr) and returns the sink used until now (null when that was stderr).
/// The sink gets weir's line pattern. Thread-safe; for tests and for a
/// program that embeds weir and collects its log.
std::shared_ptr<spdlog::sinks::sink> replace_sink(std::shared_ptr<spdlog::sinks::sink> sink);

} // namespace weir::log
