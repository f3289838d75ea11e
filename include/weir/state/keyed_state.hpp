// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/state/state_table.hpp"

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// Handles to keyed state (Flink's `ValueState`, `ListState`, `MapState`,
/// `ReducingState`, `AggregatingState`). Obtain them from a
/// `keyed_state_backend` (`get_value_state<T>("name")`, ...); every call
/// reads or writes the entry of the backend's *current* key and namespace,
/// so one handle serves all keys. Handles are cheap to copy, valid as long as
/// their backend, and belong to the backend's thread. Using a handle before
/// `set_current_key` is a bug (aborts). Pointers, spans and references a
/// handle returns stay valid until the next write to the same backend.
namespace weir::state {

class keyed_state_backend;

/// A user aggregation for `aggregating_state` (Flink's `AggregateFunction`),
/// with in-place `add` and `merge` instead of Flink's returned accumulators.
/// Implementations must be deterministic and, for snapshots, `ACC` must be
/// `encodable`.
template <class IN, class ACC, class OUT>
class aggregate_function {
public:
  virtual ~aggregate_function() = default;
  /// A fresh, empty accumulator.
  virtual ACC create_accumulator() const = 0;
  /// Folds `value` into `acc`.
  virtual void add(const IN& value, ACC& acc) const = 0;
  /// The result of an accumulator.
  virtual OUT get_result(const ACC& acc) const = 0;
  /// Folds `from` into `into` (merging windows, Flink's `merge`).
  virtual void merge(ACC& into, const ACC& from) const = 0;
};

/// A single value per key and namespace (Flink's `ValueState`).
template <encodable T>
class value_state {
public:
  value_state() = default;
  explicit operator bool() const noexcept { return table_ != nullptr; }

  /// The value, or nullopt when none was set (copies it).
  std::optional<T> value() const {
    if (const T* p = get())
      return *p;
    return std::nullopt;
  }

  /// The value or `fallback`.
  T value_or(T fallback) const {
    if (const T* p = get())
      return *p;
    return fallback;
  }

  /// The stored value without copying, or nullptr (also once expired,
  /// with a ttl).
  const T* get() const {
    auto k = scope_->current();
    table().ttl_access(k, true);
    return table().map.get(k);
  }

  /// The stored value for in-place changes (clones a bucket a snapshot
  /// shares), or nullptr when none is set. With a ttl, counts as a write
  /// (the entry's life restarts).
  T* get_mut() {
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    T* p = t.map.get_mut(k);
    if (p)
      t.ttl_written(k);
    return p;
  }

  /// Sets the value.
  void update(T v) {
    auto k = scope_->current();
    table().map.put(k, std::move(v));
    table().ttl_written(k);
  }

  /// Removes the value.
  void clear() {
    auto k = scope_->current();
    table().map.remove(k);
    table().ttl_removed(k);
  }

  /// Prefetch hints for a coming access at `a` (stage 1: the index slot;
  /// stage 2, some accesses later: the entry). See
  /// `cow_state_map::prefetch_slot`; they change nothing.
  void prefetch_slot(const key_address& a) const noexcept {
    if (table_)
      table_->map.prefetch_slot(a.group, a.hash);
  }
  void prefetch_entry(const key_address& a) const noexcept {
    if (table_)
      table_->map.prefetch_entry(a.group, a.hash);
  }

private:
  friend class keyed_state_backend;
  value_state(const detail::state_scope* scope, detail::state_table<T>* t)
    : scope_(scope), table_(t) {}
  detail::state_table<T>& table() const {
    if (!table_)
      state_invariant_failed("use of an empty value_state handle", __FILE__, __LINE__);
    return *table_;
  }
  const detail::state_scope* scope_ = nullptr;
  detail::state_table<T>* table_ = nullptr;
};

/// Rows between a state handle's two prefetch stages in
/// `for_each_prefetched`: the index slot of row i + 2d and the entry of row
/// i + d are requested while row i is processed.
inline constexpr std::size_t prefetch_distance = 8;

/// Calls `body(i)` for i = 0 .. addresses.size() - 1 in order, while
/// prefetching the entries of `handle` (a state handle with
/// `prefetch_slot`/`prefetch_entry`) at the addresses of the rows ahead, so
/// that the cache misses of a batch's lookups overlap instead of stalling
/// one after another (group prefetching; Chen et al., ICDE 2004). With large
/// state a lookup otherwise waits twice on memory: index slot, then entry.
template <class Handle, class Body>
void for_each_prefetched(const Handle& handle, std::span<const key_address> addresses,
                         Body&& body) {
  constexpr std::size_t d = prefetch_distance;
  const std::size_t n = addresses.size();
  for (std::size_t i = 0; i < n && i < 2 * d; ++i)
    handle.prefetch_slot(addresses[i]);
  for (std::size_t i = 0; i < n; ++i) {
    if (i + 2 * d < n)
      handle.prefetch_slot(addresses[i + 2 * d]);
    if (i + d < n)
      handle.prefetch_entry(addresses[i + d]);
    body(i);
  }
}

namespace detail {

// Moves the entries of `sources` (namespaces of the current key) into
// `target`, folding each into the target's value with `fold(into, from)`.
// Sources equal to the target are skipped (Flink's
// `AbstractHeapMergingState.mergeNamespaces`).
template <class V, class Fold>
void merge_namespaces(state_table<V>& t, const state_scope& scope, std::string_view target,
                      std::span<const std::string> sources, Fold&& fold) {
  for (const auto& src : sources) {
    if (src == target)
      continue;
    V moved{};
    if (!t.map.take(scope.with_namespace(src), moved))
      continue;
    auto tk = scope.with_namespace(target);
    if (V* existing = t.map.get_mut(tk))
      fold(*existing, moved);
    else
      t.map.put(tk, std::move(moved));
  }
}

} // namespace detail

/// A list of values per key and namespace (Flink's `ListState`). An empty
/// list is not stored: `update({})` equals `clear()`.
template <encodable T>
class list_state {
public:
  list_state() = default;
  explicit operator bool() const noexcept { return table_ != nullptr; }

  /// The elements in insertion order; empty when none.
  std::span<const T> get() const {
    auto k = scope_->current();
    table().ttl_access(k, true);
    if (const auto* p = table().map.get(k))
      return {p->data(), p->size()};
    return {};
  }

  bool empty() const { return get().empty(); }

  /// Appends one element (with a ttl: to a fresh list if the old one expired).
  void add(T v) {
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    t.map.get_or_insert(k, [] { return std::vector<T>{}; }).push_back(std::move(v));
    t.ttl_written(k);
  }

  /// Appends elements in order.
  void add_all(std::span<const T> vs) {
    if (vs.empty())
      return;
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    auto& l = t.map.get_or_insert(k, [] { return std::vector<T>{}; });
    l.insert(l.end(), vs.begin(), vs.end());
    t.ttl_written(k);
  }

  /// Replaces the list.
  void update(std::vector<T> vs) {
    if (vs.empty()) {
      clear();
      return;
    }
    auto k = scope_->current();
    table().map.put(k, std::move(vs));
    table().ttl_written(k);
  }

  void clear() {
    auto k = scope_->current();
    table().map.remove(k);
    table().ttl_removed(k);
  }

  /// Appends the lists of namespaces `sources` (current key) to the list of
  /// `target`, in the order given, and removes them (Flink's
  /// `InternalListState.mergeNamespaces`).
  void merge_namespaces(std::string_view target, std::span<const std::string> sources) {
    detail::merge_namespaces(table(), *scope_, target, sources,
                             [](std::vector<T>& into, std::vector<T>& from) {
                               into.insert(into.end(), std::make_move_iterator(from.begin()),
                                           std::make_move_iterator(from.end()));
                             });
  }

private:
  friend class keyed_state_backend;
  list_state(const detail::state_scope* scope, detail::state_table<std::vector<T>>* t)
    : scope_(scope), table_(t) {}
  detail::state_table<std::vector<T>>& table() const {
    if (!table_)
      state_invariant_failed("use of an empty list_state handle", __FILE__, __LINE__);
    return *table_;
  }
  const detail::state_scope* scope_ = nullptr;
  detail::state_table<std::vector<T>>* table_ = nullptr;
};

/// A map of user keys to user values per key and namespace (Flink's
/// `MapState`). Iteration is in `UK` order. An empty map is not stored.
template <encodable UK, encodable UV>
class map_state {
public:
  using map_type = std::map<UK, UV>;

  map_state() = default;
  explicit operator bool() const noexcept { return table_ != nullptr; }

  /// The value of `uk`, or nullopt (copies it).
  std::optional<UV> get(const UK& uk) const {
    if (const UV* p = find(uk))
      return *p;
    return std::nullopt;
  }

  /// The value of `uk` without copying, or nullptr.
  const UV* find(const UK& uk) const {
    auto k = scope_->current();
    table().ttl_access(k, true);
    const auto* m = table().map.get(k);
    if (!m)
      return nullptr;
    auto it = m->find(uk);
    return it == m->end() ? nullptr : &it->second;
  }

  bool contains(const UK& uk) const { return find(uk) != nullptr; }

  /// Sets the value of `uk`.
  void put(UK uk, UV uv) {
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    t.map.get_or_insert(k, [] { return map_type{}; })
      .insert_or_assign(std::move(uk), std::move(uv));
    t.ttl_written(k);
  }

  /// Removes `uk`; returns whether it was there.
  bool remove(const UK& uk) {
    auto k = scope_->current();
    if (!contains(uk))
      return false;
    auto* m = table().map.get_mut(k);
    m->erase(uk);
    if (m->empty()) {
      table().map.remove(k);
      table().ttl_removed(k);
    } else {
      table().ttl_written(k);
    }
    return true;
  }

  /// Every (user key, user value), in key order; an empty map when none.
  const map_type& entries() const {
    static const map_type none;
    auto k = scope_->current();
    table().ttl_access(k, true);
    const auto* m = table().map.get(k);
    return m ? *m : none;
  }

  bool empty() const { return entries().empty(); }

  void clear() {
    auto k = scope_->current();
    table().map.remove(k);
    table().ttl_removed(k);
  }

private:
  friend class keyed_state_backend;
  map_state(const detail::state_scope* scope, detail::state_table<map_type>* t)
    : scope_(scope), table_(t) {}
  detail::state_table<map_type>& table() const {
    if (!table_)
      state_invariant_failed("use of an empty map_state handle", __FILE__, __LINE__);
    return *table_;
  }
  const detail::state_scope* scope_ = nullptr;
  detail::state_table<map_type>* table_ = nullptr;
};

/// One value per key and namespace, folded with a reduce function on every
/// `add` (Flink's `ReducingState`): `add(v)` stores `v` when empty, else
/// `reduce(current, v)`.
template <encodable T>
class reducing_state {
public:
  using reduce_function = std::function<T(const T& acc, const T& value)>;

  reducing_state() = default;
  explicit operator bool() const noexcept { return table_ != nullptr; }

  /// The reduced value, or nullopt when nothing was added.
  std::optional<T> get() const {
    auto k = scope_->current();
    table().ttl_access(k, true);
    if (const T* p = table().map.get(k))
      return *p;
    return std::nullopt;
  }

  void add(T v) {
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    if (T* cur = t.map.get_mut(k))
      *cur = (*reduce_)(*cur, v);
    else
      t.map.put(k, std::move(v));
    t.ttl_written(k);
  }

  void clear() {
    auto k = scope_->current();
    table().map.remove(k);
    table().ttl_removed(k);
  }

  /// Reduces the values of namespaces `sources` into `target` and removes
  /// them (Flink's `InternalReducingState.mergeNamespaces`).
  void merge_namespaces(std::string_view target, std::span<const std::string> sources) {
    auto reduce = reduce_;
    detail::merge_namespaces(table(), *scope_, target, sources,
                             [&reduce](T& into, T& from) { into = (*reduce)(into, from); });
  }

private:
  friend class keyed_state_backend;
  reducing_state(const detail::state_scope* scope, detail::state_table<T>* t,
                 std::shared_ptr<const reduce_function> reduce)
    : scope_(scope), table_(t), reduce_(std::move(reduce)) {}
  detail::state_table<T>& table() const {
    if (!table_)
      state_invariant_failed("use of an empty reducing_state handle", __FILE__, __LINE__);
    return *table_;
  }
  const detail::state_scope* scope_ = nullptr;
  detail::state_table<T>* table_ = nullptr;
  std::shared_ptr<const reduce_function> reduce_;
};

/// An accumulator per key and namespace, fed by an `aggregate_function`
/// (Flink's `AggregatingState`). The stored (and snapshotted) type is `ACC`.
template <class IN, encodable ACC, class OUT>
class aggregating_state {
public:
  using function_type = aggregate_function<IN, ACC, OUT>;

  aggregating_state() = default;
  explicit operator bool() const noexcept { return table_ != nullptr; }

  /// `get_result` of the accumulator, or nullopt when nothing was added.
  std::optional<OUT> get() const {
    if (const ACC* acc = accumulator())
      return fn_->get_result(*acc);
    return std::nullopt;
  }

  /// The accumulator without copying, or nullptr.
  const ACC* accumulator() const {
    auto k = scope_->current();
    table().ttl_access(k, true);
    return table().map.get(k);
  }

  /// Folds `value` in, creating the accumulator first when absent; returns
  /// whether it was created (the first value of this key and namespace).
  bool add(const IN& value) {
    const auto* fn = fn_.get();
    bool created = false;
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    fn->add(value, t.map.get_or_insert(k, [fn, &created] {
      created = true;
      return fn->create_accumulator();
    }));
    t.ttl_written(k);
    return created;
  }

  /// Merges the accumulator `from` in (a partial result computed
  /// elsewhere), creating the accumulator first when absent; returns
  /// whether it was created.
  bool merge_accumulator(const ACC& from) {
    const auto* fn = fn_.get();
    bool created = false;
    auto k = scope_->current();
    auto& t = table();
    t.ttl_access(k, false);
    fn->merge(t.map.get_or_insert(k, [fn, &created] {
      created = true;
      return fn->create_accumulator();
    }), from);
    t.ttl_written(k);
    return created;
  }

  void clear() {
    auto k = scope_->current();
    table().map.remove(k);
    table().ttl_removed(k);
  }

  /// Prefetch hints for a coming access at `a` (stage 1: the index slot;
  /// stage 2, some accesses later: the entry). See
  /// `cow_state_map::prefetch_slot`; they change nothing.
  void prefetch_slot(const key_address& a) const noexcept {
    if (table_)
      table_->map.prefetch_slot(a.group, a.hash);
  }
  void prefetch_entry(const key_address& a) const noexcept {
    if (table_)
      table_->map.prefetch_entry(a.group, a.hash);
  }

  /// Merges the accumulators of namespaces `sources` into `target` with
  /// `merge` and removes them (Flink's
  /// `InternalAggregatingState.mergeNamespaces`).
  void merge_namespaces(std::string_view target, std::span<const std::string> sources) {
    const auto* fn = fn_.get();
    detail::merge_namespaces(table(), *scope_, target, sources,
                             [fn](ACC& into, ACC& from) { fn->merge(into, from); });
  }

  const function_type& function() const { return *fn_; }

private:
  friend class keyed_state_backend;
  aggregating_state(const detail::state_scope* scope, detail::state_table<ACC>* t,
                    std::shared_ptr<const function_type> fn)
    : scope_(scope), table_(t), fn_(std::move(fn)) {}
  detail::state_table<ACC>& table() const {
    if (!table_)
      state_invariant_failed("use of an empty aggregating_state handle", __FILE__, __LINE__);
    return *table_;
  }
  const detail::state_scope* scope_ = nullptr;
  detail::state_table<ACC>* table_ = nullptr;
  std::shared_ptr<const function_type> fn_;
};

} // namespace weir::state
