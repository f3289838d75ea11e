// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/record_batch.hpp"
#include "weir/state/keyed_process_function.hpp"
#include "weir/state/keyed_state_backend.hpp"
#include "weir/window/window_operator.hpp"

#include "window_plan_impl.hpp"
#include "window_state.hpp"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

namespace weir::window::internal {

/// What every window operator strategy shares: the plan, the keyed-state
/// backend (set up for the subtask's key groups in `open`), the
/// "window-contents" aggregating state, the arrival counter that orders
/// first/last, the counters of `window_operator`, result rows and their
/// output, and the snapshot and restore of the backend, the arrival counter
/// and the watermark.
///
/// A strategy registers its own states in `register_states` (called by
/// `init_backend`: a strategy's constructor calls `init_backend` for the
/// default key groups [0, 127] of 128 so that tests may drive it without
/// `open`) and extends `snapshot_state` / `restore_state` for state derived
/// from the backend's.
///
/// Operator state (one entry per subtask): the arrival counter, then the
/// watermark at the barrier, as two `wire` u64s.
class window_operator_base : public window_operator {
public:
  void open(const operator_context& ctx) override;

  std::optional<event_time> next_processing_timer() const override {
    return backend_->next_processing_timer();
  }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override;

  /// Throws `std::runtime_error` for key groups or operator state that do
  /// not decode.
  void restore_state(const operator_restore& in) override;

  std::uint64_t late_records() const noexcept override { return late_; }
  std::uint64_t emitted_results() const noexcept override { return emitted_; }
  std::size_t active_states() const noexcept override {
    return backend_->num_entries(contents_state) + backend_->num_entries(rows_state);
  }
  event_time current_watermark() const noexcept override {
    return backend_->current_watermark();
  }

  /// `{"windows":[row...]}`: one row per open window of the key, in window
  /// order, shaped as the operator's output rows (key fields, window_start,
  /// window_end, the aggregates as they would fire now); `null` for a key
  /// without contents. Windows kept only as buffered rows (an evictor) are
  /// not shown. O(entries of the contents state) to find the key's windows.
  std::optional<std::string> query_state(std::string_view encoded_key) override;

protected:
  const std::string& name() const noexcept { return name_; }
  std::size_t subtask() const noexcept { return subtask_; }
  explicit window_operator_base(std::shared_ptr<const window_plan::impl> plan);

  /// A fresh backend for `range`, then `register_states`.
  void init_backend(state::key_group_range range, std::size_t max_parallelism);

  /// Obtains the strategy's state handles from `backend_`.
  virtual void register_states() = 0;

  /// For `query_state`: the open windows whose contents include those kept
  /// under namespace `ns` (decoded as a window). The default: that window.
  /// The sliced operator maps a slice to the windows it belongs to.
  virtual void windows_of_namespace(const time_window& ns, std::vector<time_window>& out) const {
    out.push_back(ns);
  }

  /// Processing time: the job's clock when opened with one, else (tests) the
  /// last time passed to `on_processing_time`, 0 before that.
  event_time processing_now() const {
    if (clock_)
      return clock_->now();
    // Driven directly (tests): the last time given to on_processing_time.
    const auto t = backend_->current_processing_time();
    return t == min_watermark ? 0 : t;
  }

  // Appends one result row for the current key: key fields, the window (or
  // the firing number of the global window), the aggregates' results.
  void append_row(const time_window& actual, const accumulator* accs, std::int64_t fire) {
    const auto& p = *plan_;
    if (!builder_)
      builder_.emplace(p.output);
    auto& b = *builder_;
    auto key_values = must(state::decode_key(backend_->current_key()));
    const std::size_t nk = key_values.size();
    for (std::size_t k = 0; k < nk; ++k)
      b.col(k).append_value(key_values[k]);
    std::size_t next = nk;
    if (p.assigner->is_global()) {
      b.col(next++).append_int(fire);
      b.timestamps().push_back(max_watermark);
    } else {
      b.col(next++).append_int(actual.start);
      b.col(next++).append_int(actual.end);
      b.timestamps().push_back(actual.max_timestamp());
    }
    p.aggregates.append_results(accs, &b.col(next));
    b.commit_row();
  }

  /// Emits the rows appended since the last flush as one batch.
  void flush(output_collector& out) {
    if (!builder_ || builder_->rows() == 0)
      return;
    emitted_ += builder_->rows();
    out.collect(builder_->finish());
  }

  std::shared_ptr<const window_plan::impl> plan_;
  std::shared_ptr<const contents_function> contents_fn_;
  std::unique_ptr<state::keyed_state_backend> backend_;
  state::aggregating_state<row_input, accumulators, std::monostate> contents_;
  const processing_clock* clock_ = nullptr;
  std::string name_;        ///< the operator's name (for logs)
  std::size_t subtask_ = 0; ///< this subtask's index
  std::uint64_t next_seq_ = 0;
  std::uint64_t late_ = 0;
  std::uint64_t emitted_ = 0;

  // Scratch reused across rows and batches.
  std::optional<batch_builder> builder_;
  std::string key_scratch_;
};

} // namespace weir::window::internal
