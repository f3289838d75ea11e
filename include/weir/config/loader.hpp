// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/config/diagnostic.hpp"
#include "weir/core/expected.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::config {

/// Parses a duration: an integer with a unit, "0", "500ms", "10s", "5m",
/// "1h", "1d" (also "1 s", one space between number and unit); nullopt for
/// anything else ("60x", "-1s", "1.5s", "10", "1S") and for values that do
/// not fit in int64 milliseconds.
std::optional<std::chrono::milliseconds> parse_duration(std::string_view text) noexcept;

/// As `parse_duration`, also accepting a leading minus ("-8h"); for the
/// places that allow a negative duration (`window.offset`).
std::optional<std::chrono::milliseconds>
parse_signed_duration(std::string_view text) noexcept;

/// Options of a load.
struct load_options {
  /// Overrides [job] batch_size when set (tests run the cases with 1).
  std::optional<std::size_t> batch_size;
  /// Overrides [job] parallelism when set.
  std::optional<std::size_t> parallelism;
  /// Checks that the paths the job writes (sinks' files, the dead-letter
  /// file, checkpoint.dir) can be created and written (a probe file may be
  /// created and removed at once in the directory that would receive them);
  /// off for a load that must not touch the file system (the fuzzer).
  bool check_paths = true;
};

/// Loads a TOML pipeline (docs/reference/pipeline.md, every key in config/reference.toml)
/// and builds the job through the public API in weir/api/job.hpp.
///
/// Operators may appear in any order: inputs are resolved by name and the
/// job is built sources first, then operators in topological order, then
/// sinks. Reports every problem at once, each with file:line:col (columns in
/// code points), sorted by position: TOML syntax (toml++'s message), unknown
/// keys (with a did-you-mean within edit distance 2), wrong types, missing
/// required keys (at the table's header), bad enum values, duplicate names
/// (sources, operators, late outputs and sinks share one namespace), inputs
/// that name no stream, cycles, bad durations, source files that cannot be
/// read, and errors the API returns (expression errors point inside the
/// expression string when it is a one-line string with no escape before the
/// problem, else at the string's start). An element with an error that
/// changes what it produces is not built, and whatever reads it is skipped
/// silently, so errors do not cascade; lesser problems (parallelism,
/// durations, presentation keys) are reported and a stand-in is built so that
/// dependents are still checked. Relative paths in the file are taken
/// relative to the current working directory. Nothing is started; no output
/// file is created. The job's name defaults to the file's stem.
[[nodiscard]] expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline_file(const std::string& path, const load_options& opts = {});

/// As `load_pipeline_file`, from text; `path` is used in diagnostics only.
[[nodiscard]] expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline(std::string_view toml_text, const std::string& path,
              const load_options& opts = {});

/// Every key path the loader accepts, in "table.key" form with "[]" for
/// arrays of tables: "job.name", "source[].path", "operator[].window.size", ...
/// The reference test checks that config/reference.toml lists them all.
const std::vector<std::string>& known_keys();

/// The key reference as Markdown, generated from the kinds' key tables (each
/// key's type, whether it is required, its default and its one-line doc)
/// and the common keys: what `weir docs` prints and
/// docs/reference/keys.md holds (a test keeps the file equal to it). The
/// kinds are those registered in this process, in registry order.
std::string key_reference_markdown();

} // namespace weir::config
