// SPDX-License-Identifier: Apache-2.0
#include "sliced_window_operator.hpp"

#include "weir/core/key_group.hpp"

#include <algorithm>
#include <iterator>
#include <stdexcept>
#include <utility>

namespace weir::window {

using internal::compare_key_bytes;
using internal::encode_window_into;
using internal::must;
using internal::row_input;
using internal::saturating_add;

sliced_window_operator::sliced_window_operator(
    std::shared_ptr<const window_plan::impl> plan)
  : window_operator_base(std::move(plan)) {
  init_backend(state::key_group_range{0, 127}, 128);
}

void sliced_window_operator::register_states() {
  contents_ = must(
    backend_->get_aggregating_state<row_input, internal::accumulators, std::monostate>(
      internal::contents_state, contents_fn_));
  if (plan_->slicing->slide < plan_->slicing->size)
    slices_watermark_ =
      must(backend_->get_value_state<std::int64_t>(internal::slices_watermark_state));
}

// -- stream_operator ------------------------------------------------------------

void sliced_window_operator::process_batch(const record_batch_ptr& batch,
                                           output_collector& out) {
  const record_batch& in = *batch;
  if (in.num_rows == 0)
    return;
  if (!in.has_timestamps())
    throw std::logic_error("window operator received a batch without event "
                           "timestamps; assign event time at the source");
  auto args = plan_->aggregates.evaluate(in);
  late_rows_.clear();
  add_batch_to_slices(in, args);
  flush(out);
  if (!late_rows_.empty()) {
    late_ += late_rows_.size();
    out.collect_side(1, std::make_shared<record_batch>(in.take(late_rows_)));
  }
}

void sliced_window_operator::process_watermark(event_time wm, output_collector& out) {
  const event_time previous = backend_->current_watermark();
  if (wm <= previous)
    return; // a watermark never goes back; nothing new to fire
  // (No timers: the slices fire by the slice index.)
  backend_->advance_watermark(wm, [](event_time) {});
  fire_slices(previous, wm);
  flush(out);
  out.emit_watermark(wm);
}

void sliced_window_operator::on_processing_time(event_time now, output_collector& out) {
  backend_->advance_processing_time(now, [](event_time) {});
  flush(out);
}

void sliced_window_operator::snapshot_state(std::uint64_t checkpoint_id,
                                            operator_snapshot& out) {
  // Sliding windows keep slices after some of their windows fired. Those
  // windows must not fire again in a restored subtask that gets no
  // operator state (more subtasks than before): every key group with
  // slices carries the watermark in one entry, written for the snapshot
  // only. O(key groups) writes.
  std::vector<std::string> marked;
  if (slices_watermark_) {
    const auto range = backend_->range();
    std::vector<bool> seen(range.size(), false);
    std::size_t left = range.size();
    for (auto it = slices_.begin(); it != slices_.end() && left > 0; ++it) {
      for (const auto& key : it->second.keys) {
        if (left == 0)
          break;
        backend_->set_current_key(key);
        auto g = backend_->current_key_group() - range.start;
        if (seen[g])
          continue;
        seen[g] = true;
        --left;
        backend_->set_current_namespace({});
        slices_watermark_.update(backend_->current_watermark());
        marked.push_back(key);
      }
    }
    scratch_slice_.reset();
  }
  window_operator_base::snapshot_state(checkpoint_id, out);
  for (const auto& key : marked) {
    backend_->set_current_key(key);
    backend_->set_current_namespace({});
    slices_watermark_.clear();
  }
}

void sliced_window_operator::restore_state(const operator_restore& in) {
  window_operator_base::restore_state(in);
  // The slice index is derived state: rebuilt from the contents restored.
  slices_.clear();
  backend_->for_each_key(internal::contents_state,
                         [this](std::string_view key, std::string_view ns) {
                           slices_[internal::decode_window(ns).start].keys.emplace_back(key);
                         });
  if (slices_watermark_) {
    // The watermark of the key groups' previous subtask (see snapshot_state).
    std::vector<std::string> marked;
    backend_->for_each_key(internal::slices_watermark_state,
                           [&](std::string_view key, std::string_view) {
                             marked.emplace_back(key);
                           });
    restored_fired_.clear();
    for (const auto& key : marked) {
      backend_->set_current_key(key);
      backend_->set_current_namespace({});
      if (auto v = slices_watermark_.value(); v && *v > backend_->current_watermark())
        restored_fired_[backend_->current_key_group()] = *v;
      slices_watermark_.clear();
    }
    scratch_slice_.reset();
  }
}

// -- sliced aggregation -------------------------------------------------------------

// Drops, from the oldest, the slices `done(start)` says no later window
// holds: their contents for every key, and their index entry.
template <class Done>
inline void sliced_window_operator::drop_slices(Done done) {
  while (!slices_.empty() && done(slices_.begin()->first)) {
    auto node = slices_.extract(slices_.begin());
    set_slice_namespace(node.key());
    for (const auto& key : node.mapped().keys) {
      backend_->set_current_key(key);
      contents_.clear();
    }
  }
}

// The sliced path of process_batch: each row's accumulator in its slice,
// the state of the rows ahead prefetched (a large keyed state otherwise
// costs two cache misses per row).
inline void sliced_window_operator::add_batch_to_slices(
    const record_batch& in, const std::vector<column>& args) {
  const auto& p = *plan_;
  const auto& s = *p.slicing;
  batch_keys_.clear();
  batch_key_ends_.clear();
  batch_addresses_.clear();
  event_time ns_slice = 0;
  bool have_ns = false;
  window_start_cache slice_of{s.offset, s.slice};
  for (std::uint32_t row = 0; row < in.num_rows; ++row) {
    const std::size_t begin = batch_keys_.size();
    encode_key(in, p.key_fields, row, batch_keys_);
    batch_key_ends_.push_back(batch_keys_.size());
    const event_time a = slice_of(in.timestamps[row]);
    if (!have_ns || a != ns_slice) {
      encode_window_into(batch_ns_, time_window{a, saturating_add(a, s.slice)});
      ns_slice = a;
      have_ns = true;
    }
    batch_addresses_.push_back(backend_->address_of(
      std::string_view{batch_keys_}.substr(begin, batch_keys_.size() - begin), batch_ns_));
  }
  state::for_each_prefetched(contents_, batch_addresses_, [&](std::size_t i) {
    const auto row = static_cast<std::uint32_t>(i);
    const std::size_t begin = i == 0 ? 0 : batch_key_ends_[i - 1];
    backend_->set_current_key(
      std::string_view{batch_keys_}.substr(begin, batch_key_ends_[i] - begin),
      batch_addresses_[i]);
    if (!add_to_slice(in, args, row, next_seq_++, in.timestamps[row]))
      late_rows_.push_back(row);
  });
}

// Window ends are the times congruent to offset + size modulo slide.
// The first window end after slice `a` (the earliest window holding it).
inline event_time sliced_window_operator::first_end(event_time a) const noexcept {
  const auto& s = *plan_->slicing;
  return saturating_add(window_start(a, s.end_offset, s.slide), s.slide);
}

// The encoded namespace of the slice starting at `a`, kept for the
// slices of the window being fired (a handful).
inline std::string_view sliced_window_operator::slice_namespace(event_time a) {
  for (const auto& [start, ns] : fire_namespaces_)
    if (start == a)
      return ns;
  auto& [start, ns] = fire_namespaces_.emplace_back(a, std::string{});
  encode_window_into(ns, time_window{a, saturating_add(a, plan_->slicing->slice)});
  return ns;
}

// Adds a row (current key set) to its slice; false when every window
// holding it has fired (a late record).
inline bool sliced_window_operator::add_to_slice(
    const record_batch& in, const std::vector<column>& args, std::uint32_t row,
    std::uint64_t seq, event_time ts) {
  const auto& s = *plan_->slicing;
  const event_time a = window_start(ts, s.offset, s.slice);
  if (last_end(a) - 1 <= backend_->current_watermark())
    return false;
  set_slice_namespace(a);
  if (contents_.add(row_input{&in, &args, row, seq}))
    slices_[a].keys.emplace_back(backend_->current_key());
  return true;
}

// Fires, in order of their ends, the windows the watermark passed in
// (previous, wm] that hold a slice with contents.
inline void sliced_window_operator::fire_slices(event_time previous, event_time wm) {
  if (slices_.empty())
    return;
  const auto& s = *plan_->slicing;
  // The first end not yet fired: window [end - size, end) fired once the
  // watermark reached end - 1.
  event_time end = first_end(slices_.begin()->first);
  if (previous > min_watermark + s.slide) // (no window ends that early)
    end = std::max(end, saturating_add(window_start(previous + 1, s.end_offset, s.slide),
                                       s.slide));
  fire_slices_through(end, wm);
  // Every window left ends after wm: none fired before the restore.
  if (std::all_of(restored_fired_.begin(), restored_fired_.end(),
                  [wm](const auto& g) { return g.second <= wm; }))
    restored_fired_.clear();
}

inline void sliced_window_operator::fire_slices_through(event_time end, event_time wm) {
  const auto& s = *plan_->slicing;
  while (end - 1 <= wm) {
    fire_window(end);
    if (slices_.empty())
      return;
    const event_time next = std::max(saturating_add(end, s.slide),
                                     first_end(slices_.begin()->first));
    if (next <= end)
      return; // the end of time
    end = next;
  }
}

// Emits window [end - size, end) for every key with contents in one of
// its slices (keys in byte order, as timers would fire), then drops the
// slices no later window holds.
inline void sliced_window_operator::fire_window(event_time end) {
  const auto& s = *plan_->slicing;
  if (end == max_watermark) {
    fire_last_windows();
    return;
  }
  const time_window w{end - s.size, end};
  const auto lo = slices_.lower_bound(w.start);
  const auto hi = slices_.lower_bound(w.end);
  collect_fire_entries(lo, hi);
  // Only the slices each key has contents in (with keys that come and go,
  // as Nexmark's auctions, most keys are in one slice of a window's five),
  // the state entries prefetched ahead of the lookups.
  fire_addresses_.clear();
  fire_namespaces_.clear();
  // slice_namespace returns views into fire_namespaces_, whose short
  // strings would move if it grew: room for every slice of the window.
  fire_namespaces_.reserve(static_cast<std::size_t>(std::distance(lo, hi)));
  for (const auto& e : fire_entries_)
    fire_addresses_.push_back(backend_->address_of(e.key, slice_namespace(e.slice)));
  const internal::accumulator* only = nullptr;
  bool folded = false;
  bool skip = false;
  state::for_each_prefetched(contents_, fire_addresses_, [&](std::size_t i) {
    const fire_entry& e = fire_entries_[i];
    const bool first = i == 0 || compare_key_bytes(fire_entries_[i - 1].key, e.key) != 0;
    const bool last = i + 1 == fire_entries_.size()
                      || compare_key_bytes(fire_entries_[i + 1].key, e.key) != 0;
    if (first) {
      only = nullptr;
      folded = false;
      backend_->set_current_key(e.key, fire_addresses_[i]);
      // Fired before the restore, by the subtask that had this key group?
      skip = false;
      if (!restored_fired_.empty()) {
        auto it = restored_fired_.find(backend_->current_key_group());
        skip = it != restored_fired_.end() && end - 1 <= it->second;
      }
    }
    // (A key is listed once per slice; this keeps a slice from counting twice.)
    if (!skip && (first || e.slice != fire_entries_[i - 1].slice)) {
      set_slice_namespace(e.slice);
      if (const auto* acc = contents_.accumulator()) {
        contents_fn_->check(*acc);
        if (!only && !folded) {
          only = acc->data();
        } else {
          if (!folded) {
            fold_.assign(only, only + plan_->aggregates.size());
            folded = true;
          }
          plan_->aggregates.merge(fold_.data(), acc->data());
        }
      }
    }
    if (last && !skip && (only || folded))
      append_row(w, folded ? fold_.data() : only, 0);
  });
  drop_slices([this, end](event_time a) { return last_end(a) <= end; });
}

// Every window whose end is max_watermark (saturated: start + size
// overflows, or exactly): they all fire at max_watermark - 1, for each
// key (in byte order) by start, as their timers would; then drops every
// slice. Slices from the first such start on, up to and including a slice
// starting at max_watermark, belong to them.
inline void sliced_window_operator::fire_last_windows() {
  const auto& s = *plan_->slicing;
  const event_time last_slice = slices_.rbegin()->first;
  std::vector<event_time> starts;
  event_time st = window_start(max_watermark - s.size, s.offset, s.slide);
  if (st < max_watermark - s.size)
    st += s.slide;
  for (; st <= last_slice; st += s.slide) {
    starts.push_back(st);
    if (st > max_watermark - s.slide)
      break;
  }
  if (!starts.empty()) {
    collect_fire_keys(slices_.lower_bound(starts.front()), slices_.end());
    for (auto key : fire_keys_) {
      backend_->set_current_key(key);
      for (const event_time start : starts) {
        // The slices in [start, start + size), the end saturating.
        const auto hi = start > max_watermark - s.size ? slices_.end()
                                                       : slices_.lower_bound(start + s.size);
        if (const auto* accs = fold_slices(slices_.lower_bound(start), hi))
          append_row(time_window{start, max_watermark}, accs, 0);
      }
    }
  }
  drop_slices([](event_time) { return true; });
}

// fire_keys_ = the keys with contents in slices [lo, hi), in byte order,
// each once.
inline void sliced_window_operator::collect_fire_keys(
    slice_iterator lo, slice_iterator hi) {
  fire_keys_.clear();
  for (auto it = lo; it != hi; ++it)
    for (const auto& k : it->second.keys)
      fire_keys_.push_back(k);
  std::sort(fire_keys_.begin(), fire_keys_.end());
  fire_keys_.erase(std::unique(fire_keys_.begin(), fire_keys_.end()), fire_keys_.end());
}

// fire_entries_ = (key, slice) for each key with contents in one of the
// slices [lo, hi), by key in byte order, then by slice start. A slice
// belongs to size / slide windows: its keys are sorted once (the keys
// added since, then merged in), and each window merges its slices' sorted
// runs, adjacent pairs a round, O(entries x log slices), instead of
// sorting them all again.
inline void sliced_window_operator::collect_fire_entries(
    slice_iterator lo, slice_iterator hi) {
  const auto key_less = [](std::string_view a, std::string_view b) {
    return compare_key_bytes(a, b) < 0;
  };
  fire_entries_.clear();
  fire_runs_.assign(1, 0);
  for (auto it = lo; it != hi; ++it) {
    auto& keys = it->second.keys;
    auto& sorted = it->second.sorted;
    if (sorted < keys.size()) {
      const auto mid = keys.begin() + static_cast<std::ptrdiff_t>(sorted);
      std::sort(mid, keys.end(), key_less);
      std::inplace_merge(keys.begin(), mid, keys.end(), key_less);
      sorted = keys.size();
    }
    for (const auto& k : keys)
      fire_entries_.push_back({k, it->first});
    if (fire_entries_.size() > fire_runs_.back())
      fire_runs_.push_back(fire_entries_.size());
  }
  merge_fire_runs();
}

// Merges fire_entries_'s sorted runs (bounded by fire_runs_: 0, ends...)
// into one, adjacent pairs a round. Equal keys are of different slices,
// which the order breaks ties by.
inline void sliced_window_operator::merge_fire_runs() {
  const auto entry_less = [](const fire_entry& a, const fire_entry& b) {
    const int c = compare_key_bytes(a.key, b.key);
    return c < 0 || (c == 0 && a.slice < b.slice);
  };
  const auto at = [](std::vector<fire_entry>& v, std::size_t i) {
    return v.begin() + static_cast<std::ptrdiff_t>(i);
  };
  while (fire_runs_.size() > 2) {
    merged_entries_.resize(fire_entries_.size());
    std::size_t kept = 1;
    for (std::size_t r = 0; r + 1 < fire_runs_.size(); r += 2) {
      const std::size_t b = fire_runs_[r];
      const std::size_t m = fire_runs_[r + 1];
      const std::size_t e = r + 2 < fire_runs_.size() ? fire_runs_[r + 2] : m;
      std::merge(at(fire_entries_, b), at(fire_entries_, m), at(fire_entries_, m),
                 at(fire_entries_, e), at(merged_entries_, b), entry_less);
      fire_runs_[kept++] = e;
    }
    fire_runs_.resize(kept);
    fire_entries_.swap(merged_entries_);
  }
}

// The current key's accumulators over slices [lo, hi): the one slice's own
// when the range holds one, else merged into fold_; nullptr when the key
// has no contents there.
inline const internal::accumulator* sliced_window_operator::fold_slices(
    slice_iterator lo, slice_iterator hi) {
  const internal::accumulator* only = nullptr;
  bool folded = false;
  for (auto it = lo; it != hi; ++it) {
    set_slice_namespace(it->first);
    const auto* acc = contents_.accumulator();
    if (!acc)
      continue;
    contents_fn_->check(*acc);
    if (!only && !folded) {
      only = acc->data();
      continue;
    }
    if (!folded) {
      fold_.assign(only, only + plan_->aggregates.size());
      folded = true;
    }
    plan_->aggregates.merge(fold_.data(), acc->data());
  }
  return folded ? fold_.data() : only;
}

} // namespace weir::window
