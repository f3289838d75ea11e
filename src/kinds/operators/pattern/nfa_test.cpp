// SPDX-License-Identifier: Apache-2.0
// The pattern engine against Flink CEP's documented examples (docs/libs/cep.md):
// contiguity, quantifiers, skip strategies, within, negations, the cap.
#include "nfa.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

using namespace weir;
using namespace weir::internal::cep;
using weir::cep::contiguity;
using weir::cep::pattern_spec;
using weir::cep::pattern_step;
using weir::cep::skip_strategy;
using weir::cep::step_kind;

namespace {

pattern_step step(std::string name, std::string where,
                  contiguity ctg = contiguity::relaxed) {
  pattern_step s;
  s.name = std::move(name);
  s.condition = std::move(where);
  s.contiguity = ctg;
  return s;
}

pattern_step looping(pattern_step s, std::int64_t min = 1, std::int64_t max = -1,
                     contiguity inner = contiguity::relaxed) {
  s.min_times = min;
  s.max_times = max;
  s.inner = inner;
  return s;
}

pattern_step negation(std::string name, std::string where, step_kind kind) {
  pattern_step s = step(std::move(name), std::move(where));
  s.kind = kind;
  return s;
}

/// Events named `names` (field `name`, int64 `amount`) at times `ts` (default
/// 1, 2, 3, ...), one key: the matches as "a b1" strings, in emission order,
/// and the timed-out partial matches.
struct run_result {
  std::vector<std::string> matches;
  std::vector<std::string> timeouts;
  std::uint64_t dropped = 0;
  std::size_t partials = 0;
};

std::string names_of(const key_state& ks, const partial_match& pm) {
  std::string out;
  for (const auto& t : pm.taken) {
    if (!out.empty())
      out += " ";
    out += std::get<std::string>(ks.events.at(std::get<2>(t)).row[0]);
  }
  return out;
}

run_result run(const pattern_spec& spec, const std::vector<std::string>& names,
               std::vector<event_time> ts = {}, std::vector<std::int64_t> amounts = {},
               event_time end = 0) {
  auto in = make_schema({field{"name", type_id::string}, field{"amount", type_id::int64}});
  auto p = compiled_pattern::make(*in, spec);
  REQUIRE_MESSAGE(p.has_value(), (p.has_value() ? "" : p.error().message));
  batch_builder b{in};
  for (std::size_t i = 0; i < names.size(); ++i) {
    b.col(0).append_string(names[i]);
    b.col(1).append_int(amounts.empty() ? 0 : amounts[i]);
    b.commit_row();
  }
  auto batch = b.finish();
  auto bits = p->simple_bits(*batch);
  key_state ks;
  run_result r;
  auto collect = [&](engine_output& out) {
    for (const auto& m : out.matches)
      r.matches.push_back(names_of(ks, m));
    for (const auto& m : out.timeouts)
      r.timeouts.push_back(names_of(ks, m));
    r.dropped += out.dropped;
    out = {};
    compiled_pattern::collect_garbage(ks);
  };
  for (std::size_t i = 0; i < names.size(); ++i) {
    stored_event e;
    e.ts = ts.empty() ? static_cast<event_time>(i + 1) : ts[i];
    e.id = ks.next_id++;
    e.simple_bits = bits[i];
    e.row = {names[i], amounts.empty() ? std::int64_t{0} : amounts[i]};
    engine_output out;
    p->advance_time(ks, e.ts, out);
    p->process(ks, std::move(e), out);
    collect(out);
  }
  if (end != 0) {
    engine_output out;
    p->advance_time(ks, end, out);
    collect(out);
  }
  r.partials = ks.partials.size();
  return r;
}

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

const std::string is_a = "name like 'a%'";
const std::string is_b = "name like 'b%'";
const std::string is_c = "name like 'c%'";

} // namespace

TEST_SUITE("pattern") {
TEST_CASE("contiguity over a, c, b1, b2: strict none, relaxed {a b1}, any {a b1} {a b2}") {
  const std::vector<std::string> events = {"a", "c", "b1", "b2"};
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"), step("b", is_b, contiguity::strict)};
  CHECK(run(spec, events).matches.empty());
  spec.steps[1].contiguity = contiguity::relaxed;
  CHECK(run(spec, events).matches == std::vector<std::string>{"a b1"});
  spec.steps[1].contiguity = contiguity::non_deterministic;
  CHECK(run(spec, events).matches == std::vector<std::string>{"a b1", "a b2"});
}

TEST_CASE("contiguity inside a looping step: a b+ c over a b1 d1 b2 d2 b3 c") {
  const std::vector<std::string> events = {"a", "b1", "d1", "b2", "d2", "b3", "c"};
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"),
                looping(step("b", is_b, contiguity::non_deterministic)),
                step("c", "name = 'c'")};
  SUBCASE("relaxed (default): the d's are ignored") {
    CHECK(sorted(run(spec, events).matches) ==
          sorted({"a b1 c", "a b1 b2 c", "a b1 b2 b3 c", "a b2 c", "a b2 b3 c", "a b3 c"}));
  }
  SUBCASE("non-deterministic (allow_combinations): {a b1 b3 c} too") {
    spec.steps[1].inner = contiguity::non_deterministic;
    CHECK(sorted(run(spec, events).matches) ==
          sorted({"a b1 c", "a b1 b2 c", "a b1 b3 c", "a b1 b2 b3 c", "a b2 c", "a b2 b3 c",
                  "a b3 c"}));
  }
  SUBCASE("strict (consecutive) with next c: only {a b3 c}") {
    spec.steps[1].inner = contiguity::strict;
    spec.steps[2].contiguity = contiguity::strict;
    CHECK(run(spec, events).matches == std::vector<std::string>{"a b3 c"});
  }
}

TEST_CASE("consecutive: C D A1 A2 A3 D A4 B") {
  const std::vector<std::string> events = {"c", "d", "a1", "a2", "a3", "d", "a4", "b"};
  pattern_spec spec;
  spec.steps = {step("start", "name = 'c'"), looping(step("middle", is_a)),
                step("end1", "name = 'b'")};
  SUBCASE("without consecutive") {
    CHECK(sorted(run(spec, events).matches) ==
          sorted({"c a1 b", "c a1 a2 b", "c a1 a2 a3 b", "c a1 a2 a3 a4 b"}));
  }
  SUBCASE("with consecutive") {
    spec.steps[1].inner = contiguity::strict;
    CHECK(sorted(run(spec, events).matches) ==
          sorted({"c a1 b", "c a1 a2 b", "c a1 a2 a3 b"}));
  }
}

TEST_CASE("allow_combinations: C D A1 A2 A3 D A4 B gives the 15 documented matches") {
  const std::vector<std::string> events = {"c", "d", "a1", "a2", "a3", "d", "a4", "b"};
  pattern_spec spec;
  spec.steps = {step("start", "name = 'c'"),
                looping(step("middle", is_a), 1, -1, contiguity::non_deterministic),
                step("end1", "name = 'b'")};
  CHECK(sorted(run(spec, events).matches) ==
        sorted({"c a1 b", "c a1 a2 b", "c a1 a3 b", "c a1 a4 b", "c a1 a2 a3 b",
                "c a1 a2 a4 b", "c a1 a3 a4 b", "c a1 a2 a3 a4 b", "c a2 b", "c a2 a3 b",
                "c a2 a4 b", "c a2 a3 a4 b", "c a3 b", "c a3 a4 b", "c a4 b"}));
}

TEST_CASE("quantifiers: times, times(min, max), optional, greedy") {
  pattern_spec spec;
  SUBCASE("times(2) followed by b") {
    spec.steps = {looping(step("a", is_a), 2, 2), step("b", is_b)};
    CHECK(sorted(run(spec, {"a1", "a2", "a3", "b"}).matches) == sorted({"a1 a2 b", "a2 a3 b"}));
  }
  SUBCASE("times(2, 3) as the last step emits each count reached") {
    spec.steps = {step("x", "name = 'x'"), looping(step("a", is_a), 2, 3)};
    CHECK(run(spec, {"x", "a1", "a2", "a3", "a4"}).matches ==
          std::vector<std::string>{"x a1 a2", "x a1 a2 a3"});
  }
  SUBCASE("optional: a b? c matches with and without b") {
    spec.steps = {step("a", "name = 'a'"), step("b", is_b), step("c", "name = 'c'")};
    spec.steps[1].optional = true;
    CHECK(sorted(run(spec, {"a", "b", "c"}).matches) == sorted({"a b c", "a c"}));
    CHECK(run(spec, {"a", "c"}).matches == std::vector<std::string>{"a c"});
  }
  SUBCASE("times(4).optional() takes 0 or 4") {
    spec.steps = {step("x", "name = 'x'"), looping(step("a", is_a), 4, 4), step("y", "name = 'y'")};
    spec.steps[1].optional = true;
    CHECK(sorted(run(spec, {"x", "a1", "a2", "a3", "a4", "y"}).matches) ==
          sorted({"x a1 a2 a3 a4 y", "x y"}));
    CHECK(run(spec, {"x", "a1", "a2", "y"}).matches == std::vector<std::string>{"x y"});
  }
  SUBCASE("greedy: (a|b|c) (b|c) c+ greedy d over a b c1 c2 c3 d, strict") {
    spec.steps = {step("s1", "name like 'a%' or name like 'b%' or name like 'c%'"),
                  step("s2", "name like 'b%' or name like 'c%'", contiguity::strict),
                  looping(step("s3", is_c, contiguity::strict)),
                  step("s4", "name = 'd'", contiguity::strict)};
    spec.steps[2].greedy = true;
    CHECK(run(spec, {"a", "b", "c1", "c2", "c3", "d"}).matches ==
          std::vector<std::string>{"a b c1 c2 c3 d", "b c1 c2 c3 d", "c1 c2 c3 d"});
  }
}

TEST_CASE("skip strategies over b+ c and b1 b2 b3 c, as the docs' table") {
  // b+ consecutive: with relaxed inner contiguity the partial match b1 b2 b3
  // would ignore c and wait for more b's, holding back (Flink's rule) the
  // later matches of the skip strategies that keep it.
  pattern_spec spec;
  spec.steps = {looping(step("b", is_b), 1, -1, contiguity::strict),
                step("c", "name = 'c'", contiguity::strict)};
  const std::vector<std::string> events = {"b1", "b2", "b3", "c"};
  const std::vector<std::string> all = {"b1 b2 b3 c", "b2 b3 c", "b3 c"};
  spec.skip = skip_strategy::no_skip;
  CHECK(run(spec, events).matches == all);
  spec.skip = skip_strategy::skip_to_next;
  CHECK(run(spec, events).matches == all);
  spec.skip = skip_strategy::skip_past_last_event;
  CHECK(run(spec, events).matches == std::vector<std::string>{"b1 b2 b3 c"});
  spec.skip = skip_strategy::skip_to_first;
  spec.skip_step = "b";
  CHECK(run(spec, events).matches == all);
  spec.skip = skip_strategy::skip_to_last;
  CHECK(run(spec, events).matches == std::vector<std::string>{"b1 b2 b3 c", "b3 c"});
}

TEST_CASE("skip_to_first[c] over (a|b|c) (b|c) c+ greedy d drops b c1 c2 c3 d") {
  pattern_spec spec;
  spec.steps = {step("s1", "name like 'a%' or name like 'b%' or name like 'c%'"),
                step("s2", "name like 'b%' or name like 'c%'", contiguity::strict),
                looping(step("s3", is_c, contiguity::strict)),
                step("s4", "name = 'd'", contiguity::strict)};
  spec.steps[2].greedy = true;
  spec.skip = skip_strategy::skip_to_first;
  spec.skip_step = "s3";
  CHECK(run(spec, {"a", "b", "c1", "c2", "c3", "d"}).matches ==
        std::vector<std::string>{"a b c1 c2 c3 d", "c1 c2 c3 d"});
}

TEST_CASE("skip_to_next over a b+ and a b1 b2 b3 gives only {a b1}; no_skip all three") {
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"), looping(step("b", is_b))};
  const std::vector<std::string> events = {"a", "b1", "b2", "b3"};
  CHECK(run(spec, events).matches == std::vector<std::string>{"a b1", "a b1 b2", "a b1 b2 b3"});
  spec.skip = skip_strategy::skip_to_next;
  CHECK(run(spec, events).matches == std::vector<std::string>{"a b1"});
}

TEST_CASE("within: a partial match times out once event time is within past its start") {
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"), step("b", is_b)};
  spec.within = std::chrono::milliseconds{5};
  auto r = run(spec, {"a", "b1"}, {0, 5});
  CHECK(r.matches.empty());
  CHECK(r.timeouts == std::vector<std::string>{"a"});
  r = run(spec, {"a", "b1"}, {0, 4});
  CHECK(r.matches == std::vector<std::string>{"a b1"});
  CHECK(r.timeouts.empty());
  r = run(spec, {"a"}, {0}, {}, 100);
  CHECK(r.timeouts == std::vector<std::string>{"a"});
  CHECK(r.partials == 0);
}

TEST_CASE("not_next and not_followed_by discard partial matches") {
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"), negation("no_x", "name = 'x'", step_kind::not_next),
                step("b", is_b)};
  CHECK(run(spec, {"a", "x", "b1"}).matches.empty());
  CHECK(run(spec, {"a", "y", "b1"}).matches == std::vector<std::string>{"a b1"});
  spec.steps[1].kind = step_kind::not_followed_by;
  CHECK(run(spec, {"a", "y", "x", "b1"}).matches.empty());
  CHECK(run(spec, {"a", "y", "z", "b1"}).matches == std::vector<std::string>{"a b1"});
}

TEST_CASE("a pattern ending in not_followed_by matches when within passes without one") {
  pattern_spec spec;
  spec.steps = {step("a", "name = 'a'"),
                negation("no_b", is_b, step_kind::not_followed_by)};
  spec.within = std::chrono::milliseconds{10};
  auto r = run(spec, {"a", "c"}, {0, 3}, {}, 20);
  CHECK(r.matches == std::vector<std::string>{"a"});
  CHECK(r.timeouts.empty());
  r = run(spec, {"a", "b1"}, {0, 3}, {}, 20);
  CHECK(r.matches.empty());
}

TEST_CASE("conditions read earlier steps: small then large (10x) within 5 minutes") {
  pattern_spec spec;
  spec.steps = {step("small", "amount < 10"), step("large", "amount > small.amount * 10")};
  spec.within = std::chrono::minutes{5};
  auto r = run(spec, {"s", "m", "l"}, {0, 1000, 2000}, {5, 40, 60});
  CHECK(r.matches == std::vector<std::string>{"s l"});
  r = run(spec, {"s", "l"}, {0, 300000}, {5, 60});
  CHECK(r.matches.empty());
  CHECK(r.timeouts == std::vector<std::string>{"s"});
}

TEST_CASE("max_partial_matches keeps the oldest partial matches and counts the others") {
  pattern_spec spec;
  spec.steps = {step("a", is_a), step("b", is_b, contiguity::non_deterministic)};
  spec.max_partial_matches = 2;
  auto r = run(spec, {"a1", "a2", "a3", "a4", "b"});
  CHECK(r.dropped == 2);
  CHECK(r.matches == std::vector<std::string>{"a1 b", "a2 b"});
  CHECK(r.partials == 2);
}

TEST_CASE("key state survives its codec unchanged") {
  key_state ks;
  ks.next_id = 7;
  ks.queue.push_back(stored_event{5, 6, 3, {std::string{"q"}, std::int64_t{1}}});
  ks.events.emplace(2, stored_event{1, 2, 1, {std::string{"a"}, 2.5}});
  ks.partials.push_back(partial_match{1, 2, {{0, 1, 2}}, 1, 2});
  ks.completed.push_back(partial_match{2, 1, {{0, 1, 2}, {1, 3, 4}}, 1, 2});
  ks.last_access_ms = 99;
  std::string bytes;
  state::codec<key_state>::encode(ks, bytes);
  std::string_view in = bytes;
  key_state back;
  REQUIRE(state::codec<key_state>::decode(in, back));
  CHECK(in.empty());
  CHECK(back.next_id == 7);
  CHECK(back.queue.size() == 1);
  CHECK(back.queue[0].row == ks.queue[0].row);
  CHECK(back.events.at(2).row == ks.events.at(2).row);
  CHECK(back.partials == ks.partials);
  CHECK(back.completed == ks.completed);
  CHECK(back.last_access_ms == 99);
}

TEST_CASE("make rejects broken patterns, naming the step") {
  auto in = make_schema({field{"name", type_id::string}, field{"amount", type_id::int64}});
  pattern_spec spec;
  spec.steps = {step("a", "amount >"), step("b", "")};
  auto p = compiled_pattern::make(*in, spec);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().message.rfind("step 'a': ", 0) == 0);
  spec.steps = {negation("n", "true", step_kind::not_next), step("b", "")};
  CHECK_FALSE(compiled_pattern::make(*in, spec).has_value());
  spec.steps = {step("a", ""), negation("n", "true", step_kind::not_followed_by)};
  p = compiled_pattern::make(*in, spec);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().message.find("within") != std::string::npos);
  spec.steps = {step("a", "amount > nope.amount")};
  p = compiled_pattern::make(*in, spec);
  REQUIRE_FALSE(p.has_value());
  CHECK(p.error().message.find("unknown field 'nope.amount'") != std::string::npos);
}
}
