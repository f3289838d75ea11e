// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "internal/window_operator_base.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weir::window {

/// Aggregates event-time tumbling and sliding windows by slices: Flink SQL's
/// `SlicingWindowOperator` with its `SliceAssigners` (Carbone et al.,
/// "Cutty: Aggregate Sharing for User-Defined Windows", CIKM 2016).
///
/// Handles what `window_plan::make` gives it (see `internal::slicing_plan`):
/// the event-time trigger, no allowed lateness, no evictor, mergeable
/// aggregates (or one slice per window), slide <= size. Windows are cut
/// into slices of gcd(size, slide) ms; each record updates the accumulator
/// of its one slice, and when the watermark reaches a window's `end - 1` the
/// window's result per key is the merge of its slices. Results and their
/// order (by window end, then key bytes), late records and watermarks are
/// exactly `per_window_operator`'s for the same windows.
///
/// State: "window-contents" keyed by the record's key with the slice as
/// namespace, one accumulator per aggregate; no timers. The slice index
/// (slice start -> keys with contents there, `slices_`) is derived state,
/// rebuilt from the contents on restore. Sliding windows also write
/// "window-slices-watermark" into the snapshot, one entry per key group
/// with slices: a restored subtask does not fire again a window the key
/// group's previous subtask fired (see `snapshot_state`).
///
/// Cost per record: one state update, the state entries of a batch's rows
/// prefetched ahead; per fired window: the keys of its slices merged in
/// byte order (O(entries x log slices)) and one lookup per key and slice
/// with contents.
class sliced_window_operator : public internal::window_operator_base {
public:
  explicit sliced_window_operator(std::shared_ptr<const window_plan::impl> plan);

  /// Throws `std::logic_error` for a non-empty batch without timestamps.
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;
  void process_watermark(event_time wm, output_collector& out) override;
  void on_processing_time(event_time now, output_collector& out) override;
  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override;
  void restore_state(const operator_restore& in) override;

protected:
  void register_states() override;
  /// The windows not fired yet that slice `ns` belongs to.
  void windows_of_namespace(const time_window& ns, std::vector<time_window>& out) const override {
    const auto& s = *plan_->slicing;
    const auto wm = backend_->current_watermark();
    for (auto start = window_start(ns.start, s.offset, s.slide); start + s.size > ns.start;
         start -= s.slide) {
      const time_window w{start, internal::saturating_add(start, s.size)};
      if (w.end - 1 > wm)
        out.push_back(w);
    }
  }

  // The end of the last window holding slice `a`.
  event_time last_end(event_time a) const noexcept {
    const auto& s = *plan_->slicing;
    return internal::saturating_add(window_start(a, s.offset, s.slide), s.size);
  }

  // Makes slice `a` the current namespace.
  void set_slice_namespace(event_time a) {
    if (scratch_slice_ != a) { // consecutive rows mostly share a slice
      const time_window slice{a, internal::saturating_add(a, plan_->slicing->slice)};
      internal::encode_window_into(ns_scratch_, slice);
      scratch_slice_ = a;
    }
    backend_->set_current_namespace(ns_scratch_);
  }

  /// The keys with contents in one slice, each once; the first `sorted`
  /// are in byte order (collect_fire_entries sorts them when it reads them).
  struct slice_keys {
    std::vector<std::string> keys;
    std::size_t sorted = 0;
  };

  /// Slice start (ms) -> keys with contents in it.
  std::map<event_time, slice_keys> slices_;

private:
  using slice_iterator = std::map<event_time, slice_keys>::iterator;

  void add_batch_to_slices(const record_batch& in, const std::vector<column>& args);
  event_time first_end(event_time a) const noexcept;
  std::string_view slice_namespace(event_time a);
  bool add_to_slice(const record_batch& in, const std::vector<column>& args,
                    std::uint32_t row, std::uint64_t seq, event_time ts);
  void fire_slices(event_time previous, event_time wm);
  void fire_slices_through(event_time end, event_time wm);
  void fire_window(event_time end);
  void fire_last_windows();
  void collect_fire_keys(slice_iterator lo, slice_iterator hi);
  void collect_fire_entries(slice_iterator lo, slice_iterator hi);
  void merge_fire_runs();
  const internal::accumulator* fold_slices(slice_iterator lo, slice_iterator hi);
  template <class Done>
  void drop_slices(Done done);

  state::value_state<std::int64_t> slices_watermark_;
  /// After a restore: key group -> the watermark its previous subtask had
  /// fired windows through, where above this subtask's (see snapshot_state).
  std::unordered_map<std::uint16_t, event_time> restored_fired_;

  // Scratch reused across rows and batches.
  std::string ns_scratch_;
  std::optional<event_time> scratch_slice_; ///< the slice ns_scratch_ holds, if one
  // add_batch_to_slices: the batch's encoded keys back to back, where each
  // ends, their state addresses, and the namespace being encoded.
  std::string batch_keys_;
  std::vector<std::size_t> batch_key_ends_;
  std::vector<state::key_address> batch_addresses_;
  std::string batch_ns_;
  std::vector<std::uint32_t> late_rows_;
  std::vector<internal::accumulator> fold_;
  std::vector<std::string_view> fire_keys_;
  struct fire_entry {
    std::string_view key;
    event_time slice = 0; ///< the slice's start
  };
  std::vector<fire_entry> fire_entries_;
  std::vector<fire_entry> merged_entries_; ///< merge_fire_runs' scratch
  std::vector<std::size_t> fire_runs_;      ///< run bounds in fire_entries_
  std::vector<state::key_address> fire_addresses_;
  std::vector<std::pair<event_time, std::string>> fire_namespaces_;
};

} // namespace weir::window
