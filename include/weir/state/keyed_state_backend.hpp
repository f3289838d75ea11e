// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/state/key_group_range.hpp"
#include "weir/state/keyed_state.hpp"
#include "weir/state/state_table.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <typeindex>
#include <typeinfo>
#include <utility>
#include <variant>
#include <vector>

namespace weir::state {

/// The time domain of a timer (Flink's `TimeDomain`).
enum class time_domain : std::uint8_t { event_time, processing_time };

/// Called for each fired timer with its timestamp (ms); the backend's
/// current key and namespace are those of the timer. The callback may read
/// and write state and register or delete timers.
using timer_callback = std::function<void(event_time ts)>;

/// Snapshot format version written by `keyed_state_snapshot`.
inline constexpr std::uint8_t snapshot_format_version = 1;

/// A frozen, immutable copy of a `keyed_state_backend`'s state and timers
/// at one point (docs/concepts/checkpoints.md). Taking it cost O(states × key groups);
/// serializing it happens later, key group by key group, on any thread
/// (the state writer), while the backend keeps changing.
///
/// Every method is const and thread-safe.
///
/// ## Format of one key group (version 1, little-endian)
/// ```
/// "WKG"  u8 version  u16 key_group  u32 section_count
/// section*: u8 kind  bytes name  bytes payload        (bytes = u32 len + data)
///   kind 1..5 = state_kind, 6 = event-time timers, 7 = processing-time timers
///   payload  = u32 count, then per entry: bytes key, bytes namespace, bytes value
///              (value = codec<V> of the state's stored type; for timers a
///               std::vector<int64_t> of timestamps, ascending)
/// u64 xxhash64 (seed 0) of every byte before it
/// ```
/// Sections appear in name order, states before timers; sections without
/// entries are omitted. A key group with no state and no timers serializes
/// to zero bytes, and `restore_key_group` accepts zero bytes as "no state",
/// so writers may skip such groups.
class keyed_state_snapshot {
public:
  /// The key groups this snapshot covers (its backend's range).
  key_group_range range() const noexcept { return range_; }
  std::size_t max_parallelism() const noexcept { return max_parallelism_; }

  /// Appends the serialized state and timers of `group` to `out` (see the
  /// format above); appends nothing for a group without state or outside
  /// the range. O(entries of the group).
  void serialize_key_group(std::uint16_t group, std::string& out) const;

  /// Whether `group` has any state or timers at the snapshot.
  bool has_key_group(std::uint16_t group) const;

  /// Rough in-memory size of the frozen state in bytes (for metrics and
  /// sizing; not the serialized size). O(states).
  std::size_t approximate_bytes() const noexcept;

  /// Entries (over all states and timer sets) at the snapshot.
  std::size_t num_entries() const noexcept;

  struct section {
    std::string name;
    std::uint8_t kind = 0;
    std::shared_ptr<const detail::frozen_state_table> frozen;
  };
  /// Sections restored but not yet re-registered: name -> kind and, per
  /// key group, the payload bytes kept verbatim.
  struct pending_state {
    std::uint8_t kind = 0;
    std::map<std::uint16_t, std::string> groups;
  };
  using pending_map = std::map<std::string, pending_state, std::less<>>;

private:
  friend class keyed_state_backend;
  key_group_range range_;
  std::size_t max_parallelism_ = 0;
  std::vector<section> sections_; // registered states by name, then timers
  std::shared_ptr<const pending_map> pending_;
};

/// All keyed state and timers of one operator subtask, kept in memory in
/// copy-on-write maps (Flink's `HeapKeyedStateBackend` with
/// `CopyOnWriteStateMap`s, plus its `InternalTimerService`).
///
/// Usage: `set_current_key(bytes)` (and `set_current_namespace` for
/// window-scoped state) before each element; state handles obtained once by
/// name then read and write the current (key, namespace). Keys are the bytes
/// of `weir::encode_key`; their key group must lie in `range()`.
///
/// Threads: single-threaded (the operator's), except that snapshots may be
/// read anywhere. Not movable: handles point into it.
class keyed_state_backend {
public:
  /// An empty backend for the key groups `range` of `max_parallelism`
  /// (1..32768) groups; see `key_group_range_for_subtask`.
  keyed_state_backend(key_group_range range, std::size_t max_parallelism);
  ~keyed_state_backend();

  keyed_state_backend(const keyed_state_backend&) = delete;
  keyed_state_backend& operator=(const keyed_state_backend&) = delete;

  key_group_range range() const noexcept { return range_; }
  std::size_t max_parallelism() const noexcept { return max_parallelism_; }

  // -- current key and namespace -------------------------------------------

  /// Makes `encoded_key` (bytes from `weir::encode_key`) the current key and
  /// computes its key group (`weir::assign_key_group`). Keeps the current
  /// namespace. Aborts if the group is outside `range()` (a partitioning
  /// bug). O(key length).
  void set_current_key(std::string_view encoded_key);

  /// As `set_current_key(encoded_key)`, with the key group and key hash
  /// taken from `a`, which must be `address_of(encoded_key, ...)` (saves
  /// hashing the key twice when it was hashed for prefetching).
  void set_current_key(std::string_view encoded_key, const key_address& a);

  /// The address of (`encoded_key`, `ns`) without changing the current key
  /// or namespace: for prefetch hints ahead of the rows being processed.
  key_address address_of(std::string_view encoded_key, std::string_view ns) const noexcept;

  /// The current key's bytes (empty before the first `set_current_key`).
  std::string_view current_key() const noexcept { return scope_.key; }
  std::uint16_t current_key_group() const noexcept { return scope_.group; }
  bool has_current_key() const noexcept { return scope_.has_key; }

  /// Makes `ns` (bytes, e.g. an encoded window) the current namespace;
  /// empty = the global namespace, which is also the initial one.
  void set_current_namespace(std::string_view ns);
  std::string_view current_namespace() const noexcept { return scope_.ns; }

  // -- state registration ----------------------------------------------------

  /// A handle to the value state `name` holding `T`, its entries living
  /// `ttl` after their last write when given (`state_ttl_config`; Flink's
  /// `StateDescriptor.enableTimeToLive`). Registering a name again with the
  /// same kind, types and ttl returns a handle to the same state.
  /// Errors (`errc::invalid_argument`): `name` is registered with another
  /// kind, type or ttl, or the ttl is not positive; (`errc::parse_error`):
  /// restored bytes of `name` do not decode as `T` (nothing is registered
  /// then).
  template <encodable T>
  [[nodiscard]] expected<value_state<T>>
  get_value_state(std::string_view name, std::optional<state_ttl_config> ttl = std::nullopt);

  /// A handle to the list state `name`; ttl and errors as `get_value_state`.
  template <encodable T>
  [[nodiscard]] expected<list_state<T>>
  get_list_state(std::string_view name, std::optional<state_ttl_config> ttl = std::nullopt);

  /// A handle to the map state `name`; ttl and errors as `get_value_state`.
  template <encodable UK, encodable UV>
  [[nodiscard]] expected<map_state<UK, UV>>
  get_map_state(std::string_view name, std::optional<state_ttl_config> ttl = std::nullopt);

  /// A handle to the reducing state `name` folding with `reduce(acc, v)`;
  /// ttl and errors as `get_value_state`, and `errc::invalid_argument` for
  /// an empty function.
  template <encodable T>
  [[nodiscard]] expected<reducing_state<T>>
  get_reducing_state(std::string_view name, std::function<T(const T&, const T&)> reduce,
                     std::optional<state_ttl_config> ttl = std::nullopt);

  /// A handle to the aggregating state `name` fed by `fn`; ttl and errors
  /// as `get_value_state`, and `errc::invalid_argument` for a null `fn`.
  template <class IN, encodable ACC, class OUT>
  [[nodiscard]] expected<aggregating_state<IN, ACC, OUT>>
  get_aggregating_state(std::string_view name,
                        std::shared_ptr<const aggregate_function<IN, ACC, OUT>> fn,
                        std::optional<state_ttl_config> ttl = std::nullopt);

  // -- state TTL -------------------------------------------------------------

  /// The processing time (ms) that states with a ttl go by; default the
  /// system clock. Operators set the job's clock (`operator_context::clock`).
  void set_ttl_time_provider(std::function<std::int64_t()> now);

  /// Drops every expired entry of every state with a ttl (values and their
  /// write times); returns the entries dropped. `snapshot()` calls it
  /// first, and `set_current_key` after enough writes (see
  /// `state_ttl_config`). O(entries of those states).
  std::size_t sweep_expired();

  /// Names of the registered states, sorted.
  std::vector<std::string> state_names() const;

  // -- namespace and key operations -----------------------------------------

  /// Removes the entries of every registered state for (current key, `ns`).
  /// Timers are not touched (delete them explicitly, as Flink's window
  /// operator does). Precondition: a current key.
  void clear_namespace(std::string_view ns);

  /// Calls `f(key, ns)` for every entry of state `name` (any order); does
  /// nothing for an unknown name. For tests and queryable state.
  void for_each_key(std::string_view name,
                    const std::function<void(std::string_view key, std::string_view ns)>& f) const;

  /// Queryable state: every registered state's value for key `encoded_key`
  /// in the global namespace, as one JSON object by state name (see
  /// `detail::json_of`), states without a value left out; `null` when none
  /// has one. Makes `encoded_key` the current key and the global namespace
  /// current. Precondition: its key group is in `range()`.
  std::string query_json(std::string_view encoded_key);

  /// Number of (key, namespace) entries of state `name` (0 if unknown).
  std::size_t num_entries(std::string_view name) const;

  // -- timers (Flink's InternalTimerService) --------------------------------

  /// Registers an event-time timer at `ts` (ms) for the current key and
  /// namespace; registering the same (key, namespace, ts) twice keeps one.
  void register_event_time_timer(event_time ts);
  /// Removes that timer if present.
  void delete_event_time_timer(event_time ts);
  /// As above, in processing time.
  void register_processing_time_timer(event_time ts);
  void delete_processing_time_timer(event_time ts);

  /// Advances event time to `wm` and fires every event-time timer with
  /// `ts <= wm`, in (timestamp, key bytes, namespace bytes) order, each
  /// removed before its callback runs with the current key and namespace
  /// set to the timer's. Timers the callback registers at or before `wm`
  /// fire in the same call. A watermark not above the current one fires
  /// nothing new but still drains due timers. Afterwards the current key and
  /// namespace are those of the last fired timer. Returns timers fired.
  std::size_t advance_watermark(event_time wm, const timer_callback& on_timer);

  /// As `advance_watermark`, for processing time `now` (ms).
  std::size_t advance_processing_time(event_time now, const timer_callback& on_timer);

  /// The last watermark passed to `advance_watermark` (min_watermark before).
  event_time current_watermark() const noexcept { return watermark_; }
  /// The last time passed to `advance_processing_time` (min_watermark before).
  event_time current_processing_time() const noexcept { return processing_time_; }

  /// The earliest pending processing-time timer, if any.
  std::optional<event_time> next_processing_timer() const;
  /// The earliest pending event-time timer, if any.
  std::optional<event_time> next_event_timer() const;

  std::size_t num_event_timers() const noexcept;
  std::size_t num_processing_timers() const noexcept;

  // -- snapshots -------------------------------------------------------------

  /// Freezes every state and timer set: O(states × key groups), no entry
  /// is copied (see `cow_state_map`). The result is immutable and may be
  /// serialized on another thread while this backend keeps changing.
  std::shared_ptr<const keyed_state_snapshot> snapshot();

  /// Adds the state and timers of one serialized key group (written by any
  /// backend, of any parallelism, whose snapshot covered `group`), replacing
  /// entries with the same (state, key, namespace). Zero bytes = no state.
  /// Sections of states not registered yet are kept and decoded when they
  /// are registered. All or nothing: on error nothing changes.
  /// Errors: `errc::invalid_argument` if `group` is outside `range()`;
  /// `errc::parse_error` for bytes that are truncated, fail the checksum,
  /// carry another version or group number, name a state with another kind
  /// than its registration, or do not decode.
  [[nodiscard]] expected<std::monostate> restore_key_group(std::uint16_t group,
                                                           std::string_view bytes);

private:
  struct timer_service;

  std::size_t fire_timers(timer_service& timers, event_time limit,
                          const timer_callback& on_timer);
  detail::state_table_base* find_table(std::string_view name) const;
  // Registers `table`, first decoding any pending restored sections of its
  // name; on error the table is dropped.
  expected<std::monostate> adopt_table(std::unique_ptr<detail::state_table_base> table);

  template <class V>
  expected<detail::state_table<V>*> obtain_table(std::string_view name, state_kind kind,
                                                 std::type_index handle_type,
                                                 const std::optional<state_ttl_config>& ttl);
  // Gives `table` its ttl: registers its companion table of write times.
  expected<std::monostate> bind_ttl(detail::state_table_base& table,
                                    const state_ttl_config& ttl);
  // Sweeps when the writes since the last sweep reached the threshold.
  void maybe_sweep() {
    if (ttl_writes_ >= ttl_sweep_after_)
      sweep_expired();
  }

  key_group_range range_;
  std::size_t max_parallelism_;
  detail::state_scope scope_;
  std::map<std::string, std::unique_ptr<detail::state_table_base>, std::less<>> tables_;
  std::shared_ptr<const keyed_state_snapshot::pending_map> pending_;
  bool pending_shared_ = false; ///< a snapshot holds pending_: copy before changing it
  std::unique_ptr<timer_service> event_timers_;
  std::unique_ptr<timer_service> processing_timers_;
  event_time watermark_;
  event_time processing_time_;
  std::function<std::int64_t()> ttl_now_;
  std::size_t ttl_writes_ = 0;
  std::size_t ttl_sweep_after_ = state_ttl_config::min_sweep_writes;
  bool has_ttl_ = false;
};

// ---------------------------------------------------------------------------
// Template implementation.

template <class V>
expected<detail::state_table<V>*>
keyed_state_backend::obtain_table(std::string_view name, state_kind kind,
                                  std::type_index handle_type,
                                  const std::optional<state_ttl_config>& ttl) {
  if (ttl && ttl->ttl.count() <= 0)
    return make_error(errc::invalid_argument,
                      "keyed state '" + std::string{name} + "': the ttl must be positive");
  if (auto* base = find_table(name)) {
    if (base->kind() != static_cast<std::uint8_t>(kind) || base->handle_type() != handle_type)
      return make_error(errc::invalid_argument,
                        "keyed state '" + std::string{name} + "' is already registered as " +
                          std::string{to_string(static_cast<state_kind>(base->kind()))} +
                          " state of another type");
    const bool same_ttl = base->ttl ? ttl && base->ttl->config == *ttl : !ttl;
    if (!same_ttl)
      return make_error(errc::invalid_argument,
                        "keyed state '" + std::string{name} +
                          "' is already registered with another ttl");
    return static_cast<detail::state_table<V>*>(base);
  }
  auto table = std::make_unique<detail::state_table<V>>(
    std::string{name}, static_cast<std::uint8_t>(kind), handle_type, range_);
  auto* raw = table.get();
  if (auto ok = adopt_table(std::move(table)); !ok)
    return ok.error();
  if (ttl)
    if (auto ok = bind_ttl(*raw, *ttl); !ok)
      return ok.error();
  return raw;
}

template <encodable T>
expected<value_state<T>> keyed_state_backend::get_value_state(std::string_view name,
                                                              std::optional<state_ttl_config> ttl) {
  auto t = obtain_table<T>(name, state_kind::value, typeid(value_state<T>), ttl);
  if (!t)
    return t.error();
  return value_state<T>{&scope_, *t};
}

template <encodable T>
expected<list_state<T>> keyed_state_backend::get_list_state(std::string_view name,
                                                            std::optional<state_ttl_config> ttl) {
  auto t = obtain_table<std::vector<T>>(name, state_kind::list, typeid(list_state<T>), ttl);
  if (!t)
    return t.error();
  return list_state<T>{&scope_, *t};
}

template <encodable UK, encodable UV>
expected<map_state<UK, UV>>
keyed_state_backend::get_map_state(std::string_view name, std::optional<state_ttl_config> ttl) {
  auto t = obtain_table<typename map_state<UK, UV>::map_type>(name, state_kind::map,
                                                              typeid(map_state<UK, UV>), ttl);
  if (!t)
    return t.error();
  return map_state<UK, UV>{&scope_, *t};
}

template <encodable T>
expected<reducing_state<T>>
keyed_state_backend::get_reducing_state(std::string_view name,
                                        std::function<T(const T&, const T&)> reduce,
                                        std::optional<state_ttl_config> ttl) {
  if (!reduce)
    return make_error(errc::invalid_argument,
                      "reducing state '" + std::string{name} + "' needs a reduce function");
  auto t = obtain_table<T>(name, state_kind::reducing, typeid(reducing_state<T>), ttl);
  if (!t)
    return t.error();
  return reducing_state<T>{
    &scope_, *t,
    std::make_shared<const typename reducing_state<T>::reduce_function>(std::move(reduce))};
}

template <class IN, encodable ACC, class OUT>
expected<aggregating_state<IN, ACC, OUT>>
keyed_state_backend::get_aggregating_state(
  std::string_view name, std::shared_ptr<const aggregate_function<IN, ACC, OUT>> fn,
  std::optional<state_ttl_config> ttl) {
  if (!fn)
    return make_error(errc::invalid_argument,
                      "aggregating state '" + std::string{name} + "' needs a function");
  auto t = obtain_table<ACC>(name, state_kind::aggregating,
                             typeid(aggregating_state<IN, ACC, OUT>), ttl);
  if (!t)
    return t.error();
  return aggregating_state<IN, ACC, OUT>{&scope_, *t, std::move(fn)};
}

} // namespace weir::state
