// SPDX-License-Identifier: Apache-2.0
#include "kinds/sources/nexmark/nexmark_generator.hpp"

#include "kinds/sources/generator/generator_source.hpp"
#include "source_dir.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <vector>
#include <algorithm>
#include <stdexcept>
#include <string>

using namespace std::chrono_literals;
using weir::nexmark::event_kind;
using weir::nexmark::generator;
using weir::nexmark::generator_config;
using weir::nexmark::all_fields;
using weir::nexmark::event_random;
using weir::nexmark::field_mask;
using weir::nexmark::fields_of;
namespace person_field = weir::nexmark::person_field;
namespace auction_field = weir::nexmark::auction_field;
namespace bid_field = weir::nexmark::bid_field;
using weir::nexmark::auction;
using weir::nexmark::bid;
using weir::nexmark::person;

TEST_SUITE("connectors") {

TEST_CASE("nexmark events come in blocks of 1 person, 3 auctions and 46 bids") {
  const generator g{generator_config{}};
  CHECK(g.kind_of(0) == event_kind::person);
  CHECK(g.kind_of(1) == event_kind::auction);
  CHECK(g.kind_of(3) == event_kind::auction);
  CHECK(g.kind_of(4) == event_kind::bid);
  CHECK(g.kind_of(49) == event_kind::bid);
  CHECK(g.kind_of(50) == event_kind::person);
  CHECK(g.timestamp_of(0) == 1'436'918'400'000);
  CHECK(g.timestamp_of(25) == 1'436'918'400'002); // 100 us per event
}

TEST_CASE("person and auction ids are sequential from 1000") {
  const generator g{generator_config{}};
  weir::nexmark::person p;
  weir::nexmark::auction a;
  std::int64_t next_person = 1000, next_auction = 1000;
  for (std::uint64_t n = 0; n < 5000; ++n) {
    if (g.kind_of(n) == event_kind::person) {
      g.make_person(n, p);
      CHECK(p.id == next_person++);
    } else if (g.kind_of(n) == event_kind::auction) {
      g.make_auction(n, a);
      CHECK(a.id == next_auction++);
      CHECK(a.category >= 10);
      CHECK(a.category <= 14);
      CHECK(a.reserve > a.initial_bid);
      CHECK(a.expires > a.date_time);
      CHECK(a.seller < next_person + weir::nexmark::person_id_lead);
    }
  }
}

TEST_CASE("bids reference recent auctions and people, with prices of 1 to 1M dollars") {
  const generator g{generator_config{}};
  weir::nexmark::bid b;
  std::int64_t min_price = INT64_MAX, max_price = 0;
  std::size_t hot = 0, bids = 0, extra_bytes = 0;
  for (std::uint64_t n = 0; n < 60'000; ++n) {
    if (g.kind_of(n) != event_kind::bid)
      continue;
    g.make_bid(n, b);
    ++bids;
    const auto last_auction = g.last_base0_auction_id(n) + 1000;
    CHECK(b.auction <= last_auction + weir::nexmark::auction_id_lead);
    CHECK(b.auction >= last_auction - 100 - weir::nexmark::hot_block);
    CHECK(b.bidder <= g.last_base0_person_id(n) + 1000 + weir::nexmark::person_id_lead);
    CHECK(b.date_time == g.timestamp_of(n));
    min_price = std::min(min_price, b.price);
    max_price = std::max(max_price, b.price);
    hot += b.auction == (g.last_base0_auction_id(n) / 100 * 100) + 1000 ? 1 : 0;
    extra_bytes += b.extra.size();
  }
  CHECK(min_price >= 100);
  CHECK(min_price < 200);
  CHECK(max_price <= 100'000'000);
  CHECK(max_price > 90'000'000);
  // Half the bids go to the hot auction (plus the random ones that hit it).
  CHECK(hot > bids * 45 / 100);
  CHECK(hot < bids * 60 / 100);
  // The padding makes bids about 100 bytes: 68 - 32 +- 20 %.
  CHECK(extra_bytes / bids >= 60);
  CHECK(extra_bytes / bids <= 76);
}

TEST_CASE("nexmark events are a pure function of seed and event number") {
  const generator a{generator_config{}};
  const generator b{generator_config{}};
  generator_config other;
  other.seed = 1;
  const generator c{other};
  for (std::uint64_t n : {0u, 1u, 4u, 77u, 12345u}) {
    CHECK(a.describe(n) == b.describe(n));
    CHECK(a.describe(n) != c.describe(n));
  }
}

TEST_CASE("the generator reproduces the shared test vectors of bench/vectors") {
  std::ifstream in(weir::test::source_dir() + "/bench/vectors/nexmark-first-1000.txt");
  REQUIRE(in);
  const generator g{generator_config{}};
  std::string line;
  std::uint64_t n = 0;
  while (std::getline(in, line)) {
    REQUIRE_MESSAGE(line == g.describe(n), "event " << n);
    ++n;
  }
  CHECK(n == 1000);
}

TEST_CASE("a nexmark reader emits the bids among its events, split over subtasks") {
  weir::nexmark::source spec;
  spec.events = 1000;
  std::multiset<std::string> whole, split;
  const generator g{generator_config{}};
  auto collect = [&](std::size_t subtask, std::size_t parallelism, auto& out) {
    auto rd = weir::make_nexmark_reader(spec, subtask, parallelism, 10ms);
    REQUIRE(rd);
    CHECK((*rd)->output_schema()->to_string()
          == "auction:int64, bidder:int64, price:int64, channel:string, url:string, "
             "date_time:timestamp, extra:string");
    while (auto b = (*rd)->poll_next(100)) {
      CHECK(b->num_rows <= 100);
      for (std::size_t i = 0; i < b->num_rows; ++i) {
        CHECK(b->timestamps[i] == b->columns[5].ints[i]);
        out.insert(std::to_string(b->columns[0].ints[i]) + "|"
                   + std::to_string(b->columns[2].ints[i]) + "|"
                   + std::string{b->columns[6].str(i)});
      }
    }
    CHECK((*rd)->position() >= 1000);
  };
  collect(0, 1, whole);
  collect(0, 2, split);
  collect(1, 2, split);
  CHECK(whole.size() == 920);
  CHECK(whole == split);
}

TEST_CASE("a nexmark reader can emit persons or auctions, with a generation time") {
  weir::nexmark::source spec;
  spec.events = 500;
  spec.stream = weir::nexmark_stream::person;
  spec.generation_time_field = "gen_ns";
  auto rd = weir::make_nexmark_reader(spec, 0, 1, 10ms);
  REQUIRE(rd);
  std::size_t rows = 0;
  while (auto b = (*rd)->poll_next(1024)) {
    rows += b->num_rows;
    CHECK(b->columns.back().type == weir::type_id::int64);
  }
  CHECK(rows == 10);
  spec.stream = weir::nexmark_stream::auction;
  spec.generation_time_field = "date_time";
  auto clash = weir::make_nexmark_reader(spec, 0, 1, 10ms);
  REQUIRE_FALSE(clash);
  CHECK(clash.error().message
        == "generation_time_field 'date_time' clashes with a Nexmark field of that name");
}

TEST_CASE("a field mask leaves the fields it keeps exactly as with every field") {
  // Projection push-down: masked-out text is never generated, its draws
  // are skipped, and nothing generated after it changes.
  const generator g{generator_config{}};
  std::vector<field_mask> masks{0, all_fields};
  for (std::size_t c = 0; c < 10; ++c) {
    masks.push_back(fields_of({c}));
    masks.push_back(all_fields & ~fields_of({c}));
  }
  person p0, p;
  auction a0, a;
  bid b0, b;
  for (std::uint64_t n = 0; n < 3000; ++n) {
    CAPTURE(n);
    const auto kind = g.kind_of(n);
    for (const auto m : masks) {
      CAPTURE(m);
      const auto keep = [m](std::size_t c, const std::string& full, const std::string& got) {
        return (m >> c & 1U) != 0 ? got == full : got.empty();
      };
      if (kind == event_kind::person) {
        g.make_person(n, p0);
        g.make_person(n, p, m);
        CHECK(p.id == p0.id);
        CHECK(p.name == p0.name);
        CHECK(p.credit_card == p0.credit_card);
        CHECK(p.city == p0.city);
        CHECK(p.state == p0.state);
        CHECK(p.date_time == p0.date_time);
        CHECK(keep(person_field::email_address, p0.email_address, p.email_address));
        CHECK(keep(person_field::extra, p0.extra, p.extra));
      } else if (kind == event_kind::auction) {
        g.make_auction(n, a0);
        g.make_auction(n, a, m);
        CHECK(a.id == a0.id);
        CHECK(a.initial_bid == a0.initial_bid);
        CHECK(a.reserve == a0.reserve);
        CHECK(a.date_time == a0.date_time);
        CHECK(a.expires == a0.expires);
        CHECK(a.seller == a0.seller);
        CHECK(a.category == a0.category);
        CHECK(keep(auction_field::item_name, a0.item_name, a.item_name));
        CHECK(keep(auction_field::description, a0.description, a.description));
        CHECK(keep(auction_field::extra, a0.extra, a.extra));
      } else {
        g.make_bid(n, b0);
        g.make_bid(n, b, m);
        CHECK(b.auction == b0.auction);
        CHECK(b.bidder == b0.bidder);
        CHECK(b.price == b0.price);
        CHECK(b.date_time == b0.date_time);
        CHECK(keep(bid_field::channel, b0.channel, b.channel));
        CHECK(keep(bid_field::url, b0.url, b.url));
        CHECK(keep(bid_field::extra, b0.extra, b.extra));
      }
    }
  }
  // A reused buffer with the mask off ends up empty, not stale.
  CHECK_FALSE(b0.extra.empty());
  g.make_bid(9, b0, fields_of({bid_field::auction}));
  CHECK(b0.extra.empty());
  CHECK(b0.url.empty());
}

TEST_CASE("letters and text map random bytes as the generator rules say") {
  // bench/nexmark/README.md: "a".."z"[byte % 26] and "a".."z", " "[byte % 27],
  // eight characters per draw, low byte first; the vectorized code (AVX-512
  // where the processor has it, and SSE2) must agree with the rule for every
  // length and every byte value.
  bool& avx512 = weir::nexmark::detail::letters_use_avx512();
  const bool had_avx512 = avx512;
  for (const bool use_avx512 : {had_avx512, false})
  for (std::int64_t len = 0; len <= 300; ++len) {
    CAPTURE(use_avx512);
    CAPTURE(len);
    avx512 = use_avx512;
    event_random r{0x1234 + static_cast<std::uint64_t>(len)};
    event_random ref = r;
    std::string got;
    r.letters(got, len);
    std::string want;
    for (std::int64_t i = 0; i < len; i += 8) {
      std::uint64_t w = ref.next();
      for (std::int64_t j = i; j < std::min(len, i + 8); ++j, w >>= 8)
        want += static_cast<char>('a' + (w & 0xFF) % 26);
    }
    CHECK(got == want);
    CHECK(r.next() == ref.next()); // the same number of draws
  }
  avx512 = had_avx512;
  const std::string note = had_avx512 ? "letters: AVX-512 path tested"
                                      : "letters: AVX-512 not available here";
  MESSAGE(note);
  for (std::int64_t max_len = 4; max_len <= 200; max_len += 7) {
    CAPTURE(max_len);
    event_random r{0x99 + static_cast<std::uint64_t>(max_len)};
    event_random ref = r;
    event_random skipped = r;
    std::string got;
    r.text(got, max_len);
    const auto len = 3 + ref.below(max_len - 3);
    std::string want;
    for (std::int64_t i = 0; i < len; i += 8) {
      std::uint64_t w = ref.next();
      for (std::int64_t j = i; j < std::min(len, i + 8); ++j, w >>= 8) {
        const auto b = (w & 0xFF) % 27;
        want += b == 26 ? ' ' : static_cast<char>('a' + b);
      }
    }
    CHECK(got == want);
    CHECK(skipped.text(nullptr, max_len) == len);
    const auto after = ref.next(); // the same number of draws, taken or skipped
    CHECK(r.next() == after);
    CHECK(skipped.next() == after);
  }
}

TEST_CASE("write_letters writes what letters appends, and touches at most the slack after") {
  bool& avx512 = weir::nexmark::detail::letters_use_avx512();
  const bool had_avx512 = avx512;
  for (const bool use_avx512 : {had_avx512, false})
  for (std::int64_t len = 0; len <= 200; ++len) {
    CAPTURE(use_avx512);
    CAPTURE(len);
    avx512 = use_avx512;
    event_random r{0x5150 + static_cast<std::uint64_t>(len)};
    event_random ref = r;
    std::string want;
    ref.letters(want, len);
    const std::size_t guard = 16;
    const std::size_t room = static_cast<std::size_t>(len) + event_random::letters_slack;
    std::string buffer(room + guard, '#');
    r.write_letters(buffer.data(), len);
    CHECK(buffer.substr(0, static_cast<std::size_t>(len)) == want);
    CHECK(buffer.substr(room) == std::string(guard, '#')); // nothing past the slack
    CHECK(r.state() == ref.state()); // the same draws
  }
  avx512 = had_avx512;
}

TEST_CASE("bid_numbers_of gives bid_fields's numbers, eight at a time or one by one") {
  // The AVX-512 path follows bid_fields step by step; compared on many
  // bids, with the coins' ratios, proportions and padding sizes varied so
  // that every branch of the rules is taken (hot and random auctions and
  // bidders, each price draw, paddings with and without a size draw).
  bool& avx512 = weir::nexmark::detail::letters_use_avx512();
  const bool had_avx512 = avx512;
  std::vector<generator_config> configs(5);
  configs[1].seed = 42;
  configs[1].hot_auction_ratio = 1; // every auction hot
  configs[1].hot_bidder_ratio = 1;
  configs[2].seed = 7;
  configs[2].hot_auction_ratio = 100;
  configs[2].hot_bidder_ratio = 3;
  configs[2].person_proportion = 3;
  configs[2].auction_proportion = 5;
  configs[2].bid_proportion = 9;
  configs[2].avg_bid_bytes = 35; // delta 1
  configs[3].avg_bid_bytes = 33; // delta 0: no size draw
  configs[4].avg_bid_bytes = 20; // under the fixed part: no padding
  for (const bool use_avx512 : {had_avx512, false})
  for (std::size_t k = 0; k < configs.size(); ++k)
  for (const bool with_extra : {true, false}) {
    CAPTURE(use_avx512);
    CAPTURE(k);
    CAPTURE(with_extra);
    avx512 = use_avx512;
    const generator g{configs[k]};
    const field_mask fields = with_extra ? fields_of({bid_field::extra}) : field_mask{0};
    // The bids of the first events, then of events near 10^12 (whole
    // blocks later, so of the same kinds).
    const auto total = static_cast<std::uint64_t>(configs[k].total_proportion());
    const std::uint64_t later = 1'000'000'000'000ULL / total * total;
    std::vector<std::uint64_t> ns;
    for (std::uint64_t n = 0; ns.size() < 20'000; ++n)
      if (g.kind_of(n) == event_kind::bid)
        ns.push_back(n + (ns.size() > 10'000 ? later : 0));
    generator::bid_numbers got;
    bid b;
    std::size_t mismatches = 0;
    for (std::size_t at = 0; at < ns.size(); at += generator::max_bid_numbers) {
      // Ragged counts too: a tail shorter than eight goes one by one.
      const std::size_t count =
        std::min<std::size_t>(ns.size() - at, generator::max_bid_numbers - (at / 64) % 11);
      g.bid_numbers_of(ns.data() + at, count, with_extra, got);
      for (std::size_t i = 0; i < count; ++i) {
        const auto pad = g.bid_fields(ns[at + i], b, fields);
        mismatches += got.auction[i] != b.auction || got.bidder[i] != b.bidder
                      || got.price[i] != b.price || got.date_time[i] != b.date_time
                      || got.pad_size[i] != pad.size || got.pad_state[i] != pad.state;
      }
      at -= generator::max_bid_numbers - count;
    }
    CHECK(mismatches == 0);
    // and bid_fields plus the padding's letters is make_bid
    bid whole;
    g.make_bid(ns[5], whole, fields);
    const auto pad = g.bid_fields(ns[5], b, fields);
    std::string extra;
    event_random{pad.state}.letters(extra, pad.size);
    CHECK(extra == whole.extra);
    CHECK(b.price == whole.price);
  }
  avx512 = had_avx512;
}

TEST_CASE("bid_numbers_of falls back to one by one at event numbers of 2^52 and over") {
  const generator g{generator_config{}};
  std::vector<std::uint64_t> ns;
  const std::uint64_t limit = std::uint64_t{1} << 52;
  for (std::uint64_t n = limit - 40; ns.size() < 64; ++n)
    if (g.kind_of(n) == event_kind::bid)
      ns.push_back(n); // the last ones at and past 2^52
  REQUIRE(ns.back() >= limit);
  std::reverse(ns.begin(), ns.end()); // the largest first: any order
  generator::bid_numbers got;
  g.bid_numbers_of(ns.data(), ns.size(), true, got);
  bid b;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    CAPTURE(i);
    const auto pad = g.bid_fields(ns[i], b, fields_of({bid_field::extra}));
    CHECK(got.auction[i] == b.auction);
    CHECK(got.bidder[i] == b.bidder);
    CHECK(got.price[i] == b.price);
    CHECK(got.date_time[i] == b.date_time);
    CHECK(got.pad_state[i] == pad.state);
  }
  CHECK_THROWS_AS(g.bid_numbers_of(ns.data(), generator::max_bid_numbers + 1, true, got),
                  std::length_error);
}

TEST_CASE("append_bids appends the rows append does, for every field mask") {
  const generator g{generator_config{}};
  std::vector<std::uint64_t> ns;
  for (std::uint64_t n = 0; ns.size() < 300; ++n)
    if (g.kind_of(n) == event_kind::bid)
      ns.push_back(n);
  const auto make_batch = [] {
    weir::record_batch b;
    b.schema = weir::nexmark::bid_schema();
    for (std::size_t c = 0; c < b.schema->size(); ++c)
      b.columns.emplace_back(b.schema->at(c).type);
    return b;
  };
  for (const field_mask fields :
       {all_fields, field_mask{0}, fields_of({bid_field::extra}),
        fields_of({bid_field::channel, bid_field::extra}), fields_of({bid_field::url})}) {
    CAPTURE(fields);
    weir::nexmark::row_appender one, many;
    one.fields = many.fields = fields;
    auto want = make_batch();
    auto got = make_batch();
    for (const auto n : ns)
      one.append(g, event_kind::bid, n, want);
    // More than one pass: 300 bids in calls of 1, 150 and 149.
    many.append_bids(g, ns.data(), 1, got);
    many.append_bids(g, ns.data() + 1, 150, got);
    many.append_bids(g, ns.data() + 151, 149, got);
    one.complete(event_kind::bid, want);
    many.complete(event_kind::bid, got);
    REQUIRE(got.num_rows == want.num_rows);
    CHECK(got.timestamps == want.timestamps);
    for (std::size_t c = 0; c < want.columns.size(); ++c) {
      CAPTURE(c);
      CHECK(got.columns[c].validity == want.columns[c].validity);
      CHECK(got.columns[c].ints == want.columns[c].ints);
      CHECK(got.columns[c].offsets == want.columns[c].offsets);
      CHECK(got.columns[c].chars == want.columns[c].chars);
    }
  }
}

TEST_CASE("ahead gives the next draws without taking them, and skip takes them") {
  for (const std::uint64_t seed : {0ULL, 1ULL, 0xFFFFFFFFFFFFFFFFULL, 0x9E3779B97F4A7C15ULL}) {
    CAPTURE(seed);
    event_random r{seed};
    const auto d = r.ahead<5>();
    CHECK(r.state() == seed); // not advanced
    CHECK(r.peek() == d[0]);
    event_random walk = r;
    for (const std::uint64_t x : d)
      CHECK(walk.next() == x);
    r.skip(5);
    CHECK(r.state() == walk.state());
    CHECK(r.next() == walk.next());
  }
}

TEST_CASE("a nexmark reader leaves the columns nothing reads null") {
  weir::nexmark::source spec;
  spec.events = 2000;
  auto full = weir::make_nexmark_reader(spec, 0, 1, 10ms);
  std::vector<bool> needed(7, false);
  needed[bid_field::auction] = needed[bid_field::extra] = true;
  auto pruned = weir::make_nexmark_reader(spec, 0, 1, 10ms, needed);
  REQUIRE(full);
  REQUIRE(pruned);
  std::size_t rows = 0;
  const generator g{generator_config{}};
  std::uint64_t n = 0; // the event of the next row
  bid expected;
  while (auto a = (*full)->poll_next(256)) {
    auto b = (*pruned)->poll_next(256);
    REQUIRE(b);
    REQUIRE(a->num_rows == b->num_rows);
    for (std::size_t i = 0; i < a->num_rows; ++i, ++rows) {
      // The reader writes a bid's padding straight into its column: check
      // the full rows against the generator's own bids.
      while (g.kind_of(n) != event_kind::bid)
        ++n;
      g.make_bid(n++, expected);
      CHECK(a->columns[bid_field::auction].ints[i] == expected.auction);
      CHECK(a->columns[bid_field::price].ints[i] == expected.price);
      CHECK(a->columns[bid_field::channel].str(i) == expected.channel);
      CHECK(a->columns[bid_field::url].str(i) == expected.url);
      CHECK(a->columns[bid_field::extra].str(i) == expected.extra);
      for (auto c : {bid_field::auction, bid_field::bidder, bid_field::price,
                     bid_field::date_time})
        CHECK(b->columns[c].ints[i] == a->columns[c].ints[i]);
      CHECK(b->columns[bid_field::extra].str(i) == a->columns[bid_field::extra].str(i));
      CHECK(b->columns[bid_field::channel].is_null(i));
      CHECK(b->columns[bid_field::url].is_null(i));
      CHECK_FALSE(a->columns[bid_field::url].is_null(i));
      CHECK(b->timestamps[i] == a->timestamps[i]);
    }
  }
  CHECK(rows == 1840);
}

TEST_CASE("a nexmark reader of auctions or persons leaves the text columns nothing reads null") {
  const generator g{generator_config{}};
  weir::nexmark::source spec;
  spec.events = 3000;
  spec.generation_time_field = "gen_ns";
  SUBCASE("auctions") {
    spec.stream = weir::nexmark_stream::auction;
    std::vector<bool> needed(11, false); // the generation time too
    needed[auction_field::id] = needed[auction_field::extra] = true;
    auto rd = weir::make_nexmark_reader(spec, 0, 1, 10ms, needed);
    REQUIRE(rd);
    std::uint64_t n = 0;
    auction want;
    std::size_t rows = 0;
    while (auto b = (*rd)->poll_next(100)) {
      for (std::size_t i = 0; i < b->num_rows; ++i, ++rows) {
        while (g.kind_of(n) != event_kind::auction)
          ++n;
        g.make_auction(n++, want);
        CHECK(b->columns[auction_field::id].ints[i] == want.id);
        CHECK(b->columns[auction_field::seller].ints[i] == want.seller);
        CHECK(b->columns[auction_field::extra].str(i) == want.extra);
        CHECK(b->columns[auction_field::item_name].is_null(i));
        CHECK(b->columns[auction_field::description].is_null(i));
        CHECK_FALSE(b->columns[auction_field::expires].is_null(i));
        CHECK_FALSE(b->columns.back().is_null(i)); // the generation time
      }
    }
    CHECK(rows == 180);
  }
  SUBCASE("persons") {
    spec.stream = weir::nexmark_stream::person;
    std::vector<bool> needed(9, true);
    needed[person_field::extra] = false;
    auto rd = weir::make_nexmark_reader(spec, 0, 1, 10ms, needed);
    REQUIRE(rd);
    std::uint64_t n = 0;
    person want;
    std::size_t rows = 0;
    while (auto b = (*rd)->poll_next(100)) {
      for (std::size_t i = 0; i < b->num_rows; ++i, ++rows) {
        while (g.kind_of(n) != event_kind::person)
          ++n;
        g.make_person(n++, want);
        CHECK(b->columns[person_field::email_address].str(i) == want.email_address);
        CHECK(b->columns[person_field::credit_card].str(i) == want.credit_card);
        CHECK(b->columns[person_field::extra].is_null(i));
      }
    }
    CHECK(rows == 60);
  }
}

TEST_CASE("nexmark readers at any parallelism together emit each event of their kind once") {
  for (const auto stream : {weir::nexmark_stream::person, weir::nexmark_stream::auction,
                            weir::nexmark_stream::bid}) {
    weir::nexmark::source spec;
    spec.events = 2017;
    spec.stream = stream;
    std::multiset<std::int64_t> whole;
    for (std::size_t parallelism : {1, 3, 7, 64}) {
      CAPTURE(parallelism);
      std::multiset<std::int64_t> got;
      for (std::size_t s = 0; s < parallelism; ++s) {
        auto rd = weir::make_nexmark_reader(spec, s, parallelism, 10ms);
        REQUIRE(rd);
        while (auto b = (*rd)->poll_next(37))
          for (std::size_t i = 0; i < b->num_rows; ++i)
            got.insert(b->timestamps[i] * 1000 + b->columns[0].ints[i] % 1000);
      }
      if (parallelism == 1)
        whole = got;
      CHECK(got == whole);
    }
    const generator g{generator_config{}};
    std::size_t expected = 0;
    for (std::uint64_t n = 0; n < 2017; ++n)
      expected += g.kind_of(n) == (stream == weir::nexmark_stream::person    ? event_kind::person
                                   : stream == weir::nexmark_stream::auction ? event_kind::auction
                                                                             : event_kind::bid);
    CHECK(whole.size() == expected);
  }
}

TEST_CASE("block offsets say which events of a block are of each kind, as kind_of does") {
  generator_config c;
  c.person_proportion = 2;
  c.auction_proportion = 5;
  c.bid_proportion = 11;
  for (const auto& cfg : {generator_config{}, c}) {
    const generator g{cfg};
    const auto total = static_cast<std::uint64_t>(cfg.total_proportion());
    for (std::uint64_t n = 0; n < 3 * total; ++n)
      for (const auto k : {event_kind::person, event_kind::auction, event_kind::bid}) {
        const auto [first, last] = g.block_offsets(k);
        CHECK((n % total >= first && n % total < last) == (g.kind_of(n) == k));
      }
  }
}

} // TEST_SUITE
