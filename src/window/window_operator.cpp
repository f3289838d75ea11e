// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"

#include "aggregates.hpp"

#include "weir/core/key_group.hpp"

#include <algorithm>
#include <limits>
#include <map>
#include <stdexcept>
#include <unordered_map>
#include <utility>

namespace weir::window {

event_time window_start(event_time ts, std::int64_t offset, std::int64_t size) noexcept {
  // Floored modulo keeps pre-epoch timestamps in the right window (C++'s %
  // truncates towards zero: -1 % 10 == -1). Reducing both operands first
  // keeps `ts - offset` from overflowing near the ends of the int64 range.
  std::int64_t r = (ts % size - offset % size) % size;
  if (r < 0)
    r += size;
  return ts - r;
}

expected<tumbling_event_time_windows>
tumbling_event_time_windows::make(std::chrono::milliseconds size,
                                  std::chrono::milliseconds offset) {
  if (size.count() <= 0)
    return make_error(errc::invalid_argument,
                      "tumbling window size must be positive, got "
                        + std::to_string(size.count()) + "ms");
  if (offset.count() <= -size.count() || offset.count() >= size.count())
    return make_error(errc::invalid_argument,
                      "tumbling window offset must satisfy |offset| < size, got offset "
                        + std::to_string(offset.count()) + "ms for size "
                        + std::to_string(size.count()) + "ms");
  return tumbling_event_time_windows{size, offset};
}

void tumbling_event_time_windows::assign(event_time ts,
                                         std::vector<time_window>& out) const {
  auto start = window_start(ts, offset_.count(), size_.count());
  out.push_back(time_window{start, start + size_.count()});
}

expected<type_id> check_aggregate(std::string_view call, const schema& input) {
  auto fn = internal::parse_aggregate(call, input);
  if (!fn)
    return fn.error();
  return fn->result_type;
}

struct window_plan::impl {
  schema_ptr input;
  schema_ptr output;
  std::vector<std::size_t> key_fields;
  std::shared_ptr<const window_assigner> assigner;
  internal::aggregate_set aggregates;
  std::int64_t allowed_lateness = 0; // ms
};

namespace {

// Windows ordered by end first: that is firing order (then start, so
// windows sharing an end but not a start stay distinct).
struct by_end {
  bool operator()(const time_window& a, const time_window& b) const noexcept {
    return a.end != b.end ? a.end < b.end : a.start < b.start;
  }
};

// Flink's WindowOperator.cleanupTime: max_timestamp + allowed_lateness,
// saturating at Long.MAX_VALUE.
event_time cleanup_time(const time_window& w, std::int64_t lateness) noexcept {
  event_time out;
  if (__builtin_add_overflow(w.max_timestamp(), lateness, &out))
    return max_watermark;
  return out;
}

struct key_state {
  std::vector<value> key_values;
  std::vector<internal::accumulator> accs;
  bool refire_pending = false;
};

struct window_state {
  std::unordered_map<std::string, key_state> keys;
};

using window_map = std::map<time_window, window_state, by_end>;

class window_operator_impl final : public window_operator {
public:
  explicit window_operator_impl(std::shared_ptr<const window_plan::impl> plan)
    : plan_(std::move(plan)) {
  }

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    const record_batch& in = *batch;
    if (in.num_rows == 0)
      return;
    if (!in.has_timestamps())
      throw std::logic_error("window operator received a batch without event "
                             "timestamps; assign event time at the source");
    const auto& p = *plan_;
    const std::size_t num_aggs = p.aggregates.size();
    auto args = p.aggregates.evaluate(in);

    targets_.clear();
    late_rows_.clear();
    refires_.clear();
    for (std::size_t row = 0; row < in.num_rows; ++row) {
      const event_time ts = in.timestamps[row];
      assigned_.clear();
      p.assigner->assign(ts, assigned_);
      bool key_encoded = false;
      bool accepted = false;
      for (const auto& w : assigned_) {
        if (cleanup_time(w, p.allowed_lateness) <= watermark_)
          continue; // late for this window: its state is gone
        accepted = true;
        if (!key_encoded) {
          key_scratch_.clear();
          encode_key(in, p.key_fields, row, key_scratch_);
          key_encoded = true;
        }
        auto wit = windows_.try_emplace(w).first;
        auto& keys = wit->second.keys;
        auto kit = keys.find(key_scratch_);
        if (kit == keys.end()) {
          key_state ks;
          ks.key_values.reserve(p.key_fields.size());
          for (auto idx : p.key_fields)
            ks.key_values.push_back(in.columns[idx].get(row));
          ks.accs.resize(num_aggs);
          kit = keys.emplace(key_scratch_, std::move(ks)).first;
          ++num_states_;
        }
        key_state& ks = kit->second;
        targets_.push_back(
          internal::row_target{static_cast<std::uint32_t>(row), ks.accs.data()});
        // EventTimeTrigger.onElement: FIRE when the watermark is already past
        // the window (a late firing within allowed lateness).
        if (w.max_timestamp() <= watermark_ && !ks.refire_pending) {
          ks.refire_pending = true;
          refires_.emplace_back(w, &ks);
        }
      }
      if (!accepted)
        late_rows_.push_back(static_cast<std::uint32_t>(row));
    }
    p.aggregates.update(args, targets_);

    if (!refires_.empty()) {
      batch_builder builder{p.output};
      for (auto& [w, ks] : refires_) {
        append_result(builder, w, *ks);
        ks->refire_pending = false;
      }
      emitted_ += builder.rows();
      out.collect(builder.finish());
    }
    if (!late_rows_.empty()) {
      late_ += late_rows_.size();
      out.collect_side(1, std::make_shared<const record_batch>(in.take(late_rows_)));
    }
  }

  void process_watermark(event_time wm, output_collector& out) override {
    if (wm <= watermark_)
      return; // a watermark never goes back; nothing new to fire
    const event_time prev = watermark_;
    watermark_ = wm;
    const auto& p = *plan_;

    // Windows with max_timestamp <= prev fired when prev arrived (or, if
    // created later, on the element that created them): start after them.
    auto it = windows_.upper_bound(
      time_window{std::numeric_limits<event_time>::max(), prev + 1});
    batch_builder builder{p.output};
    std::vector<std::pair<const std::string*, const key_state*>> sorted;
    for (; it != windows_.end() && it->first.max_timestamp() <= wm; ++it) {
      sorted.clear();
      for (const auto& [k, ks] : it->second.keys)
        sorted.emplace_back(&k, &ks);
      std::sort(sorted.begin(), sorted.end(),
                [](const auto& a, const auto& b) { return *a.first < *b.first; });
      for (const auto& [k, ks] : sorted)
        append_result(builder, it->first, *ks);
    }
    if (builder.rows() > 0) {
      emitted_ += builder.rows();
      out.collect(builder.finish());
    }

    // Drop windows whose cleanup time has passed; ordered by end, so a
    // prefix of the map (every window has the same allowed lateness).
    while (!windows_.empty()
           && cleanup_time(windows_.begin()->first, p.allowed_lateness) <= wm) {
      num_states_ -= windows_.begin()->second.keys.size();
      windows_.erase(windows_.begin());
    }
    out.emit_watermark(wm);
  }

  std::uint64_t late_records() const noexcept override { return late_; }
  std::uint64_t emitted_results() const noexcept override { return emitted_; }
  std::size_t active_states() const noexcept override { return num_states_; }
  event_time current_watermark() const noexcept override { return watermark_; }

private:
  void append_result(batch_builder& b, const time_window& w, const key_state& ks) {
    const auto& p = *plan_;
    const std::size_t nk = p.key_fields.size();
    for (std::size_t k = 0; k < nk; ++k)
      b.col(k).append_value(ks.key_values[k]);
    b.col(nk).append_int(w.start);
    b.col(nk + 1).append_int(w.end);
    p.aggregates.append_results(ks.accs.data(), &b.col(nk + 2));
    b.timestamps().push_back(w.max_timestamp());
    b.commit_row();
  }

  std::shared_ptr<const window_plan::impl> plan_;
  window_map windows_;
  event_time watermark_ = min_watermark;
  std::uint64_t late_ = 0;
  std::uint64_t emitted_ = 0;
  std::size_t num_states_ = 0;

  // Scratch buffers reused across batches.
  std::vector<time_window> assigned_;
  std::string key_scratch_;
  std::vector<internal::row_target> targets_;
  std::vector<std::uint32_t> late_rows_;
  std::vector<std::pair<time_window, key_state*>> refires_;
};

} // namespace

expected<window_plan> window_plan::make(const schema_ptr& input,
                                        window_operator_spec spec) {
  if (!input)
    return make_error(errc::invalid_argument, "window: no input schema");
  if (!spec.assigner)
    return make_error(errc::invalid_argument, "window: no window assigner");
  if (spec.allowed_lateness.count() < 0)
    return make_error(errc::invalid_argument,
                      "window: allowed_lateness must not be negative, got "
                        + std::to_string(spec.allowed_lateness.count()) + "ms");
  auto p = std::make_shared<impl>();
  p->input = input;
  p->assigner = std::move(spec.assigner);
  p->allowed_lateness = spec.allowed_lateness.count();

  std::vector<field> out_fields;
  for (const auto& name : spec.key_by) {
    auto idx = input->index_of(name);
    if (!idx)
      return make_error(errc::invalid_argument,
                        "window: unknown key field '" + name + "' (fields: "
                          + input->to_string() + ")");
    if (std::find(p->key_fields.begin(), p->key_fields.end(), *idx)
        != p->key_fields.end())
      return make_error(errc::invalid_argument,
                        "window: key field '" + name + "' is listed twice");
    p->key_fields.push_back(*idx);
    out_fields.push_back(input->at(*idx));
  }
  for (const char* name : {"window_start", "window_end"}) {
    if (std::find(spec.key_by.begin(), spec.key_by.end(), name) != spec.key_by.end())
      return make_error(errc::invalid_argument,
                        std::string{"window: key field '"} + name
                          + "' clashes with the window field of that name");
    out_fields.push_back(field{name, type_id::timestamp});
  }

  auto aggs = internal::aggregate_set::make(spec.aggregates, *input);
  if (!aggs)
    return aggs.error();
  for (auto& f : aggs->output_fields()) {
    for (const auto& existing : out_fields)
      if (existing.name == f.name)
        return make_error(errc::invalid_argument,
                          "aggregate '" + f.name
                            + "': name clashes with the "
                            + (existing.name == "window_start"
                                   || existing.name == "window_end"
                                 ? "window"
                                 : "key")
                            + " field of that name");
    out_fields.push_back(std::move(f));
  }
  p->aggregates = std::move(*aggs);
  p->output = make_schema(std::move(out_fields));
  return window_plan{std::move(p)};
}

const schema_ptr& window_plan::output_schema() const noexcept {
  return impl_->output;
}

const std::vector<std::size_t>& window_plan::key_fields() const noexcept {
  return impl_->key_fields;
}

stream_operator_ptr window_plan::make_operator() const {
  return std::make_unique<window_operator_impl>(impl_);
}

} // namespace weir::window
