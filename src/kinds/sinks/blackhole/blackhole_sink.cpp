// SPDX-License-Identifier: Apache-2.0
#include "weir/blackhole/sink.hpp"

#include "connectors/internal/pacer.hpp"
#include "weir/expr/random.hpp"
#include "weir/state/codec.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace weir {

// -- row_hasher -------------------------------------------------------------------

void row_hasher::add(std::uint64_t x) noexcept {
  state_ = expr::mix64(state_ ^ x);
}

void row_hasher::add_float(double x) noexcept {
  add(std::bit_cast<std::uint64_t>(x));
}

void row_hasher::add_string(std::string_view s) noexcept {
  add(s.size());
  std::size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8); // little-endian on every target weir runs on
    add(w);
  }
  if (i < s.size()) {
    std::uint64_t w = 0;
    std::memcpy(&w, s.data() + i, s.size() - i);
    add(w);
  }
}

std::uint64_t row_hasher::finish() const noexcept {
  return expr::mix64(state_);
}

std::uint64_t row_hash(const record_batch& batch, std::size_t row) {
  row_hasher h;
  for (const auto& c : batch.columns) {
    if (c.is_null(row)) {
      h.add_null();
      continue;
    }
    switch (c.type) {
      case type_id::int64:
      case type_id::timestamp:
        h.add_int(c.ints[row]);
        break;
      case type_id::float64:
        h.add_float(c.floats[row]);
        break;
      case type_id::boolean:
        h.add_bool(c.bools[row] != 0);
        break;
      case type_id::string:
        h.add_string(c.str(row));
        break;
      case type_id::null_type:
        h.add_null();
        break;
    }
  }
  return h.finish();
}

// -- latency_histogram --------------------------------------------------------------

std::size_t latency_histogram::bucket_of(std::uint64_t v) noexcept {
  if (v < 32)
    return static_cast<std::size_t>(v);
  const int e = 63 - std::countl_zero(v); // >= 5
  const auto sub = static_cast<std::size_t>((v >> (e - 5)) & 31);
  return static_cast<std::size_t>(e - 4) * 32 + sub;
}

std::int64_t latency_histogram::upper_bound(std::size_t bucket) noexcept {
  if (bucket < 32)
    return static_cast<std::int64_t>(bucket);
  const auto e = static_cast<int>(bucket / 32) + 4;
  const auto sub = static_cast<std::uint64_t>(bucket % 32);
  const std::uint64_t lo = (32 + sub) << (e - 5);
  return static_cast<std::int64_t>(lo + (1ULL << (e - 5)) - 1);
}

void latency_histogram::add(std::int64_t ns) noexcept {
  const auto v = static_cast<std::uint64_t>(ns < 0 ? 0 : ns);
  ++buckets_[bucket_of(v)];
  ++count_;
  if (ns > max_)
    max_ = ns;
}

std::int64_t latency_histogram::quantile(double q) const noexcept {
  if (count_ == 0)
    return 0;
  auto rank = static_cast<std::uint64_t>(q * static_cast<double>(count_));
  if (rank >= count_)
    rank = count_ - 1;
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    seen += buckets_[b];
    if (seen > rank)
      return std::min(upper_bound(b), max_);
  }
  return max_;
}

void latency_histogram::merge(const latency_histogram& other) noexcept {
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b] += other.buckets_[b];
  count_ += other.count_;
  max_ = std::max(max_, other.max_);
}

void latency_histogram::encode(std::string& out) const {
  namespace wire = state::wire;
  wire::put_i64(out, max_);
  const auto non_empty = static_cast<std::uint32_t>(
    std::count_if(buckets_.begin(), buckets_.end(), [](std::uint64_t n) { return n != 0; }));
  wire::put_u32(out, non_empty);
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b] == 0)
      continue;
    wire::put_u16(out, static_cast<std::uint16_t>(b));
    wire::put_u64(out, buckets_[b]);
  }
}

bool latency_histogram::decode(std::string_view& in) {
  namespace wire = state::wire;
  std::string_view probe = in;
  std::int64_t max = 0;
  std::uint32_t n = 0;
  if (!wire::get_i64(probe, max) || max < 0 || !wire::get_u32(probe, n)
      || n > buckets_.size())
    return false;
  latency_histogram h;
  h.max_ = max;
  std::size_t next = 0; // buckets come in increasing order
  for (std::uint32_t k = 0; k < n; ++k) {
    std::uint16_t b = 0;
    std::uint64_t count = 0;
    if (!wire::get_u16(probe, b) || !wire::get_u64(probe, count) || b < next
        || b >= buckets_.size() || count == 0)
      return false;
    h.buckets_[b] = count;
    h.count_ += count;
    next = std::size_t{b} + 1;
  }
  *this = h;
  in = probe;
  return true;
}

std::string latency_histogram::to_json() const {
  std::string out = "[";
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b] == 0)
      continue;
    if (out.size() > 1)
      out += ',';
    out += '[' + std::to_string(upper_bound(b)) + ',' + std::to_string(buckets_[b]) + ']';
  }
  out += ']';
  return out;
}

// -- the sink ---------------------------------------------------------------------

namespace {

// First field of the sink's operator state; bump the version when the layout
// changes.
constexpr std::string_view state_magic = "weir-blackhole-sink v1";

std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

class blackhole_sink final : public stream_operator {
public:
  blackhole_sink(const blackhole::sink& spec, std::optional<std::size_t> latency_index,
                 std::FILE* out)
    : rate_(spec.rate),
      report_(spec.report || spec.digest || latency_index),
      digest_(spec.digest),
      latency_index_(latency_index),
      out_(out) {}

  void open(const operator_context& ctx) override {
    name_ = ctx.operator_name;
    subtask_ = ctx.subtask_index;
    parallelism_ = ctx.parallelism;
    ns_per_row_ = rate_ > 0 ? 1e9 * static_cast<double>(parallelism_) / rate_ : 0.0;
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    const auto& b = *batch;
    const std::int64_t now = internal::steady_now_ns();
    if (run_rows_ == 0)
      first_ns_ = now;
    last_ns_ = now;
    if (digest_)
      for (std::size_t r = 0; r < b.num_rows; ++r)
        digest_sum_ += row_hash(b, r);
    if (latency_index_) {
      const column& c = b.columns[*latency_index_];
      for (std::size_t r = 0; r < b.num_rows; ++r)
        if (c.is_valid(r))
          latency_.add(now - c.ints[r]);
    }
    rows_ += b.num_rows;
    run_rows_ += b.num_rows;
    if (ns_per_row_ > 0) {
      // Sleep until the rows so far (of this run) fit the rate since the
      // first batch.
      const auto due = first_ns_ + static_cast<std::int64_t>(static_cast<double>(run_rows_)
                                                             * ns_per_row_);
      const auto wait = due - internal::steady_now_ns();
      if (wait > 0)
        std::this_thread::sleep_for(std::chrono::nanoseconds{wait});
    }
  }

  void process_watermark(event_time, output_collector&) override {}

  /// Operator state: magic, rows (u64), digest (u64), latency histogram.
  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
    namespace wire = state::wire;
    std::string& b = out.operator_state;
    b.clear();
    wire::put_bytes(b, state_magic);
    wire::put_u64(b, rows_);
    wire::put_u64(b, digest_sum_);
    latency_.encode(b);
  }

  /// Adds up every handed-over state (several after a change of
  /// parallelism).
  void restore_state(const operator_restore& in) override {
    namespace wire = state::wire;
    for (const auto& bytes : in.operator_states) {
      if (bytes.empty())
        continue;
      std::string_view v = bytes;
      std::string_view magic;
      std::uint64_t rows = 0;
      std::uint64_t digest = 0;
      latency_histogram latency;
      if (!wire::get_bytes(v, magic) || magic != state_magic || !wire::get_u64(v, rows)
          || !wire::get_u64(v, digest) || !latency.decode(v) || !v.empty())
        throw std::runtime_error("blackhole sink: cannot restore the state of checkpoint "
                                 + std::to_string(in.checkpoint_id)
                                 + ": not a well-formed blackhole sink state");
      rows_ += rows;
      digest_sum_ += digest; // mod 2^64, like the digest itself
      latency_.merge(latency);
    }
  }

  // A stopped job reports what it has received.
  void stop(output_collector& out) override { finish(out); }

  void finish(output_collector&) override {
    if (!report_)
      return;
    std::string line = "{\"blackhole\":\"" + json_escape(name_) + "\",\"subtask\":"
                       + std::to_string(subtask_) + ",\"parallelism\":"
                       + std::to_string(parallelism_) + ",\"rows\":" + std::to_string(rows_)
                       + ",\"first_ns\":" + std::to_string(first_ns_)
                       + ",\"last_ns\":" + std::to_string(last_ns_);
    if (digest_) {
      char hex[17];
      std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(digest_sum_));
      line += ",\"digest\":\"" + std::string{hex} + "\"";
    }
    if (latency_index_) {
      line += ",\"latency\":{\"count\":" + std::to_string(latency_.count())
              + ",\"p50_ns\":" + std::to_string(latency_.quantile(0.5))
              + ",\"p99_ns\":" + std::to_string(latency_.quantile(0.99))
              + ",\"p999_ns\":" + std::to_string(latency_.quantile(0.999))
              + ",\"max_ns\":" + std::to_string(latency_.max())
              + ",\"hist\":" + latency_.to_json() + "}";
    }
    line += "}\n";
    std::FILE* f = out_ ? out_ : stdout;
    std::fwrite(line.data(), 1, line.size(), f);
    std::fflush(f);
  }

private:
  double rate_;
  bool report_;
  bool digest_;
  std::optional<std::size_t> latency_index_;
  std::FILE* out_;
  std::string name_;
  std::size_t subtask_ = 0;
  std::size_t parallelism_ = 1;
  double ns_per_row_ = 0;
  std::uint64_t rows_ = 0;     // including the rows of restored states
  std::uint64_t run_rows_ = 0; // of this run only (pacing, first_ns_)
  std::uint64_t digest_sum_ = 0;
  std::int64_t first_ns_ = 0;
  std::int64_t last_ns_ = 0;
  latency_histogram latency_;
};

} // namespace

expected<std::function<stream_operator_ptr()>>
make_blackhole_sink_factory(const schema_ptr& input, const blackhole::sink& spec,
                            std::FILE* out) {
  if (spec.rate < 0)
    return make_error(errc::invalid_argument, "blackhole: rate must not be negative");
  std::optional<std::size_t> latency_index;
  if (!spec.latency_field.empty()) {
    auto idx = input ? input->index_of(spec.latency_field) : std::nullopt;
    if (!idx)
      return make_error(errc::invalid_argument,
                        "blackhole: latency_field '" + spec.latency_field
                          + "' is not a field of the input"
                          + (input ? " (fields: " + input->to_string() + ")" : ""));
    if (input->at(*idx).type != type_id::int64)
      return make_error(errc::invalid_argument,
                        "blackhole: latency_field '" + spec.latency_field
                          + "' must be an int64 field of ns, got "
                          + std::string{to_string(input->at(*idx).type)});
    latency_index = idx;
  }
  return std::function<stream_operator_ptr()>{[spec, latency_index, out] {
    return std::make_unique<blackhole_sink>(spec, latency_index, out);
  }};
}

} // namespace weir
