// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test-only fault points (not part of the API): the tests set WEIR_FAULT to
// make one component fail at a chosen moment, e.g.
// WEIR_FAULT=kill_after_checkpoint_complete:3.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

namespace weir::internal {

/// N when WEIR_FAULT is `name:N`, 1 when it is `name` alone, 0 otherwise
/// (unset, another fault, or text after `name` that is not `:N`). Which
/// occurrence N counts is the fault point's to say.
inline std::uint64_t test_fault(std::string_view name) {
  const char* f = std::getenv("WEIR_FAULT");
  if (f == nullptr)
    return 0;
  std::string_view s{f};
  if (s.substr(0, name.size()) != name)
    return 0;
  s.remove_prefix(name.size());
  if (s.empty())
    return 1;
  if (s.front() != ':')
    return 0;
  return std::strtoull(std::string{s.substr(1)}.c_str(), nullptr, 10);
}

} // namespace weir::internal
