// SPDX-License-Identifier: Apache-2.0
#include "byte_size.hpp"

#include <utility>

namespace weir::config {

std::optional<std::uint64_t> parse_byte_size(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9')
    ++i;
  if (i == 0 || i > 18)
    return std::nullopt;
  std::uint64_t n = 0;
  for (std::size_t k = 0; k < i; ++k)
    n = n * 10 + static_cast<std::uint64_t>(text[k] - '0');
  auto unit = text.substr(i);
  if (!unit.empty() && unit.front() == ' ')
    unit.remove_prefix(1);
  static constexpr std::pair<std::string_view, int> units[] = {
    {"B", 0}, {"KiB", 10}, {"MiB", 20}, {"GiB", 30}, {"TiB", 40}};
  for (const auto& [name, shift] : units)
    if (unit == name) {
      if (n > (std::uint64_t{1} << (62 - shift)))
        return std::nullopt;
      return n << shift;
    }
  return std::nullopt;
}

std::optional<std::uint64_t> byte_size(reader& r, std::string_view key, std::uint64_t min,
                                       std::string_view min_text) {
  auto* n = r.get(key);
  if (!n)
    return std::nullopt;
  const std::string hint =
    "hint: write an integer with a unit (B, KiB, MiB, GiB, TiB): \"512MiB\", \"64GiB\"";
  auto* str = n->as_string();
  if (!str) {
    r.wrong_type(*n, key, "a size", {hint});
    return std::nullopt;
  }
  auto v = parse_byte_size(str->get());
  if (!v) {
    r.fail(pos_of(*n), r.path(key) + " must be a size, got " + quote(str->get()), {hint});
    return std::nullopt;
  }
  if (*v < min) {
    r.fail(pos_of(*n), r.path(key) + " must be at least " + quote(std::string{min_text})
                         + ", got " + quote(str->get()));
    return std::nullopt;
  }
  return v;
}

} // namespace weir::config
