// SPDX-License-Identifier: Apache-2.0
#pragma once
// The blackhole sink (`type = "blackhole"`): its spec `weir::blackhole::sink`
// and `weir::blackhole::add_sink`, which `data_stream::sink_to` calls (src/kinds/sinks/blackhole/).

#include "weir/api/job.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/operators/stream_operator.hpp"

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>

namespace weir::blackhole {

/// A sink that drops every row (`type = "blackhole"`), optionally slowly
/// and optionally reporting what it saw, one JSON line per subtask on
/// stdout at the end (see `make_blackhole_sink`).
struct sink {
  double rate = 0;     ///< rows/s over all subtasks (it sleeps); 0 = no limit
  bool report = false; ///< print rows received (implied by the next two)
  bool digest = false; ///< also an order-independent digest of the rows
  /// An int64 field holding generation times (ns, steady clock): report
  /// p50/p99/p99.9 of arrival minus generation time. Empty: no latency.
  std::string latency_field;
};

/// Adds a blackhole sink fed by `in` (what `data_stream::sink_to` calls;
/// Flink's `DataStream.sinkTo`). Errors: `errc::invalid_argument` for a
/// duplicate `opts.name`, a negative rate or a latency_field that is not an
/// int64 field. Parallelism as for operators, so it chains to its input.
[[nodiscard]] expected<std::monostate> add_sink(const data_stream& in, sink spec,
                                                operator_options opts = {});

} // namespace weir::blackhole

namespace weir {

/// The hash of one row for result digests: values fed in column order,
/// `finish()` gives the row's hash. The digest of a result is the sum
/// (mod 2^64) of its rows' hashes, so it ignores row order and parallelism
/// but not duplicates; bench/baseline and bench/flink compute the same.
///
/// Definition (portable, spelled out for the Java port): the state starts at
/// 0x243F6A8885A308D3; `add(x)` sets `state = mix64(state ^ x)` (mix64 from
/// weir/expr/random.hpp); an int64 or timestamp adds its two's-complement
/// bits, a float64 its IEEE-754 bits, a bool 0 or 1, a null
/// 0x9E3779B97F4A7C15, a string its byte length and then each 8-byte
/// little-endian chunk of its bytes (the last one zero-padded);
/// `finish()` = mix64(state).
class row_hasher {
public:
  void add(std::uint64_t x) noexcept;
  void add_int(std::int64_t x) noexcept { add(static_cast<std::uint64_t>(x)); }
  void add_float(double x) noexcept;
  void add_bool(bool x) noexcept { add(x ? 1 : 0); }
  void add_null() noexcept { add(0x9E3779B97F4A7C15ULL); }
  void add_string(std::string_view s) noexcept;
  std::uint64_t finish() const noexcept;

private:
  std::uint64_t state_ = 0x243F6A8885A308D3ULL;
};

/// The row hash of row `row` of `batch` (every column, in order).
std::uint64_t row_hash(const record_batch& batch, std::size_t row);

/// A latency histogram over ns values: 32 sub-buckets per power of two
/// (relative error under 3.2 %), values below 32 exact.
class latency_histogram {
public:
  void add(std::int64_t ns) noexcept;
  std::uint64_t count() const noexcept { return count_; }
  /// The smallest bucket bound at or above the q-quantile (0 <= q <= 1); 0
  /// when empty.
  std::int64_t quantile(double q) const noexcept;
  std::int64_t max() const noexcept { return max_; }
  /// `[[upper_bound_ns, count], ...]` of the non-empty buckets, for merging
  /// histograms of several subtasks.
  std::string to_json() const;

  /// Adds `other`'s values, as if they had been added here.
  void merge(const latency_histogram& other) noexcept;

  /// Appends the snapshot encoding (little-endian): max_ns as i64, the
  /// number of non-empty buckets as u32, then (bucket u16, count u64) pairs
  /// in bucket order.
  void encode(std::string& out) const;

  /// Decodes what `encode` wrote from the front of `in`, consuming it;
  /// false on malformed bytes (a bucket out of range, out of order or
  /// empty, a negative max, a short input), leaving `*this` unchanged.
  [[nodiscard]] bool decode(std::string_view& in);

  static std::size_t bucket_of(std::uint64_t v) noexcept;
  static std::int64_t upper_bound(std::size_t bucket) noexcept;

private:
  std::array<std::uint64_t, 64 * 32> buckets_{};
  std::uint64_t count_ = 0;
  std::int64_t max_ = 0;
};

/// Makes a blackhole sink: it drops every row and emits nothing.
///
/// With `spec.rate` > 0 each subtask sleeps in `process_batch` until its
/// rows so far fit `rate / parallelism` rows/s since its first batch, which
/// blocks its input and so, through credit-based flow control, the
/// upstream subtasks. With `report`, `digest` or `latency_field`, `finish()`
/// writes one JSON line to `out` (stdout when null), in one write:
/// `{"blackhole":"<name>","subtask":i,"parallelism":p,"rows":n,
/// "first_ns":t0,"last_ns":t1[,"digest":"<16 hex digits>"][,"latency":{
/// "count":n,"p50_ns":..,"p99_ns":..,"p999_ns":..,"max_ns":..,"hist":[...]}]}`
/// where t0/t1 are steady-clock ns of the first and last batch, the digest
/// is the sum of `row_hash` over the rows, and latency is the arrival time
/// (steady ns, once per batch) minus each row's `latency_field` value.
///
/// Checkpoints: rows, digest and latency histogram are the sink's operator
/// state, so a job restored from a checkpoint reports the totals of an
/// uninterrupted run (docs/concepts/checkpoints.md); a subtask handed several states (a
/// change of parallelism) adds them up. first_ns/last_ns and the rate
/// pacing are of the current run only. Restoring a malformed state throws
/// `std::runtime_error`.
/// Errors: `errc::invalid_argument` when `latency_field` is not an int64
/// field of `input`, or the rate is negative.
[[nodiscard]] expected<std::function<stream_operator_ptr()>>
make_blackhole_sink_factory(const schema_ptr& input, const blackhole::sink& spec,
                            std::FILE* out = nullptr);

} // namespace weir
