// SPDX-License-Identifier: Apache-2.0
// Micro-benchmark of one subtask's checkpoint path: fills a
// weir::state::keyed_state_backend with N keys of value state, then times
//   - snapshot(): the synchronous pause of a checkpoint,
//   - the first writes after it (copy-on-write of group tables and pages),
//   - serializing every key group of the frozen snapshot (the off-path part),
//   - lmdb_checkpoint_store::write_state + commit_manifest (a checkpoint's
//     storage part; its duration and size),
//   - read_latest + read_restore + restore_key_group into a fresh backend
//     (the state part of recovery).
// Prints one JSON object per key count on stdout (bench/checkpoint/run reads
// it) and a readable summary on stderr. Reported, never asserted.
//
// usage: weir_checkpoint_bench --dir DIR [--keys 1000000[,10000000...]]
//          [--value-bytes 0] [--snapshots 21] [--max-parallelism 128]
//          [--no-storage] [--no-cow-pass]
//   --value-bytes 0 stores an int64 per key (a running count); > 0 stores a
//   string of that many bytes per key (large state, for recovery figures).
//   The backend is one subtask at parallelism 1 (every key group), the worst
//   case of snapshot(), whose cost is O(states x key groups).
#include "weir/checkpoint/lmdb_checkpoint_store.hpp"
#include "weir/checkpoint/snapshot_manifest.hpp"
#include "weir/state/key_group_range.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

double ms_since(clock_type::time_point t0) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
}

double us_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

// The bytes weir::encode_key writes for one int64 key column: 'i' + 8 bytes LE.
std::string encoded_int_key(std::int64_t k) {
  std::string s(1, 'i');
  char buf[8];
  std::memcpy(buf, &k, sizeof buf);
  s.append(buf, sizeof buf);
  return s;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty())
    return 0;
  std::sort(v.begin(), v.end());
  auto i = static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

std::uintmax_t disk_bytes(const fs::path& dir) {
  std::uintmax_t total = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.is_regular_file())
      total += e.file_size();
  return total;
}

struct options {
  std::vector<std::size_t> keys{1'000'000};
  std::size_t value_bytes = 0;
  std::size_t snapshots = 21;
  std::size_t max_parallelism = 128;
  std::string dir;
  bool storage = true;
  bool cow_pass = true;
};

template <class T>
struct value_maker {
  std::size_t bytes = 0;
  T operator()(std::uint64_t i) const {
    if constexpr (std::is_same_v<T, std::int64_t>) {
      return static_cast<std::int64_t>(i);
    } else {
      // Cheap, varied, incompressible enough: a repeated 8-byte pattern.
      std::string s(bytes, 'x');
      for (std::size_t b = 0; b + 8 <= bytes; b += 8) {
        const auto x = i * 0x9e3779b97f4a7c15ULL + b;
        std::memcpy(s.data() + b, &x, 8);
      }
      return s;
    }
  }
};

template <class T>
void run_one(const options& o, std::size_t n) {
  using weir::state::keyed_state_backend;
  const auto range = weir::state::key_group_range_for_subtask(o.max_parallelism, 1, 0);
  auto backend = std::make_unique<keyed_state_backend>(range, o.max_parallelism);
  auto state = backend->get_value_state<T>("value").value();
  value_maker<T> make{o.value_bytes};

  std::vector<std::string> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    keys.push_back(encoded_int_key(static_cast<std::int64_t>(i)));
  std::vector<std::uint32_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = static_cast<std::uint32_t>(i);
  std::mt19937_64 rng{42};
  std::shuffle(order.begin(), order.end(), rng);

  // -- fill ------------------------------------------------------------------
  auto t0 = clock_type::now();
  for (std::size_t i = 0; i < n; ++i) {
    backend->set_current_key(keys[i]);
    state.update(make(i));
  }
  const double fill_ms = ms_since(t0);

  // One write as an operator does it: select the key, read, write back.
  auto write = [&](std::uint32_t i) {
    backend->set_current_key(keys[i]);
    if constexpr (std::is_same_v<T, std::int64_t>) {
      state.update(state.value_or(0) + 1);
    } else {
      // Touch the value in place (a string append would grow state).
      if (auto* p = state.get_mut())
        (*p)[0] = static_cast<char>((*p)[0] + 1);
    }
  };

  // -- steady writes, no snapshot outstanding ----------------------------------
  const std::size_t sample = std::min<std::size_t>(n, 200'000);
  t0 = clock_type::now();
  for (std::size_t i = 0; i < sample; ++i)
    write(order[i]);
  const double steady_ns = ms_since(t0) * 1e6 / static_cast<double>(sample);

  // -- the synchronous pause: snapshot() ---------------------------------------
  // Between snapshots, some writes (so every snapshot has work since the last
  // one) and the previous snapshot kept alive, as while the writer serializes.
  std::vector<double> pause_us;
  std::shared_ptr<const weir::state::keyed_state_snapshot> held;
  for (std::size_t s = 0; s < o.snapshots; ++s) {
    for (std::size_t i = 0; i < 1000; ++i)
      write(order[(s * 1000 + i) % n]);
    auto a = clock_type::now();
    auto snap = backend->snapshot();
    auto b = clock_type::now();
    pause_us.push_back(us_between(a, b));
    held = std::move(snap);
  }
  held.reset();

  // -- copy-on-write: the first writes after a snapshot ------------------------
  // Each write into a group the snapshot shares copies that group's index
  // and page pointers (once per group per snapshot) and the touched page.
  auto snap = backend->snapshot();
  const std::size_t first = std::min<std::size_t>(n, 10'000);
  std::vector<double> first_us;
  first_us.reserve(first);
  t0 = clock_type::now();
  for (std::size_t i = 0; i < first; ++i) {
    auto a = clock_type::now();
    write(order[i]);
    first_us.push_back(us_between(a, clock_type::now()));
  }
  const double first_total_ms = ms_since(t0);
  // The same number of writes once nothing is shared any more (those keys).
  t0 = clock_type::now();
  for (std::size_t i = 0; i < first; ++i)
    write(order[i]);
  const double first_again_ms = ms_since(t0);

  double cow_pass_ms = 0, plain_pass_ms = 0;
  if (o.cow_pass) {
    // Every key written once after a snapshot (the worst case: the whole
    // state is copied) against the same pass with nothing shared.
    auto full = backend->snapshot();
    t0 = clock_type::now();
    for (auto i : order)
      write(i);
    cow_pass_ms = ms_since(t0);
    full.reset();
    t0 = clock_type::now();
    for (auto i : order)
      write(i);
    plain_pass_ms = ms_since(t0);
    snap = backend->snapshot(); // serialize a fresh one below
  }

  // -- serializing the snapshot (off the processing path) ----------------------
  std::string buf;
  std::size_t serialized = 0;
  t0 = clock_type::now();
  for (std::size_t g = range.start; g <= range.end; ++g) {
    buf.clear();
    snap->serialize_key_group(static_cast<std::uint16_t>(g), buf);
    serialized += buf.size();
  }
  const double serialize_ms = ms_since(t0);
  const auto approx = snap->approximate_bytes();

  // -- storage: write_state + commit_manifest, then restore -------------------
  double write_ms[2] = {0, 0}, commit_ms[2] = {0, 0};
  double read_latest_ms = 0, read_restore_ms = 0, restore_ms = 0;
  std::uintmax_t disk = 0;
  std::uint64_t stored = 0;
  std::size_t restored_entries = 0;
  if (o.storage) {
    const fs::path dir = fs::path{o.dir} / ("keys-" + std::to_string(n));
    fs::remove_all(dir);
    weir::checkpoint::store_options so;
    so.dir = dir.string();
    so.retain = 1;
    auto store = weir::checkpoint::lmdb_checkpoint_store::open(so).value();
    for (int c = 0; c < 2; ++c) {
      const std::uint64_t id = static_cast<std::uint64_t>(c) + 1;
      if (c == 1) {
        for (std::size_t i = 0; i < first; ++i)
          write(order[i]);
        snap = backend->snapshot();
      }
      weir::checkpoint::operator_state_write w;
      w.operator_uid = "bench";
      w.first_key_group = range.start;
      w.last_key_group = range.end;
      w.serialize_key_group = [s = snap](std::uint16_t g, std::string& out) {
        if (s->has_key_group(g))
          s->serialize_key_group(g, out);
      };
      weir::checkpoint::snapshot_manifest m;
      m.checkpoint_id = id;
      t0 = clock_type::now();
      auto handles = store->write_state(id, {&w, 1});
      write_ms[c] = ms_since(t0);
      if (!handles) {
        std::fprintf(stderr, "write_state: %s\n", handles.error().message.c_str());
        std::exit(1);
      }
      m.handles = std::move(*handles);
      t0 = clock_type::now();
      auto done = store->commit_manifest(m);
      commit_ms[c] = ms_since(t0);
      if (!done) {
        std::fprintf(stderr, "commit_manifest: %s\n", done.error().message.c_str());
        std::exit(1);
      }
      stored = m.size_bytes();
    }
    disk = disk_bytes(dir);
    snap.reset();
    backend.reset(); // recovery starts from an empty process

    t0 = clock_type::now();
    auto latest = store->read_latest().value();
    read_latest_ms = ms_since(t0);
    t0 = clock_type::now();
    auto in = store->read_restore(*latest.manifest, "bench", 0, 1, o.max_parallelism).value();
    read_restore_ms = ms_since(t0);
    t0 = clock_type::now();
    keyed_state_backend fresh{range, o.max_parallelism};
    // Registered first, as operators do in open(): restoring a state that is
    // not registered yet keeps its bytes pending instead (a slower path).
    (void) fresh.get_value_state<T>("value").value();
    for (const auto& [g, bytes] : in.key_groups)
      if (auto r = fresh.restore_key_group(g, bytes); !r) {
        std::fprintf(stderr, "restore: %s\n", r.error().message.c_str());
        std::exit(1);
      }
    restore_ms = ms_since(t0);
    restored_entries = fresh.num_entries("value");
    store.reset();
    fs::remove_all(dir);
  }

  const double pause_med = percentile(pause_us, 0.5);
  const double pause_max = percentile(pause_us, 1.0);
  std::printf(
    "{\"keys\": %zu, \"value_bytes\": %zu, \"key_groups\": %zu, \"fill_ms\": %.1f, "
    "\"steady_write_ns\": %.1f, "
    "\"snapshot_pause_us\": {\"median\": %.2f, \"max\": %.2f, \"n\": %zu}, "
    "\"first_writes_after_snapshot\": {\"count\": %zu, \"total_ms\": %.3f, "
    "\"same_writes_unshared_ms\": %.3f, \"p50_us\": %.3f, \"p99_us\": %.3f, \"max_us\": %.1f}, "
    "\"full_pass_after_snapshot_ms\": %.1f, \"full_pass_unshared_ms\": %.1f, "
    "\"serialize_ms\": %.1f, \"serialized_bytes\": %zu, \"approximate_bytes\": %zu, "
    "\"write_state_ms\": [%.1f, %.1f], \"commit_manifest_ms\": [%.1f, %.1f], "
    "\"stored_bytes\": %llu, \"lmdb_file_bytes\": %llu, "
    "\"read_latest_ms\": %.1f, \"read_restore_ms\": %.1f, \"restore_ms\": %.1f, "
    "\"restored_entries\": %zu}\n",
    n, o.value_bytes, range.size(), fill_ms, steady_ns, pause_med, pause_max,
    pause_us.size(), first, first_total_ms, first_again_ms, percentile(first_us, 0.5),
    percentile(first_us, 0.99), percentile(first_us, 1.0), cow_pass_ms, plain_pass_ms,
    serialize_ms, serialized, approx, write_ms[0], write_ms[1], commit_ms[0], commit_ms[1],
    static_cast<unsigned long long>(stored), static_cast<unsigned long long>(disk),
    read_latest_ms, read_restore_ms, restore_ms, restored_entries);
  std::fflush(stdout);
  std::fprintf(stderr,
               "%zu keys (%s): snapshot() %.1f us median, %.1f us max; first %zu writes "
               "after it %.2f ms (%.2f ms unshared, max one write %.0f us); serialize "
               "%.0f ms, %.1f MiB; checkpoint write %.0f ms + commit %.0f ms; restore "
               "%.0f + %.0f + %.0f ms\n",
               n, o.value_bytes ? (std::to_string(o.value_bytes) + "-byte strings").c_str()
                                : "int64",
               pause_med, pause_max, first, first_total_ms, first_again_ms,
               percentile(first_us, 1.0), serialize_ms,
               static_cast<double>(serialized) / (1 << 20), write_ms[1], commit_ms[1],
               read_latest_ms, read_restore_ms, restore_ms);
}

std::vector<std::size_t> parse_list(const char* s) {
  std::vector<std::size_t> out;
  std::string text{s};
  std::size_t at = 0;
  while (at <= text.size()) {
    auto comma = text.find(',', at);
    auto part = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!part.empty())
      out.push_back(static_cast<std::size_t>(std::strtoull(part.c_str(), nullptr, 10)));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    std::string_view a{argv[i]};
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", argv[i]);
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--keys")
      o.keys = parse_list(next());
    else if (a == "--value-bytes")
      o.value_bytes = std::strtoull(next(), nullptr, 10);
    else if (a == "--snapshots")
      o.snapshots = std::max<std::size_t>(1, std::strtoull(next(), nullptr, 10));
    else if (a == "--max-parallelism")
      o.max_parallelism = std::strtoull(next(), nullptr, 10);
    else if (a == "--dir")
      o.dir = next();
    else if (a == "--no-storage")
      o.storage = false;
    else if (a == "--no-cow-pass")
      o.cow_pass = false;
    else {
      std::fprintf(stderr,
                   "usage: %s --dir DIR [--keys N[,N...]] [--value-bytes B] [--snapshots S]\n"
                   "          [--max-parallelism G] [--no-storage] [--no-cow-pass]\n",
                   argv[0]);
      return 2;
    }
  }
  if (o.storage && o.dir.empty()) {
    std::fprintf(stderr, "--dir is required unless --no-storage\n");
    return 2;
  }
  for (auto n : o.keys) {
    if (o.value_bytes == 0)
      run_one<std::int64_t>(o, n);
    else
      run_one<std::string>(o, n);
  }
  return 0;
}
