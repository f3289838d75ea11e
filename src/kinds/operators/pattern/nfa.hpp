// SPDX-License-Identifier: Apache-2.0
#pragma once
// The pattern kind's matching engine: a compiled pattern sequence and the
// per-key state it advances (Flink CEP's NFA, NFAState and SharedBuffer),
// plain and synchronous so that unit tests drive it event by event.

#include "weir/cep/pattern.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/schema.hpp"
#include "weir/expr/expression.hpp"
#include "weir/state/codec.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace weir::internal::cep {

/// One input record kept for matching: event time (ms), a per-key sequence
/// number (arrival order; ties of `ts` are matched in this order), the
/// results of the step conditions that read only the event (bit i = step i),
/// and the row's values in input-schema order.
struct stored_event {
  event_time ts = 0;
  std::uint64_t id = 0;
  std::uint64_t simple_bits = 0;
  std::vector<value> row;
};

/// An event taken by a partial match: (step index, event time, event id).
using taken_event = std::tuple<std::uint32_t, event_time, std::uint64_t>;

/// A partial (or completed) match: `count` events taken into step `step`
/// so far (0 = waiting for the step's first event), the events taken in
/// order, and its first event's time and id.
struct partial_match {
  std::uint32_t step = 0;
  std::uint32_t count = 0;
  std::vector<taken_event> taken;
  event_time start_ts = 0;
  std::uint64_t start_id = 0;
  bool operator==(const partial_match&) const = default;
};

/// Everything the pattern operator keeps for one key, in one value state
/// (snapshotted with checkpoints, restored by key group):
/// - `queue`: records not yet matched (event time above the watermark),
///   in arrival order; matched once the watermark passes them, sorted by
///   (ts, id) (Flink's CepOperator element queue);
/// - `events`: the records that partial or held-back matches refer to, by
///   id (the shared buffer; dropped when nothing refers to them);
/// - `partials`: partial matches; `completed`: matches held back by a skip
///   strategy until no partial match that started earlier is left;
/// - `last_access_ms`: processing time of the key's last record (state TTL).
struct key_state {
  std::uint64_t next_id = 0;
  std::vector<stored_event> queue;
  std::map<std::uint64_t, stored_event> events;
  std::vector<partial_match> partials;
  std::vector<partial_match> completed;
  event_time last_access_ms = 0;
};

/// What one call of the engine produced: matches to emit, partial matches
/// that timed out, and partial matches dropped at `max_partial_matches`.
struct engine_output {
  std::vector<partial_match> matches;
  std::vector<partial_match> timeouts;
  std::uint64_t dropped = 0;
};

/// A pattern sequence compiled against an input schema (Flink's NFACompiler
/// output). Immutable; shared by the subtasks of a pattern operator.
///
/// Semantics (Flink CEP, docs/libs/cep.md): a partial match sits at a
/// position (step, count); for each event it may take the event into the
/// step at its position or into a later step reached by "proceeding" (a
/// step with count >= its minimum, optional steps skipped, negations
/// checked), and it may ignore the event as its position's contiguity
/// allows (strict: never; relaxed: when the event does not match; any:
/// always). Every event also starts a new partial match when it matches a
/// first step. A partial match that reaches the end is a match; one whose
/// first event is `within` or more older than the time reached times out.
class compiled_pattern {
public:
  /// Compiles `spec` against `input`. Errors (`errc::invalid_argument`,
  /// `errc::parse_error`, `errc::type_error`), the message naming the
  /// step: no steps or more than 64; an empty, repeated or dotted name; a
  /// pattern that starts with a negation or ends with `not_followed_by`
  /// without `within`; a negation after an optional step, or with a
  /// quantifier; min/max out of order; a condition that does not compile
  /// or is not bool (offset into the condition); a skip step that is not a
  /// normal step.
  [[nodiscard]] static expected<compiled_pattern> make(const schema& input,
                                                       const weir::cep::pattern_spec& spec);

  /// The schema conditions and select expressions are compiled against:
  /// the input fields, then for each normal step s: `s.<field>` for every
  /// input field and `s.count` (int64) unless the input has `count`.
  const schema_ptr& match_schema() const noexcept { return match_schema_; }
  const weir::cep::pattern_spec& spec() const noexcept { return spec_; }

  /// Bit i set where step i's condition reads only the event and is true
  /// for row `row` of `batch` (input schema). O(steps) per row.
  std::vector<std::uint64_t> simple_bits(const record_batch& batch) const;

  /// Matches `e` (taken by value into `ks.events`) against `ks`: extends,
  /// forks or ends partial matches, starts new ones, and appends the
  /// matches released by the skip strategy to `out`. Precondition: events
  /// come in (ts, id) order and `advance_time(e.ts)` was called before.
  void process(key_state& ks, stored_event e, engine_output& out) const;

  /// Event time reached `t`: partial matches with `t - start >= within`
  /// time out (those ending in `not_followed_by` become matches), and held
  /// matches may be released. No-op without `within`.
  void advance_time(key_state& ks, event_time t, engine_output& out) const;

  /// Drops events of `ks.events` no partial or held match refers to.
  static void collect_garbage(key_state& ks);

  /// The one-row batch over `match_schema()` describing `pm` (its last
  /// event unqualified, each step's last event and count qualified).
  record_batch_ptr match_row(const key_state& ks, const partial_match& pm) const;

private:
  struct position {
    std::uint32_t step;
    std::uint32_t count;
  };
  struct closure {
    std::vector<position> positions;
    bool dead = false;          ///< an inherited not_followed_by matched
    bool final_not_next = false; ///< the end is reached through a passed not_next
    bool final_not_followed = false;
  };

  bool is_negation(std::size_t i) const { return spec_.steps[i].kind != weir::cep::step_kind::normal; }
  /// Whether `c` events taken into step i let a partial match move past it:
  /// at least the minimum, or none of an optional step (an optional
  /// times(4) takes 0 or 4, never 2).
  bool can_leave(std::size_t i, std::uint32_t c) const {
    return c >= spec_.steps[i].min_times || (c == 0 && spec_.steps[i].optional);
  }
  bool below_max(std::size_t i, std::uint32_t c) const {
    return spec_.steps[i].max_times < 0 || c < spec_.steps[i].max_times;
  }
  bool condition(std::size_t i, const key_state& ks, const stored_event& e,
                 const partial_match& pm) const;
  closure close(const key_state& ks, const partial_match& pm, const stored_event& e) const;
  bool completes(std::uint32_t step, std::uint32_t count) const;
  bool ends_in_not_followed_by(const partial_match& pm) const;
  weir::cep::contiguity contiguity_at(position p) const;
  void release(key_state& ks, std::vector<partial_match> found, engine_output& out) const;
  void prune(std::vector<partial_match>& list, const partial_match& m) const;
  void cap(key_state& ks, engine_output& out) const;

  weir::cep::pattern_spec spec_;
  schema_ptr input_;
  schema_ptr match_schema_;
  std::vector<expr::compiled_expression> conditions_; // per step; empty text = true
  std::vector<bool> has_condition_;
  std::vector<bool> iterative_; // reads another step's fields
  std::vector<std::size_t> step_field_base_; // per step: index of `s.<first field>`
  std::vector<int> count_field_;             // per step: index of `s.count`, or -1
  int skip_step_ = -1;
};

/// "(a) (b c)": for tests and logs, each match's events by step.
std::string describe(const key_state& ks, const partial_match& pm,
                     const weir::cep::pattern_spec& spec, std::size_t label_field);

} // namespace weir::internal::cep

namespace weir::state {

template <>
struct codec<internal::cep::stored_event> {
  static void encode(const internal::cep::stored_event& v, std::string& out) {
    codec<std::int64_t>::encode(v.ts, out);
    codec<std::uint64_t>::encode(v.id, out);
    codec<std::uint64_t>::encode(v.simple_bits, out);
    codec<std::vector<value>>::encode(v.row, out);
  }
  static bool decode(std::string_view& in, internal::cep::stored_event& v) {
    return codec<std::int64_t>::decode(in, v.ts) && codec<std::uint64_t>::decode(in, v.id) &&
           codec<std::uint64_t>::decode(in, v.simple_bits) &&
           codec<std::vector<value>>::decode(in, v.row);
  }
};

template <>
struct codec<internal::cep::partial_match> {
  static void encode(const internal::cep::partial_match& v, std::string& out) {
    codec<std::uint32_t>::encode(v.step, out);
    codec<std::uint32_t>::encode(v.count, out);
    codec<std::vector<internal::cep::taken_event>>::encode(v.taken, out);
    codec<std::int64_t>::encode(v.start_ts, out);
    codec<std::uint64_t>::encode(v.start_id, out);
  }
  static bool decode(std::string_view& in, internal::cep::partial_match& v) {
    return codec<std::uint32_t>::decode(in, v.step) && codec<std::uint32_t>::decode(in, v.count) &&
           codec<std::vector<internal::cep::taken_event>>::decode(in, v.taken) &&
           codec<std::int64_t>::decode(in, v.start_ts) &&
           codec<std::uint64_t>::decode(in, v.start_id);
  }
};

template <>
struct codec<internal::cep::key_state> {
  static void encode(const internal::cep::key_state& v, std::string& out) {
    codec<std::uint64_t>::encode(v.next_id, out);
    codec<std::vector<internal::cep::stored_event>>::encode(v.queue, out);
    codec<std::map<std::uint64_t, internal::cep::stored_event>>::encode(v.events, out);
    codec<std::vector<internal::cep::partial_match>>::encode(v.partials, out);
    codec<std::vector<internal::cep::partial_match>>::encode(v.completed, out);
    codec<std::int64_t>::encode(v.last_access_ms, out);
  }
  static bool decode(std::string_view& in, internal::cep::key_state& v) {
    return codec<std::uint64_t>::decode(in, v.next_id) &&
           codec<std::vector<internal::cep::stored_event>>::decode(in, v.queue) &&
           codec<std::map<std::uint64_t, internal::cep::stored_event>>::decode(in, v.events) &&
           codec<std::vector<internal::cep::partial_match>>::decode(in, v.partials) &&
           codec<std::vector<internal::cep::partial_match>>::decode(in, v.completed) &&
           codec<std::int64_t>::decode(in, v.last_access_ms);
  }
};

} // namespace weir::state
