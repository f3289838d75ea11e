// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/state/key_group_range.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::state {

/// Addresses one entry of keyed state: the current key (bytes from
/// `weir::encode_key`), its key group, the namespace (bytes; empty = global)
/// and `hash_state_key(key, ns)`, computed once per key/namespace change.
struct state_key {
  std::uint16_t group = 0;
  std::uint64_t hash = 0;
  std::string_view key;
  std::string_view ns;
};

/// The bucket hash of (key, namespace): xxhash3 of the key mixed with
/// xxhash3 of the namespace. Stable across runs (not that anything persists
/// it). Independent of the key-group hash, so buckets spread within a group.
std::uint64_t hash_state_key(std::string_view key, std::string_view ns) noexcept;

/// As `hash_state_key`, from `hash_key_bytes(key)` (to reuse a key's hash
/// across namespaces).
std::uint64_t hash_state_key(std::uint64_t key_hash, std::string_view ns) noexcept;

/// xxhash3 of a key's bytes.
std::uint64_t hash_key_bytes(std::string_view key) noexcept;

/// Aborts with a message naming the broken invariant (bugs, not errors).
[[noreturn]] void state_invariant_failed(const char* what, const char* file, int line);

/// A copy-on-write hash map from (key, namespace) to a typed `V`, bucketed
/// per key group (the model is Flink's `CopyOnWriteStateMap` in its
/// `HeapKeyedStateBackend`).
///
/// Layout: one `group_table` per key group of the range; a group table is a
/// power-of-two array of shared buckets, each a small vector of entries. Every
/// group table and bucket carries the map version at which it was created.
/// `snapshot()` bumps the version and shares the group-table pointers with an
/// immutable `frozen` view: O(key groups), never O(entries). A later write to
/// a group table or bucket whose version is older than the current one clones
/// it first (the array copy is O(buckets of that group), once per group per
/// snapshot; a bucket clone copies that bucket's entries by value), so the
/// frozen view keeps seeing the values of the snapshot. A group grows
/// (doubles its buckets) when it averages more than `max_load` entries per
/// bucket; the frozen view keeps the old array.
///
/// Threads: the live map belongs to one thread (the operator's). A `frozen`
/// view is immutable and may be read from any thread, concurrently with the
/// live map changing: the two only share objects that neither writes, and
/// their lifetime is managed by atomic reference counts.
///
/// Pointers and references returned by lookups stay valid until the next
/// non-const call on the map.
template <class V>
class cow_state_map {
public:
  /// One stored entry.
  struct entry {
    std::uint64_t hash = 0;
    std::string key;
    std::string ns;
    V value;
  };

  /// Average entries per bucket above which a group doubles its buckets.
  static constexpr std::size_t max_load = 2;
  /// Buckets of a group table when it is first written.
  static constexpr std::size_t initial_buckets = 4;

  class frozen;

  /// An empty map over `range`.
  explicit cow_state_map(key_group_range range);

  cow_state_map(const cow_state_map&) = delete;
  cow_state_map& operator=(const cow_state_map&) = delete;
  cow_state_map(cow_state_map&&) noexcept = default;
  cow_state_map& operator=(cow_state_map&&) noexcept = default;

  const key_group_range& range() const noexcept { return range_; }

  /// Number of entries. O(1).
  std::size_t size() const noexcept { return size_; }

  /// Sum of key and namespace bytes of all entries (for size estimates). O(1).
  std::size_t key_bytes() const noexcept { return key_bytes_; }

  /// The current version: 0 initially, +1 per `snapshot()`.
  std::uint64_t version() const noexcept { return version_; }

  /// The value of `k`, or nullptr. Never copies. Precondition:
  /// `range().contains(k.group)` (checked).
  const V* get(const state_key& k) const;

  /// The value of `k` for writing, or nullptr; clones the group table and the
  /// bucket first if a snapshot shares them.
  V* get_mut(const state_key& k);

  /// The value of `k` for writing, inserting `make()` first when absent.
  template <class F>
  V& get_or_insert(const state_key& k, F&& make);

  /// Sets the value of `k`.
  void put(const state_key& k, V value);

  /// Removes `k`; returns whether it was there.
  bool remove(const state_key& k);

  /// Removes `k` and returns its value, if it was there.
  bool take(const state_key& k, V& out);

  /// Freezes the current contents in O(key groups) and returns them as an
  /// immutable view (see the class comment).
  std::shared_ptr<const frozen> snapshot();

  /// Calls `f(const entry&)` for every entry of `group` (in bucket order).
  template <class F>
  void for_each_in_group(std::uint16_t group, F&& f) const;

  /// Calls `f(const entry&)` for every entry, group by group.
  template <class F>
  void for_each(F&& f) const;

  /// Entries stored in `group`. O(1).
  std::size_t group_size(std::uint16_t group) const;

  /// Buckets of `group` (0 before its first write); for tests of growth.
  std::size_t bucket_count(std::uint16_t group) const;

private:
  struct bucket {
    std::uint64_t version = 0;
    std::vector<entry> entries;
  };
  using bucket_ptr = std::shared_ptr<bucket>;

  struct group_table {
    std::uint64_t version = 0;
    std::size_t size = 0;
    std::vector<bucket_ptr> buckets; // power-of-two size; null = empty bucket
  };
  using group_ptr = std::shared_ptr<group_table>;

  static bool matches(const entry& e, const state_key& k) noexcept {
    return e.hash == k.hash && e.key == k.key && e.ns == k.ns;
  }

  std::size_t local(std::uint16_t group) const {
    if (!range_.contains(group))
      state_invariant_failed("key group outside the map's range", __FILE__, __LINE__);
    return range_.local_index(group);
  }

  // The group table of `group`, owned by the current version (created or
  // cloned as needed).
  group_table& writable_group(std::uint16_t group);
  // The bucket of `hash` in `g`, owned by the current version.
  bucket& writable_bucket(group_table& g, std::uint64_t hash);
  void grow(group_table& g);

  key_group_range range_;
  std::uint64_t version_ = 0;
  std::size_t size_ = 0;
  std::size_t key_bytes_ = 0;
  std::vector<group_ptr> groups_; // index = local key group; null = empty
};

/// An immutable view of a `cow_state_map` at one version; safe to read from
/// any thread while the live map keeps changing.
template <class V>
class cow_state_map<V>::frozen {
public:
  const key_group_range& range() const noexcept { return range_; }
  std::uint64_t version() const noexcept { return version_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t key_bytes() const noexcept { return key_bytes_; }

  /// Entries of `group` at the snapshot (0 for a group outside the range).
  std::size_t group_size(std::uint16_t group) const noexcept {
    if (!range_.contains(group))
      return 0;
    const auto& g = groups_[range_.local_index(group)];
    return g ? g->size : 0;
  }

  /// Calls `f(const entry&)` for every entry of `group` at the snapshot;
  /// nothing for a group outside the range.
  template <class F>
  void for_each_in_group(std::uint16_t group, F&& f) const {
    if (!range_.contains(group))
      return;
    const auto& g = groups_[range_.local_index(group)];
    if (!g)
      return;
    for (const auto& b : g->buckets)
      if (b)
        for (const auto& e : b->entries)
          f(e);
  }

  /// The value of `k` at the snapshot, or nullptr.
  const V* get(const state_key& k) const {
    if (!range_.contains(k.group))
      return nullptr;
    const auto& g = groups_[range_.local_index(k.group)];
    if (!g || g->buckets.empty())
      return nullptr;
    const auto& b = g->buckets[k.hash & (g->buckets.size() - 1)];
    if (!b)
      return nullptr;
    for (const auto& e : b->entries)
      if (matches(e, k))
        return &e.value;
    return nullptr;
  }

private:
  friend class cow_state_map<V>;
  key_group_range range_;
  std::uint64_t version_ = 0;
  std::size_t size_ = 0;
  std::size_t key_bytes_ = 0;
  std::vector<std::shared_ptr<const group_table>> groups_;
};

// ---------------------------------------------------------------------------
// Implementation.

template <class V>
cow_state_map<V>::cow_state_map(key_group_range range)
  : range_(range), groups_(range.size()) {}

template <class V>
const V* cow_state_map<V>::get(const state_key& k) const {
  const auto& g = groups_[local(k.group)];
  if (!g || g->buckets.empty())
    return nullptr;
  const auto& b = g->buckets[k.hash & (g->buckets.size() - 1)];
  if (!b)
    return nullptr;
  for (const auto& e : b->entries)
    if (matches(e, k))
      return &e.value;
  return nullptr;
}

template <class V>
typename cow_state_map<V>::group_table& cow_state_map<V>::writable_group(std::uint16_t group) {
  auto& g = groups_[local(group)];
  if (!g) {
    g = std::make_shared<group_table>();
    g->version = version_;
    g->buckets.resize(initial_buckets);
  } else if (g->version < version_) {
    // Shared with a snapshot: copy the bucket pointers (not the buckets).
    auto copy = std::make_shared<group_table>(*g);
    copy->version = version_;
    g = std::move(copy);
  }
  return *g;
}

template <class V>
typename cow_state_map<V>::bucket& cow_state_map<V>::writable_bucket(group_table& g,
                                                                    std::uint64_t hash) {
  auto& b = g.buckets[hash & (g.buckets.size() - 1)];
  if (!b) {
    b = std::make_shared<bucket>();
    b->version = version_;
  } else if (b->version < version_) {
    auto copy = std::make_shared<bucket>();
    copy->version = version_;
    copy->entries = b->entries; // entries copied by value
    b = std::move(copy);
  }
  return *b;
}

template <class V>
void cow_state_map<V>::grow(group_table& g) {
  std::vector<bucket_ptr> next(g.buckets.size() * 2);
  const std::size_t mask = next.size() - 1;
  for (auto& old : g.buckets) {
    if (!old)
      continue;
    // A bucket of the current version is ours alone: move its entries.
    // An older one is shared with a snapshot: copy them.
    const bool owned = old->version == version_;
    for (auto& e : old->entries) {
      auto& nb = next[e.hash & mask];
      if (!nb) {
        nb = std::make_shared<bucket>();
        nb->version = version_;
      }
      if (owned)
        nb->entries.push_back(std::move(e));
      else
        nb->entries.push_back(e);
    }
  }
  g.buckets = std::move(next);
}

template <class V>
V* cow_state_map<V>::get_mut(const state_key& k) {
  // Look first without cloning: a miss must not copy anything.
  if (get(k) == nullptr)
    return nullptr;
  auto& g = writable_group(k.group);
  auto& b = writable_bucket(g, k.hash);
  for (auto& e : b.entries)
    if (matches(e, k))
      return &e.value;
  return nullptr; // unreachable
}

template <class V>
template <class F>
V& cow_state_map<V>::get_or_insert(const state_key& k, F&& make) {
  auto& g = writable_group(k.group);
  {
    auto& b = writable_bucket(g, k.hash);
    for (auto& e : b.entries)
      if (matches(e, k))
        return e.value;
  }
  if (g.size + 1 > g.buckets.size() * max_load)
    grow(g);
  auto& b = writable_bucket(g, k.hash);
  b.entries.push_back(entry{k.hash, std::string{k.key}, std::string{k.ns}, make()});
  ++g.size;
  ++size_;
  key_bytes_ += k.key.size() + k.ns.size();
  return b.entries.back().value;
}

template <class V>
void cow_state_map<V>::put(const state_key& k, V value) {
  bool inserted = false;
  V& slot = get_or_insert(k, [&] {
    inserted = true;
    return std::move(value);
  });
  if (!inserted)
    slot = std::move(value);
}

template <class V>
bool cow_state_map<V>::take(const state_key& k, V& out) {
  if (get(k) == nullptr)
    return false;
  auto& g = writable_group(k.group);
  auto& b = writable_bucket(g, k.hash);
  for (std::size_t i = 0; i < b.entries.size(); ++i) {
    if (!matches(b.entries[i], k))
      continue;
    out = std::move(b.entries[i].value);
    if (i + 1 != b.entries.size())
      b.entries[i] = std::move(b.entries.back());
    b.entries.pop_back();
    --g.size;
    --size_;
    key_bytes_ -= k.key.size() + k.ns.size();
    return true;
  }
  return false;
}

template <class V>
bool cow_state_map<V>::remove(const state_key& k) {
  if (get(k) == nullptr)
    return false;
  auto& g = writable_group(k.group);
  auto& b = writable_bucket(g, k.hash);
  for (std::size_t i = 0; i < b.entries.size(); ++i) {
    if (!matches(b.entries[i], k))
      continue;
    if (i + 1 != b.entries.size())
      b.entries[i] = std::move(b.entries.back());
    b.entries.pop_back();
    --g.size;
    --size_;
    key_bytes_ -= k.key.size() + k.ns.size();
    return true;
  }
  return false;
}

template <class V>
std::shared_ptr<const typename cow_state_map<V>::frozen> cow_state_map<V>::snapshot() {
  auto f = std::make_shared<frozen>();
  f->range_ = range_;
  f->version_ = version_;
  f->size_ = size_;
  f->key_bytes_ = key_bytes_;
  f->groups_.assign(groups_.begin(), groups_.end());
  // Everything existing now belongs to the snapshot; the next write to any
  // of it clones first.
  ++version_;
  return f;
}

template <class V>
template <class F>
void cow_state_map<V>::for_each_in_group(std::uint16_t group, F&& f) const {
  const auto& g = groups_[local(group)];
  if (!g)
    return;
  for (const auto& b : g->buckets)
    if (b)
      for (const auto& e : b->entries)
        f(e);
}

template <class V>
template <class F>
void cow_state_map<V>::for_each(F&& f) const {
  for (std::size_t i = 0; i < range_.size(); ++i)
    for_each_in_group(static_cast<std::uint16_t>(range_.start + i), f);
}

template <class V>
std::size_t cow_state_map<V>::group_size(std::uint16_t group) const {
  const auto& g = groups_[local(group)];
  return g ? g->size : 0;
}

template <class V>
std::size_t cow_state_map<V>::bucket_count(std::uint16_t group) const {
  const auto& g = groups_[local(group)];
  return g ? g->buckets.size() : 0;
}

} // namespace weir::state
