// SPDX-License-Identifier: Apache-2.0
#include "weir/state/codec.hpp"
#include "weir/state/keyed_process_function.hpp"

#include <bit>

namespace weir::state {

expected<std::vector<value>> decode_key(std::string_view in) {
  std::vector<value> out;
  auto bad = [](const char* why) { return make_error(errc::parse_error, std::string{"encoded key: "} + why); };
  while (!in.empty()) {
    char tag = in.front();
    in.remove_prefix(1);
    switch (tag) {
      case '\0':
        out.emplace_back(std::monostate{});
        break;
      case 'b': {
        std::uint8_t b = 0;
        if (!wire::get_u8(in, b) || b > 1)
          return bad("bad boolean");
        out.emplace_back(b == 1);
        break;
      }
      case 'i': {
        std::int64_t x = 0;
        if (!wire::get_i64(in, x))
          return bad("truncated integer");
        out.emplace_back(x);
        break;
      }
      case 'f': {
        std::uint64_t bits = 0;
        if (!wire::get_u64(in, bits))
          return bad("truncated float");
        out.emplace_back(std::bit_cast<double>(bits));
        break;
      }
      case 's': {
        std::string_view s;
        if (!wire::get_bytes(in, s))
          return bad("truncated string");
        out.emplace_back(std::string{s});
        break;
      }
      default:
        return bad("unknown type tag");
    }
  }
  return out;
}

} // namespace weir::state
