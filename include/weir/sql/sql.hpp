// SPDX-License-Identifier: Apache-2.0
#pragma once
// weir's SQL front end (docs/sql.md): a script of SQL statements compiled to
// the TOML pipeline the loader reads, so that a SQL job and its hand-written
// TOML twin are planned by the same code (the kinds' plan hooks) into the
// same logical graph. Parsed by PostgreSQL's own parser (libpg_query).

#include "weir/api/job.hpp"
#include "weir/config/diagnostic.hpp"
#include "weir/config/loader.hpp"
#include "weir/core/expected.hpp"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::sql {

/// Whether this weir was built with the SQL front end (WEIR_WITH_SQL and
/// libpg-query-dev). When false, every function below fails with one
/// file-wide diagnostic saying how to build it.
bool built() noexcept;

/// What `-DWEIR_WITH_SQL=...` and which package a build needs for SQL.
inline constexpr std::string_view how_to_build =
  "-DWEIR_WITH_SQL=ON and libpg-query-dev installed";

/// A SQL script compiled to a TOML pipeline.
struct compiled_script {
  /// The equivalent TOML pipeline (what `weir explain` prints).
  std::string toml;
  /// Per line of `toml` (index 0 = line 1): the byte offset in the SQL text
  /// of what produced it.
  std::vector<std::size_t> line_origin;
  /// Per line: for a line `key = "expression"`, the 1-based column where the
  /// string's content starts, and the pairs (offset in the expression, SQL
  /// byte offset) of its pieces, ascending; column 0 otherwise.
  struct expression_map {
    std::size_t column = 0;
    std::vector<std::pair<std::size_t, std::size_t>> pieces;
  };
  std::vector<expression_map> line_expressions;
};

/// Compiles the SQL script `text` (statements separated by ';'): CREATE
/// SOURCE / CREATE TABLE ... WITH (connector = ...), CREATE VIEW, CREATE
/// SINK ... AS SELECT, INSERT INTO ... SELECT, SET key = value. Every problem
/// is a diagnostic at `path`:line:col (1-based, columns in code points) of
/// the SQL text: syntax errors (PostgreSQL's message), unknown tables,
/// columns and functions (with a did-you-mean), type errors, and constructs
/// not supported yet, named, with what to write instead. Nothing is read or
/// written.
[[nodiscard]] expected<compiled_script, std::vector<config::diagnostic>>
compile(std::string_view text, const std::string& path);

/// Compiles `text` and loads the result as `config::load_pipeline` does; the
/// loader's diagnostics are moved to the SQL text's positions. `toml_out`,
/// when not null, receives the compiled TOML (also on a load error).
[[nodiscard]] expected<std::unique_ptr<job>, std::vector<config::diagnostic>>
load_sql(std::string_view text, const std::string& path,
         const config::load_options& opts = {}, std::string* toml_out = nullptr);

/// As `load_sql`, reading the file at `path` (an unreadable file is one
/// file-wide diagnostic).
[[nodiscard]] expected<std::unique_ptr<job>, std::vector<config::diagnostic>>
load_sql_file(const std::string& path, const config::load_options& opts = {},
              std::string* toml_out = nullptr);

} // namespace weir::sql
