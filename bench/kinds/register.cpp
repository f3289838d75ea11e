// SPDX-License-Identifier: Apache-2.0
// Adds the benchmark kinds to the registry when a program linking this object
// starts (the weir executable, the tests that load generator or nexmark).
#include "config/kind.hpp"

namespace weir::kinds {
void register_bench_kinds(config::kind_registry& r);
} // namespace weir::kinds

namespace {
const bool registered = [] {
  weir::kinds::register_bench_kinds(weir::config::kind_registry::instance());
  return true;
}();
} // namespace
