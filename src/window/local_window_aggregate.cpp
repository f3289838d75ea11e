// SPDX-License-Identifier: Apache-2.0
#include "local_window_aggregate.hpp"

#include "weir/core/key_group.hpp"
#include "weir/expr/random.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace weir::window {

local_window_aggregate::local_window_aggregate(
    std::shared_ptr<const window_plan::impl> plan)
  : plan_(std::move(plan)) {
  const auto& keys = plan_->key_fields;
  int_key_ = keys.empty() // (one key for all: 0)
             || (keys.size() == 1 && (plan_->input->at(keys[0]).type == type_id::int64
                                      || plan_->input->at(keys[0]).type == type_id::timestamp));
  rows_only_ = true;
  for (std::size_t j = 0; j < plan_->aggregates.size(); ++j)
    rows_only_ = rows_only_
                 && plan_->aggregates.function(j).kind == internal::aggregate_kind::count_rows;
}

void local_window_aggregate::process_batch(const record_batch_ptr& batch,
                                           output_collector& out) {
  const record_batch& in = *batch;
  if (in.num_rows == 0)
    return;
  if (!in.has_timestamps())
    throw std::logic_error("window operator received a batch without event "
                           "timestamps; assign event time at the source");
  const auto& p = *plan_;
  const auto& s = *p.slicing;
  // Only count(*): a partial's row count is every result (see emit), so
  // rows are counted and no accumulator is visited.
  const auto args = rows_only_ ? std::vector<column>{} : p.aggregates.evaluate(in);
  targets_.clear();
  bool urgent = false;
  const column* int_keys =
    int_key_ && !p.key_fields.empty() ? &in.columns[p.key_fields[0]] : nullptr;
  window_start_cache slice_of{s.offset, s.slice};
  if (int_key_) {
    // One int64 key (YSB's campaign, Nexmark's auction) or none (q7):
    // found by value and slice, the key encoded only for a new partial.
    // The loop reads through locals: the row counts it stores could alias
    // members, which the compiler would otherwise reload every row.
    const event_time* ts = in.timestamps.data();
    const std::uint8_t* key_valid = int_keys ? int_keys->validity.data() : nullptr;
    const std::int64_t* key_values = int_keys ? int_keys->ints.data() : nullptr;
    const bool collect = !rows_only_;
    int_slot* recent = recent_.data();
    event_time earliest = max_watermark;
    for (std::uint32_t row = 0; row < in.num_rows; ++row) {
      const event_time a = slice_of(ts[row]);
      earliest = std::min(earliest, a);
      const bool null = key_valid && key_valid[row] == 0;
      const std::int64_t v = key_values && !null ? key_values[row] : 0;
      // First the direct-mapped cache by the key's low bits: with a few
      // hundred keys per slice (YSB's campaigns) every row hits it and
      // takes no branch that depends on the data; then the index.
      const auto r = static_cast<std::size_t>(static_cast<std::uint64_t>(v) & (recent_size - 1));
      partial* pa = recent[r].at;
      if (pa == nullptr || recent[r].key != v || recent[r].slice != a || recent[r].null != null) {
        const std::size_t at = find_int(v, null, a);
        pa = int_index_[at].at;
        if (pa == nullptr) {
          pa = &partials_[add_partial(in, row, a)];
          int_index_[at] = int_slot{v, a, pa, null};
          if (++int_used_ * 2 > int_index_.size())
            rebuild_int_index(int_index_.size() * 2);
        }
        recent = recent_.data(); // (a rebuild refills it)
        recent[r] = int_slot{v, a, pa, null};
      }
      ++pa->rows;
      if (collect)
        targets_.push_back(internal::row_target{row, pa->accs.data()});
    }
    // (last_ms grows with the slice: the earliest decides)
    urgent = earliest != max_watermark && last_ms(earliest) <= watermark_;
  }
  for (std::uint32_t row = 0; !int_key_ && row < in.num_rows; ++row) {
    const event_time a = slice_of(in.timestamps[row]);
    key_scratch_.clear();
    encode_key(in, p.key_fields, row, key_scratch_);
    const auto slice_key = static_cast<std::uint64_t>(a);
    key_scratch_.append(reinterpret_cast<const char*>(&slice_key), sizeof slice_key);
    auto [it, fresh] = index_.try_emplace(key_scratch_, partials_.size());
    if (fresh)
      add_partial(in, row, a);
    partial& pa = partials_[it->second];
    ++pa.rows;
    if (!rows_only_)
      targets_.push_back(internal::row_target{row, pa.accs.data()});
    if (last_ms(a) <= watermark_)
      urgent = true;
  }
  if (!rows_only_)
    p.aggregates.update(args, targets_);
  if (partials_.size() > max_held)
    emit(out, max_watermark); // bounded memory with many keys per slice
  else if (urgent)
    emit(out, watermark_);
}

void local_window_aggregate::process_watermark(event_time wm, output_collector& out) {
  watermark_ = std::max(watermark_, wm);
  if (!partials_.empty() && last_ms(oldest_) <= watermark_)
    emit(out, watermark_);
  out.emit_watermark(wm);
}

void local_window_aggregate::prepare_snapshot_pre_barrier(
    std::uint64_t, output_collector& out) {
  emit(out, max_watermark);
}

void local_window_aggregate::prepare_idle(output_collector& out) {
  emit(out, max_watermark);
}

void local_window_aggregate::finish(output_collector& out) { emit(out, max_watermark); }

// A new partial for row `row`'s key and slice `a`; returns its index.
inline std::size_t local_window_aggregate::add_partial(
    const record_batch& in, std::uint32_t row, event_time a) {
  partial& np = partials_.emplace_back();
  if (!int_key_)
    np.index_key = key_scratch_;
  np.slice = a;
  np.accs.resize(plan_->aggregates.size());
  for (auto k : plan_->key_fields)
    np.keys.push_back(in.columns[k].get(row));
  oldest_ = std::min(oldest_, a);
  return partials_.size() - 1;
}

// The slot of (v, null, a): where it is, or the empty slot to put it in.
inline std::size_t local_window_aggregate::find_int(
    std::int64_t v, bool null, event_time a) {
  if (int_index_.empty())
    rebuild_int_index(256);
  const std::size_t mask = int_index_.size() - 1;
  const std::uint64_t h = expr::mix64(static_cast<std::uint64_t>(v) * expr::seq_multiplier
                                      ^ static_cast<std::uint64_t>(a) ^ (null ? 1U : 0U));
  for (std::size_t i = h & mask;; i = (i + 1) & mask) {
    const int_slot& e = int_index_[i];
    if (e.at == nullptr || (e.key == v && e.slice == a && e.null == null))
      return i;
  }
}

// Rebuilds the int64 index of partials_ with `slots` slots (a power of two).
inline void local_window_aggregate::rebuild_int_index(std::size_t slots) {
  while (slots < 2 * partials_.size() + 2)
    slots *= 2;
  int_index_.assign(slots, int_slot{});
  int_used_ = 0;
  recent_.assign(recent_size, int_slot{}); // partials_ changed
  for (partial& pa : partials_) {
    const auto* iv = pa.keys.empty() ? nullptr : std::get_if<std::int64_t>(&pa.keys[0]);
    const bool null = !pa.keys.empty() && iv == nullptr;
    const std::int64_t v = iv ? *iv : 0;
    int_index_[find_int(v, null, pa.slice)] = int_slot{v, pa.slice, &pa, null};
    ++int_used_;
  }
}

// Emits (in first-arrival order) the partials whose slice ends at or
// before `through`, keeps the others.
inline void local_window_aggregate::emit(output_collector& out, event_time through) {
  if (partials_.empty() || last_ms(oldest_) > through)
    return; // nothing due (oldest_ is the earliest slice held)
  // (oldest_ is exact, so some partial is due; checked before any is
  // moved, as int_index_ and recent_ point into partials_.)
  if (std::none_of(partials_.begin(), partials_.end(),
                   [&](const partial& pa) { return last_ms(pa.slice) <= through; }))
    return;
  batch_builder b{plan_->partial};
  const std::size_t nkeys = plan_->key_fields.size();
  std::deque<partial> kept;
  event_time oldest = max_watermark;
  for (auto& pa : partials_) {
    if (last_ms(pa.slice) > through) {
      oldest = std::min(oldest, pa.slice);
      kept.push_back(std::move(pa));
      continue;
    }
    for (std::size_t k = 0; k < nkeys; ++k)
      b.col(k).append_value(pa.keys[k]);
    b.col(nkeys).append_int(pa.rows);
    if (rows_only_)
      for (auto& acc : pa.accs)
        acc.count = pa.rows; // count(*)'s accumulator, as update would have left it
    encoded_.clear();
    state::codec<std::vector<internal::accumulator>>::encode(pa.accs, encoded_);
    b.col(nkeys + 1).append_string(encoded_);
    b.timestamps().push_back(last_ms(pa.slice));
    b.commit_row();
  }
  if (b.rows() == 0)
    return;
  partials_ = std::move(kept);
  oldest_ = oldest;
  if (int_key_) {
    rebuild_int_index(256);
  } else {
    index_.clear();
    for (std::size_t i = 0; i < partials_.size(); ++i)
      index_.emplace(partials_[i].index_key, i);
  }
  out.collect(b.finish());
}

} // namespace weir::window
