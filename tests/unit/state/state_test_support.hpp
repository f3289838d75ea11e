// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/key_group.hpp"
#include "weir/state/codec.hpp"

#include <cstdint>
#include <string>
#include <string_view>

namespace weir::test {

/// The `weir::encode_key` bytes of a single string key field.
inline std::string string_key(std::string_view s) {
  std::string out;
  out.push_back('s');
  state::wire::put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
  return out;
}

/// The `weir::encode_key` bytes of a single int64 key field.
inline std::string int_key(std::int64_t x) {
  std::string out;
  out.push_back('i');
  state::wire::put_i64(out, x);
  return out;
}

/// "user-<i>" as a key.
inline std::string user_key(std::size_t i) { return string_key("user-" + std::to_string(i)); }

} // namespace weir::test
