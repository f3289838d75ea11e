// SPDX-License-Identifier: Apache-2.0
#pragma once
// Test-only fault points (not part of the API): the tests set WEIR_FAULT to
// make one component fail at a chosen moment, e.g.
// WEIR_FAULT=kill_after_checkpoint_complete:3.
#include <signal.h>
#include <unistd.h>

#include <atomic>
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

/// A kill point: when WEIR_FAULT is `name:N` (`name` alone: N = 1), the Nth
/// call with `name` in the process (counted over all threads) writes
/// "weir: WEIR_FAULT: killing the process at name:N" to stderr and SIGKILLs
/// the process, as a crash at that point would end it; every other call
/// returns at once. The kill tests use it where a kill must land at a
/// precise point (inside a commit, between a checkpoint's state and its
/// manifest); `name` says where, in the words of the call site.
inline void test_fault_kill(std::string_view name) {
  static std::atomic<std::uint64_t> hits{0};
  const auto n = test_fault(name);
  if (n == 0 || hits.fetch_add(1, std::memory_order_relaxed) + 1 != n)
    return;
  const auto line = "weir: WEIR_FAULT: killing the process at " + std::string{name} + ":"
                    + std::to_string(n) + "\n";
  [[maybe_unused]] auto w = ::write(2, line.data(), line.size());
  ::kill(::getpid(), SIGKILL);
}

} // namespace weir::internal
