// SPDX-License-Identifier: Apache-2.0
#include "weir/core/key_group.hpp"

#include <xxhash.h>

#include <bit>
#include <cstring>

namespace weir {

namespace {

template <class T>
void append_le(std::string& out, T x) {
  static_assert(std::endian::native == std::endian::little,
                "key encoding assumes a little-endian host");
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  out.append(buf, sizeof(T));
}

} // namespace

void encode_key(const record_batch& batch, std::span<const std::size_t> key_fields,
                std::size_t row, std::string& out) {
  for (auto idx : key_fields) {
    const column& c = batch.columns[idx];
    if (c.is_null(row)) {
      out.push_back('\0');
      continue;
    }
    switch (c.type) {
      case type_id::boolean:
        out.push_back('b');
        out.push_back(c.bools[row] ? '\1' : '\0');
        break;
      case type_id::int64:
      case type_id::timestamp:
        out.push_back('i');
        append_le(out, c.ints[row]);
        break;
      case type_id::float64: {
        out.push_back('f');
        // -0.0 and 0.0 are the same key.
        double d = c.floats[row] == 0.0 ? 0.0 : c.floats[row];
        append_le(out, std::bit_cast<std::uint64_t>(d));
        break;
      }
      case type_id::string: {
        auto s = c.str(row);
        out.push_back('s');
        append_le(out, static_cast<std::uint32_t>(s.size()));
        out.append(s);
        break;
      }
      case type_id::null_type:
        out.push_back('\0');
        break;
    }
  }
}

std::uint16_t assign_key_group(std::string_view encoded_key,
                               std::size_t max_parallelism) noexcept {
  auto h = XXH64(encoded_key.data(), encoded_key.size(), key_hash_seed);
  return static_cast<std::uint16_t>(h % max_parallelism);
}

std::size_t operator_index_for_key_group(std::size_t group,
                                         std::size_t max_parallelism,
                                         std::size_t parallelism) noexcept {
  return group * parallelism / max_parallelism;
}

} // namespace weir
