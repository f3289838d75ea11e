// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"

#include <filesystem>
#include <string>

namespace weir::server::internal {

/// The directory every savepoint written or restored through the API lies
/// under (`server_options::savepoint_dir`, Flink's `state.savepoints.dir`).
class savepoint_root {
public:
  /// `dir` empty: `savepoints` in the working directory; a relative `dir`
  /// is made absolute against the working directory now.
  explicit savepoint_root(const std::string& dir);

  /// The root, absolute and normalized.
  const std::filesystem::path& path() const noexcept { return root_; }

  /// A request's `target` resolved inside the root: a relative path under
  /// it, an absolute one only if it lies under it; empty `target`:
  /// `fallback` under it. Errors (`errc::invalid_argument`, a message for
  /// the 400 starting with `subject`): a backslash or NUL, a `..` segment,
  /// a path leading outside the root, symbolic links included.
  [[nodiscard]] expected<std::filesystem::path>
  resolve(const std::string& target, const std::string& fallback,
          const char* subject = "savepoint target") const;

private:
  std::filesystem::path root_;
};

} // namespace weir::server::internal
