// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace weir::config {

/// One configuration problem, printed compiler-style:
/// ```
/// pipelines/clicks.toml:14:11: error: window.size must be a positive duration, got "0s"
///   in [[operator]] #3 (name = "clicks_per_minute")
///   hint: write a duration with a unit: "500ms", "10s", "5m"
/// ```
struct diagnostic {
  std::string file;
  std::size_t line = 0;   ///< 1-based; 0 = the file as a whole
  std::size_t column = 0; ///< 1-based, in code points; 0 = the line as a whole
  std::string message;    ///< without "error: "
  std::vector<std::string> notes; ///< extra lines: "in [[operator]] #3 ...", "hint: ..."

  /// `file:line:col: error: message` then each note on its own line, indented
  /// by two spaces; no trailing newline. Without a column the location is
  /// `file:line`, without a line it is `file`.
  std::string to_string() const;
};

/// Orders by file, then line, then column (a file-wide diagnostic first).
bool diagnostic_less(const diagnostic& a, const diagnostic& b) noexcept;

/// Sorts in place by `diagnostic_less`, keeping the order of equal positions.
void sort_diagnostics(std::vector<diagnostic>& ds);

/// Renders diagnostics sorted by `diagnostic_less`, one per paragraph: each
/// diagnostic with its notes, followed by a newline ("" for none).
std::string to_string(const std::vector<diagnostic>& ds);

} // namespace weir::config
