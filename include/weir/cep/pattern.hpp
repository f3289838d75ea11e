// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pattern operator's definition (Flink CEP's `Pattern` and
// `AfterMatchSkipStrategy`), as the C++ API and the TOML `pattern` kind take it.

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace weir::cep {

/// How a step's events relate to the events before them (Flink CEP's
/// contiguity): `strict` is `next()` / `consecutive()`, `relaxed` is
/// `followedBy()` (skip non-matching events until the first matching one),
/// `non_deterministic` is `followedByAny()` / `allowCombinations()` (also
/// skip matching events, so every combination is a match).
enum class contiguity : std::uint8_t { strict, relaxed, non_deterministic };

/// A step that takes events, or a negation (`notNext()`: the event right
/// after the previous step's last event must not match; `notFollowedBy()`:
/// no event between the previous step and the next one may match).
enum class step_kind : std::uint8_t { normal, not_next, not_followed_by };

/// One named step of a pattern sequence (Flink's individual `Pattern`).
///
/// `condition` is an expression (docs/concepts/records.md) over the event's fields and,
/// qualified with a step's name, over the fields of that step's last event
/// taken so far in the same partial match (`amount > small.amount * 10`;
/// null when the step has taken none) and its count (`small.count`, unless
/// the input has a field named `count`). Empty = every event matches.
/// A normal step takes between `min_times` and `max_times` events (`-1` =
/// unbounded: `oneOrMore()` is 1..-1, `times(n)` n..n, `times(n, m)` n..m,
/// `timesOrMore(n)` n..-1), or none when `optional`. `greedy` makes a looping
/// step take every matching event before the next step may start.
struct pattern_step {
  std::string name;
  std::string condition;
  step_kind kind = step_kind::normal;
  /// To the previous step (ignored for the first step and for negations).
  cep::contiguity contiguity = cep::contiguity::relaxed;
  std::int64_t min_times = 1;
  std::int64_t max_times = 1; ///< -1 = unbounded
  bool optional = false;
  bool greedy = false;
  /// Between the events of a looping step (`consecutive()` = strict,
  /// `allowCombinations()` = non_deterministic; Flink's default relaxed).
  cep::contiguity inner = cep::contiguity::relaxed;
};

/// Which partial matches are dropped after a match is emitted (Flink's
/// `AfterMatchSkipStrategy`).
enum class skip_strategy : std::uint8_t {
  no_skip,              ///< every match
  skip_to_next,         ///< drop those that started with the match's first event
  skip_past_last_event, ///< drop those that started at or before its last event
  skip_to_first,        ///< drop those that started before the first event of `skip_step`
  skip_to_last,         ///< drop those that started before the last event of `skip_step`
};

/// A pattern sequence and how its matches come out (`keyed_stream::pattern`).
struct pattern_spec {
  std::vector<pattern_step> steps;
  /// Event-time bound: a partial match whose first event is `within` or
  /// more older than the time reached is timed out (Flink's `within`).
  /// 0 = none.
  std::chrono::milliseconds within{0};
  skip_strategy skip = skip_strategy::no_skip;
  std::string skip_step; ///< skip_to_first / skip_to_last: a normal step's name
  /// Output fields (name, expression over the match; see `pattern_step` for
  /// the qualified names, which here name the step's last event). Empty:
  /// `<step>.count` and `<step>.<field>` for every normal step and every
  /// non-key input field.
  std::vector<std::pair<std::string, std::string>> select;
  std::string late_output;    ///< stream of records behind the watermark; empty = counted only
  std::string timeout_output; ///< stream of timed-out partial matches; empty = dropped
  /// Partial matches kept per key at most; beyond it the youngest (latest
  /// first event) are dropped and counted (`node_counts::partial_matches_dropped`).
  std::int64_t max_partial_matches = 10000;
  /// Keys without a new event for this long (processing time) lose their
  /// pattern state (buffered events, partial matches). 0 = never.
  std::chrono::milliseconds state_ttl{0};
};

} // namespace weir::cep
