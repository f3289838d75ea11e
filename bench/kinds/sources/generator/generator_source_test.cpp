// SPDX-License-Identifier: Apache-2.0
#include "kinds/sources/generator/generator_source.hpp"

#include "connectors/internal/pacer.hpp"
#include "weir/expr/random.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <stdexcept>

using namespace std::chrono_literals;
namespace generator = weir::generator;
using weir::record_batch_ptr;
using weir::type_id;

namespace {

generator::source spec_of(std::uint64_t count) {
  generator::source s;
  s.count = count;
  s.seed = 5;
  s.fields = {{"id", "seq"},
              {"ts", "to_timestamp(1000 + seq * 10)"},
              {"r", "rand_int(seq, 1, 0, 9)"},
              {"name", "concat('n', seq)"}};
  s.event_time_field = "ts";
  return s;
}

weir::source_reader_ptr reader(const generator::source& s, std::size_t subtask = 0,
                               std::size_t parallelism = 1) {
  auto r = weir::make_generator_reader(s, subtask, parallelism, 10ms);
  REQUIRE_MESSAGE(r, (r ? "" : r.error().message));
  return std::move(*r);
}

// Every row of every batch until the end, as seq -> (r, name, timestamp).
std::map<std::int64_t, std::tuple<std::int64_t, std::string, std::int64_t>>
drain(weir::source_reader& rd, std::size_t max_rows, std::vector<std::size_t>* sizes = nullptr) {
  std::map<std::int64_t, std::tuple<std::int64_t, std::string, std::int64_t>> out;
  while (auto b = rd.poll_next(max_rows)) {
    REQUIRE(b->num_rows <= max_rows);
    REQUIRE(b->timestamps.size() == b->num_rows);
    if (sizes)
      sizes->push_back(b->num_rows);
    for (std::size_t i = 0; i < b->num_rows; ++i)
      out[b->columns[0].ints[i]] = {b->columns[2].ints[i], std::string{b->columns[3].str(i)},
                                    b->timestamps[i]};
  }
  return out;
}

} // namespace

TEST_SUITE("connectors") {

TEST_CASE("a generator emits count rows in full batches, seq ascending, then ends") {
  auto rd = reader(spec_of(2500));
  CHECK(rd->output_schema()->to_string() == "id:int64, ts:timestamp, r:int64, name:string");
  std::vector<std::size_t> sizes;
  std::int64_t last = -1;
  auto b = rd->poll_next(1000);
  REQUIRE(b);
  for (std::size_t i = 0; i < b->num_rows; ++i) {
    CHECK(b->columns[0].ints[i] == last + 1);
    last = b->columns[0].ints[i];
  }
  CHECK(rd->position() == 1000);
  auto rows = drain(*rd, 1000, &sizes);
  CHECK(sizes == std::vector<std::size_t>{1000, 500});
  CHECK(rows.size() == 1500);
  CHECK(rows.begin()->first == 1000);
  CHECK(std::get<1>(rows.at(1234)) == "n1234");
  CHECK(std::get<2>(rows.at(1234)) == 1000 + 12340);
  const auto w = weir::expr::random_word(weir::expr::mixed_seed(5), 1234, 1);
  CHECK(std::get<0>(rows.at(1234)) == weir::expr::random_int(w, 0, 9));
  CHECK(rd->position() == 2500);
  CHECK(rd->poll_next(1000) == nullptr);
}

TEST_CASE("the subtasks of a generator split the seqs and agree with one subtask") {
  auto spec = spec_of(1001);
  auto whole = drain(*reader(spec), 64);
  auto a = reader(spec, 0, 3), b = reader(spec, 1, 3), c = reader(spec, 2, 3);
  auto ra = drain(*a, 50), rb = drain(*b, 50), rc = drain(*c, 50);
  CHECK(ra.size() == 334);
  CHECK(rb.size() == 334);
  CHECK(rc.size() == 333);
  for (const auto& [seq, row] : ra)
    CHECK(seq % 3 == 0);
  for (const auto& [seq, row] : rc)
    CHECK(seq % 3 == 2);
  auto merged = ra;
  merged.insert(rb.begin(), rb.end());
  merged.insert(rc.begin(), rc.end());
  CHECK(merged == whole);
  CHECK(a->position() == 1002); // the next seq of subtask 0 would be 1002
}

TEST_CASE("an unbounded generator keeps going and a zero count ends at once") {
  auto spec = spec_of(0);
  CHECK(reader(spec)->poll_next(10) == nullptr);
  spec.count.reset();
  auto rd = reader(spec);
  for (int i = 0; i < 100; ++i) {
    auto b = rd->poll_next(100);
    REQUIRE(b);
    CHECK(b->num_rows == 100);
  }
  CHECK(rd->position() == 10000);
}

TEST_CASE("a generation-time field carries the steady clock in ns") {
  auto spec = spec_of(10);
  spec.generation_time_field = "gen_ns";
  auto rd = reader(spec);
  const auto before = weir::internal::steady_now_ns();
  auto b = rd->poll_next(10);
  const auto after = weir::internal::steady_now_ns();
  REQUIRE(b);
  CHECK(b->schema->to_string() == "id:int64, ts:timestamp, r:int64, name:string, gen_ns:int64");
  for (auto t : b->columns[4].ints) {
    CHECK(t >= before);
    CHECK(t <= after);
  }
}

TEST_CASE("a null event time fails the generator, naming the seq") {
  auto spec = spec_of(10);
  spec.fields[1].second = "to_timestamp(rand_int(seq, 1, 5, seq))"; // null while seq < 5
  auto rd = reader(spec);
  CHECK_THROWS_WITH_AS(rd->poll_next(10),
                       "generator: event-time field 'ts' is null at seq 0",
                       std::runtime_error);
}

TEST_CASE("a generator's spec errors name the field and keep the expression offset") {
  auto spec = spec_of(10);
  spec.fields[2].second = "rand_int(seq, 'x', 0, 9)";
  auto r = weir::generator_output_schema(spec);
  REQUIRE_FALSE(r);
  CHECK(r.error().code == weir::errc::type_error);
  CHECK(r.error().message == "field 'r': function 'rand_int' argument 2 must be int64, got string");
  CHECK(r.error().offset == 14);

  auto bad_time = spec_of(10);
  bad_time.event_time_field = "name";
  CHECK(weir::generator_output_schema(bad_time).error().message
        == "event_time.field 'name' must be a timestamp or int64, got string");
  bad_time.event_time_field = "nope";
  CHECK(weir::generator_output_schema(bad_time).error().message.rfind(
          "event_time.field 'nope' is not a field of the generator", 0) == 0);

  auto clash = spec_of(10);
  clash.generation_time_field = "id";
  CHECK(weir::generator_output_schema(clash).error().message
        == "generation_time_field 'id' clashes with a field of that name");
  auto twice = spec_of(10);
  twice.fields.emplace_back("id", "1");
  CHECK(weir::generator_output_schema(twice).error().message == "field 'id' is defined twice");
  generator::source none;
  CHECK(weir::generator_output_schema(none).error().code == weir::errc::invalid_argument);
  auto slow = spec_of(10);
  slow.rate = -1;
  CHECK_FALSE(weir::generator_output_schema(slow));
  CHECK_FALSE(weir::make_generator_reader(spec_of(10), 2, 2, 10ms));
}

TEST_CASE("the pacer emits full batches when due, partial ones after the buffer timeout") {
  // 1000 rows/s: row k is due at start + k ms; batches of 10, timeout 5 ms.
  weir::internal::emission_pacer p{1000.0, 5ms};
  REQUIRE(p.limited());
  const std::int64_t t0 = 1'000'000'000;
  p.start(t0);
  CHECK(p.scheduled_ns(3) == t0 + 3'000'000);
  // At t0 row 0 is due but has not waited 5 ms: wait until then.
  CHECK(p.allowance(t0, 10) == 0);
  CHECK(p.delay(t0, 10).count() == 5'000'000);
  // At t0 + 5 ms rows 0..5 are due and row 0 has waited 5 ms: a partial batch.
  CHECK(p.allowance(t0 + 5'000'000, 10) == 6);
  p.emitted(6);
  // At t0 + 20 ms rows 6..20 are due: a full batch of 10.
  CHECK(p.allowance(t0 + 20'000'000, 10) == 10);
  p.emitted(10);
  // Row 16 is due at t0 + 16 ms; the batch of 10 fills at t0 + 25 ms, but
  // row 16 times out at t0 + 21 ms.
  CHECK(p.allowance(t0 + 20'500'000, 10) == 0);
  CHECK(p.delay(t0 + 20'500'000, 10).count() == 500'000);
  // A final batch shorter than the batch size goes as soon as it is all due.
  CHECK(p.allowance(t0 + 19'000'000, 3) == 3);

  weir::internal::emission_pacer unlimited{0.0, 5ms};
  CHECK_FALSE(unlimited.limited());
  CHECK(unlimited.allowance(0, 1024) == 1024);
  CHECK(unlimited.delay(0, 1024).count() == 0);
}

TEST_CASE("fields nothing reads come out null without values, and a filter's take keeps them so") {
  auto rd = weir::make_generator_reader(spec_of(50), 0, 1, 10ms, {true, false, true, false});
  REQUIRE(rd);
  auto b = (*rd)->poll_next(20);
  REQUIRE(b);
  REQUIRE(b->num_rows == 20);
  // The event-time field is evaluated whatever its flag, and its values,
  // read by nothing else, move to the event times; like the other fields
  // flagged false, it is all null with no value slots.
  REQUIRE(b->timestamps.size() == 20);
  CHECK(b->timestamps[3] == 1030);
  for (const std::size_t c : {std::size_t{1}, std::size_t{3}}) {
    CHECK(b->columns[c].size() == 20);
    CHECK_FALSE(b->columns[c].has_values());
    for (std::size_t i = 0; i < 20; ++i)
      CHECK(b->columns[c].is_null(i));
  }
  CHECK(b->columns[0].has_values());
  CHECK(b->columns[2].has_values());
  const auto picked = b->take({1, 5, 19});
  CHECK(picked.columns[0].ints == weir::buffer<std::int64_t>{1, 5, 19});
  CHECK_FALSE(picked.columns[3].has_values());
  CHECK(picked.columns[3].size() == 3);
  CHECK(picked.columns[3].is_null(2));
  CHECK(picked.columns[3].get(0).index() == 0); // null
}

TEST_CASE("a rate-limited generator returns empty batches until rows are due") {
  auto spec = spec_of(100);
  spec.rate = 1.0; // one row per second: row 1 is due a second after the start
  auto rd = weir::make_generator_reader(spec, 0, 1, 1000ms);
  REQUIRE(rd);
  auto b = (*rd)->poll_next(10);
  REQUIRE(b);
  CHECK(b->num_rows == 0);
  CHECK((*rd)->next_poll_delay() > 0ns);
  CHECK((*rd)->position() == 0);
}
}
