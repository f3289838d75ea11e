// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/operators/stream_operator.hpp"

#include "internal/window_plan_impl.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace weir::window {

/// The local phase of a two-phase window aggregation (Flink SQL's
/// `LocalSlicingWindowAggOperator`, chained before the key-by exchange):
/// folds the rows of each (key, slice) into accumulators and emits them as
/// partial rows, so the exchange and the window operator see one row per
/// key and slice instead of one per record. A partial is held until the
/// watermark passes its slice's last ms (it then goes out before that
/// watermark, so downstream it is never late), until a checkpoint barrier
/// (`prepare_snapshot_pre_barrier`: no state of its own), the subtask going
/// idle, the end of input, or more than `max_held` partials. A row whose
/// slice the operator's watermark already passed is emitted at once,
/// keeping its place among the records, so the global phase judges it late
/// or not exactly as it would the record.
///
/// Partial rows: `window_plan::partial_schema` (the key fields, `rows`,
/// `partial`: the encoded accumulators), event time = the slice's last ms,
/// emitted in first-arrival order; `global_window_aggregate` merges them.
///
/// State: none in checkpoints (everything held leaves before the barrier).
/// In memory, the partials and an index of them: for one int64 (or
/// timestamp) key or none, an open-addressing table by (key, slice) behind
/// a direct-mapped cache of recent partials by the key's low bits (YSB's
/// campaigns, Nexmark's auctions); otherwise a hash map by encoded key and
/// slice. With only count(*) aggregates the rows are counted and no
/// accumulator is visited. Throws `std::logic_error` for a non-empty batch
/// without timestamps.
class local_window_aggregate final : public stream_operator {
public:
  explicit local_window_aggregate(std::shared_ptr<const window_plan::impl> plan);

  void process_batch(const record_batch_ptr& batch, output_collector& out) override;
  void process_watermark(event_time wm, output_collector& out) override;
  void prepare_snapshot_pre_barrier(std::uint64_t, output_collector& out) override;
  void prepare_idle(output_collector& out) override;
  void finish(output_collector& out) override;

private:
  /// Partials held at most; beyond it all are emitted early (the global
  /// phase merges any number of partials of one key and slice).
  static constexpr std::size_t max_held = 1 << 16;

  struct partial {
    std::string index_key; // encoded key, then the slice start
    event_time slice = 0;
    std::int64_t rows = 0;
    std::vector<value> keys;
    // A vector, not an accumulator_list: targets_ points into it while
    // partials_ grows.
    std::vector<internal::accumulator> accs;
  };

  event_time last_ms(event_time slice_start) const noexcept {
    return internal::saturating_add(slice_start, plan_->slicing->slice - 1);
  }

  std::size_t add_partial(const record_batch& in, std::uint32_t row, event_time a);

  // The index of partials by (int64 key or null, slice): open addressing,
  // linear probing, at most half full.
  struct int_slot {
    std::int64_t key = 0;
    event_time slice = 0;
    partial* at = nullptr; // in partials_ (a deque: stable); null = empty slot
    bool null = false;
  };

  std::size_t find_int(std::int64_t v, bool null, event_time a);
  void rebuild_int_index(std::size_t slots);
  void emit(output_collector& out, event_time through);

  std::shared_ptr<const window_plan::impl> plan_;
  std::deque<partial> partials_; // stable addresses while a batch updates them
  // xxhash3 rather than std::hash: keys are short and every row hashes one.
  struct index_hash {
    std::size_t operator()(const std::string& k) const noexcept {
      return static_cast<std::size_t>(state::hash_key_bytes(k));
    }
  };
  std::unordered_map<std::string, std::size_t, index_hash> index_; // keys as bytes
  bool int_key_ = false; // one int64 key: int_index_ instead of index_
  bool rows_only_ = false; // every aggregate is count(*)
  std::vector<int_slot> int_index_;
  std::size_t int_used_ = 0;
  // Recently used partials by the key's low bits (at == nullptr: none).
  static constexpr std::size_t recent_size = 1024;
  std::vector<int_slot> recent_ = std::vector<int_slot>(recent_size);
  event_time oldest_ = max_watermark; // the earliest slice held
  event_time watermark_ = min_watermark;
  std::vector<internal::row_target> targets_;
  std::string key_scratch_;
  std::string encoded_;
};

} // namespace weir::window
