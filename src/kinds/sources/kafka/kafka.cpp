// SPDX-License-Identifier: Apache-2.0
// `type = "kafka"` source: planned (DESIGN.md §2); answered with "not supported yet".
#include "config/kind.hpp"

namespace weir::kinds {

config::kind_descriptor describe_sources_kafka() {
  config::kind_descriptor d;
  d.category = config::kind_category::source;
  d.type = "kafka";
  d.min_inputs = d.max_inputs = 0;
  d.available = false;
  return d;
}

} // namespace weir::kinds
