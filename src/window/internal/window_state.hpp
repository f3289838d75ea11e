// SPDX-License-Identifier: Apache-2.0
#pragma once

// What every window operator strategy shares about its keyed state: the
// state names, the encoding of a window as a state namespace, the
// aggregating state's function, and small byte helpers. Private to
// src/window/.

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/state/keyed_state_backend.hpp"
#include "weir/window/time_window.hpp"

#include "../aggregates.hpp"

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

namespace weir::window::internal {

// The aggregates live in weir::internal (src/window/aggregates.hpp); these
// keep `internal::aggregate_set` and the like meaning them inside
// weir::window, where `internal` names this namespace.
using weir::internal::accumulator;
using weir::internal::accumulator_list;
using weir::internal::aggregate_kind;
using weir::internal::aggregate_set;
using weir::internal::parse_aggregate;
using weir::internal::row_target;

// -- names of the operators' keyed state --------------------------------------

inline constexpr std::string_view contents_state = "window-contents";
inline constexpr std::string_view rows_state = "window-rows";
inline constexpr std::string_view trigger_state = "window-trigger";
inline constexpr std::string_view fires_state = "window-fires";
inline constexpr std::string_view merging_state = "window-merging-set";
inline constexpr std::string_view slices_watermark_state = "window-slices-watermark";

// -- a window as a state namespace --------------------------------------------

// A window as a state namespace: the start as a big-endian u64 with the
// sign bit flipped (byte order is numeric order), then the length end -
// start, big-endian, in 7 bytes when it fits (15 bytes in all: a string
// kept inline, no allocation per state entry) or else 8.
inline void put_ordered(std::string& out, std::int64_t x) {
  auto u = static_cast<std::uint64_t>(x) ^ (std::uint64_t{1} << 63);
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((u >> shift) & 0xFF));
}

inline std::uint64_t get_be(std::string_view in) {
  std::uint64_t u = 0;
  for (char c : in)
    u = (u << 8) | static_cast<unsigned char>(c);
  return u;
}

inline std::int64_t get_ordered(std::string_view in) {
  return static_cast<std::int64_t>(get_be(in.substr(0, 8)) ^ (std::uint64_t{1} << 63));
}

inline void encode_window_into(std::string& out, const time_window& w) {
  out.clear();
  put_ordered(out, w.start);
  const auto length = static_cast<std::uint64_t>(w.end) - static_cast<std::uint64_t>(w.start);
  const int top = length >> 56 == 0 ? 48 : 56;
  for (int shift = top; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((length >> shift) & 0xFF));
}

inline std::string encode_window(const time_window& w) {
  std::string out;
  encode_window_into(out, w);
  return out;
}

inline time_window decode_window(std::string_view ns) {
  if (ns.size() != 15 && ns.size() != 16)
    throw std::logic_error("window operator: a timer has a namespace that is not a window");
  const auto start = get_ordered(ns);
  const auto length = get_be(ns.substr(8));
  return time_window{start, static_cast<std::int64_t>(static_cast<std::uint64_t>(start) + length)};
}

// Flink's WindowOperator.cleanupTime: for event time, max_timestamp +
// allowed_lateness (saturating at Long.MAX_VALUE); otherwise max_timestamp.
inline event_time saturating_add(event_time a, std::int64_t b) noexcept {
  event_time out;
  if (__builtin_add_overflow(a, b, &out))
    return max_watermark;
  return out;
}

// -- the aggregating state ------------------------------------------------------

// One record as the aggregating state's input.
struct row_input {
  const record_batch* batch = nullptr;
  const std::vector<column>* args = nullptr;
  std::uint32_t row = 0;
  std::uint64_t seq = 0;
};

using accumulators = accumulator_list;

/// The "window-contents" state's function: one accumulator per aggregate,
/// updated a row at a time and merged (Flink's `AggregateFunction`).
class contents_function final
  : public state::aggregate_function<row_input, accumulators, std::monostate> {
public:
  explicit contents_function(const aggregate_set* aggs) : aggs_(aggs) {}
  accumulators create_accumulator() const override { return accumulators(aggs_->size()); }
  void add(const row_input& in, accumulators& acc) const override {
    check(acc);
    aggs_->update_row(*in.batch, *in.args, in.row, in.seq, acc.data());
  }
  std::monostate get_result(const accumulators&) const override { return {}; }
  void merge(accumulators& into, const accumulators& from) const override {
    check(into);
    check(from);
    aggs_->merge(into.data(), from.data());
  }

  /// Throws when `acc` does not hold one accumulator per aggregate: state
  /// restored from a checkpoint of a window with other aggregates.
  const accumulators& check(const accumulators& acc) const {
    if (acc.size() != aggs_->size())
      throw std::runtime_error("window state holds " + std::to_string(acc.size())
                               + " accumulators per window, but the window has "
                               + std::to_string(aggs_->size())
                               + " aggregates: was the checkpoint taken with other "
                                 "aggregates? (start over with --fresh)");
    return acc;
  }

private:
  const aggregate_set* aggs_;
};

/// A buffered record: arrival number, event time (ms), every input field.
using buffered_row = std::tuple<std::uint64_t, std::int64_t, std::vector<value>>;
using window_pair = std::pair<std::int64_t, std::int64_t>;

// -- small helpers --------------------------------------------------------------

// 0, 1, ..., n - 1.
inline std::vector<std::size_t> first_indices(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = i;
  return out;
}

template <class T>
T must(expected<T> x) {
  if (!x)
    throw std::logic_error("window operator state: " + x.error().message);
  return std::move(*x);
}

// The first eight bytes at `p` as a number that orders as the bytes do.
inline std::uint64_t byte_order_word(const char* p) noexcept {
  std::uint64_t w = 0;
  std::memcpy(&w, p, sizeof w);
  if constexpr (std::endian::native == std::endian::little)
    w = __builtin_bswap64(w);
  return w;
}

// std::string_view::compare (byte order) for encoded keys, without a call
// to memcmp for keys of 8 to 16 bytes of equal length (an int64 key is 9):
// their first and last eight bytes decide.
inline int compare_key_bytes(std::string_view a, std::string_view b) noexcept {
  if (a.size() == b.size() && a.size() >= 8 && a.size() <= 16) {
    for (const std::size_t at : {std::size_t{0}, a.size() - 8}) {
      const std::uint64_t x = byte_order_word(a.data() + at);
      const std::uint64_t y = byte_order_word(b.data() + at);
      if (x != y)
        return x < y ? -1 : 1;
    }
    return 0;
  }
  return a.compare(b);
}

} // namespace weir::window::internal
