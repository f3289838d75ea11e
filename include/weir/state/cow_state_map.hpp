// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/state/key_group_range.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
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

namespace detail {

/// Asks the processor to load the cache line at `p` (a hint; `p` need not
/// be dereferenceable). Inline assembly on x86 because GCC 12's mod/ref
/// analysis judges a function whose only effect is `__builtin_prefetch`
/// side-effect free and deletes the calls to it.
inline void prefetch_line(const void* p) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  asm volatile("prefetcht0 (%0)" : : "r"(p));
#else
  __builtin_prefetch(p);
#endif
}

} // namespace detail

/// The bucket hash of (key, namespace): xxhash3 of the key mixed with
/// xxhash3 of the namespace. Stable across runs (not that anything persists
/// it). Independent of the key-group hash, so buckets spread within a group.
std::uint64_t hash_state_key(std::string_view key, std::string_view ns) noexcept;

/// As `hash_state_key`, from `hash_key_bytes(key)` (to reuse a key's hash
/// across namespaces).
std::uint64_t hash_state_key(std::uint64_t key_hash, std::string_view ns) noexcept;

/// xxhash3 of a key's bytes.
std::uint64_t hash_key_bytes(std::string_view key) noexcept;

/// Logs the broken invariant with `file:line` (`weir.state`, critical) and
/// aborts (bugs, not errors).
[[noreturn]] void state_invariant_failed(const char* what, const char* file, int line);

/// A copy-on-write hash map from (key, namespace) to a typed `V`, one table
/// per key group (the model is Flink's `CopyOnWriteStateMap` in its
/// `HeapKeyedStateBackend`; the unit of copy here is a page of entries, not
/// one entry).
///
/// Layout: one `group_table` per key group of the range. A group table keeps
/// its entries densely at positions 0..size-1, in shared pages of
/// `page_entries` entries, and finds them through an open-addressing index
/// (linear probing, at most half full, backward-shift deletion: Knuth, TAOCP
/// vol. 3, 6.4, Algorithm R) of 8-byte slots holding 32 bits of the hash and
/// the position. Every group table and page carries the map version at which
/// it was created. `snapshot()` bumps the version and shares the group-table
/// pointers with an immutable `frozen` view: O(key groups), never O(entries).
/// A later write to a group table or page whose version is older than the
/// current one clones it first (a group clone copies the index and the page
/// pointers, O(entries / page_entries + slots), once per group per snapshot;
/// a page clone copies that page's entries by value), so the frozen view
/// keeps seeing the values of the snapshot. Growing a group rehashes only its
/// index: entries never move for it. Removing an entry moves the group's last
/// entry into its place.
///
/// Threads: the live map belongs to one thread (the operator's). A `frozen`
/// view is immutable and may be read from any thread, concurrently with the
/// live map changing: the two only share objects that neither writes, and
/// their lifetime is managed by atomic reference counts.
///
/// Iteration order within a group is the order of positions: insertion
/// order, changed only by removals. Restoring a serialized group in its
/// iteration order reproduces that order.
///
/// Pointers and references returned by lookups stay valid until the next
/// non-const call on the map.
template <class V>
class cow_state_map {
  // Removal and insertion move entries after the steps that can throw; a
  // throwing move would leave a half-moved entry behind.
  static_assert(std::is_nothrow_move_constructible_v<V> && std::is_nothrow_move_assignable_v<V>,
                "cow_state_map needs a value type with non-throwing moves");

public:
  /// One stored entry.
  struct entry {
    std::uint64_t hash = 0;
    std::string key;
    std::string ns;
    V value;
  };

  /// Entries per page, the unit of copy-on-write.
  static constexpr std::size_t page_entries = 16;
  /// A group's index has at least this many slots per entry.
  static constexpr std::size_t min_slots_per_entry = 2;
  /// Slots of a group's index when it is first written.
  static constexpr std::size_t initial_slots = 8;

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
  /// page first if a snapshot shares them. A miss copies nothing.
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

  /// Prefetch hints for a batch of lookups, in two stages (group
  /// prefetching: Chen, Ailamaki, Gibbons and Mowry, "Improving Hash Join
  /// Performance through Prefetching", ICDE 2004). `prefetch_slot` asks the
  /// processor for the index slot where a lookup of (`group`, `hash`)
  /// starts; `prefetch_entry`, issued a few lookups later when that slot has
  /// arrived, reads it and asks for the entry it points to, up to five cache lines (only when its 32 hash bits match). Pure hints: they change
  /// nothing, copy nothing, and ignore groups outside `range()`.
  void prefetch_slot(std::uint16_t group, std::uint64_t hash) const noexcept;
  void prefetch_entry(std::uint16_t group, std::uint64_t hash) const noexcept;

  /// Freezes the current contents in O(key groups) and returns them as an
  /// immutable view (see the class comment).
  std::shared_ptr<const frozen> snapshot();

  /// Calls `f(const entry&)` for every entry of `group` (in position order).
  template <class F>
  void for_each_in_group(std::uint16_t group, F&& f) const;

  /// Calls `f(const entry&)` for every entry, group by group.
  template <class F>
  void for_each(F&& f) const;

  /// Entries stored in `group`. O(1).
  std::size_t group_size(std::uint16_t group) const;

  /// Index slots of `group` (0 before its first write); for tests of growth.
  std::size_t slot_count(std::uint16_t group) const;

private:
  // A fixed array of up to `page_entries` entries, constructed in order.
  struct page {
    std::uint64_t version = 0;
    std::uint32_t count = 0;
    alignas(entry) unsigned char raw[page_entries * sizeof(entry)];

    explicit page(std::uint64_t v) : version(v) {}
    // A copy of `other`'s entries owned by version `v`.
    page(const page& other, std::uint64_t v) : version(v) {
      try {
        for (; count < other.count; ++count)
          ::new (static_cast<void*>(slot(count))) entry(*other.at(count));
      } catch (...) {
        destroy();
        throw;
      }
    }
    page(const page&) = delete;
    page& operator=(const page&) = delete;
    ~page() { destroy(); }

    entry* slot(std::size_t i) noexcept { return reinterpret_cast<entry*>(raw) + i; }
    entry* at(std::size_t i) noexcept { return std::launder(slot(i)); }
    const entry* at(std::size_t i) const noexcept {
      return std::launder(reinterpret_cast<const entry*>(raw) + i);
    }
    void destroy() noexcept {
      while (count > 0)
        at(--count)->~entry();
    }
  };
  using page_ptr = std::shared_ptr<page>;

  // One index slot: the low 32 bits of the entry's hash and its position + 1
  // (0 = empty).
  struct slot_t {
    std::uint32_t hash_lo = 0;
    std::uint32_t pos1 = 0;
  };

  struct group_table {
    std::uint64_t version = 0;
    std::size_t size = 0;
    std::vector<slot_t> slots;   // power-of-two size
    std::vector<page_ptr> pages; // ceil(size / page_entries) pages

    const entry& at(std::size_t pos) const noexcept {
      return *pages[pos / page_entries]->at(pos % page_entries);
    }
    // The slot holding `k`, or slots.size() when absent.
    std::size_t find(const state_key& k) const noexcept {
      if (slots.empty())
        return 0;
      const std::size_t mask = slots.size() - 1;
      const auto lo = static_cast<std::uint32_t>(k.hash);
      for (std::size_t i = k.hash & mask;; i = (i + 1) & mask) {
        const auto s = slots[i];
        if (s.pos1 == 0)
          return slots.size();
        if (s.hash_lo == lo && matches(at(s.pos1 - 1), k))
          return i;
      }
    }
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
  // The page `index` of `g`, owned by the current version.
  page& writable_page(group_table& g, std::size_t index);
  // Doubles the index of `g` (entries stay where they are).
  static void grow(group_table& g);
  // Removes the entry in slot `i` of `g` (owned by the current version),
  // moving the value out to `out` when given.
  void erase(group_table& g, std::size_t i, V* out);

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

  /// Calls `f(const entry&)` for every entry of `group` at the snapshot, in
  /// position order; nothing for a group outside the range.
  template <class F>
  void for_each_in_group(std::uint16_t group, F&& f) const {
    if (!range_.contains(group))
      return;
    const auto& g = groups_[range_.local_index(group)];
    if (g)
      visit_group(*g, f);
  }

  /// The value of `k` at the snapshot, or nullptr.
  const V* get(const state_key& k) const {
    if (!range_.contains(k.group))
      return nullptr;
    const auto& g = groups_[range_.local_index(k.group)];
    if (!g)
      return nullptr;
    const auto i = g->find(k);
    return i == g->slots.size() ? nullptr : &g->at(g->slots[i].pos1 - 1).value;
  }

private:
  friend class cow_state_map<V>;

  template <class F>
  static void visit_group(const group_table& g, F& f) {
    std::size_t left = g.size;
    for (const auto& p : g.pages) {
      const std::size_t n = left < page_entries ? left : page_entries;
      for (std::size_t i = 0; i < n; ++i)
        f(*static_cast<const page&>(*p).at(i));
      left -= n;
    }
  }

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
  if (!g)
    return nullptr;
  const auto i = g->find(k);
  return i == g->slots.size() ? nullptr : &g->at(g->slots[i].pos1 - 1).value;
}

template <class V>
void cow_state_map<V>::prefetch_slot(std::uint16_t group, std::uint64_t hash) const noexcept {
  if (!range_.contains(group))
    return;
  const auto& g = groups_[range_.local_index(group)];
  if (g && !g->slots.empty())
    detail::prefetch_line(&g->slots[hash & (g->slots.size() - 1)]);
}

template <class V>
void cow_state_map<V>::prefetch_entry(std::uint16_t group, std::uint64_t hash) const noexcept {
  if (!range_.contains(group))
    return;
  const auto& g = groups_[range_.local_index(group)];
  if (!g || g->slots.empty())
    return;
  const auto s = g->slots[hash & (g->slots.size() - 1)];
  if (s.pos1 == 0 || s.hash_lo != static_cast<std::uint32_t>(hash))
    return;
  const std::size_t pos = s.pos1 - 1;
  // Address arithmetic only: the page's entries are not read here.
  const auto* e = g->pages[pos / page_entries]->raw + (pos % page_entries) * sizeof(entry);
  for (std::size_t line = 0; line < sizeof(entry) && line < 5 * 64; line += 64)
    detail::prefetch_line(e + line);
}

template <class V>
typename cow_state_map<V>::group_table& cow_state_map<V>::writable_group(std::uint16_t group) {
  auto& g = groups_[local(group)];
  if (!g) {
    g = std::make_shared<group_table>();
    g->version = version_;
    g->slots.resize(initial_slots);
  } else if (g->version < version_) {
    // Shared with a snapshot: copy the index and the page pointers (not the
    // pages).
    auto copy = std::make_shared<group_table>(*g);
    copy->version = version_;
    g = std::move(copy);
  }
  return *g;
}

template <class V>
typename cow_state_map<V>::page& cow_state_map<V>::writable_page(group_table& g,
                                                                 std::size_t index) {
  auto& p = g.pages[index];
  if (p->version < version_)
    p = std::make_shared<page>(static_cast<const page&>(*p), version_);
  return *p;
}

template <class V>
void cow_state_map<V>::grow(group_table& g) {
  std::vector<slot_t> next(g.slots.size() * 2);
  const std::size_t mask = next.size() - 1;
  for (const auto& s : g.slots) {
    if (s.pos1 == 0)
      continue;
    std::size_t i = s.hash_lo & mask;
    while (next[i].pos1 != 0)
      i = (i + 1) & mask;
    next[i] = s;
  }
  g.slots = std::move(next);
}

template <class V>
void cow_state_map<V>::erase(group_table& g, std::size_t i, V* out) {
  const std::size_t mask = g.slots.size() - 1;
  const std::size_t pos = g.slots[i].pos1 - 1;
  const std::size_t last = g.size - 1;
  // Copy both pages first (the only steps that can throw), so a failed copy
  // leaves the map as it was. `hole_page` stays valid when the second call
  // replaces a page pointer: it refers to the page, not to the pointer.
  page& hole_page = writable_page(g, pos / page_entries);
  page& tail = writable_page(g, last / page_entries);
  {
    auto& e = *hole_page.at(pos % page_entries);
    key_bytes_ -= e.key.size() + e.ns.size();
    if (out != nullptr)
      *out = std::move(e.value);
  }
  // Backward-shift deletion of slot i.
  for (std::size_t hole = i, j = i;;) {
    j = (j + 1) & mask;
    const auto s = g.slots[j];
    if (s.pos1 == 0) {
      g.slots[hole] = slot_t{};
      break;
    }
    const std::size_t ideal = s.hash_lo & mask;
    const bool stays = j > hole ? (ideal > hole && ideal <= j) : (ideal > hole || ideal <= j);
    if (!stays) {
      g.slots[hole] = s;
      hole = j;
    }
  }
  // Keep positions dense: the last entry moves into the freed position.
  if (pos != last) {
    auto& moved = *tail.at(last % page_entries);
    std::size_t j = moved.hash & mask;
    while (g.slots[j].pos1 != last + 1)
      j = (j + 1) & mask;
    g.slots[j].pos1 = static_cast<std::uint32_t>(pos + 1);
    *hole_page.at(pos % page_entries) = std::move(moved);
  }
  tail.at(--tail.count)->~entry();
  if (tail.count == 0)
    g.pages.pop_back();
  --g.size;
  --size_;
}

template <class V>
V* cow_state_map<V>::get_mut(const state_key& k) {
  // Look first without cloning: a miss must not copy anything.
  if (get(k) == nullptr)
    return nullptr;
  auto& g = writable_group(k.group);
  const std::size_t pos = g.slots[g.find(k)].pos1 - 1;
  return &writable_page(g, pos / page_entries).at(pos % page_entries)->value;
}

template <class V>
template <class F>
V& cow_state_map<V>::get_or_insert(const state_key& k, F&& make) {
  auto& g = writable_group(k.group);
  if (const auto i = g.find(k); i != g.slots.size()) {
    const std::size_t pos = g.slots[i].pos1 - 1;
    return writable_page(g, pos / page_entries).at(pos % page_entries)->value;
  }
  // Build the entry before changing anything, so a throwing `make` leaves
  // the map as it was.
  entry fresh{k.hash, std::string{k.key}, std::string{k.ns}, make()};
  if ((g.size + 1) * min_slots_per_entry > g.slots.size())
    grow(g);
  const std::size_t pos = g.size;
  if (pos % page_entries == 0)
    g.pages.push_back(std::make_shared<page>(version_));
  auto& p = writable_page(g, pos / page_entries);
  entry* e = ::new (static_cast<void*>(p.slot(p.count))) entry(std::move(fresh));
  ++p.count;
  const std::size_t mask = g.slots.size() - 1;
  std::size_t i = k.hash & mask;
  while (g.slots[i].pos1 != 0)
    i = (i + 1) & mask;
  g.slots[i] = slot_t{static_cast<std::uint32_t>(k.hash), static_cast<std::uint32_t>(pos + 1)};
  ++g.size;
  ++size_;
  key_bytes_ += k.key.size() + k.ns.size();
  return e->value;
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
  erase(g, g.find(k), &out);
  return true;
}

template <class V>
bool cow_state_map<V>::remove(const state_key& k) {
  if (get(k) == nullptr)
    return false;
  auto& g = writable_group(k.group);
  erase(g, g.find(k), nullptr);
  return true;
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
  if (g)
    frozen::visit_group(*g, f);
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
std::size_t cow_state_map<V>::slot_count(std::uint16_t group) const {
  const auto& g = groups_[local(group)];
  return g ? g->slots.size() : 0;
}

} // namespace weir::state
