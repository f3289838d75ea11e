// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <charconv>
#include <cmath>
#include <tuple>
#include <type_traits>

#include "weir/core/expected.hpp"
#include "weir/state/codec.hpp"
#include "weir/state/cow_state_map.hpp"

#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <typeindex>
#include <utility>
#include <vector>

// Implementation details of `keyed_state_backend` that its templates need;
// not for direct use. Flink's `StateTable` (one per registered state, a
// copy-on-write map per key group) is the model.
namespace weir::state {

/// The five kinds of keyed state (Flink's five). The numbers are part of
/// the snapshot format: never renumber.
enum class state_kind : std::uint8_t {
  value = 1,
  list = 2,
  map = 3,
  reducing = 4,
  aggregating = 5,
};

/// "value", "list", "map", "reducing", "aggregating" (or "unknown").
std::string_view to_string(state_kind kind) noexcept;

/// A time-to-live for the entries of one keyed state (Flink's
/// `StateTtlConfig`), given when the state is registered
/// (`keyed_state_backend::get_value_state(name, ttl)` and the other kinds).
/// An entry (the whole value, list or map of one key and namespace) written
/// at processing time t expires at t + ttl: from then on it is never
/// returned (Flink's `NeverReturnExpired`; a handle sees no value, an empty
/// list or map), and it is dropped when next accessed, by a sweep that runs
/// after as many writes as the state had live entries at the previous sweep
/// (at least `min_sweep_writes`), and before every snapshot, so expired
/// entries are in no checkpoint and the state stays bounded by the keys
/// written within about one ttl. Time is processing time in ms from the
/// backend's TTL time provider (the job's clock in operators: the wall
/// clock, or the replay clock's time from the input). The write times are
/// checkpointed with the values (as the state "ttl:<name>"), so a restored
/// entry expires when it would have.
struct state_ttl_config {
  /// What renews an entry's life (Flink's `UpdateType`).
  enum class update_type : std::uint8_t {
    on_create_and_write, ///< writes only (Flink's default)
    on_read_and_write,   ///< reads too
  };
  std::chrono::milliseconds ttl{0}; ///< > 0
  update_type update = update_type::on_create_and_write;

  /// Writes to a state with a ttl before the first sweep, and at least
  /// between two sweeps.
  static constexpr std::size_t min_sweep_writes = 1024;

  bool operator==(const state_ttl_config&) const = default;
};

/// Where one (key, namespace) lives in keyed state: its key group,
/// `hash_key_bytes(key)` and `hash_state_key(key_hash, ns)`. From
/// `keyed_state_backend::address_of`, for prefetch hints of the state
/// handles and `set_current_key(key, address)`.
struct key_address {
  std::uint16_t group = 0;
  std::uint64_t key_hash = 0;
  std::uint64_t hash = 0;
};

namespace detail {

/// The current key and namespace of a backend, shared with its handles.
struct state_scope {
  std::string key;              ///< encoded key bytes
  std::string ns;               ///< namespace bytes; empty = global
  std::uint16_t group = 0;      ///< key group of `key`
  std::uint64_t key_hash = 0;   ///< hash_key_bytes(key)
  std::uint64_t hash = 0;       ///< hash_state_key(key_hash, ns)
  bool has_key = false;

  /// The address of (current key, current namespace). Aborts without a key.
  state_key current() const {
    if (!has_key)
      state_invariant_failed("keyed state used before set_current_key", __FILE__, __LINE__);
    return state_key{group, hash, key, ns};
  }

  /// The address of (current key, `other_ns`).
  state_key with_namespace(std::string_view other_ns) const {
    if (!has_key)
      state_invariant_failed("keyed state used before set_current_key", __FILE__, __LINE__);
    return state_key{group, hash_state_key(key_hash, other_ns), key, other_ns};
  }
};

/// Decoded entries of one key group, waiting to be committed (restore is
/// all-or-nothing per key group).
class staged_restore {
public:
  virtual ~staged_restore() = default;
  virtual void apply() = 0;
};

/// The frozen contents of one state at a snapshot; thread-safe to read.
class frozen_state_table {
public:
  virtual ~frozen_state_table() = default;
  /// Entries of `group`.
  virtual std::size_t group_size(std::uint16_t group) const = 0;
  /// Appends `u32 count` then, per entry, `bytes key, bytes ns, bytes value`
  /// (each a u32 length + bytes; value bytes from `codec<V>`).
  virtual void serialize_group(std::uint16_t group, std::string& out) const = 0;
  /// Rough in-memory size (keys, namespaces, `sizeof(V)` per entry).
  virtual std::size_t approximate_bytes() const = 0;
};

/// Appends `s` as a JSON string literal (quotes included; `"`, `\\` and
/// control characters escaped; other bytes as they are).
inline void json_string(std::string_view s, std::string& out) {
  out += '"';
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          static const char* hex = "0123456789abcdef";
          out += "\\u00";
          out += hex[(c >> 4) & 0xF];
          out += hex[c & 0xF];
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

/// Appends a state value as JSON (queryable state): bools, integers and
/// strings as themselves, floating point in shortest round-trip form (null
/// for NaN and infinities), vectors as arrays, maps with string keys as
/// objects (other maps as arrays of [key, value]), optionals as the value or
/// null, pairs and tuples as arrays, anything else as its encoded size,
/// `{"bytes":N}`.
template <class T>
void json_of(const T& v, std::string& out) {
  if constexpr (std::is_same_v<T, bool>) {
    out += v ? "true" : "false";
  } else if constexpr (std::is_integral_v<T>) {
    out += std::to_string(v);
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(v)) {
      out += "null";
    } else {
      char buf[64];
      auto r = std::to_chars(buf, buf + sizeof buf, v);
      out.append(buf, r.ptr);
    }
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    json_string(std::string_view{v}, out);
  } else if constexpr (requires { typename T::value_type; v.has_value(); }) {
    if (v)
      json_of(*v, out);
    else
      out += "null";
  } else if constexpr (requires { typename T::key_type; typename T::mapped_type; }) {
    constexpr bool string_keys = std::is_convertible_v<const typename T::key_type&, std::string_view>;
    out += string_keys ? '{' : '[';
    bool first = true;
    for (const auto& [key, val] : v) {
      if (!first)
        out += ',';
      first = false;
      if constexpr (string_keys) {
        json_string(std::string_view{key}, out);
        out += ':';
        json_of(val, out);
      } else {
        out += '[';
        json_of(key, out);
        out += ',';
        json_of(val, out);
        out += ']';
      }
    }
    out += string_keys ? '}' : ']';
  } else if constexpr (requires { v.begin(); v.end(); }) {
    out += '[';
    bool first = true;
    for (const auto& e : v) {
      if (!first)
        out += ',';
      first = false;
      json_of(e, out);
    }
    out += ']';
  } else if constexpr (requires { std::tuple_size<T>::value; }) {
    out += '[';
    std::apply(
      [&](const auto&... xs) {
        bool first = true;
        ((out += first ? "" : ",", first = false, json_of(xs, out)), ...);
      },
      v);
    out += ']';
  } else {
    std::string bytes;
    codec<T>::encode(v, bytes);
    out += "{\"bytes\":" + std::to_string(bytes.size()) + "}";
  }
}
/// The TTL of one registered state: its config and the companion table of
/// write times, (key, namespace) -> ms, kept by the backend.
struct ttl_binding {
  state_ttl_config config;
  cow_state_map<std::int64_t>* stamps = nullptr;
  const std::function<std::int64_t()>* now = nullptr; ///< the backend's TTL time
  std::size_t* writes = nullptr; ///< the backend's count of writes since the last sweep

  bool expired(std::int64_t written, std::int64_t at) const noexcept {
    const std::int64_t ttl = config.ttl.count();
    return written <= std::numeric_limits<std::int64_t>::max() - ttl && written + ttl <= at;
  }
};

/// One registered state, type-erased.
class state_table_base {
public:
  state_table_base(std::string name, std::uint8_t kind, std::type_index handle_type)
    : name_(std::move(name)), kind_(kind), handle_type_(handle_type) {}
  virtual ~state_table_base() = default;

  const std::string& name() const noexcept { return name_; }
  /// A `state_kind`, or a timer section kind of the snapshot format.
  std::uint8_t kind() const noexcept { return kind_; }
  /// typeid of the handle it was registered for (re-registration check).
  std::type_index handle_type() const noexcept { return handle_type_; }

  virtual std::size_t size() const noexcept = 0;
  virtual bool remove(const state_key& k) = 0;

  /// Set for a state registered with a ttl.
  std::optional<ttl_binding> ttl;

  /// Before an access to `k` (read, or a write that extends the value):
  /// drops the entry if it expired; with on_read_and_write, renews it on a
  /// `read`. Nothing without a ttl.
  void ttl_access(const state_key& k, bool read) {
    if (!ttl)
      return;
    const std::int64_t* written = ttl->stamps->get(k);
    if (!written)
      return; // nothing stored (or stored before the state had a ttl: kept)
    const std::int64_t now = (*ttl->now)();
    if (ttl->expired(*written, now)) {
      remove(k);
      ttl->stamps->remove(k);
    } else if (read && ttl->config.update == state_ttl_config::update_type::on_read_and_write
               && *written != now) {
      ttl->stamps->put(k, now);
    }
  }
  /// After a write of `k`: its life starts now.
  void ttl_written(const state_key& k) {
    if (!ttl)
      return;
    ttl->stamps->put(k, (*ttl->now)());
    ++*ttl->writes;
  }
  /// After `k` was removed.
  void ttl_removed(const state_key& k) {
    if (ttl)
      ttl->stamps->remove(k);
  }
  virtual std::shared_ptr<const frozen_state_table> snapshot() = 0;
  virtual void for_each_key(
    const std::function<void(std::string_view key, std::string_view ns)>& f) const = 0;
  /// The value at `k` as JSON (see `json_of`), or nullopt when none is set.
  virtual std::optional<std::string> value_json(const state_key& k) const = 0;
  /// Decodes a section written by `frozen_state_table::serialize_group`
  /// for key group `group`. Errors: `errc::parse_error` for malformed bytes
  /// (nothing is changed).
  virtual expected<std::unique_ptr<staged_restore>>
  decode_group(std::uint16_t group, std::string_view section) = 0;

private:
  std::string name_;
  std::uint8_t kind_;
  std::type_index handle_type_;
};

/// The typed table of one state: a copy-on-write map (key, ns) -> V.
template <class V>
  requires encodable<V>
class state_table final : public state_table_base {
public:
  state_table(std::string name, std::uint8_t kind, std::type_index handle_type,
              key_group_range range)
    : state_table_base(std::move(name), kind, handle_type), map(range) {}

  cow_state_map<V> map;

  std::size_t size() const noexcept override { return map.size(); }
  bool remove(const state_key& k) override { return map.remove(k); }

  std::shared_ptr<const frozen_state_table> snapshot() override {
    return std::make_shared<frozen_table>(map.snapshot());
  }

  void for_each_key(
    const std::function<void(std::string_view, std::string_view)>& f) const override {
    map.for_each([&f](const auto& e) { f(e.key, e.ns); });
  }

  std::optional<std::string> value_json(const state_key& k) const override {
    const V* v = map.get(k);
    if (v == nullptr)
      return std::nullopt;
    std::string out;
    json_of(*v, out);
    return out;
  }

  expected<std::unique_ptr<staged_restore>> decode_group(std::uint16_t group,
                                                         std::string_view in) override {
    auto out = std::make_unique<staged_entries>();
    out->target = &map;
    std::uint32_t n = 0;
    if (!wire::get_count(in, n))
      return make_error(errc::parse_error, "state '" + name() + "': bad entry count");
    out->entries.reserve(n);
    for (std::uint32_t i = 0; i < n; ++i) {
      std::string_view key, ns, value_bytes;
      if (!wire::get_bytes(in, key) || !wire::get_bytes(in, ns) || !wire::get_bytes(in, value_bytes))
        return make_error(errc::parse_error,
                          "state '" + name() + "': truncated entry " + std::to_string(i));
      typename cow_state_map<V>::entry e;
      if (!codec<V>::decode(value_bytes, e.value) || !value_bytes.empty())
        return make_error(errc::parse_error, "state '" + name() + "': malformed value of entry " +
                                               std::to_string(i));
      e.key.assign(key);
      e.ns.assign(ns);
      e.hash = hash_state_key(e.key, e.ns);
      out->entries.push_back(std::move(e));
    }
    if (!in.empty())
      return make_error(errc::parse_error, "state '" + name() + "': trailing bytes");
    out->group = group;
    return std::unique_ptr<staged_restore>{std::move(out)};
  }

private:
  struct staged_entries final : staged_restore {
    cow_state_map<V>* target = nullptr;
    std::uint16_t group = 0;
    std::vector<typename cow_state_map<V>::entry> entries;
    void apply() override {
      for (auto& e : entries)
        target->put(state_key{group, e.hash, e.key, e.ns}, std::move(e.value));
    }
  };

  class frozen_table final : public frozen_state_table {
  public:
    explicit frozen_table(std::shared_ptr<const typename cow_state_map<V>::frozen> f)
      : frozen_(std::move(f)) {}
    std::size_t group_size(std::uint16_t group) const override {
      return frozen_->group_size(group);
    }
    void serialize_group(std::uint16_t group, std::string& out) const override {
      wire::put_u32(out, static_cast<std::uint32_t>(frozen_->group_size(group)));
      frozen_->for_each_in_group(group, [&](const auto& e) {
        wire::put_bytes(out, e.key);
        wire::put_bytes(out, e.ns);
        // Encode in place, then patch the length prefix: no temporary copy.
        const auto at = out.size();
        wire::put_u32(out, 0);
        codec<V>::encode(e.value, out);
        const auto n = static_cast<std::uint32_t>(out.size() - at - 4);
        std::memcpy(out.data() + at, &n, sizeof n);
      });
    }
    std::size_t approximate_bytes() const override {
      return frozen_->key_bytes() + frozen_->size() * (sizeof(V) + 16);
    }

  private:
    std::shared_ptr<const typename cow_state_map<V>::frozen> frozen_;
  };
};

} // namespace detail
} // namespace weir::state
