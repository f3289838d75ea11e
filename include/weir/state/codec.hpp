// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"

#include <bit>
#include <concepts>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace weir::state {

/// Binary serialization of a state value for snapshots (Flink's
/// `TypeSerializer`). Keyed state is kept typed in memory and goes through
/// `codec<T>` only when a snapshot is serialized or restored.
///
/// A specialization provides
/// ```cpp
/// static void encode(const T& v, std::string& out);          // appends bytes
/// static bool decode(std::string_view& in, T& out);          // consumes bytes
/// ```
/// `decode` must consume exactly what `encode` wrote, never read past `in`,
/// and return false (leaving `in` in any state) on malformed input: snapshot
/// bytes may be corrupt. The encoding must be stable across runs, builds and
/// machines (little-endian, length-prefixed). Built-in: every integral and
/// floating-point type, bool, std::string, std::monostate, std::variant (so
/// `weir::value`), std::vector, std::pair, std::tuple, std::optional and
/// std::map of encodable types. Users specialize `weir::state::codec` for
/// their own types, preferably with the helpers in `weir::state::wire`.
template <class T, class Enable = void>
struct codec;

/// A type with a `codec` specialization.
template <class T>
concept encodable = requires(const T& v, T& dst, std::string& out, std::string_view& in) {
  codec<T>::encode(v, out);
  { codec<T>::decode(in, dst) } -> std::same_as<bool>;
};

/// Little-endian, bounds-checked primitives for codecs and snapshot formats.
/// Every `get_*` returns false without consuming anything when `in` is too
/// short.
namespace wire {

static_assert(std::endian::native == std::endian::little,
              "the snapshot format assumes a little-endian host");

template <class T>
  requires std::is_trivially_copyable_v<T>
inline void put_raw(std::string& out, T x) {
  char buf[sizeof(T)];
  std::memcpy(buf, &x, sizeof(T));
  out.append(buf, sizeof(T));
}

template <class T>
  requires std::is_trivially_copyable_v<T>
[[nodiscard]] inline bool get_raw(std::string_view& in, T& x) noexcept {
  if (in.size() < sizeof(T))
    return false;
  std::memcpy(&x, in.data(), sizeof(T));
  in.remove_prefix(sizeof(T));
  return true;
}

inline void put_u8(std::string& out, std::uint8_t x) { out.push_back(static_cast<char>(x)); }
inline void put_u16(std::string& out, std::uint16_t x) { put_raw(out, x); }
inline void put_u32(std::string& out, std::uint32_t x) { put_raw(out, x); }
inline void put_u64(std::string& out, std::uint64_t x) { put_raw(out, x); }
inline void put_i64(std::string& out, std::int64_t x) { put_raw(out, x); }

/// Appends a u32 length, then the bytes. Precondition: size < 4 GiB.
inline void put_bytes(std::string& out, std::string_view bytes) {
  put_u32(out, static_cast<std::uint32_t>(bytes.size()));
  out.append(bytes);
}

[[nodiscard]] inline bool get_u8(std::string_view& in, std::uint8_t& x) noexcept { return get_raw(in, x); }
[[nodiscard]] inline bool get_u16(std::string_view& in, std::uint16_t& x) noexcept { return get_raw(in, x); }
[[nodiscard]] inline bool get_u32(std::string_view& in, std::uint32_t& x) noexcept { return get_raw(in, x); }
[[nodiscard]] inline bool get_u64(std::string_view& in, std::uint64_t& x) noexcept { return get_raw(in, x); }
[[nodiscard]] inline bool get_i64(std::string_view& in, std::int64_t& x) noexcept { return get_raw(in, x); }

/// Reads a u32 length and a view of that many bytes (into `in`'s buffer).
[[nodiscard]] inline bool get_bytes(std::string_view& in, std::string_view& bytes) noexcept {
  std::string_view probe = in;
  std::uint32_t n = 0;
  if (!get_u32(probe, n) || probe.size() < n)
    return false;
  bytes = probe.substr(0, n);
  probe.remove_prefix(n);
  in = probe;
  return true;
}

/// Reads an element count for a container; rejects counts larger than the
/// remaining bytes (every built-in element encoding is at least one byte
/// except std::monostate), so corrupt counts cannot trigger huge allocations.
[[nodiscard]] inline bool get_count(std::string_view& in, std::uint32_t& n) noexcept {
  std::string_view probe = in;
  if (!get_u32(probe, n) || n > probe.size())
    return false;
  in = probe;
  return true;
}

} // namespace wire

/// Integers: fixed width, little-endian.
template <class T>
struct codec<T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>> {
  static void encode(const T& v, std::string& out) { wire::put_raw(out, v); }
  static bool decode(std::string_view& in, T& out) { return wire::get_raw(in, out); }
};

/// Floating point: the IEEE-754 bit pattern, little-endian.
template <class T>
struct codec<T, std::enable_if_t<std::is_floating_point_v<T>>> {
  static void encode(const T& v, std::string& out) { wire::put_raw(out, v); }
  static bool decode(std::string_view& in, T& out) { return wire::get_raw(in, out); }
};

/// bool: one byte, 0 or 1 (anything else is rejected).
template <>
struct codec<bool> {
  static void encode(const bool& v, std::string& out) { wire::put_u8(out, v ? 1 : 0); }
  static bool decode(std::string_view& in, bool& out) {
    std::uint8_t b = 0;
    if (!wire::get_u8(in, b) || b > 1)
      return false;
    out = b == 1;
    return true;
  }
};

/// std::string: u32 length + bytes.
template <>
struct codec<std::string> {
  static void encode(const std::string& v, std::string& out) { wire::put_bytes(out, v); }
  static bool decode(std::string_view& in, std::string& out) {
    std::string_view b;
    if (!wire::get_bytes(in, b))
      return false;
    out.assign(b);
    return true;
  }
};

/// std::monostate: no bytes.
template <>
struct codec<std::monostate> {
  static void encode(const std::monostate&, std::string&) {}
  static bool decode(std::string_view&, std::monostate&) { return true; }
};

/// std::variant (and so `weir::value`): u8 alternative index + that
/// alternative's encoding. At most 255 alternatives.
template <class... Ts>
struct codec<std::variant<Ts...>, std::enable_if_t<(encodable<Ts> && ...)>> {
  using type = std::variant<Ts...>;
  static_assert(sizeof...(Ts) < 256);
  static void encode(const type& v, std::string& out) {
    wire::put_u8(out, static_cast<std::uint8_t>(v.index()));
    std::visit([&out](const auto& x) { codec<std::decay_t<decltype(x)>>::encode(x, out); }, v);
  }
  static bool decode(std::string_view& in, type& out) {
    std::uint8_t idx = 0;
    if (!wire::get_u8(in, idx) || idx >= sizeof...(Ts))
      return false;
    return decode_at<0>(idx, in, out);
  }

private:
  template <std::size_t I>
  static bool decode_at(std::size_t idx, std::string_view& in, type& out) {
    if constexpr (I == sizeof...(Ts)) {
      return false;
    } else {
      if (idx != I)
        return decode_at<I + 1>(idx, in, out);
      using alt = std::variant_alternative_t<I, type>;
      alt x{};
      if (!codec<alt>::decode(in, x))
        return false;
      out.template emplace<I>(std::move(x));
      return true;
    }
  }
};

/// std::vector: u32 count + elements.
template <class T>
struct codec<std::vector<T>, std::enable_if_t<encodable<T>>> {
  static void encode(const std::vector<T>& v, std::string& out) {
    wire::put_u32(out, static_cast<std::uint32_t>(v.size()));
    for (const auto& x : v)
      codec<T>::encode(x, out);
  }
  static bool decode(std::string_view& in, std::vector<T>& out) {
    std::uint32_t n = 0;
    if (!wire::get_count(in, n))
      return false;
    out.clear();
    out.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      T x{};
      if (!codec<T>::decode(in, x))
        return false;
      out.push_back(std::move(x));
    }
    return true;
  }
};

/// std::pair: first, then second.
template <class A, class B>
struct codec<std::pair<A, B>, std::enable_if_t<encodable<A> && encodable<B>>> {
  static void encode(const std::pair<A, B>& v, std::string& out) {
    codec<A>::encode(v.first, out);
    codec<B>::encode(v.second, out);
  }
  static bool decode(std::string_view& in, std::pair<A, B>& out) {
    return codec<A>::decode(in, out.first) && codec<B>::decode(in, out.second);
  }
};

/// std::tuple: the elements in order.
template <class... Ts>
struct codec<std::tuple<Ts...>, std::enable_if_t<(encodable<Ts> && ...)>> {
  static void encode(const std::tuple<Ts...>& v, std::string& out) {
    std::apply([&out](const auto&... x) { (codec<std::decay_t<decltype(x)>>::encode(x, out), ...); }, v);
  }
  static bool decode(std::string_view& in, std::tuple<Ts...>& out) {
    return std::apply(
      [&in](auto&... x) { return (codec<std::decay_t<decltype(x)>>::decode(in, x) && ...); }, out);
  }
};

/// std::optional: u8 0 (empty) or 1 followed by the value.
template <class T>
struct codec<std::optional<T>, std::enable_if_t<encodable<T>>> {
  static void encode(const std::optional<T>& v, std::string& out) {
    wire::put_u8(out, v ? 1 : 0);
    if (v)
      codec<T>::encode(*v, out);
  }
  static bool decode(std::string_view& in, std::optional<T>& out) {
    std::uint8_t flag = 0;
    if (!wire::get_u8(in, flag) || flag > 1)
      return false;
    if (flag == 0) {
      out.reset();
      return true;
    }
    T x{};
    if (!codec<T>::decode(in, x))
      return false;
    out = std::move(x);
    return true;
  }
};

/// std::map: u32 count + (key, value) pairs in key order. Duplicate keys in
/// the input are rejected.
template <class K, class V, class C, class A>
struct codec<std::map<K, V, C, A>, std::enable_if_t<encodable<K> && encodable<V>>> {
  static void encode(const std::map<K, V, C, A>& m, std::string& out) {
    wire::put_u32(out, static_cast<std::uint32_t>(m.size()));
    for (const auto& [k, v] : m) {
      codec<K>::encode(k, out);
      codec<V>::encode(v, out);
    }
  }
  static bool decode(std::string_view& in, std::map<K, V, C, A>& out) {
    std::uint32_t n = 0;
    if (!wire::get_count(in, n))
      return false;
    out.clear();
    for (std::uint32_t i = 0; i < n; ++i) {
      K k{};
      V v{};
      if (!codec<K>::decode(in, k) || !codec<V>::decode(in, v))
        return false;
      if (!out.emplace(std::move(k), std::move(v)).second)
        return false;
    }
    return true;
  }
};

/// Encodes `v` into a fresh string (tests, one-off uses).
template <encodable T>
std::string encode_to_string(const T& v) {
  std::string out;
  codec<T>::encode(v, out);
  return out;
}

/// Decodes a whole string; nullopt if it is malformed or has trailing bytes.
template <encodable T>
std::optional<T> decode_from_string(std::string_view bytes) {
  T x{};
  if (!codec<T>::decode(bytes, x) || !bytes.empty())
    return std::nullopt;
  return x;
}

static_assert(encodable<weir::value>);
static_assert(encodable<std::vector<weir::value>>);

} // namespace weir::state
