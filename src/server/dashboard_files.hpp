// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <string_view>

namespace weir::server::internal {

/// One file of the web dashboard (src/server/dashboard/), compiled into the
/// binary by cmake/embed_files.cmake: no file system, no CDN.
struct dashboard_file {
  std::string_view name; ///< "index.html", "app.js", "style.css"
  std::string_view content;
  const char* content_type;
};

/// The file called `name`; null when there is none.
const dashboard_file* find_dashboard_file(std::string_view name) noexcept;

} // namespace weir::server::internal
