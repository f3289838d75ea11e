// SPDX-License-Identifier: Apache-2.0
// Nexmark q3, local item suggestion: every auction of category 10 whose
// seller is a person in OR, ID or CA, as (name, city, state, id) — a regular
// (unwindowed) inner join of persons and auctions on person id = seller
// (bench/nexmark/q3.toml).
#include "baseline.hpp"

#include <string>
#include <unordered_map>
#include <vector>

namespace weir::bench {

namespace {

struct local_person {
  std::string name, city, state;
};

void emit(const local_person& p, std::int64_t auction_id, const options& o, result& r) {
  ++r.rows;
  if (o.digest) {
    row_hasher h;
    h.add_string(p.name);
    h.add_string(p.city);
    h.add_string(p.state);
    h.add_int(auction_id);
    r.digest += h.finish();
  } else {
    r.checksum += static_cast<std::uint64_t>(auction_id) + p.name.size() + p.city.size();
  }
}

bool local_state(const std::string& s) { return s == "OR" || s == "ID" || s == "CA"; }

} // namespace

result run_q3(const options& o) {
  const nexmark::generator gen{nexmark_config(o)};
  const auto total = static_cast<std::uint64_t>(gen.config().total_proportion());
  const auto [pf, pl] = gen.block_offsets(nexmark::event_kind::person);
  const auto [af, al] = gen.block_offsets(nexmark::event_kind::auction);
  // The qualifying persons by id. Persons come in id order and never change,
  // so a seller at or below the last person id seen and not in the map never
  // qualifies. A seller above it (a random seller may lead the persons by up
  // to nexmark::person_id_lead ids) is a person still to come: its category-10
  // auctions wait in `pending` until that person arrives, as a regular join's
  // state would keep them.
  std::unordered_map<std::int64_t, local_person> persons;
  std::unordered_map<std::int64_t, std::vector<std::int64_t>> pending;
  std::int64_t last_person = -1;
  result r;
  nexmark::person p;
  nexmark::auction a;
  const auto person_fields =
    nexmark::fields_of({nexmark::person_field::id, nexmark::person_field::name,
                        nexmark::person_field::city, nexmark::person_field::state});
  const auto auction_fields = nexmark::fields_of(
    {nexmark::auction_field::id, nexmark::auction_field::seller, nexmark::auction_field::category});
  for (std::uint64_t n = 0; n < o.events; ++n) {
    const auto rem = n % total;
    if (rem >= pf && rem < pl) {
      gen.make_person(n, p, person_fields);
      last_person = p.id;
      auto waiting = pending.extract(p.id);
      if (!local_state(p.state))
        continue;
      auto& kept = persons[p.id] = local_person{p.name, p.city, p.state};
      if (!waiting.empty())
        for (const auto id : waiting.mapped())
          emit(kept, id, o, r);
    } else if (rem >= af && rem < al) {
      gen.make_auction(n, a, auction_fields);
      if (a.category != 10)
        continue;
      if (auto it = persons.find(a.seller); it != persons.end())
        emit(it->second, a.id, o, r);
      else if (a.seller > last_person)
        pending[a.seller].push_back(a.id);
    }
  }
  return r;
}

} // namespace weir::bench
