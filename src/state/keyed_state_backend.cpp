// SPDX-License-Identifier: Apache-2.0
#include "weir/state/keyed_state_backend.hpp"

#include "weir/core/key_group.hpp"

#include <xxhash.h>

#include <algorithm>
#include <cassert>
#include <chrono>
#include <cstring>
#include <set>
#include <tuple>

namespace weir::state {

namespace {

// Section kinds of the snapshot format beyond the five state kinds.
constexpr std::uint8_t event_timer_kind = 6;
constexpr std::uint8_t processing_timer_kind = 7;
constexpr std::string_view magic = "WKG";
constexpr std::size_t checksum_bytes = 8;

bool is_state_kind(std::uint8_t k) noexcept { return k >= 1 && k <= 5; }

std::string kind_name(std::uint8_t k) {
  if (is_state_kind(k))
    return std::string{to_string(static_cast<state_kind>(k))};
  if (k == event_timer_kind)
    return "event-time timers";
  if (k == processing_timer_kind)
    return "processing-time timers";
  return "kind " + std::to_string(k);
}

error corrupt(std::uint16_t group, std::string what) {
  return make_error(errc::parse_error,
                    "keyed state of key group " + std::to_string(group) + ": " + std::move(what));
}

struct parsed_section {
  std::uint8_t kind = 0;
  std::string_view name;
  std::string_view payload;
};

// Checks framing, version, group number and checksum of a key-group blob.
expected<std::vector<parsed_section>> parse_group(std::uint16_t group, std::string_view bytes) {
  if (bytes.size() < magic.size() + 1 + 2 + 4 + checksum_bytes)
    return corrupt(group, "truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (bytes.substr(0, magic.size()) != magic)
    return corrupt(group, "bad magic");
  auto body = bytes.substr(0, bytes.size() - checksum_bytes);
  std::string_view tail = bytes.substr(bytes.size() - checksum_bytes);
  std::uint64_t stored = 0;
  (void) wire::get_u64(tail, stored);
  if (XXH64(body.data(), body.size(), 0) != stored)
    return corrupt(group, "checksum mismatch");
  std::string_view in = body.substr(magic.size());
  std::uint8_t version = 0;
  std::uint16_t stored_group = 0;
  std::uint32_t n = 0;
  if (!wire::get_u8(in, version) || !wire::get_u16(in, stored_group) || !wire::get_u32(in, n))
    return corrupt(group, "truncated header");
  if (version != snapshot_format_version)
    return corrupt(group, "unsupported format version " + std::to_string(version));
  if (stored_group != group)
    return corrupt(group, "bytes belong to key group " + std::to_string(stored_group));
  std::vector<parsed_section> out;
  std::set<std::pair<std::uint8_t, std::string_view>> seen;
  for (std::uint32_t i = 0; i < n; ++i) {
    parsed_section s;
    if (!wire::get_u8(in, s.kind) || !wire::get_bytes(in, s.name) || !wire::get_bytes(in, s.payload))
      return corrupt(group, "truncated section " + std::to_string(i));
    if (!is_state_kind(s.kind) && s.kind != event_timer_kind && s.kind != processing_timer_kind)
      return corrupt(group, "unknown section kind " + std::to_string(s.kind));
    if (!seen.emplace(is_state_kind(s.kind) ? 0 : s.kind, s.name).second)
      return corrupt(group, "duplicate section '" + std::string{s.name} + "'");
    out.push_back(s);
  }
  if (!in.empty())
    return corrupt(group, "trailing bytes after the sections");
  return out;
}

// Checks the entry framing of a section payload and that every key hashes
// into `group` (catches a blob restored under another max_parallelism).
expected<std::monostate> check_entries(std::uint16_t group, std::size_t max_parallelism,
                                       const parsed_section& s) {
  std::string_view in = s.payload;
  std::uint32_t n = 0;
  auto where = [&] { return kind_name(s.kind) + " '" + std::string{s.name} + "'"; };
  if (!wire::get_count(in, n))
    return corrupt(group, where() + ": bad entry count");
  for (std::uint32_t i = 0; i < n; ++i) {
    std::string_view key, ns, val;
    if (!wire::get_bytes(in, key) || !wire::get_bytes(in, ns) || !wire::get_bytes(in, val))
      return corrupt(group, where() + ": truncated entry " + std::to_string(i));
    if (assign_key_group(key, max_parallelism) != group)
      return corrupt(group, where() + ": entry " + std::to_string(i) +
                              " has a key of another key group (different max_parallelism?)");
  }
  if (!in.empty())
    return corrupt(group, where() + ": trailing bytes");
  return std::monostate{};
}

} // namespace

std::string_view to_string(state_kind kind) noexcept {
  switch (kind) {
    case state_kind::value:
      return "value";
    case state_kind::list:
      return "list";
    case state_kind::map:
      return "map";
    case state_kind::reducing:
      return "reducing";
    case state_kind::aggregating:
      return "aggregating";
  }
  return "unknown";
}

// -- timers -------------------------------------------------------------------

/// Timers of one domain: a copy-on-write table (key, ns) -> ascending
/// timestamps, which is what snapshots see, plus an ordered queue over all
/// of them for firing, rebuilt from the table on restore (Flink keeps a heap
/// per key group; one ordered set is simpler and gives a deterministic order).
struct keyed_state_backend::timer_service {
  struct item {
    event_time ts;
    std::string key;
    std::string ns;
  };
  struct item_less {
    using is_transparent = void;
    using view = std::tuple<event_time, std::string_view, std::string_view>;
    static view as_view(const item& i) { return {i.ts, i.key, i.ns}; }
    static const view& as_view(const view& v) { return v; }
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return as_view(a) < as_view(b);
    }
  };

  timer_service(std::uint8_t kind, key_group_range range)
    : table("", kind, typeid(void), range) {}

  detail::state_table<std::vector<event_time>> table;
  std::set<item, item_less> queue;

  void add(const state_key& k, event_time ts) {
    if (const auto* cur = table.map.get(k))
      if (std::binary_search(cur->begin(), cur->end(), ts))
        return;
    auto& v = table.map.get_or_insert(k, [] { return std::vector<event_time>{}; });
    v.insert(std::lower_bound(v.begin(), v.end(), ts), ts);
    queue.insert(item{ts, std::string{k.key}, std::string{k.ns}});
  }

  void remove(const state_key& k, event_time ts) {
    const auto* cur = table.map.get(k);
    if (!cur || !std::binary_search(cur->begin(), cur->end(), ts))
      return;
    auto* v = table.map.get_mut(k);
    v->erase(std::lower_bound(v->begin(), v->end(), ts));
    if (v->empty())
      table.map.remove(k);
    auto it = queue.find(item_less::view{ts, k.key, k.ns});
    if (it != queue.end())
      queue.erase(it);
  }

  std::optional<event_time> next() const {
    if (queue.empty())
      return std::nullopt;
    return queue.begin()->ts;
  }
};

// -- backend ------------------------------------------------------------------

keyed_state_backend::keyed_state_backend(key_group_range range, std::size_t max_parallelism)
  : range_(range),
    max_parallelism_(max_parallelism),
    // Not a const object: restore_key_group may update it in place when it
    // is held by no snapshot (pending_shared_).
    pending_(std::make_shared<keyed_state_snapshot::pending_map>()),
    event_timers_(std::make_unique<timer_service>(event_timer_kind, range)),
    processing_timers_(std::make_unique<timer_service>(processing_timer_kind, range)),
    watermark_(min_watermark),
    processing_time_(min_watermark),
    ttl_now_([] {
      return static_cast<std::int64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::system_clock::now().time_since_epoch())
          .count());
    }) {
  if (max_parallelism == 0 || max_parallelism > 32768)
    state_invariant_failed("max_parallelism must be in 1..32768", __FILE__, __LINE__);
  if (!range.empty() && range.end >= max_parallelism)
    state_invariant_failed("key-group range exceeds max_parallelism", __FILE__, __LINE__);
}

keyed_state_backend::~keyed_state_backend() = default;

void keyed_state_backend::set_current_key(std::string_view encoded_key) {
  maybe_sweep();
  auto group = assign_key_group(encoded_key, max_parallelism_);
  if (!range_.contains(group))
    state_invariant_failed("key of a key group outside this backend's range", __FILE__, __LINE__);
  scope_.key.assign(encoded_key.data(), encoded_key.size());
  scope_.group = group;
  scope_.key_hash = hash_key_bytes(scope_.key);
  scope_.hash = hash_state_key(scope_.key_hash, scope_.ns);
  scope_.has_key = true;
}

void keyed_state_backend::set_current_key(std::string_view encoded_key, const key_address& a) {
  maybe_sweep();
  assert(a.group == assign_key_group(encoded_key, max_parallelism_));
  assert(a.key_hash == hash_key_bytes(encoded_key));
  if (!range_.contains(a.group))
    state_invariant_failed("key of a key group outside this backend's range", __FILE__, __LINE__);
  scope_.key.assign(encoded_key.data(), encoded_key.size());
  scope_.group = a.group;
  scope_.key_hash = a.key_hash;
  scope_.hash = hash_state_key(scope_.key_hash, scope_.ns);
  scope_.has_key = true;
}

key_address keyed_state_backend::address_of(std::string_view encoded_key,
                                            std::string_view ns) const noexcept {
  key_address a;
  a.group = assign_key_group(encoded_key, max_parallelism_);
  a.key_hash = hash_key_bytes(encoded_key);
  a.hash = hash_state_key(a.key_hash, ns);
  return a;
}

void keyed_state_backend::set_current_namespace(std::string_view ns) {
  scope_.ns.assign(ns.data(), ns.size());
  scope_.hash = hash_state_key(scope_.key_hash, scope_.ns);
}

detail::state_table_base* keyed_state_backend::find_table(std::string_view name) const {
  auto it = tables_.find(name);
  return it == tables_.end() ? nullptr : it->second.get();
}

expected<std::monostate>
keyed_state_backend::adopt_table(std::unique_ptr<detail::state_table_base> table) {
  auto it = pending_->find(table->name());
  if (it != pending_->end()) {
    if (it->second.kind != table->kind())
      return make_error(errc::invalid_argument,
                        "keyed state '" + table->name() + "' is registered as " +
                          kind_name(table->kind()) + " state but was restored as " +
                          kind_name(it->second.kind) + " state");
    std::vector<std::unique_ptr<detail::staged_restore>> staged;
    for (const auto& [group, payload] : it->second.groups) {
      auto s = table->decode_group(group, payload);
      if (!s)
        return corrupt(group, s.error().message);
      staged.push_back(std::move(*s));
    }
    for (auto& s : staged)
      s->apply();
    auto next = std::make_shared<keyed_state_snapshot::pending_map>(*pending_);
    next->erase(table->name());
    pending_ = std::move(next);
    pending_shared_ = false;
  }
  auto name = table->name();
  tables_.emplace(std::move(name), std::move(table));
  return std::monostate{};
}

std::vector<std::string> keyed_state_backend::state_names() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tables_)
    out.push_back(name);
  return out;
}

void keyed_state_backend::clear_namespace(std::string_view ns) {
  auto k = scope_.with_namespace(ns);
  for (auto& [name, t] : tables_)
    t->remove(k);
}

void keyed_state_backend::for_each_key(
  std::string_view name,
  const std::function<void(std::string_view, std::string_view)>& f) const {
  if (auto* t = find_table(name))
    t->for_each_key(f);
}

std::size_t keyed_state_backend::num_entries(std::string_view name) const {
  auto* t = find_table(name);
  return t ? t->size() : 0;
}

// -- timers -------------------------------------------------------------------

void keyed_state_backend::register_event_time_timer(event_time ts) {
  event_timers_->add(scope_.current(), ts);
}

void keyed_state_backend::delete_event_time_timer(event_time ts) {
  event_timers_->remove(scope_.current(), ts);
}

void keyed_state_backend::register_processing_time_timer(event_time ts) {
  processing_timers_->add(scope_.current(), ts);
}

void keyed_state_backend::delete_processing_time_timer(event_time ts) {
  processing_timers_->remove(scope_.current(), ts);
}

std::size_t keyed_state_backend::fire_timers(timer_service& timers, event_time limit,
                                             const timer_callback& on_timer) {
  std::size_t fired = 0;
  while (!timers.queue.empty() && timers.queue.begin()->ts <= limit) {
    auto node = timers.queue.extract(timers.queue.begin());
    const auto& t = node.value();
    set_current_key(t.key);
    set_current_namespace(t.ns);
    // Remove it from the table before the callback, which may register the
    // same timer again.
    auto k = scope_.current();
    if (auto* v = timers.table.map.get_mut(k)) {
      auto pos = std::lower_bound(v->begin(), v->end(), t.ts);
      if (pos != v->end() && *pos == t.ts)
        v->erase(pos);
      if (v->empty())
        timers.table.map.remove(k);
    }
    ++fired;
    if (on_timer)
      on_timer(t.ts);
  }
  return fired;
}

std::size_t keyed_state_backend::advance_watermark(event_time wm, const timer_callback& on_timer) {
  watermark_ = std::max(watermark_, wm);
  return fire_timers(*event_timers_, wm, on_timer);
}

std::size_t keyed_state_backend::advance_processing_time(event_time now,
                                                         const timer_callback& on_timer) {
  processing_time_ = std::max(processing_time_, now);
  return fire_timers(*processing_timers_, now, on_timer);
}

std::optional<event_time> keyed_state_backend::next_processing_timer() const {
  return processing_timers_->next();
}

std::optional<event_time> keyed_state_backend::next_event_timer() const {
  return event_timers_->next();
}

std::size_t keyed_state_backend::num_event_timers() const noexcept {
  return event_timers_->queue.size();
}

std::size_t keyed_state_backend::num_processing_timers() const noexcept {
  return processing_timers_->queue.size();
}

// -- snapshots ----------------------------------------------------------------

void keyed_state_backend::set_ttl_time_provider(std::function<std::int64_t()> now) {
  if (now)
    ttl_now_ = std::move(now);
}

expected<std::monostate> keyed_state_backend::bind_ttl(detail::state_table_base& table,
                                                       const state_ttl_config& ttl) {
  // The write times are a value state of their own, so that they are
  // snapshotted, restored and rescaled by key group with the values.
  auto stamps = obtain_table<std::int64_t>("ttl:" + table.name(), state_kind::value,
                                           typeid(value_state<std::int64_t>), std::nullopt);
  if (!stamps)
    return stamps.error();
  table.ttl = detail::ttl_binding{ttl, &(*stamps)->map, &ttl_now_, &ttl_writes_};
  has_ttl_ = true;
  return std::monostate{};
}

std::size_t keyed_state_backend::sweep_expired() {
  std::size_t dropped = 0, live = 0;
  if (!has_ttl_)
    return 0;
  const std::int64_t now = ttl_now_();
  struct dead {
    std::uint16_t group;
    std::uint64_t hash;
    std::string key, ns;
  };
  std::vector<dead> gone;
  for (auto& entry : tables_) {
    // (Not a structured binding: clang 14, which builds the fuzzers, cannot
    // capture one in the lambda below.)
    auto& t = entry.second;
    if (!t->ttl)
      continue;
    auto& stamps = *t->ttl->stamps;
    gone.clear();
    for (std::uint32_t g = range_.start; g <= range_.end; ++g) {
      const auto group = static_cast<std::uint16_t>(g);
      stamps.for_each_in_group(group, [&](const auto& e) {
        if (t->ttl->expired(e.value, now))
          gone.push_back({group, e.hash, e.key, e.ns});
      });
    }
    for (const auto& d : gone) {
      const state_key k{d.group, d.hash, d.key, d.ns};
      t->remove(k);
      stamps.remove(k);
    }
    dropped += gone.size();
    live += t->size();
  }
  ttl_writes_ = 0;
  ttl_sweep_after_ = std::max(live, state_ttl_config::min_sweep_writes);
  return dropped;
}

std::shared_ptr<const keyed_state_snapshot> keyed_state_backend::snapshot() {
  // Expired entries go into no checkpoint.
  sweep_expired();
  auto snap = std::make_shared<keyed_state_snapshot>();
  snap->range_ = range_;
  snap->max_parallelism_ = max_parallelism_;
  snap->sections_.reserve(tables_.size() + 2);
  for (auto& [name, t] : tables_)
    snap->sections_.push_back({name, t->kind(), t->snapshot()});
  snap->sections_.push_back({"", event_timer_kind, event_timers_->table.snapshot()});
  snap->sections_.push_back({"", processing_timer_kind, processing_timers_->table.snapshot()});
  snap->pending_ = pending_;
  pending_shared_ = true; // restore_key_group copies it before changing it
  return snap;
}

void keyed_state_snapshot::serialize_key_group(std::uint16_t group, std::string& out) const {
  if (!range_.contains(group) || !has_key_group(group))
    return;
  struct source {
    std::uint8_t kind;
    std::string_view name;
    const detail::frozen_state_table* frozen;
    const std::string* raw;
  };
  std::vector<source> sources;
  for (const auto& s : sections_)
    if (s.frozen->group_size(group) > 0)
      sources.push_back({s.kind, s.name, s.frozen.get(), nullptr});
  for (const auto& [name, p] : *pending_) {
    auto it = p.groups.find(group);
    if (it != p.groups.end())
      sources.push_back({p.kind, name, nullptr, &it->second});
  }
  std::sort(sources.begin(), sources.end(), [](const source& a, const source& b) {
    bool ta = !is_state_kind(a.kind), tb = !is_state_kind(b.kind);
    return std::tie(ta, a.name, a.kind) < std::tie(tb, b.name, b.kind);
  });
  const auto start = out.size();
  out.append(magic);
  wire::put_u8(out, snapshot_format_version);
  wire::put_u16(out, group);
  wire::put_u32(out, static_cast<std::uint32_t>(sources.size()));
  for (const auto& s : sources) {
    wire::put_u8(out, s.kind);
    wire::put_bytes(out, s.name);
    if (s.raw) {
      wire::put_bytes(out, *s.raw);
    } else {
      // Serialize in place, then patch the length prefix.
      const auto at = out.size();
      wire::put_u32(out, 0);
      s.frozen->serialize_group(group, out);
      const auto n = static_cast<std::uint32_t>(out.size() - at - 4);
      std::memcpy(out.data() + at, &n, sizeof n);
    }
  }
  wire::put_u64(out, XXH64(out.data() + start, out.size() - start, 0));
}

bool keyed_state_snapshot::has_key_group(std::uint16_t group) const {
  for (const auto& s : sections_)
    if (s.frozen->group_size(group) > 0)
      return true;
  for (const auto& [name, p] : *pending_)
    if (p.groups.count(group) > 0)
      return true;
  return false;
}

std::size_t keyed_state_snapshot::approximate_bytes() const noexcept {
  std::size_t total = 0;
  for (const auto& s : sections_)
    total += s.frozen->approximate_bytes();
  for (const auto& [name, p] : *pending_)
    for (const auto& [g, bytes] : p.groups)
      total += bytes.size();
  return total;
}

std::size_t keyed_state_snapshot::num_entries() const noexcept {
  std::size_t total = 0;
  for (std::size_t g = 0; g < range_.size(); ++g)
    for (const auto& s : sections_)
      total += s.frozen->group_size(static_cast<std::uint16_t>(range_.start + g));
  return total;
}

expected<std::monostate> keyed_state_backend::restore_key_group(std::uint16_t group,
                                                                std::string_view bytes) {
  if (!range_.contains(group))
    return make_error(errc::invalid_argument,
                      "key group " + std::to_string(group) + " is outside this backend's range [" +
                        std::to_string(range_.start) + ", " + std::to_string(range_.end) + "]");
  if (bytes.empty())
    return std::monostate{};
  auto sections = parse_group(group, bytes);
  if (!sections)
    return sections.error();

  // Phase 1: check and decode everything; nothing changes on error.
  std::vector<std::unique_ptr<detail::staged_restore>> staged;
  std::vector<std::pair<std::string, std::pair<std::uint8_t, std::string>>> new_pending;
  struct timer_entry {
    timer_service* service;
    std::string key;
    std::string ns;
    std::vector<event_time> ts;
  };
  std::vector<timer_entry> timers;
  for (const auto& s : *sections) {
    if (auto ok = check_entries(group, max_parallelism_, s); !ok)
      return ok.error();
    if (!is_state_kind(s.kind)) {
      auto* service = s.kind == event_timer_kind ? event_timers_.get() : processing_timers_.get();
      std::string_view in = s.payload;
      std::uint32_t n = 0;
      (void) wire::get_count(in, n); // framing checked above
      for (std::uint32_t i = 0; i < n; ++i) {
        std::string_view key, ns, val;
        (void) (wire::get_bytes(in, key) && wire::get_bytes(in, ns) && wire::get_bytes(in, val));
        timer_entry e{service, std::string{key}, std::string{ns}, {}};
        if (!codec<std::vector<event_time>>::decode(val, e.ts) || !val.empty() ||
            !std::is_sorted(e.ts.begin(), e.ts.end()) ||
            std::adjacent_find(e.ts.begin(), e.ts.end()) != e.ts.end())
          return corrupt(group, kind_name(s.kind) + ": malformed timestamps of entry " +
                                  std::to_string(i));
        timers.push_back(std::move(e));
      }
      continue;
    }
    if (auto* t = find_table(s.name)) {
      if (t->kind() != s.kind)
        return corrupt(group, "state '" + std::string{s.name} + "' is registered as " +
                                kind_name(t->kind()) + " state but the bytes hold " +
                                kind_name(s.kind) + " state");
      auto d = t->decode_group(group, s.payload);
      if (!d)
        return corrupt(group, d.error().message);
      staged.push_back(std::move(*d));
      continue;
    }
    auto p = pending_->find(s.name);
    if (p != pending_->end() && p->second.kind != s.kind)
      return corrupt(group, "state '" + std::string{s.name} + "' was restored as " +
                              kind_name(p->second.kind) + " state and now as " +
                              kind_name(s.kind) + " state");
    new_pending.push_back({std::string{s.name}, {s.kind, std::string{s.payload}}});
  }

  // Phase 2: apply.
  for (auto& s : staged)
    s->apply();
  if (!new_pending.empty()) {
    // Snapshots share pending_ and must keep seeing it unchanged, so once a
    // snapshot has taken it the map is copied; a copy no snapshot has seen
    // yet is updated in place. (Copying it for every key group made
    // restoring G groups of an unregistered state copy O(G^2) bytes: 10x
    // slower at 64 MiB, bench/checkpoint.) Whether a snapshot holds it is
    // this thread's own flag, not the shared_ptr's use count: a snapshot
    // released on another thread (the state writer) needs an acquire to
    // order its reads before our writes, and a relaxed use_count() with a
    // fence is invisible to ThreadSanitizer.
    std::shared_ptr<keyed_state_snapshot::pending_map> next;
    if (!pending_shared_) {
      next = std::const_pointer_cast<keyed_state_snapshot::pending_map>(std::move(pending_));
    } else {
      next = std::make_shared<keyed_state_snapshot::pending_map>(*pending_);
      pending_shared_ = false;
    }
    for (auto& [name, kp] : new_pending) {
      auto& entry = (*next)[name];
      entry.kind = kp.first;
      entry.groups[group] = std::move(kp.second);
    }
    pending_ = std::move(next);
  }
  for (auto& e : timers) {
    state_key k{group, hash_state_key(e.key, e.ns), e.key, e.ns};
    for (auto ts : e.ts)
      e.service->add(k, ts);
  }
  return std::monostate{};
}

std::string keyed_state_backend::query_json(std::string_view encoded_key) {
  set_current_key(encoded_key);
  set_current_namespace({});
  std::string out;
  for (const auto& [name, table] : tables_) {
    auto v = table->value_json(scope_.current());
    if (!v)
      continue;
    out += out.empty() ? "{" : ",";
    detail::json_string(name, out);
    out += ':';
    out += *v;
  }
  return out.empty() ? std::string{"null"} : out + "}";
}

} // namespace weir::state
