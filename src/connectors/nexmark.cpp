// SPDX-License-Identifier: Apache-2.0
#include "weir/connectors/nexmark.hpp"

#include "weir/expr/random.hpp"

#include <algorithm>
#include <charconv>

namespace weir::nexmark {

namespace {

using expr::mix64;

constexpr std::array<std::string_view, 11> first_names{
  "Peter", "Paul", "Luke", "John", "Saul", "Vicky",
  "Kate",  "Julie", "Sarah", "Deiter", "Walter"};
constexpr std::array<std::string_view, 9> last_names{
  "Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"};
constexpr std::array<std::string_view, 10> us_cities{
  "Phoenix", "Los Angeles", "San Francisco", "Boise",   "Portland",
  "Bend",    "Redmond",     "Seattle",       "Kent",    "Cheyenne"};
constexpr std::array<std::string_view, 6> us_states{"AZ", "CA", "ID", "OR", "WA", "WY"};
constexpr std::array<std::string_view, 4> hot_channels{"Google", "Facebook", "Baidu",
                                                       "Apple"};
constexpr std::array<std::string_view, 4> hot_urls{
  "https://www.nexmark.com/google/item.htm?query=1",
  "https://www.nexmark.com/facebook/item.htm?query=1",
  "https://www.nexmark.com/baidu/item.htm?query=1",
  "https://www.nexmark.com/apple/item.htm?query=1"};

/// 10^(1/4096) in Q59 fixed point, floor(10^(1/4096) * 2^59).
constexpr std::uint64_t price_step_q59 = 576784903449122374ULL;

/// Salt of the random stream of channel k's URL.
constexpr std::uint64_t channel_salt = 1;

std::uint32_t reverse_bits(std::uint32_t x) noexcept {
  x = ((x >> 1) & 0x55555555U) | ((x & 0x55555555U) << 1);
  x = ((x >> 2) & 0x33333333U) | ((x & 0x33333333U) << 2);
  x = ((x >> 4) & 0x0F0F0F0FU) | ((x & 0x0F0F0F0FU) << 4);
  x = ((x >> 8) & 0x00FF00FFU) | ((x & 0x00FF00FFU) << 8);
  return (x >> 16) | (x << 16);
}

void append_int(std::string& out, std::int64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

} // namespace

std::string_view to_string(event_kind k) noexcept {
  switch (k) {
    case event_kind::person: return "person";
    case event_kind::auction: return "auction";
    case event_kind::bid: return "bid";
  }
  return "bid";
}

// -- event_random ---------------------------------------------------------------

event_random::event_random(std::uint64_t mixed_seed, std::uint64_t event_number) noexcept
  : state_(expr::random_word(mixed_seed, static_cast<std::int64_t>(event_number), 0)) {
}

namespace {

// byte -> 'a' + byte % 26, and byte -> "a..z " [byte % 27]: one load per
// character instead of a division.
struct alphabets {
  std::array<char, 256> letters{};
  std::array<char, 256> text{};
  constexpr alphabets() {
    for (int b = 0; b < 256; ++b) {
      letters[static_cast<std::size_t>(b)] = static_cast<char>('a' + b % 26);
      text[static_cast<std::size_t>(b)] = b % 27 == 26 ? ' ' : static_cast<char>('a' + b % 27);
    }
  }
};
constexpr alphabets alphabet{};

// Appends n characters, eight per random word (its bytes, low first).
void append_chars(event_random& r, std::string& out, std::int64_t n,
                  const std::array<char, 256>& table) {
  if (n <= 0)
    return;
  const std::size_t base = out.size();
  out.resize(base + static_cast<std::size_t>(n));
  char* p = out.data() + base;
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const std::uint64_t w = r.next();
    for (int j = 0; j < 8; ++j)
      p[i + j] = table[(w >> (8 * j)) & 0xFF];
  }
  if (i < n) {
    std::uint64_t w = r.next();
    for (; i < n; ++i, w >>= 8)
      p[i] = table[w & 0xFF];
  }
}

} // namespace

void event_random::letters(std::string& out, std::int64_t n) {
  append_chars(*this, out, n, alphabet.letters);
}

void event_random::text(std::string& out, std::int64_t max_len) {
  append_chars(*this, out, 3 + below(max_len - 3), alphabet.text);
}

// -- generator ------------------------------------------------------------------

generator::generator(generator_config config)
  : config_(config), mixed_seed_(expr::mixed_seed(config.seed)) {
  price_table_[0] = 1ULL << 59;
  for (std::size_t i = 1; i < price_table_.size(); ++i)
    price_table_[i] = expr::mul_high(price_table_[i - 1], price_step_q59) << 5
                      | (price_table_[i - 1] * price_step_q59) >> 59;
}

void generator::append_channel_url(std::int64_t k, std::string& out) const {
  // Computed on demand rather than cached: 10'000 cached URLs are ~1 MB of
  // scattered strings, and a cache miss costs more than the four draws.
  event_random r{expr::random_word(mixed_seed_, k, channel_salt)};
  out += "https://www.nexmark.com/";
  r.letters(out, 3 + r.below(3));
  out += '/';
  r.letters(out, 3 + r.below(3));
  out += '/';
  r.letters(out, 3 + r.below(3));
  out += "/item.htm?query=1";
  if (r.below(10) > 0) {
    out += "&channel_id=";
    append_int(out, reverse_bits(static_cast<std::uint32_t>(k)) & 0x7FFFFFFFU);
  }
}

event_kind generator::kind_of(std::uint64_t n) const noexcept {
  const auto rem = static_cast<std::int64_t>(n % static_cast<std::uint64_t>(
                                               config_.total_proportion()));
  if (rem < config_.person_proportion)
    return event_kind::person;
  if (rem < config_.person_proportion + config_.auction_proportion)
    return event_kind::auction;
  return event_kind::bid;
}

event_time generator::timestamp_of(std::uint64_t n) const noexcept {
  return config_.base_time + static_cast<std::int64_t>(n) * 1000 / config_.event_rate;
}

std::int64_t generator::last_base0_person_id(std::uint64_t n) const noexcept {
  const auto total = config_.total_proportion();
  const auto id = static_cast<std::int64_t>(n);
  const std::int64_t epoch = id / total;
  std::int64_t offset = id % total;
  if (offset >= config_.person_proportion)
    offset = config_.person_proportion - 1;
  return epoch * config_.person_proportion + offset;
}

std::int64_t generator::last_base0_auction_id(std::uint64_t n) const noexcept {
  const auto total = config_.total_proportion();
  const auto id = static_cast<std::int64_t>(n);
  std::int64_t epoch = id / total;
  std::int64_t offset = id % total;
  if (offset < config_.person_proportion) {
    // A person event: the last auction is in the previous epoch.
    --epoch;
    offset = config_.auction_proportion - 1;
  } else if (offset >= config_.person_proportion + config_.auction_proportion) {
    offset = config_.auction_proportion - 1; // a bid: after this epoch's auctions
  } else {
    offset -= config_.person_proportion;
  }
  return epoch * config_.auction_proportion + offset;
}

std::int64_t generator::next_base0_person_id(std::uint64_t n,
                                             event_random& r) const noexcept {
  const std::int64_t num_people = last_base0_person_id(n) + 1;
  const std::int64_t active = std::min(num_people, num_active_people);
  return num_people - active + r.below(active + person_id_lead);
}

std::int64_t generator::next_base0_auction_id(std::uint64_t n,
                                              event_random& r) const noexcept {
  const std::int64_t max_auction = last_base0_auction_id(n);
  const std::int64_t min_auction = std::max<std::int64_t>(max_auction - num_in_flight_auctions, 0);
  return min_auction + r.below(max_auction - min_auction + 1 + auction_id_lead);
}

std::int64_t generator::next_price(event_random& r) const noexcept {
  // u = (decade, step): 6 decades of 4096 log-steps; price = 100 * 10^decade
  // * 10^(step/4096), the last factor from the Q59 table.
  const std::int64_t u = r.below(6 * 4096);
  std::uint64_t scale = 100;
  for (std::int64_t d = u / 4096; d > 0; --d)
    scale *= 10;
  const std::uint64_t t = price_table_[static_cast<std::size_t>(u % 4096)];
  return static_cast<std::int64_t>(expr::mul_high(t, scale) << 5 | (t * scale) >> 59);
}

void generator::next_extra(event_random& r, std::int64_t current_size,
                           std::int64_t desired_avg, std::string& out) const {
  out.clear();
  if (current_size > desired_avg)
    return;
  const std::int64_t avg = desired_avg - current_size;
  const std::int64_t delta = (avg * 2 + 5) / 10; // round(avg * 0.2)
  const std::int64_t size = avg - delta + (delta == 0 ? 0 : r.below(2 * delta));
  r.letters(out, size);
}

void generator::make_person(std::uint64_t n, person& out) const {
  event_random r{mixed_seed_, n};
  out.id = last_base0_person_id(n) + first_person_id;
  out.name.assign(first_names[static_cast<std::size_t>(r.below(first_names.size()))]);
  out.name += ' ';
  out.name += last_names[static_cast<std::size_t>(r.below(last_names.size()))];
  out.email_address.clear();
  r.text(out.email_address, 7);
  out.email_address += '@';
  r.text(out.email_address, 5);
  out.email_address += ".com";
  out.credit_card.clear();
  for (int i = 0; i < 4; ++i) {
    if (i > 0)
      out.credit_card += ' ';
    const auto v = r.below(10000);
    char digits[4] = {static_cast<char>('0' + v / 1000), static_cast<char>('0' + v / 100 % 10),
                      static_cast<char>('0' + v / 10 % 10), static_cast<char>('0' + v % 10)};
    out.credit_card.append(digits, 4);
  }
  out.city.assign(us_cities[static_cast<std::size_t>(r.below(us_cities.size()))]);
  out.state.assign(us_states[static_cast<std::size_t>(r.below(us_states.size()))]);
  out.date_time = timestamp_of(n);
  const auto size = static_cast<std::int64_t>(8 + out.name.size() + out.email_address.size()
                                              + out.credit_card.size() + out.city.size()
                                              + out.state.size());
  next_extra(r, size, config_.avg_person_bytes, out.extra);
}

void generator::make_auction(std::uint64_t n, auction& out) const {
  event_random r{mixed_seed_, n};
  out.id = last_base0_auction_id(n) + first_auction_id;
  std::int64_t seller = 0;
  if (r.below(config_.hot_seller_ratio) > 0)
    seller = last_base0_person_id(n) / hot_block * hot_block;
  else
    seller = next_base0_person_id(n, r);
  out.seller = seller + first_person_id;
  out.category = first_category_id + r.below(num_categories);
  out.initial_bid = next_price(r);
  out.reserve = out.initial_bid + next_price(r);
  out.date_time = timestamp_of(n);
  // Expires within about twice the time until 100 auctions later.
  const std::int64_t events_for_auctions =
    num_in_flight_auctions * config_.total_proportion() / config_.auction_proportion;
  const std::int64_t horizon =
    timestamp_of(n + static_cast<std::uint64_t>(events_for_auctions)) - out.date_time;
  out.expires = out.date_time + 1 + r.below(std::max<std::int64_t>(horizon * 2, 1));
  out.item_name.clear();
  r.text(out.item_name, 20);
  out.description.clear();
  r.text(out.description, 100);
  const auto size =
    static_cast<std::int64_t>(8 + out.item_name.size() + out.description.size() + 8 + 8 + 8
                              + 8 + 8);
  next_extra(r, size, config_.avg_auction_bytes, out.extra);
}

void generator::make_bid(std::uint64_t n, bid& out) const {
  event_random r{mixed_seed_, n};
  std::int64_t auction = 0;
  if (r.below(config_.hot_auction_ratio) > 0)
    auction = last_base0_auction_id(n) / hot_block * hot_block;
  else
    auction = next_base0_auction_id(n, r);
  out.auction = auction + first_auction_id;
  std::int64_t bidder = 0;
  if (r.below(config_.hot_bidder_ratio) > 0)
    bidder = last_base0_person_id(n) / hot_block * hot_block + 1;
  else
    bidder = next_base0_person_id(n, r);
  out.bidder = bidder + first_person_id;
  out.price = next_price(r);
  if (r.below(2) > 0) {
    const auto i = static_cast<std::size_t>(r.below(hot_channels.size()));
    out.channel.assign(hot_channels[i]);
    out.url.assign(hot_urls[i]);
  } else {
    const auto k = r.below(num_channels);
    out.channel.assign("channel-");
    append_int(out.channel, k);
    out.url.clear();
    append_channel_url(k, out.url);
  }
  out.date_time = timestamp_of(n);
  next_extra(r, 32, config_.avg_bid_bytes, out.extra);
}

std::string generator::describe(std::uint64_t n) const {
  std::string out;
  const auto sep = [&out] { out += '|'; };
  const auto num = [&](std::int64_t v) {
    sep();
    append_int(out, v);
  };
  const auto str = [&](std::string_view s) {
    sep();
    out += s;
  };
  switch (kind_of(n)) {
    case event_kind::person: {
      person p;
      make_person(n, p);
      out.assign(1, 'P');
      num(static_cast<std::int64_t>(n));
      num(p.id);
      str(p.name);
      str(p.email_address);
      str(p.credit_card);
      str(p.city);
      str(p.state);
      num(p.date_time);
      str(p.extra);
      break;
    }
    case event_kind::auction: {
      auction a;
      make_auction(n, a);
      out.assign(1, 'A');
      num(static_cast<std::int64_t>(n));
      num(a.id);
      str(a.item_name);
      str(a.description);
      num(a.initial_bid);
      num(a.reserve);
      num(a.date_time);
      num(a.expires);
      num(a.seller);
      num(a.category);
      str(a.extra);
      break;
    }
    case event_kind::bid: {
      bid b;
      make_bid(n, b);
      out.assign(1, 'B');
      num(static_cast<std::int64_t>(n));
      num(b.auction);
      num(b.bidder);
      num(b.price);
      str(b.channel);
      str(b.url);
      num(b.date_time);
      str(b.extra);
      break;
    }
  }
  return out;
}

// -- schemas and rows -------------------------------------------------------------

schema_ptr person_schema() {
  static const schema_ptr s = make_schema({{"id", type_id::int64},
                                           {"name", type_id::string},
                                           {"email_address", type_id::string},
                                           {"credit_card", type_id::string},
                                           {"city", type_id::string},
                                           {"state", type_id::string},
                                           {"date_time", type_id::timestamp},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr auction_schema() {
  static const schema_ptr s = make_schema({{"id", type_id::int64},
                                           {"item_name", type_id::string},
                                           {"description", type_id::string},
                                           {"initial_bid", type_id::int64},
                                           {"reserve", type_id::int64},
                                           {"date_time", type_id::timestamp},
                                           {"expires", type_id::timestamp},
                                           {"seller", type_id::int64},
                                           {"category", type_id::int64},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr bid_schema() {
  static const schema_ptr s = make_schema({{"auction", type_id::int64},
                                           {"bidder", type_id::int64},
                                           {"price", type_id::int64},
                                           {"channel", type_id::string},
                                           {"url", type_id::string},
                                           {"date_time", type_id::timestamp},
                                           {"extra", type_id::string}});
  return s;
}

schema_ptr schema_of(event_kind k) {
  switch (k) {
    case event_kind::person: return person_schema();
    case event_kind::auction: return auction_schema();
    case event_kind::bid: return bid_schema();
  }
  return bid_schema();
}

namespace {

// Inline appends of valid values: the row loop stays in this function.
inline void put(column& c, std::int64_t v) {
  c.validity.push_back(1);
  c.ints.push_back(v);
}

inline void put(column& c, std::string_view v) {
  c.validity.push_back(1);
  c.chars.append(v);
  c.offsets.push_back(static_cast<std::uint32_t>(c.chars.size()));
}

} // namespace

void row_appender::append(const generator& g, event_kind k, std::uint64_t n,
                          record_batch& out) {
  auto& c = out.columns;
  switch (k) {
    case event_kind::person:
      g.make_person(n, p);
      put(c[0], p.id);
      put(c[1], p.name);
      put(c[2], p.email_address);
      put(c[3], p.credit_card);
      put(c[4], p.city);
      put(c[5], p.state);
      put(c[6], p.date_time);
      put(c[7], p.extra);
      out.timestamps.push_back(p.date_time);
      break;
    case event_kind::auction:
      g.make_auction(n, a);
      put(c[0], a.id);
      put(c[1], a.item_name);
      put(c[2], a.description);
      put(c[3], a.initial_bid);
      put(c[4], a.reserve);
      put(c[5], a.date_time);
      put(c[6], a.expires);
      put(c[7], a.seller);
      put(c[8], a.category);
      put(c[9], a.extra);
      out.timestamps.push_back(a.date_time);
      break;
    case event_kind::bid:
      g.make_bid(n, b);
      put(c[0], b.auction);
      put(c[1], b.bidder);
      put(c[2], b.price);
      put(c[3], b.channel);
      put(c[4], b.url);
      put(c[5], b.date_time);
      put(c[6], b.extra);
      out.timestamps.push_back(b.date_time);
      break;
  }
  ++out.num_rows;
}

} // namespace weir::nexmark
