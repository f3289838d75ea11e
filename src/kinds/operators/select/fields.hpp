// SPDX-License-Identifier: Apache-2.0
#pragma once
// What `select` and `map` share: a table of `name = "expression"` fields.
#include "config/kind.hpp"

namespace weir::kinds::internal {

struct fields_spec : config::kind_spec {
  std::vector<config::named_text> fields;
  const toml::node* fields_node = nullptr;
};

/// Reads `fields` (required).
std::unique_ptr<config::kind_spec> parse_fields(config::parse_context& c);

/// Builds a select (`select` true) or a map and points at every field
/// expression that does not compile.
void plan_fields(config::plan_context& c, const config::kind_spec& ks, bool select);

} // namespace weir::kinds::internal
