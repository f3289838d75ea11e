// SPDX-License-Identifier: Apache-2.0
// Nexmark q8, monitor new users: per tumbling 10 s window, every (person,
// auction) pair with person id = seller, both created in the window, as
// (id, name, reserve) (bench/nexmark/q8.toml, a window join).
#include "baseline.hpp"

#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weir::bench {

namespace {

constexpr std::int64_t size_ms = 10'000;

void emit(std::int64_t id, const std::string& name, std::int64_t reserve, const options& o,
          result& r) {
  ++r.rows;
  if (o.digest) {
    row_hasher h;
    h.add_int(id);
    h.add_string(name);
    h.add_int(reserve);
    r.digest += h.finish();
  } else {
    r.checksum += static_cast<std::uint64_t>(id + reserve) + name.size();
  }
}

} // namespace

result run_q8(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  const auto total = static_cast<std::uint64_t>(gen.config().total_proportion());
  const auto [pf, pl] = gen.block_offsets(nexmark::event_kind::person);
  const auto [af, al] = gen.block_offsets(nexmark::event_kind::auction);
  // The window being filled: its persons by id, its auctions' (seller,
  // reserve). Events come in event-time order, so a window is complete when
  // the first event of the next one arrives.
  std::unordered_map<std::int64_t, std::string> persons;
  std::vector<std::pair<std::int64_t, std::int64_t>> auctions;
  result r;
  bool open = false;
  std::int64_t start = 0;
  const auto fire = [&] {
    for (const auto& [seller, reserve] : auctions)
      if (auto it = persons.find(seller); it != persons.end())
        emit(it->first, it->second, reserve, o, r);
    persons.clear();
    auctions.clear();
  };
  const auto enter = [&](std::int64_t ts) {
    const std::int64_t s = ts - ((ts % size_ms) + size_ms) % size_ms;
    if (open && s != start)
      fire();
    open = true;
    start = s;
  };
  nexmark::person p;
  nexmark::auction a;
  const auto person_fields = nexmark::fields_of(
    {nexmark::person_field::id, nexmark::person_field::name, nexmark::person_field::date_time});
  const auto auction_fields =
    nexmark::fields_of({nexmark::auction_field::reserve, nexmark::auction_field::seller,
                        nexmark::auction_field::date_time});
  for (std::uint64_t n = 0; n < o.events; ++n) {
    const auto rem = n % total;
    if (rem >= pf && rem < pl) {
      gen.make_person(n, p, person_fields);
      enter(p.date_time);
      persons.emplace(p.id, p.name);
    } else if (rem >= af && rem < al) {
      gen.make_auction(n, a, auction_fields);
      enter(a.date_time);
      auctions.emplace_back(a.seller, a.reserve);
    }
  }
  if (open)
    fire();
  return r;
}

} // namespace weir::bench
