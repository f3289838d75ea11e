// SPDX-License-Identifier: Apache-2.0
#include "weir/state/cow_state_map.hpp"

#include "weir/core/log.hpp"

#include <spdlog/logger.h>
#include <xxhash.h>

#include <cstdlib>

namespace weir::state {

std::uint64_t hash_key_bytes(std::string_view key) noexcept {
  return XXH3_64bits(key.data(), key.size());
}

std::uint64_t hash_state_key(std::uint64_t key_hash, std::string_view ns) noexcept {
  // The global namespace is by far the most common: skip hashing it.
  if (ns.empty())
    return key_hash;
  return XXH3_64bits_withSeed(ns.data(), ns.size(), key_hash);
}

std::uint64_t hash_state_key(std::string_view key, std::string_view ns) noexcept {
  return hash_state_key(hash_key_bytes(key), ns);
}

void state_invariant_failed(const char* what, const char* file, int line) {
  log::state().critical("{}:{}: state invariant broken: {}", file, line, what);
  log::state().flush();
  std::abort();
}

} // namespace weir::state
