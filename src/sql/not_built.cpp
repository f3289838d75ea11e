// SPDX-License-Identifier: Apache-2.0
// The SQL front end of a weir built without libpg_query (WEIR_WITH_SQL off
// or libpg-query-dev missing): every entry point says how to build it.

#include "weir/sql/sql.hpp"

namespace weir::sql {

namespace {
std::vector<config::diagnostic> not_built(const std::string& path) {
  return {{path, 0, 0,
           "SQL was not built into this weir (configure with " + std::string{how_to_build} + ")",
           {}}};
}
} // namespace

bool built() noexcept { return false; }

expected<compiled_script, std::vector<config::diagnostic>> compile(std::string_view,
                                                                   const std::string& path) {
  return not_built(path);
}

expected<std::unique_ptr<job>, std::vector<config::diagnostic>>
load_sql(std::string_view, const std::string& path, const config::load_options&, std::string*) {
  return not_built(path);
}

expected<std::unique_ptr<job>, std::vector<config::diagnostic>>
load_sql_file(const std::string& path, const config::load_options&, std::string*) {
  return not_built(path);
}

} // namespace weir::sql
