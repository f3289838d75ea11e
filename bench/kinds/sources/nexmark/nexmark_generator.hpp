// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"
#include "weir/expr/random.hpp"

#include <libdivide.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// The Nexmark event generator (docs/benchmarks/nexmark.md): persons, auctions and
/// bids of an online auction site, every event a pure function of
/// (seed, event number) — as Beam's generator seeds a fresh random generator
/// with each event id — so weir's source, the hand-written baselines
/// (bench/baseline) and the Java port for Apache Flink (bench/flink) see the
/// same events whatever the parallelism. The exact rules, which the Java port
/// follows bit for bit, are in bench/nexmark/README.md.
namespace weir::nexmark {

inline constexpr std::int64_t first_person_id = 1000;
inline constexpr std::int64_t first_auction_id = 1000;
inline constexpr std::int64_t first_category_id = 10;
inline constexpr std::int64_t num_categories = 5;
inline constexpr std::int64_t person_id_lead = 10;
inline constexpr std::int64_t auction_id_lead = 10;
inline constexpr std::int64_t num_active_people = 1000;
inline constexpr std::int64_t num_in_flight_auctions = 100;
inline constexpr std::int64_t hot_block = 100; ///< hot auction / bidder / seller block
inline constexpr std::int64_t num_channels = 10000;

/// Generator settings; the defaults are Nexmark's (docs/benchmarks/nexmark.md) with a
/// fixed base time instead of the wall clock.
struct generator_config {
  std::uint64_t seed = 0;
  /// Event time of event 0, ms since the epoch (2015-07-15T00:00:00Z).
  event_time base_time = 1'436'918'400'000;
  /// Events per second of event time: event n is stamped
  /// `base_time + n * 1000 / event_rate` ms (integer division).
  std::int64_t event_rate = 10'000;
  std::int64_t person_proportion = 1;
  std::int64_t auction_proportion = 3;
  std::int64_t bid_proportion = 46;
  std::int64_t hot_auction_ratio = 2; ///< 1 - 1/ratio of bids go to the hot auction
  std::int64_t hot_bidder_ratio = 4;
  std::int64_t hot_seller_ratio = 4;
  std::int64_t avg_person_bytes = 200;
  std::int64_t avg_auction_bytes = 500;
  std::int64_t avg_bid_bytes = 100;

  std::int64_t total_proportion() const noexcept {
    return person_proportion + auction_proportion + bid_proportion;
  }
};

enum class event_kind : std::uint8_t { person, auction, bid };

/// Which fields of an event to generate: bit i stands for column i of
/// `schema_of(kind)`. Projection push-down (Flink's
/// `SupportsProjectionPushDown`): a text field outside the mask is left
/// empty and its characters are never generated, while the random draws it
/// would have taken are skipped in O(1) (the stream is a counter), so every
/// field inside the mask has exactly the value it has with all fields.
/// Numeric fields are always generated (they cost a draw or two).
using field_mask = std::uint32_t;
inline constexpr field_mask all_fields = ~field_mask{0};

/// The mask with the bits of `columns` set (indices into `schema_of(kind)`).
constexpr field_mask fields_of(std::initializer_list<std::size_t> columns) noexcept {
  field_mask m = 0;
  for (auto c : columns)
    m |= field_mask{1} << c;
  return m;
}

/// Column indices of the three schemas, for `fields_of`.
namespace person_field {
inline constexpr std::size_t id = 0, name = 1, email_address = 2, credit_card = 3, city = 4,
                             state = 5, date_time = 6, extra = 7;
}
namespace auction_field {
inline constexpr std::size_t id = 0, item_name = 1, description = 2, initial_bid = 3,
                             reserve = 4, date_time = 5, expires = 6, seller = 7, category = 8,
                             extra = 9;
}
namespace bid_field {
inline constexpr std::size_t auction = 0, bidder = 1, price = 2, channel = 3, url = 4,
                             date_time = 5, extra = 6;
}

/// "person", "auction" or "bid".
std::string_view to_string(event_kind k) noexcept;

struct person {
  std::int64_t id = 0;
  std::string name;
  std::string email_address;
  std::string credit_card;
  std::string city;
  std::string state;
  event_time date_time = 0;
  std::string extra;
};

struct auction {
  std::int64_t id = 0;
  std::string item_name;
  std::string description;
  std::int64_t initial_bid = 0; ///< cents
  std::int64_t reserve = 0;     ///< cents
  event_time date_time = 0;
  event_time expires = 0;
  std::int64_t seller = 0;
  std::int64_t category = 0;
  std::string extra;
};

struct bid {
  std::int64_t auction = 0;
  std::int64_t bidder = 0;
  std::int64_t price = 0; ///< cents, 100 .. 100'000'000
  std::string channel;
  std::string url;
  event_time date_time = 0;
  std::string extra;
};

/// The random stream of one event: splitmix64 started at
/// `random_word(mixed_seed(seed), n, 0)` (weir/expr/random.hpp).
class event_random {
public:
  event_random(std::uint64_t mixed_seed, std::uint64_t event_number) noexcept;
  explicit event_random(std::uint64_t state) noexcept : state_(state) {}

  /// The next 64 random bits: `state += 0x9E3779B97F4A7C15; mix64(state)`.
  std::uint64_t next() noexcept {
    state_ += expr::seq_multiplier;
    return expr::mix64(state_);
  }
  /// Uniform in `[0, bound)` (`mul_high(next(), bound)`); bound > 0.
  std::int64_t below(std::int64_t bound) noexcept {
    return static_cast<std::int64_t>(expr::mul_high(next(), static_cast<std::uint64_t>(bound)));
  }
  /// Uniform in `[0, 1)` with 53 bits.
  double unit() noexcept { return expr::random_unit(next()); }
  /// The counter: `next()` returns `mix64(state() + 0x9E3779B97F4A7C15)`.
  std::uint64_t state() const noexcept { return state_; }
  /// What `next()` will return, without advancing.
  std::uint64_t peek() const noexcept { return expr::mix64(state_ + expr::seq_multiplier); }
  /// The next N draws, `next()`'s values, without advancing: N independent
  /// mixes that the processor overlaps, where N calls of `next()` whose
  /// number depends on an earlier draw would wait for each other.
  template <std::size_t N>
  std::array<std::uint64_t, N> ahead() const noexcept {
    std::array<std::uint64_t, N> out;
    for (std::size_t i = 0; i < N; ++i)
      out[i] = expr::mix64(state_ + (i + 1) * expr::seq_multiplier);
    return out;
  }
  /// Skips `draws` calls of `next()` in O(1).
  void skip(std::uint64_t draws) noexcept { state_ += draws * expr::seq_multiplier; }
  /// Appends `n` letters a-z, eight per random word (byte % 26).
  void letters(std::string& out, std::int64_t n);
  /// Bytes past the end that `write_letters` may overwrite.
  static constexpr std::size_t letters_slack = 64;
  /// Writes the `n` letters `letters` would append at `p`, which has room
  /// for `n + letters_slack` bytes: up to `letters_slack` bytes after the
  /// letters are overwritten with unspecified values.
  void write_letters(char* p, std::int64_t n);
  /// Appends 3 .. max_len - 1 characters from "a-z" and space (byte % 27);
  /// with `out` null, draws the length and skips the characters' draws.
  /// Returns the number of characters.
  std::int64_t text(std::string* out, std::int64_t max_len);
  void text(std::string& out, std::int64_t max_len) { text(&out, max_len); }

private:
  std::uint64_t state_;
};

/// Generates event number n of a configured stream; const and thread-safe.
class generator {
public:
  /// Builds the price table.
  /// Precondition: proportions, ratios and event_rate are positive (the
  /// API's `nexmark::add_source` checks them).
  explicit generator(generator_config config);

  const generator_config& config() const noexcept { return config_; }

  event_kind kind_of(std::uint64_t n) const noexcept;
  /// The offsets [first, last) within a block of `total_proportion()`
  /// events that hold kind `k`: `kind_of(n) == k` iff `n % total` lies in them.
  std::pair<std::uint64_t, std::uint64_t> block_offsets(event_kind k) const noexcept;
  event_time timestamp_of(std::uint64_t n) const noexcept;

  /// 0-based id of the last person created at or before event n.
  std::int64_t last_base0_person_id(std::uint64_t n) const noexcept;
  /// 0-based id of the last auction created at or before event n (-1 before any).
  std::int64_t last_base0_auction_id(std::uint64_t n) const noexcept;

  /// Fills `out` with event n, which must be of the matching kind. Strings
  /// are assigned, so reusing `out` reuses their buffers. Text fields
  /// outside `fields` are left empty (see `field_mask`); the others are
  /// the same whatever the mask.
  void make_person(std::uint64_t n, person& out, field_mask fields = all_fields) const;
  void make_auction(std::uint64_t n, auction& out, field_mask fields = all_fields) const;
  /// With `extra_to`, a bid's padding is appended there instead (and
  /// `out.extra` left empty): straight into a column.
  void make_bid(std::uint64_t n, bid& out, field_mask fields = all_fields,
                std::string* extra_to = nullptr) const;

  /// Where a padding's characters come from: `size` letters from
  /// `event_random{state}` (`event_random::letters`).
  struct padding {
    std::uint64_t state = 0;
    std::int64_t size = 0;
  };
  /// `make_bid` without the padding's characters (`out.extra` is left
  /// empty): returns where they come from, size 0 when `extra` is outside
  /// `fields`. For generating many bids' paddings in one pass.
  padding bid_fields(std::uint64_t n, bid& out, field_mask fields = all_fields) const;

  /// Bids `bid_numbers_of` generates at most per call.
  static constexpr std::size_t max_bid_numbers = 64;
  /// The numbers of up to `max_bid_numbers` bids, by field: row i is bid
  /// `ns[i]`.
  struct bid_numbers {
    std::array<std::int64_t, max_bid_numbers> auction{};
    std::array<std::int64_t, max_bid_numbers> bidder{};
    std::array<std::int64_t, max_bid_numbers> price{};
    std::array<std::int64_t, max_bid_numbers> date_time{};
    std::array<std::uint64_t, max_bid_numbers> pad_state{}; ///< padding::state
    std::array<std::int64_t, max_bid_numbers> pad_size{};   ///< padding::size
  };
  /// `bid_fields` of the bids `ns[0 .. count)` (each event of kind bid, in
  /// any order) without their channel and URL, the padding sized only
  /// `with_extra`: the same values, eight bids at a time with AVX-512
  /// (F, DQ) where the processor has it (and every event number is under
  /// 2^52), else one by one. Throws std::length_error when count is over
  /// max_bid_numbers.
  void bid_numbers_of(const std::uint64_t* ns, std::size_t count, bool with_extra,
                      bid_numbers& out) const;

  /// One line of text for event n (no newline), the format of the shared
  /// test vectors in bench/vectors: `B|n|auction|bidder|price|channel|url|
  /// date_time|extra`, `A|n|id|item_name|description|initial_bid|reserve|
  /// date_time|expires|seller|category|extra`, `P|n|id|name|email|card|city|
  /// state|date_time|extra`.
  std::string describe(std::uint64_t n) const;

  /// `round(10^(6u) * 100)` cents for a table-driven u: 100 .. ~10^8,
  /// log-uniform, integer arithmetic only (portable bit for bit).
  std::int64_t next_price(event_random& r) const noexcept;

  /// Appends the URL of channel k (0 <= k < num_channels): three random
  /// strings from the stream `random_word(mixed_seed, k, 1)`, and 90 % of
  /// the time a `&channel_id=` parameter.
  void append_channel_url(std::int64_t k, std::string& out) const;

private:
  // The price of draw u (0 <= u < 6 * 4096): next_price is
  // price_of(below(6 * 4096)). Inline in nexmark.cpp.
  std::int64_t price_of(std::int64_t u) const noexcept;
  // Whether bid_numbers_of can take eight at a time up to event last_n.
  bool bid_numbers_apply(std::uint64_t last_n) const noexcept;
  /// Appends the padding to `out`.
  void next_extra(event_random& r, std::int64_t current_size, std::int64_t desired_avg,
                  std::string& out) const;
  /// Draws the padding's length (0, without a draw, when current_size is
  /// over desired_avg).
  static std::int64_t extra_size(event_random& r, std::int64_t current_size,
                                 std::int64_t desired_avg) noexcept;

  generator_config config_;
  std::uint64_t mixed_seed_;
  // Division by the block size and the event rate with a multiply and a
  // shift (libdivide; Granlund & Montgomery, PLDI 1994): two divisions per
  // event otherwise cost more than drawing its numbers.
  libdivide::divider<std::uint64_t> by_total_;
  libdivide::divider<std::uint64_t> by_event_rate_;
  // The rules' table T[i] = 10^(i/4096) in Q59 (0 <= i < 4096), kept small
  // enough to stay in L1 (9 KiB instead of 32): T[i] = ((coarse[i / 64] *
  // fine[i % 64]) >> 59) + delta[i], with fine[j] = T[j], coarse[j] =
  // T[64 j] and |delta| <= 256, computed from T itself.
  std::array<std::uint64_t, 64> price_coarse_{};
  std::array<std::uint64_t, 64> price_fine_{};
  std::array<std::int16_t, 4096> price_delta_{};
};

namespace detail {
/// Whether `event_random::letters` may use its AVX-512 path (the default
/// where the processor has AVX-512 F, DQ and BW); tests turn it off to
/// check the portable path. Not thread-safe to change while generating.
bool& letters_use_avx512() noexcept;
} // namespace detail

/// Schemas of the three streams; `date_time` (and auction `expires`) are
/// timestamps, ids and prices int64.
schema_ptr person_schema();
schema_ptr auction_schema();
schema_ptr bid_schema();
schema_ptr schema_of(event_kind k);

/// Appends event n of kind `k` to `out` as one row: a value to each of the
/// first columns in the order of `schema_of(k)` (`out` may have more
/// columns after those, which the caller fills), its date_time to
/// `out.timestamps`, and counts it in `out.num_rows`. The values only:
/// `complete` then sets the validity of every row appended since, valid or,
/// for text columns outside `fields`, null (nothing may read them:
/// `field_mask`). `p`, `a` and `b` are buffers reused from row to row.
struct row_appender {
  person p;
  auction a;
  bid b;
  field_mask fields = all_fields;
  void append(const generator& g, event_kind k, std::uint64_t n, record_batch& out);
  /// `append` of the bids `ns[0 .. count)` (each of kind bid), in two
  /// passes: every field but the paddings, then the paddings back to back.
  /// The same rows; faster, as no bid waits for the one before it.
  void append_bids(const generator& g, const std::uint64_t* ns, std::size_t count,
                   record_batch& out);
  void complete(event_kind k, record_batch& out) const;

  /// Bids `append_bids` generates per pass.
  static constexpr std::size_t max_bids_at_once = generator::max_bid_numbers;

private:
  std::array<generator::padding, max_bids_at_once> pads_{};
  generator::bid_numbers numbers_;
};

} // namespace weir::nexmark
