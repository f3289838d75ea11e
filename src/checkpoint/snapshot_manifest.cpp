// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/snapshot_manifest.hpp"

#include <xxhash.h>

#include <bit>
#include <cstring>
#include <type_traits>

namespace weir::checkpoint {

namespace {

static_assert(std::endian::native == std::endian::little,
              "the manifest encoding assumes a little-endian host");

constexpr char magic[4] = {'W', 'M', 'N', 'F'};

class writer {
public:
  template <class T>
  void put(T x) {
    static_assert(std::is_integral_v<T>);
    char buf[sizeof(T)];
    std::memcpy(buf, &x, sizeof(T));
    out_.append(buf, sizeof(T));
  }

  void put_string(std::string_view s) {
    put(static_cast<std::uint32_t>(s.size()));
    out_.append(s);
  }

  std::string& out() { return out_; }

private:
  std::string out_;
};

/// Reads fixed-size fields; after the first short read every later read
/// fails too, so a decoder checks `ok()` once per record.
class reader {
public:
  explicit reader(std::string_view in) : in_(in) {}

  template <class T>
  T get() {
    T x{};
    if (!ok_ || in_.size() < sizeof(T)) {
      ok_ = false;
      return x;
    }
    std::memcpy(&x, in_.data(), sizeof(T));
    in_.remove_prefix(sizeof(T));
    return x;
  }

  std::string get_string() {
    auto n = get<std::uint32_t>();
    if (!ok_ || in_.size() < n) {
      ok_ = false;
      return {};
    }
    std::string s{in_.substr(0, n)};
    in_.remove_prefix(n);
    return s;
  }

  /// A count of following items each at least `min_bytes` long; fails
  /// rather than letting a damaged count allocate gigabytes.
  std::size_t get_count(std::size_t min_bytes) {
    auto n = get<std::uint32_t>();
    if (!ok_ || static_cast<std::uint64_t>(n) * min_bytes > in_.size()) {
      ok_ = false;
      return 0;
    }
    return n;
  }

  bool ok() const noexcept { return ok_; }
  bool at_end() const noexcept { return in_.empty(); }

private:
  std::string_view in_;
  bool ok_ = true;
};

} // namespace

std::uint64_t state_checksum(std::string_view bytes) noexcept {
  return XXH64(bytes.data(), bytes.size(), checksum_seed);
}

std::uint64_t operator_state_handle::size_bytes() const noexcept {
  std::uint64_t n = operator_state_bytes;
  for (const auto& g : key_groups)
    n += g.bytes;
  return n;
}

std::uint64_t snapshot_manifest::size_bytes() const noexcept {
  std::uint64_t n = 0;
  for (const auto& h : handles)
    n += h.size_bytes();
  return n;
}

std::string encode_manifest(const snapshot_manifest& m) {
  writer w;
  w.out().append(magic, sizeof magic);
  w.put(snapshot_manifest::format_version);
  w.put(static_cast<std::uint8_t>(m.status));
  w.put(m.checkpoint_id);
  w.put(m.trigger_ms);
  w.put(m.completion_ms);
  w.put(m.alignment_ms);
  w.put(static_cast<std::uint32_t>(m.handles.size()));
  for (const auto& h : m.handles) {
    w.put_string(h.operator_uid);
    w.put(h.subtask);
    w.put(h.parallelism);
    w.put(static_cast<std::uint32_t>(h.key_groups.size()));
    for (const auto& g : h.key_groups) {
      w.put(g.key_group);
      w.put(g.bytes);
      w.put(g.checksum);
    }
    w.put(static_cast<std::uint8_t>(h.has_operator_state ? 1 : 0));
    w.put(h.operator_state_bytes);
    w.put(h.operator_state_checksum);
    w.put_string(h.source_position);
    w.put_string(h.state_descriptor);
  }
  auto sum = XXH64(w.out().data(), w.out().size(), checksum_seed);
  w.put(static_cast<std::uint64_t>(sum));
  return std::move(w.out());
}

expected<snapshot_manifest> decode_manifest(std::string_view bytes) {
  auto fail = [](std::string what) {
    return make_error(errc::parse_error, "manifest " + what);
  };
  if (bytes.size() < sizeof magic + 2 + 8)
    return fail("is truncated (" + std::to_string(bytes.size()) + " bytes)");
  if (std::memcmp(bytes.data(), magic, sizeof magic) != 0)
    return fail("has no WMNF magic");
  auto body = bytes.substr(0, bytes.size() - 8);
  std::uint64_t stored = 0;
  std::memcpy(&stored, bytes.data() + body.size(), 8);
  if (XXH64(body.data(), body.size(), checksum_seed) != stored)
    return fail("fails its checksum");
  reader r{body.substr(sizeof magic)};
  auto version = r.get<std::uint16_t>();
  if (version != 1 && version != snapshot_manifest::format_version)
    return fail("has unknown format version " + std::to_string(version));
  snapshot_manifest m;
  auto status = r.get<std::uint8_t>();
  if (status > static_cast<std::uint8_t>(checkpoint_status::completed))
    return fail("has unknown status " + std::to_string(status));
  m.status = static_cast<checkpoint_status>(status);
  m.checkpoint_id = r.get<std::uint64_t>();
  m.trigger_ms = r.get<std::int64_t>();
  m.completion_ms = r.get<std::int64_t>();
  m.alignment_ms = r.get<std::int64_t>();
  // Smallest encodings: a handle is 37 bytes, a key group handle 18.
  auto handles = r.get_count(37);
  m.handles.reserve(handles);
  for (std::size_t i = 0; i < handles && r.ok(); ++i) {
    operator_state_handle h;
    h.operator_uid = r.get_string();
    h.subtask = r.get<std::uint32_t>();
    h.parallelism = r.get<std::uint32_t>();
    auto groups = r.get_count(18);
    h.key_groups.reserve(groups);
    for (std::size_t g = 0; g < groups && r.ok(); ++g) {
      key_group_handle k;
      k.key_group = r.get<std::uint16_t>();
      k.bytes = r.get<std::uint64_t>();
      k.checksum = r.get<std::uint64_t>();
      h.key_groups.push_back(k);
    }
    h.has_operator_state = r.get<std::uint8_t>() != 0;
    h.operator_state_bytes = r.get<std::uint64_t>();
    h.operator_state_checksum = r.get<std::uint64_t>();
    h.source_position = r.get_string();
    if (version >= 2)
      h.state_descriptor = r.get_string();
    m.handles.push_back(std::move(h));
  }
  if (!r.ok())
    return fail("is truncated");
  if (!r.at_end())
    return fail("has trailing bytes");
  return m;
}

std::optional<std::string> check_state_compatibility(std::string_view operator_uid,
                                                     std::string_view stored,
                                                     std::string_view current,
                                                     std::string_view where) {
  if (stored.empty() || stored == current)
    return std::nullopt;
  std::string now = current.empty() ? std::string{"no such state"} : std::string{current};
  return "operator '" + std::string{operator_uid} + "': the state in " + std::string{where}
         + " is incompatible with the pipeline: it holds [" + std::string{stored}
         + "], the pipeline now has [" + now
         + "]; start over with --fresh, or rename the operator and run with "
           "--allow-non-restored-state to drop its state";
}

} // namespace weir::checkpoint
