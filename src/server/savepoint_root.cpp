// SPDX-License-Identifier: Apache-2.0
#include "savepoint_root.hpp"

#include <system_error>

namespace weir::server::internal {

namespace fs = std::filesystem;

savepoint_root::savepoint_root(const std::string& dir) {
  fs::path root = dir.empty() ? fs::path{"savepoints"} : fs::path{dir};
  std::error_code ec;
  if (root.is_relative())
    root = fs::current_path(ec) / root;
  root_ = root.lexically_normal();
  if (!root_.has_filename())
    root_ = root_.parent_path();
}

expected<fs::path> savepoint_root::resolve(const std::string& target,
                                           const std::string& fallback,
                                           const char* subject) const {
  auto refuse = [&](const std::string& why) {
    return make_error(errc::invalid_argument,
                      std::string{subject} + " '" + target + "' refused: " + why
                        + " (savepoints are written under " + root_.string() + ")");
  };
  if (target.find('\0') != std::string::npos || target.find('\\') != std::string::npos)
    return refuse("no backslash or NUL");
  fs::path p = target.empty() ? fs::path{fallback} : fs::path{target};
  for (const auto& part : p)
    if (part == "..")
      return refuse("'..' is not allowed");
  fs::path full = p.is_absolute() ? p.lexically_normal() : (root_ / p).lexically_normal();
  if (!full.has_filename())
    full = full.parent_path();
  auto inside = [](const fs::path& root, const fs::path& q) {
    auto rel = q.lexically_relative(root);
    return !rel.empty() && rel != "." && *rel.begin() != "..";
  };
  if (!inside(root_, full))
    return refuse(p.is_absolute() ? "an absolute path outside the savepoint directory"
                                  : "not below the savepoint directory");
  // Symbolic links: what the path resolves to must stay inside as well.
  std::error_code ec;
  auto real_root = fs::weakly_canonical(root_, ec);
  auto real = ec ? fs::path{} : fs::weakly_canonical(full, ec);
  if (ec || !inside(real_root, real))
    return refuse("it resolves outside the savepoint directory");
  return full;
}

} // namespace weir::server::internal
