// SPDX-License-Identifier: Apache-2.0
#pragma once
// Sizes in bytes in TOML ("512MiB"): the file sink's max_size, the file
// source's split_size.

#include "reader.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace weir::config {

/// A size in bytes: an integer and a binary unit, "512MiB", "64 GiB"
/// (B, KiB, MiB, GiB, TiB); nullopt when malformed or beyond 2^62 bytes.
std::optional<std::uint64_t> parse_byte_size(std::string_view text);

/// `key` of `r` as a byte size of at least `min` bytes (`min_text` is `min`
/// as the user writes it, for the message); errors reported at the value.
std::optional<std::uint64_t> byte_size(reader& r, std::string_view key, std::uint64_t min,
                                       std::string_view min_text);

} // namespace weir::config
