// SPDX-License-Identifier: Apache-2.0
#include "weir/connectors/nexmark.hpp"

#include "weir/connectors/generator_source.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <fstream>
#include <set>
#include <string>

using namespace std::chrono_literals;
using weir::nexmark::event_kind;
using weir::nexmark::generator;
using weir::nexmark::generator_config;

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
  std::ifstream in(std::string{WEIR_SOURCE_DIR} + "/bench/vectors/nexmark-first-1000.txt");
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
  weir::nexmark_source_spec spec;
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
  weir::nexmark_source_spec spec;
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
}
