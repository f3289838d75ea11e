// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <cstdint>
#include <string>

namespace weir::expr {

/// The 64-bit finalizer of splitmix64 (Stafford's "Mix13" variant): a
/// bijection on 64-bit words whose output bits each depend on every input
/// bit. Every random value weir generates goes through it, so the Java port
/// of the benchmark generators (bench/flink) reproduces them bit for bit.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// Odd constants that spread `seq` and `salt` over the word before mixing.
inline constexpr std::uint64_t seq_multiplier = 0x9E3779B97F4A7C15ULL;
inline constexpr std::uint64_t salt_multiplier = 0xC2B2AE3D27D4EB4FULL;

/// `mix64(seed)`: computed once per expression, not per row.
constexpr std::uint64_t mixed_seed(std::uint64_t seed) noexcept {
  return mix64(seed);
}

/// The random word of (seed, seq, salt): a stateless hash, so row `seq`
/// gets the same value whatever the batch, subtask or parallelism that
/// generates it (the way Beam's Nexmark generator seeds a fresh random
/// generator with each event number). `mseed` is `mixed_seed(seed)`:
/// `mix64(mseed ^ seq * seq_multiplier ^ salt * salt_multiplier)`.
constexpr std::uint64_t random_word(std::uint64_t mseed, std::int64_t seq,
                                    std::int64_t salt) noexcept {
  return mix64(mseed ^ (static_cast<std::uint64_t>(seq) * seq_multiplier)
               ^ (static_cast<std::uint64_t>(salt) * salt_multiplier));
}

/// The high 64 bits of the 128-bit product `a * b`: maps a uniform word to
/// `[0, b)` with one multiplication (Lemire's method, without the rejection
/// step: the bias is below 2^-32 for the bounds used here).
inline std::uint64_t mul_high(std::uint64_t a, std::uint64_t b) noexcept {
  __extension__ using u128 = unsigned __int128; // GCC and Clang, 64-bit targets
  return static_cast<std::uint64_t>((static_cast<u128>(a) * b) >> 64);
}

/// `rand_int(seq, salt, lo, hi)` of the expression language: uniform in
/// `[lo, hi]` (both inclusive), `lo + mul_high(word, hi - lo + 1)`; the full
/// int64 range when `hi - lo + 1` wraps to 0. Precondition: `lo <= hi`.
inline std::int64_t random_int(std::uint64_t word, std::int64_t lo,
                               std::int64_t hi) noexcept {
  const std::uint64_t span =
    static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo) + 1;
  const std::uint64_t r = span == 0 ? word : mul_high(word, span);
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(lo) + r);
}

/// `rand_float(seq, salt)`: uniform in `[0, 1)` with 53 random bits.
constexpr double random_unit(std::uint64_t word) noexcept {
  return static_cast<double>(word >> 11) * 0x1.0p-53;
}

/// The longest string `rand_string` gives: a longer `length` makes it null
/// (so that no row can ask for more memory than a batch can hold).
inline constexpr std::int64_t max_random_string_length = 65'536;

/// `rand_string(seq, salt, length)`: `length` lowercase ASCII letters;
/// letter i is byte `i % 8` of `mix64(word + (i / 8) * seq_multiplier)`,
/// modulo 26, added to 'a'. Appends to `out`; nothing for `length <= 0`.
inline void append_random_letters(std::string& out, std::uint64_t word,
                                  std::int64_t length) {
  for (std::int64_t i = 0; i < length; i += 8) {
    std::uint64_t w = mix64(word + static_cast<std::uint64_t>(i / 8) * seq_multiplier);
    const std::int64_t n = length - i < 8 ? length - i : 8;
    for (std::int64_t j = 0; j < n; ++j) {
      out.push_back(static_cast<char>('a' + (w & 0xFF) % 26));
      w >>= 8;
    }
  }
}

} // namespace weir::expr
