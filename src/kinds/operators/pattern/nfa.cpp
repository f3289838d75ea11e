// SPDX-License-Identifier: Apache-2.0
#include "nfa.hpp"

#include <algorithm>
#include <set>
#include <utility>

namespace weir::internal::cep {

namespace {
using weir::cep::contiguity;
using weir::cep::pattern_spec;
using weir::cep::skip_strategy;
using weir::cep::step_kind;

/// Processing order of events: event time, then arrival.
using order_key = std::pair<event_time, std::uint64_t>;

order_key start_of(const partial_match& pm) { return {pm.start_ts, pm.start_id}; }

order_key event_key(const taken_event& t) { return {std::get<1>(t), std::get<2>(t)}; }

/// Matches in a stable order: by first event, then by the events taken.
bool match_less(const partial_match& a, const partial_match& b) {
  if (start_of(a) != start_of(b))
    return start_of(a) < start_of(b);
  return a.taken < b.taken;
}

error step_error(errc code, const std::string& step, std::string message,
                 std::size_t offset = error::npos) {
  return error{code, "step '" + step + "': " + std::move(message), offset};
}
} // namespace

expected<compiled_pattern> compiled_pattern::make(const schema& input, const pattern_spec& spec) {
  compiled_pattern p;
  p.spec_ = spec;
  p.input_ = make_schema(input.fields());
  const auto& steps = spec.steps;
  if (steps.empty())
    return make_error(errc::invalid_argument, "a pattern needs at least one step");
  if (steps.size() > 64)
    return make_error(errc::invalid_argument, "a pattern has at most 64 steps, got " +
                                                std::to_string(steps.size()));
  std::set<std::string> names;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const auto& s = steps[i];
    if (s.name.empty())
      return make_error(errc::invalid_argument, "step " + std::to_string(i + 1) + " has no name");
    if (s.name.find('.') != std::string::npos || s.name.find(':') != std::string::npos)
      return step_error(errc::invalid_argument, s.name, "a step name cannot contain '.' or ':'");
    if (!names.insert(s.name).second)
      return step_error(errc::invalid_argument, s.name, "a second step of that name");
    const bool neg = s.kind != step_kind::normal;
    if (neg && i == 0)
      return step_error(errc::invalid_argument, s.name, "a pattern cannot start with a negation");
    if (neg && (s.min_times != 1 || s.max_times != 1 || s.optional || s.greedy))
      return step_error(errc::invalid_argument, s.name,
                        "a negation (not_next, not_followed_by) takes no quantifier");
    if (neg && steps[i - 1].kind == step_kind::normal && steps[i - 1].optional)
      return step_error(errc::invalid_argument, s.name,
                        "a negation cannot follow an optional step (as in Flink CEP)");
    if (!neg) {
      if (s.min_times < 1)
        return step_error(errc::invalid_argument, s.name,
                          "times must be at least 1 (write optional for zero), got " +
                            std::to_string(s.min_times));
      if (s.max_times >= 0 && s.max_times < s.min_times)
        return step_error(errc::invalid_argument, s.name,
                          "times(" + std::to_string(s.min_times) + ", " +
                            std::to_string(s.max_times) + "): the maximum is below the minimum");
      if (s.greedy && s.max_times == 1)
        return step_error(errc::invalid_argument, s.name,
                          "greedy applies to looping steps (times, one_or_more) only");
    }
  }
  if (steps.back().kind == step_kind::not_followed_by && spec.within.count() <= 0)
    return step_error(errc::invalid_argument, steps.back().name,
                      "a pattern cannot end with not_followed_by without within (as in Flink CEP)");
  if (spec.within.count() < 0)
    return make_error(errc::invalid_argument, "within must not be negative");
  if (spec.max_partial_matches < 1)
    return make_error(errc::invalid_argument, "max_partial_matches must be at least 1");
  if (spec.skip == skip_strategy::skip_to_first || spec.skip == skip_strategy::skip_to_last) {
    for (std::size_t i = 0; i < steps.size(); ++i)
      if (steps[i].name == spec.skip_step && steps[i].kind == step_kind::normal)
        p.skip_step_ = static_cast<int>(i);
    if (p.skip_step_ < 0)
      return make_error(errc::invalid_argument,
                        "skip step '" + spec.skip_step + "' is not a (non-negated) step");
  }

  // The match schema: the event, then each normal step's last event and count.
  std::vector<field> fields = input.fields();
  const bool input_has_count = input.index_of("count").has_value();
  p.step_field_base_.assign(steps.size(), 0);
  p.count_field_.assign(steps.size(), -1);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != step_kind::normal)
      continue;
    p.step_field_base_[i] = fields.size();
    for (const auto& f : input.fields())
      fields.push_back(field{steps[i].name + "." + f.name, f.type});
    if (!input_has_count) {
      p.count_field_[i] = static_cast<int>(fields.size());
      fields.push_back(field{steps[i].name + ".count", type_id::int64});
    }
  }
  p.match_schema_ = make_schema(std::move(fields));

  for (const auto& s : steps) {
    p.has_condition_.push_back(!s.condition.empty());
    if (s.condition.empty()) {
      p.conditions_.emplace_back();
      p.iterative_.push_back(false);
      continue;
    }
    auto c = expr::compile_condition(s.condition, *p.match_schema_);
    if (!c)
      return step_error(c.error().code, s.name, c.error().message, c.error().offset);
    bool iterative = false;
    for (auto f : c->referenced_fields())
      iterative = iterative || f >= input.size();
    p.iterative_.push_back(iterative);
    p.conditions_.push_back(std::move(*c));
  }
  return p;
}

std::vector<std::uint64_t> compiled_pattern::simple_bits(const record_batch& batch) const {
  std::vector<std::uint64_t> bits(batch.num_rows, 0);
  // Iterative conditions need the match: evaluated per partial match later.
  // The batch has the input schema; the match schema starts with it, so a
  // condition reading input fields only can run on it directly.
  for (std::size_t i = 0; i < conditions_.size(); ++i) {
    if (iterative_[i])
      continue;
    const std::uint64_t bit = std::uint64_t{1} << i;
    if (!has_condition_[i]) {
      for (auto& b : bits)
        b |= bit;
      continue;
    }
    // compile against the match schema, evaluate on a batch of the input
    // schema: only fields below input size are read.
    for (auto row : conditions_[i].select(batch))
      bits[row] |= bit;
  }
  return bits;
}

record_batch_ptr compiled_pattern::match_row(const key_state& ks, const partial_match& pm) const {
  batch_builder b{match_schema_};
  const std::size_t n_in = input_->size();
  const stored_event* last = nullptr;
  if (!pm.taken.empty())
    last = &ks.events.at(std::get<2>(pm.taken.back()));
  for (std::size_t f = 0; f < n_in; ++f) {
    if (last)
      b.col(f).append_value(last->row[f]);
    else
      b.col(f).append_null();
  }
  for (std::size_t s = 0; s < spec_.steps.size(); ++s) {
    if (spec_.steps[s].kind != step_kind::normal)
      continue;
    const stored_event* ev = nullptr;
    std::int64_t count = 0;
    for (const auto& t : pm.taken)
      if (std::get<0>(t) == s) {
        ev = &ks.events.at(std::get<2>(t));
        ++count;
      }
    for (std::size_t f = 0; f < n_in; ++f) {
      if (ev)
        b.col(step_field_base_[s] + f).append_value(ev->row[f]);
      else
        b.col(step_field_base_[s] + f).append_null();
    }
    if (count_field_[s] >= 0)
      b.col(static_cast<std::size_t>(count_field_[s])).append_int(count);
  }
  b.commit_row();
  return b.finish();
}

bool compiled_pattern::condition(std::size_t i, const key_state& ks, const stored_event& e,
                                 const partial_match& pm) const {
  if (!iterative_[i])
    return (e.simple_bits >> i) & 1U;
  // The event unqualified, the partial match's steps qualified.
  auto row = match_row(ks, pm);
  auto& mutable_row = const_cast<record_batch&>(*row);
  for (std::size_t f = 0; f < input_->size(); ++f) {
    column c{input_->at(f).type};
    c.append_value(e.row[f]);
    mutable_row.columns[f] = std::move(c);
  }
  return !conditions_[i].select(*row).empty();
}

weir::cep::contiguity compiled_pattern::contiguity_at(position p) const {
  const auto& s = spec_.steps[p.step];
  if (p.count > 0)
    return s.inner;
  // allowCombinations also makes the step's first event non-deterministic
  // (Flink's documented allowCombinations example: {C A2 B} is a match).
  if (s.inner == contiguity::non_deterministic && s.contiguity == contiguity::relaxed &&
      s.max_times != 1)
    return contiguity::non_deterministic;
  return s.contiguity;
}

compiled_pattern::closure compiled_pattern::close(const key_state& ks, const partial_match& pm,
                                                  const stored_event& e) const {
  closure out;
  const std::size_t n = spec_.steps.size();
  std::size_t i = pm.step;
  std::uint32_t c = pm.count;
  // Waiting for step i's first event behind not_followed_by steps: every
  // event is checked against them.
  if (c == 0 && !pm.taken.empty()) {
    for (std::size_t k = i; k-- > 0 && is_negation(k);)
      if (spec_.steps[k].kind == step_kind::not_followed_by && condition(k, ks, e, pm)) {
        out.dead = true;
        return out;
      }
  }
  bool passed_not_next = false;
  bool passed_not_followed = false;
  while (true) {
    if (i == n) {
      if (passed_not_followed)
        out.final_not_followed = true;
      else if (passed_not_next)
        out.final_not_next = true;
      break;
    }
    if (is_negation(i)) {
      if (condition(i, ks, e, pm))
        break; // paths through a matching negation end here
      if (spec_.steps[i].kind == step_kind::not_next)
        passed_not_next = true;
      else
        passed_not_followed = true;
      ++i;
      c = 0;
      continue;
    }
    const bool more = below_max(i, c);
    if (more)
      out.positions.push_back(position{static_cast<std::uint32_t>(i), c});
    bool proceed = can_leave(i, c);
    if (proceed && more && spec_.steps[i].greedy && condition(i, ks, e, pm))
      proceed = false; // greedy: take while the event matches
    if (!proceed)
      break;
    ++i;
    c = 0;
  }
  return out;
}

bool compiled_pattern::completes(std::uint32_t step, std::uint32_t count) const {
  if (!can_leave(step, count))
    return false;
  for (std::size_t k = step + 1; k < spec_.steps.size(); ++k)
    if (is_negation(k) || !spec_.steps[k].optional)
      return false;
  return true;
}

bool compiled_pattern::ends_in_not_followed_by(const partial_match& pm) const {
  std::size_t i = pm.step;
  std::uint32_t c = pm.count;
  bool passed = false;
  for (; i < spec_.steps.size(); ++i, c = 0) {
    if (is_negation(i)) {
      if (spec_.steps[i].kind != step_kind::not_followed_by)
        return false;
      passed = true;
      continue;
    }
    if (!can_leave(i, c))
      return false;
  }
  return passed;
}

void compiled_pattern::process(key_state& ks, stored_event e, engine_output& out) const {
  const std::uint64_t id = e.id;
  const event_time ts = e.ts;
  auto [it, inserted] = ks.events.emplace(id, std::move(e));
  (void) inserted;
  const stored_event& ev = it->second;

  std::vector<partial_match> next;
  std::vector<partial_match> found;
  auto advance = [&](const partial_match& pm, bool fresh) {
    auto cl = close(ks, pm, ev);
    if (cl.dead)
      return;
    if (cl.final_not_next)
      found.push_back(pm);
    bool ignored = false;
    for (const auto& p : cl.positions) {
      const bool took = condition(p.step, ks, ev, pm);
      if (took) {
        partial_match t = pm;
        t.step = p.step;
        t.count = p.count + 1;
        t.taken.emplace_back(p.step, ts, id);
        if (pm.taken.empty()) {
          t.start_ts = ts;
          t.start_id = id;
        }
        if (completes(t.step, t.count))
          found.push_back(t);
        const bool last = t.step + 1 == spec_.steps.size() && !below_max(t.step, t.count);
        if (!last)
          next.push_back(std::move(t));
      }
      if (fresh || ignored)
        continue;
      const auto ctg = contiguity_at(p);
      // One ignoring branch per partial match: at the first position that
      // may ignore the event, since it can still proceed to the later ones.
      if (ctg == contiguity::non_deterministic || (ctg == contiguity::relaxed && !took)) {
        next.push_back(pm);
        next.back().step = p.step;
        next.back().count = p.count;
        ignored = true;
      }
    }
    if (!ignored && !fresh && cl.final_not_followed && cl.positions.empty())
      next.push_back(pm); // waits for its within to pass
  };
  for (const auto& pm : ks.partials)
    advance(pm, false);
  advance(partial_match{}, true);

  // Two branches at the same position with the same events behave alike.
  std::vector<partial_match> unique;
  unique.reserve(next.size());
  std::set<std::tuple<std::uint32_t, std::uint32_t, std::vector<taken_event>>> seen;
  for (auto& pm : next)
    if (seen.emplace(pm.step, pm.count, pm.taken).second)
      unique.push_back(std::move(pm));
  ks.partials = std::move(unique);
  cap(ks, out);
  release(ks, std::move(found), out);
}

void compiled_pattern::cap(key_state& ks, engine_output& out) const {
  const auto max = static_cast<std::size_t>(spec_.max_partial_matches);
  if (ks.partials.size() <= max)
    return;
  // Keep the oldest: they are nearest to completing or timing out.
  std::stable_sort(ks.partials.begin(), ks.partials.end(),
                   [](const auto& a, const auto& b) { return start_of(a) < start_of(b); });
  out.dropped += ks.partials.size() - max;
  ks.partials.resize(max);
}

void compiled_pattern::advance_time(key_state& ks, event_time t, engine_output& out) const {
  if (spec_.within.count() <= 0)
    return;
  const auto within = spec_.within.count();
  std::vector<partial_match> keep;
  std::vector<partial_match> found;
  bool any = false;
  for (auto& pm : ks.partials) {
    // t - start >= within, without overflow at the final watermark.
    if (t >= pm.start_ts && static_cast<std::uint64_t>(t) - static_cast<std::uint64_t>(pm.start_ts) >=
                              static_cast<std::uint64_t>(within)) {
      any = true;
      if (ends_in_not_followed_by(pm))
        found.push_back(std::move(pm));
      else if (!completes(pm.step, pm.count))
        out.timeouts.push_back(std::move(pm));
    } else {
      keep.push_back(std::move(pm));
    }
  }
  ks.partials = std::move(keep);
  if (!any)
    return;
  std::sort(found.begin(), found.end(), match_less);
  release(ks, std::move(found), out);
}

void compiled_pattern::prune(std::vector<partial_match>& list, const partial_match& m) const {
  std::optional<order_key> bound; // drop those that started before it (or at it: past last)
  bool inclusive = false;
  switch (spec_.skip) {
    case skip_strategy::no_skip:
      return;
    case skip_strategy::skip_to_next:
      std::erase_if(list, [&](const partial_match& x) { return start_of(x) == start_of(m); });
      return;
    case skip_strategy::skip_past_last_event:
      bound = event_key(m.taken.back());
      inclusive = true;
      break;
    case skip_strategy::skip_to_first:
    case skip_strategy::skip_to_last: {
      const auto step = static_cast<std::uint32_t>(skip_step_);
      for (const auto& t : m.taken)
        if (std::get<0>(t) == step) {
          bound = event_key(t);
          if (spec_.skip == skip_strategy::skip_to_first)
            break;
        }
      break;
    }
  }
  if (!bound)
    return; // the skip step took no event: nothing is skipped
  std::erase_if(list, [&](const partial_match& x) {
    return inclusive ? start_of(x) <= *bound : start_of(x) < *bound;
  });
}

void compiled_pattern::release(key_state& ks, std::vector<partial_match> found,
                               engine_output& out) const {
  std::sort(found.begin(), found.end(), match_less);
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (spec_.skip == skip_strategy::no_skip) {
    for (auto& m : found)
      out.matches.push_back(std::move(m));
    return;
  }
  // Flink's NFA.processMatchesAccordingToSkipStrategy: a match goes out
  // only when no partial match started before it; each one emitted prunes
  // the partial and the held matches.
  for (auto& m : found)
    ks.completed.push_back(std::move(m));
  std::sort(ks.completed.begin(), ks.completed.end(), match_less);
  while (!ks.completed.empty()) {
    const auto& first = ks.completed.front();
    bool blocked = false;
    for (const auto& pm : ks.partials)
      if (start_of(pm) < start_of(first)) {
        blocked = true;
        break;
      }
    if (blocked)
      break;
    partial_match m = std::move(ks.completed.front());
    ks.completed.erase(ks.completed.begin());
    prune(ks.partials, m);
    prune(ks.completed, m);
    out.matches.push_back(std::move(m));
  }
}

void compiled_pattern::collect_garbage(key_state& ks) {
  std::set<std::uint64_t> used;
  for (const auto* list : {&ks.partials, &ks.completed})
    for (const auto& pm : *list)
      for (const auto& t : pm.taken)
        used.insert(std::get<2>(t));
  std::erase_if(ks.events, [&](const auto& kv) { return !used.contains(kv.first); });
}

std::string describe(const key_state& ks, const partial_match& pm,
                     const weir::cep::pattern_spec& spec, std::size_t label_field) {
  std::string out;
  std::uint32_t step = ~0U;
  for (const auto& t : pm.taken) {
    if (std::get<0>(t) != step) {
      if (!out.empty())
        out += ") ";
      out += "(";
      step = std::get<0>(t);
    } else {
      out += " ";
    }
    out += to_display_string(ks.events.at(std::get<2>(t)).row.at(label_field));
  }
  if (!out.empty())
    out += ")";
  (void) spec;
  return out;
}

} // namespace weir::internal::cep
