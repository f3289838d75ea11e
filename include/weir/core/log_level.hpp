// SPDX-License-Identifier: Apache-2.0
#pragma once

// The log level alone, free of spdlog: `job_options` (weir/api/job.hpp)
// carries one, and an embedding program includes that header.

#include <optional>
#include <string_view>

namespace weir {

/// How much weir logs on stderr, least to most severe: a level shows its own
/// messages and every more severe one; `off` shows none.
///
/// `info` (the default) shows progress ("restoring from checkpoint 7"),
/// `warn` what went wrong but was handled (a failed checkpoint, a restart),
/// `error` failures and broken invariants, `debug` and `trace` detail for
/// weir's developers. The status line, the end-of-job summary and
/// configuration errors are the `weir` CLI's own output, not log messages:
/// no level hides them.
enum class log_level { trace, debug, info, warn, error, off };

/// Parses `trace`, `debug`, `info`, `warn`, `error` or `off` (exactly, in
/// lower case, as `--log-level` and `[job] log_level` take them); any other
/// text gives `std::nullopt`.
[[nodiscard]] std::optional<log_level> parse_log_level(std::string_view text) noexcept;

/// The name `parse_log_level` reads back: `"warn"` for `log_level::warn`.
[[nodiscard]] std::string_view to_string(log_level level) noexcept;

} // namespace weir
