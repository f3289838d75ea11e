// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/tumbling_windows.hpp"

#include "aggregates.hpp"

#include "weir/core/key_group.hpp"
#include "weir/expr/random.hpp"
#include "weir/state/keyed_process_function.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <algorithm>
#include <bit>
#include <cstring>
#include <deque>
#include <limits>
#include <map>
#include <numeric>
#include <unordered_map>
#include <stdexcept>
#include <utility>

namespace weir::window {

expected<type_id> check_aggregate(std::string_view call, const schema& input) {
  auto fn = internal::parse_aggregate(call, input);
  if (!fn)
    return fn.error();
  return fn->result_type;
}

/// Sliced aggregation (Flink SQL's `SliceAssigners` / `SlicingWindowOperator`;
/// Carbone et al., "Cutty: Aggregate Sharing for User-Defined Windows",
/// CIKM 2016): event-time tumbling and sliding windows cut into slices of
/// gcd(size, slide) ms; each record updates the accumulator of its one slice
/// (not of every window holding it), and a window's result is the merge of
/// its slices when the watermark passes its end. The operator keeps, per
/// slice, the keys with contents there, so firing needs no timer per key and
/// window. Used when nothing can observe the difference: the event-time
/// trigger, no allowed lateness, no evictor, mergeable aggregates (or one
/// slice per window), and no gaps between windows (slide <= size: a record
/// between two windows counts as late, which needs the per-window path).
/// All times in ms.
struct slicing_plan {
  std::int64_t size = 0;
  std::int64_t slide = 0;  ///< = size for tumbling windows
  std::int64_t offset = 0;
  std::int64_t slice = 0;  ///< gcd(size, slide)
  std::int64_t end_offset = 0; ///< window ends are congruent to it modulo slide
};

struct window_plan::impl {
  schema_ptr input;
  schema_ptr output;
  std::vector<std::size_t> key_fields;
  std::shared_ptr<const window_assigner> assigner;
  std::shared_ptr<const window::trigger> trigger;
  std::shared_ptr<const window::evictor> evictor;
  internal::aggregate_set aggregates;
  std::int64_t allowed_lateness = 0; // ms
  bool buffered = false;             // keep records, aggregate when firing
  /// Set when the windows are aggregated by slices (see `slicing_plan`).
  std::optional<slicing_plan> slicing;
  /// Set when the aggregation can be split into a local and a global phase
  /// (see `window_plan::supports_local_aggregation`): the partial rows'
  /// schema.
  schema_ptr partial;
  /// The input columns the local phase reads (keys, aggregate arguments).
  std::vector<std::size_t> local_reads;
};

namespace {

// -- names of the operator's keyed state -------------------------------------

constexpr std::string_view contents_state = "window-contents";
constexpr std::string_view rows_state = "window-rows";
constexpr std::string_view trigger_state = "window-trigger";
constexpr std::string_view fires_state = "window-fires";
constexpr std::string_view merging_state = "window-merging-set";
constexpr std::string_view slices_watermark_state = "window-slices-watermark";

// A window as a state namespace: the start as a big-endian u64 with the
// sign bit flipped (byte order is numeric order), then the length end -
// start, big-endian, in 7 bytes when it fits (15 bytes in all: a string
// kept inline, no allocation per state entry) or else 8.
void put_ordered(std::string& out, std::int64_t x) {
  auto u = static_cast<std::uint64_t>(x) ^ (std::uint64_t{1} << 63);
  for (int shift = 56; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((u >> shift) & 0xFF));
}

std::uint64_t get_be(std::string_view in) {
  std::uint64_t u = 0;
  for (char c : in)
    u = (u << 8) | static_cast<unsigned char>(c);
  return u;
}

std::int64_t get_ordered(std::string_view in) {
  return static_cast<std::int64_t>(get_be(in.substr(0, 8)) ^ (std::uint64_t{1} << 63));
}

void encode_window_into(std::string& out, const time_window& w) {
  out.clear();
  put_ordered(out, w.start);
  const auto length = static_cast<std::uint64_t>(w.end) - static_cast<std::uint64_t>(w.start);
  const int top = length >> 56 == 0 ? 48 : 56;
  for (int shift = top; shift >= 0; shift -= 8)
    out.push_back(static_cast<char>((length >> shift) & 0xFF));
}

std::string encode_window(const time_window& w) {
  std::string out;
  encode_window_into(out, w);
  return out;
}

time_window decode_window(std::string_view ns) {
  if (ns.size() != 15 && ns.size() != 16)
    throw std::logic_error("window operator: a timer has a namespace that is not a window");
  const auto start = get_ordered(ns);
  const auto length = get_be(ns.substr(8));
  return time_window{start, static_cast<std::int64_t>(static_cast<std::uint64_t>(start) + length)};
}

// Flink's WindowOperator.cleanupTime: for event time, max_timestamp +
// allowed_lateness (saturating at Long.MAX_VALUE); otherwise max_timestamp.
event_time saturating_add(event_time a, std::int64_t b) noexcept {
  event_time out;
  if (__builtin_add_overflow(a, b, &out))
    return max_watermark;
  return out;
}

// One record as the aggregating state's input.
struct row_input {
  const record_batch* batch = nullptr;
  const std::vector<column>* args = nullptr;
  std::uint32_t row = 0;
  std::uint64_t seq = 0;
};

using accumulators = internal::accumulator_list;

class contents_function final
  : public state::aggregate_function<row_input, accumulators, std::monostate> {
public:
  explicit contents_function(const internal::aggregate_set* aggs) : aggs_(aggs) {}
  accumulators create_accumulator() const override { return accumulators(aggs_->size()); }
  void add(const row_input& in, accumulators& acc) const override {
    check(acc);
    aggs_->update_row(*in.batch, *in.args, in.row, in.seq, acc.data());
  }
  std::monostate get_result(const accumulators&) const override { return {}; }
  void merge(accumulators& into, const accumulators& from) const override {
    check(into);
    check(from);
    aggs_->merge(into.data(), from.data());
  }

  /// Throws when `acc` does not hold one accumulator per aggregate: state
  /// restored from a checkpoint of a window with other aggregates.
  const accumulators& check(const accumulators& acc) const {
    if (acc.size() != aggs_->size())
      throw std::runtime_error("window state holds " + std::to_string(acc.size())
                               + " accumulators per window, but the window has "
                               + std::to_string(aggs_->size())
                               + " aggregates: was the checkpoint taken with other "
                                 "aggregates? (start over with --fresh)");
    return acc;
  }

private:
  const internal::aggregate_set* aggs_;
};

/// A buffered record: arrival number, event time (ms), every input field.
using buffered_row = std::tuple<std::uint64_t, std::int64_t, std::vector<value>>;
using window_pair = std::pair<std::int64_t, std::int64_t>;

// 0, 1, ..., n - 1.
std::vector<std::size_t> first_indices(std::size_t n) {
  std::vector<std::size_t> out(n);
  for (std::size_t i = 0; i < n; ++i)
    out[i] = i;
  return out;
}

template <class T>
T must(expected<T> x) {
  if (!x)
    throw std::logic_error("window operator state: " + x.error().message);
  return std::move(*x);
}

// The first eight bytes at `p` as a number that orders as the bytes do.
std::uint64_t byte_order_word(const char* p) noexcept {
  std::uint64_t w = 0;
  std::memcpy(&w, p, sizeof w);
  if constexpr (std::endian::native == std::endian::little)
    w = __builtin_bswap64(w);
  return w;
}

// std::string_view::compare (byte order) for encoded keys, without a call
// to memcmp for keys of 8 to 16 bytes of equal length (an int64 key is 9):
// their first and last eight bytes decide.
int compare_key_bytes(std::string_view a, std::string_view b) noexcept {
  if (a.size() == b.size() && a.size() >= 8 && a.size() <= 16) {
    for (const std::size_t at : {std::size_t{0}, a.size() - 8}) {
      const std::uint64_t x = byte_order_word(a.data() + at);
      const std::uint64_t y = byte_order_word(b.data() + at);
      if (x != y)
        return x < y ? -1 : 1;
    }
    return 0;
  }
  return a.compare(b);
}

class window_operator_impl final : public window_operator {
public:
  window_operator_impl(std::shared_ptr<const window_plan::impl> plan, bool partial_input)
    : plan_(std::move(plan)),
      contents_fn_(std::make_shared<const contents_function>(&plan_->aggregates)),
      partial_input_(partial_input) {
    init_backend(state::key_group_range{0, 127}, 128);
  }

  void open(const operator_context& ctx) override {
    clock_ = ctx.clock;
    init_backend(state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                                    ctx.subtask_index),
                 ctx.max_parallelism);
  }

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    const record_batch& in = *batch;
    if (in.num_rows == 0)
      return;
    const auto& p = *plan_;
    const bool by_event_time = p.assigner->is_event_time();
    if (by_event_time && !in.has_timestamps())
      throw std::logic_error("window operator received a batch without event "
                             "timestamps; assign event time at the source");
    if (partial_input_) {
      merge_partials(in, out);
      flush(out);
      return;
    }
    const event_time now = processing_now();
    auto args = p.aggregates.evaluate(in);
    late_rows_.clear();
    if (p.slicing) {
      add_batch_to_slices(in, args);
    } else {
      for (std::uint32_t row = 0; row < in.num_rows; ++row) {
        const event_time ts = in.has_timestamps() ? in.timestamps[row] : now;
        key_scratch_.clear();
        encode_key(in, p.key_fields, row, key_scratch_);
        backend_->set_current_key(key_scratch_);
        const std::uint64_t seq = next_seq_++;
        if (!process_row(in, args, row, seq, by_event_time ? ts : now, ts))
          late_rows_.push_back(row);
      }
    }
    flush(out);
    if (!late_rows_.empty()) {
      late_ += late_rows_.size();
      out.collect_side(1, std::make_shared<record_batch>(in.take(late_rows_)));
    }
  }

  // The sliced path of process_batch: each row's accumulator in its slice,
  // the state of the rows ahead prefetched (a large keyed state otherwise
  // costs two cache misses per row).
  void add_batch_to_slices(const record_batch& in, const std::vector<column>& args) {
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

  void process_watermark(event_time wm, output_collector& out) override {
    const event_time previous = backend_->current_watermark();
    if (wm <= previous)
      return; // a watermark never goes back; nothing new to fire
    backend_->advance_watermark(wm, [this](event_time t) { on_timer(t, true); });
    if (plan_->slicing)
      fire_slices(previous, wm);
    flush(out);
    out.emit_watermark(wm);
  }

  void on_processing_time(event_time now, output_collector& out) override {
    backend_->advance_processing_time(now, [this](event_time t) { on_timer(t, false); });
    flush(out);
  }

  std::optional<event_time> next_processing_timer() const override {
    return backend_->next_processing_timer();
  }

  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
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
    out.keyed_state = backend_->snapshot();
    for (const auto& key : marked) {
      backend_->set_current_key(key);
      backend_->set_current_namespace({});
      slices_watermark_.clear();
    }
    out.operator_state.clear();
    state::wire::put_u64(out.operator_state, next_seq_);
    // The watermark at the barrier: a restored operator judges lateness as
    // the uninterrupted one did (watermarks are not replayed).
    state::wire::put_u64(out.operator_state,
                         static_cast<std::uint64_t>(backend_->current_watermark()));
  }

  void restore_state(const operator_restore& in) override {
    for (const auto& [group, bytes] : in.key_groups) {
      auto r = backend_->restore_key_group(group, bytes);
      if (!r)
        throw std::runtime_error("window operator: cannot restore key group "
                                 + std::to_string(group) + " of checkpoint "
                                 + std::to_string(in.checkpoint_id) + ": " + r.error().message);
    }
    // Arrival numbers only order records of one key. Records restored carry
    // numbers from before the checkpoint; new ones start above every number
    // any subtask could have given out by then, whichever subtask's counter
    // this one inherits after rescaling: the epoch is the checkpoint id.
    next_seq_ = std::max(next_seq_, (in.checkpoint_id + 1) << 40);
    std::optional<event_time> watermark;
    // After scaling up, a subtask that inherits no operator state reads every
    // previous subtask's: all of them held the same watermark at the barrier
    // (every channel delivers the same watermarks before it), and without it
    // records late before the checkpoint would count as on time here.
    const auto& states =
      in.operator_states.empty() ? in.union_operator_states : in.operator_states;
    for (const auto& s : states) {
      std::string_view v = s;
      std::uint64_t seq = 0;
      if (!state::wire::get_u64(v, seq))
        throw std::runtime_error("window operator: malformed operator state in checkpoint "
                                 + std::to_string(in.checkpoint_id));
      next_seq_ = std::max(next_seq_, seq);
      std::uint64_t wm = 0;
      if (state::wire::get_u64(v, wm)) {
        auto w = static_cast<event_time>(wm);
        watermark = watermark ? std::min(*watermark, w) : w;
      }
    }
    // Every timer at or before it fired before the checkpoint was taken.
    if (watermark && *watermark > min_watermark)
      backend_->advance_watermark(*watermark, [](event_time) {});
    // The slice index is derived state: rebuilt from the contents restored.
    if (plan_->slicing) {
      slices_.clear();
      backend_->for_each_key(contents_state, [this](std::string_view key, std::string_view ns) {
        slices_[decode_window(ns).start].keys.emplace_back(key);
      });
    }
    if (slices_watermark_) {
      // The watermark of the key groups' previous subtask (see snapshot_state).
      std::vector<std::string> marked;
      backend_->for_each_key(slices_watermark_state,
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

  std::uint64_t late_records() const noexcept override { return late_; }
  std::uint64_t emitted_results() const noexcept override { return emitted_; }
  std::size_t active_states() const noexcept override {
    return backend_->num_entries(contents_state) + backend_->num_entries(rows_state);
  }
  event_time current_watermark() const noexcept override {
    return backend_->current_watermark();
  }

private:
  // -- trigger context ------------------------------------------------------

  class context final : public on_merge_context {
  public:
    context(window_operator_impl& op, const time_window& w,
            const std::vector<time_window>* merged = nullptr)
      : op_(op), window_(w), merged_(merged) {}

    event_time current_watermark() const override { return op_.backend_->current_watermark(); }
    event_time current_processing_time() const override { return op_.processing_now(); }
    void register_event_time_timer(event_time t) override {
      op_.set_namespace(window_);
      op_.backend_->register_event_time_timer(t);
    }
    void delete_event_time_timer(event_time t) override {
      op_.set_namespace(window_);
      op_.backend_->delete_event_time_timer(t);
    }
    void register_processing_time_timer(event_time t) override {
      op_.set_namespace(window_);
      op_.backend_->register_processing_time_timer(t);
    }
    void delete_processing_time_timer(event_time t) override {
      op_.set_namespace(window_);
      op_.backend_->delete_processing_time_timer(t);
    }
    std::optional<std::int64_t> state() const override {
      op_.set_namespace(window_);
      return op_.trigger_state_.value();
    }
    void set_state(std::int64_t v) override {
      op_.set_namespace(window_);
      op_.trigger_state_.update(v);
    }
    void clear_state() override {
      op_.set_namespace(window_);
      op_.trigger_state_.clear();
    }
    void merge_state(std::int64_t (*combine)(std::int64_t, std::int64_t)) override {
      std::optional<std::int64_t> acc;
      auto fold = [&](std::optional<std::int64_t> v) {
        if (v)
          acc = acc ? combine(*acc, *v) : *v;
      };
      if (merged_) {
        for (const auto& m : *merged_) {
          if (m == window_)
            continue;
          op_.set_namespace(m);
          fold(op_.trigger_state_.value());
          op_.trigger_state_.clear();
        }
      }
      op_.set_namespace(window_);
      fold(op_.trigger_state_.value());
      if (acc)
        op_.trigger_state_.update(*acc);
    }

  private:
    window_operator_impl& op_;
    time_window window_;
    const std::vector<time_window>* merged_;
  };

  // -- setup ------------------------------------------------------------------

  void init_backend(state::key_group_range range, std::size_t max_parallelism) {
    backend_ = std::make_unique<state::keyed_state_backend>(range, max_parallelism);
    const auto& p = *plan_;
    if (p.buffered)
      rows_ = must(backend_->get_list_state<buffered_row>(rows_state));
    else
      contents_ = must(backend_->get_aggregating_state<row_input, accumulators, std::monostate>(
        contents_state, contents_fn_));
    trigger_state_ = must(backend_->get_value_state<std::int64_t>(trigger_state));
    if (p.assigner->is_global())
      fires_ = must(backend_->get_value_state<std::int64_t>(fires_state));
    if (p.assigner->as_merging())
      merging_set_ = must(backend_->get_map_state<window_pair, window_pair>(merging_state));
    if (p.slicing && p.slicing->slide < p.slicing->size)
      slices_watermark_ = must(backend_->get_value_state<std::int64_t>(slices_watermark_state));
  }

  event_time processing_now() const {
    if (clock_)
      return clock_->now();
    // Driven directly (tests): the last time given to on_processing_time.
    const auto t = backend_->current_processing_time();
    return t == min_watermark ? 0 : t;
  }

  void set_namespace(const time_window& w) {
    encode_window_into(ns_scratch_, w); // reuses the buffer: no allocation per call
    scratch_slice_.reset();
    backend_->set_current_namespace(ns_scratch_);
  }

  event_time cleanup_time(const time_window& w) const noexcept {
    if (plan_->assigner->is_event_time())
      return saturating_add(w.max_timestamp(), plan_->allowed_lateness);
    return w.max_timestamp();
  }

  bool is_window_late(const time_window& w) const noexcept {
    return plan_->assigner->is_event_time()
           && cleanup_time(w) <= backend_->current_watermark();
  }

  void register_cleanup_timer(const time_window& w) {
    if (plan_->assigner->is_global())
      return; // the global window never ends
    const auto t = cleanup_time(w);
    if (t == max_watermark)
      return; // no timer for the end of time
    set_namespace(w);
    if (plan_->assigner->is_event_time())
      backend_->register_event_time_timer(t);
    else
      backend_->register_processing_time_timer(t);
  }

  void delete_cleanup_timer(const time_window& w) {
    if (plan_->assigner->is_global())
      return;
    const auto t = cleanup_time(w);
    if (t == max_watermark)
      return;
    set_namespace(w);
    if (plan_->assigner->is_event_time())
      backend_->delete_event_time_timer(t);
    else
      backend_->delete_processing_time_timer(t);
  }

  // -- merging window set (Flink's MergingWindowSet) ----------------------------

  using window_mapping = std::map<time_window, time_window>;

  window_mapping load_mapping() {
    backend_->set_current_namespace({});
    window_mapping m;
    for (const auto& [w, s] : merging_set_.entries())
      m.emplace(time_window{w.first, w.second}, time_window{s.first, s.second});
    return m;
  }

  void persist_mapping(const window_mapping& m) {
    backend_->set_current_namespace({});
    merging_set_.clear();
    for (const auto& [w, s] : m)
      merging_set_.put(window_pair{w.start, w.end}, window_pair{s.start, s.end});
  }

  // Adds `w` to the key's windows, merging as the assigner says; returns the
  // window `w` ended up in (Flink's MergingWindowSet.addWindow).
  time_window add_window(window_mapping& mapping, const time_window& w) {
    std::vector<time_window> all;
    all.reserve(mapping.size() + 1);
    for (const auto& [k, v] : mapping)
      all.push_back(k);
    all.push_back(w);
    merges_.clear();
    plan_->assigner->as_merging()->merge_windows(std::move(all), merges_);

    time_window result = w;
    bool merged_new = false;
    for (auto& g : merges_) {
      auto& merged = g.merged;
      if (auto it = std::find(merged.begin(), merged.end(), w); it != merged.end()) {
        merged.erase(it);
        merged_new = true;
        result = g.result;
      }
      const time_window target_state = mapping.at(merged.front());
      std::vector<time_window> merged_states;
      for (const auto& m : merged) {
        auto it = mapping.find(m);
        if (it != mapping.end()) {
          merged_states.push_back(it->second);
          mapping.erase(it);
        }
      }
      mapping[g.result] = target_state;
      std::erase(merged_states, target_state);
      if (!(merged.size() == 1 && merged.front() == g.result))
        on_merge(g.result, merged, target_state, merged_states);
    }
    if (merges_.empty() || (result == w && !merged_new))
      mapping[result] = result;
    return result;
  }

  void on_merge(const time_window& result, const std::vector<time_window>& merged,
                const time_window& state_window, const std::vector<time_window>& merged_states) {
    const auto& p = *plan_;
    {
      context ctx{*this, result, &merged};
      p.trigger->on_merge(result, ctx);
    }
    for (const auto& m : merged) {
      context ctx{*this, m};
      p.trigger->clear(m, ctx);
      delete_cleanup_timer(m);
    }
    if (merged_states.empty())
      return;
    std::vector<std::string> sources;
    for (const auto& s : merged_states)
      sources.push_back(encode_window(s));
    const auto target = encode_window(state_window);
    if (p.buffered) {
      rows_.merge_namespaces(target, sources);
      backend_->set_current_namespace(target);
      std::vector<buffered_row> rows{rows_.get().begin(), rows_.get().end()};
      std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return std::get<0>(a) < std::get<0>(b);
      });
      rows_.update(std::move(rows));
    } else {
      contents_.merge_namespaces(target, sources);
    }
  }

  // -- elements -------------------------------------------------------------------

  // Flink's WindowOperator.processElement for one row (the current key is
  // set). `at` places the row (event or processing time), `ts` is its event
  // time. Returns false when the row was late for every window.
  bool process_row(const record_batch& in, const std::vector<column>& args,
                   std::uint32_t row, std::uint64_t seq, event_time at, event_time ts) {
    const auto& p = *plan_;
    assigned_.clear();
    p.assigner->assign(at, assigned_);
    bool skipped = true;
    if (p.assigner->as_merging()) {
      auto mapping = load_mapping();
      for (const auto& w : assigned_) {
        const time_window actual = add_window(mapping, w);
        if (is_window_late(actual)) {
          mapping.erase(actual);
          continue;
        }
        skipped = false;
        add_to_window(in, args, row, seq, ts, mapping.at(actual), actual);
      }
      persist_mapping(mapping);
    } else {
      for (const auto& w : assigned_) {
        if (is_window_late(w))
          continue;
        skipped = false;
        add_to_window(in, args, row, seq, ts, w, w);
      }
    }
    if (!skipped)
      return true;
    // Skipped elements of event-time windows are late (ts + lateness <=
    // watermark); other windows never skip.
    return !p.assigner->is_event_time();
  }

  void add_to_window(const record_batch& in, const std::vector<column>& args,
                     std::uint32_t row, std::uint64_t seq, event_time ts,
                     const time_window& state_window, const time_window& actual) {
    const auto& p = *plan_;
    set_namespace(state_window);
    bool created = true;
    if (p.buffered) {
      std::vector<value> fields;
      fields.reserve(in.columns.size());
      for (const auto& c : in.columns)
        fields.push_back(c.get(row));
      rows_.add(buffered_row{seq, ts, std::move(fields)});
    } else {
      created = contents_.add(row_input{&in, &args, row, seq});
    }
    // The window already held records of this key, so the first of them
    // registered the trigger's end-of-window timer and the cleanup timer
    // (nothing deletes them while the contents exist); a trigger that does
    // nothing else on an element needs no call while the window is not yet
    // due. This skips two timer registrations per record and window.
    if (!created && !p.assigner->as_merging() && p.trigger->only_registers_window_end_timer()
        && actual.max_timestamp() > backend_->current_watermark())
      return;
    trigger_result r;
    {
      context ctx{*this, actual};
      r = p.trigger->on_element(ts, actual, ctx);
    }
    apply(r, actual, state_window);
    register_cleanup_timer(actual);
  }

  void apply(trigger_result r, const time_window& actual, const time_window& state_window) {
    if (is_fire(r))
      emit(actual, state_window);
    if (is_purge(r)) {
      set_namespace(state_window);
      if (plan_->buffered)
        rows_.clear();
      else
        contents_.clear();
    }
  }

  // -- sliced aggregation (see slicing_plan) ---------------------------------------

  // Window ends are the times congruent to offset + size modulo slide.
  // The first window end after slice `a` (the earliest window holding it).
  event_time first_end(event_time a) const noexcept {
    const auto& s = *plan_->slicing;
    return saturating_add(window_start(a, s.end_offset, s.slide), s.slide);
  }

  // The end of the last window holding slice `a`.
  event_time last_end(event_time a) const noexcept {
    const auto& s = *plan_->slicing;
    return saturating_add(window_start(a, s.offset, s.slide), s.size);
  }

  // The encoded namespace of the slice starting at `a`, kept for the
  // slices of the window being fired (a handful).
  std::string_view slice_namespace(event_time a) {
    for (const auto& [start, ns] : fire_namespaces_)
      if (start == a)
        return ns;
    auto& [start, ns] = fire_namespaces_.emplace_back(a, std::string{});
    encode_window_into(ns, time_window{a, saturating_add(a, plan_->slicing->slice)});
    return ns;
  }

  void set_slice_namespace(event_time a) {
    if (scratch_slice_ != a) { // consecutive rows mostly share a slice
      encode_window_into(ns_scratch_, time_window{a, saturating_add(a, plan_->slicing->slice)});
      scratch_slice_ = a;
    }
    backend_->set_current_namespace(ns_scratch_);
  }

  // Adds a row (current key set) to its slice; false when every window
  // holding it has fired (a late record).
  bool add_to_slice(const record_batch& in, const std::vector<column>& args,
                    std::uint32_t row, std::uint64_t seq, event_time ts) {
    const auto& s = *plan_->slicing;
    const event_time a = window_start(ts, s.offset, s.slice);
    if (last_end(a) - 1 <= backend_->current_watermark())
      return false;
    set_slice_namespace(a);
    if (contents_.add(row_input{&in, &args, row, seq}))
      slices_[a].keys.emplace_back(backend_->current_key());
    return true;
  }

  // The global phase of a two-phase aggregation: each row of `in` is a
  // partial result (keys, rows, encoded accumulators; event time = the
  // slice's last ms) merged into its slice. A late partial counts its rows
  // as late records (no side output: the plan has none).
  void merge_partials(const record_batch& in, output_collector& out) {
    const auto& s = *plan_->slicing;
    const std::size_t keys = plan_->key_fields.size();
    const column& rows = in.columns[keys];
    const column& accs = in.columns[keys + 1];
    window_start_cache slice_of{s.offset, s.slice};
    for (std::uint32_t row = 0; row < in.num_rows; ++row) {
      const event_time a = slice_of(in.timestamps[row]);
      if (last_end(a) - 1 <= backend_->current_watermark()) {
        const auto n = static_cast<std::uint64_t>(rows.ints[row]);
        late_ += n;
        out.count_late(n);
        continue;
      }
      std::string_view bytes = accs.str(row);
      if (!state::codec<accumulators>::decode(bytes, partial_scratch_) || !bytes.empty()
          || partial_scratch_.size() != plan_->aggregates.size())
        throw std::logic_error("window operator: a malformed partial aggregate");
      key_scratch_.clear();
      encode_key(in, partial_key_fields_, row, key_scratch_);
      backend_->set_current_key(key_scratch_);
      set_slice_namespace(a);
      if (contents_.merge_accumulator(partial_scratch_))
        slices_[a].keys.emplace_back(backend_->current_key());
    }
  }

  // Fires, in order of their ends, the windows the watermark passed in
  // (previous, wm] that hold a slice with contents.
  void fire_slices(event_time previous, event_time wm) {
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

  void fire_slices_through(event_time end, event_time wm) {
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
  void fire_window(event_time end) {
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
  void fire_last_windows() {
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

  /// The keys with contents in one slice, each once; the first `sorted`
  /// are in byte order (collect_fire_entries sorts them when it reads them).
  struct slice_keys {
    std::vector<std::string> keys;
    std::size_t sorted = 0;
  };

  using slice_iterator = std::map<event_time, slice_keys>::iterator;

  // fire_keys_ = the keys with contents in slices [lo, hi), in byte order,
  // each once.
  void collect_fire_keys(slice_iterator lo, slice_iterator hi) {
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
  void collect_fire_entries(slice_iterator lo, slice_iterator hi) {
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
  void merge_fire_runs() {
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
  const internal::accumulator* fold_slices(slice_iterator lo, slice_iterator hi) {
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

  // Drops, from the oldest, the slices `done(start)` says no later window
  // holds: their contents for every key, and their index entry.
  template <class Done>
  void drop_slices(Done done) {
    while (!slices_.empty() && done(slices_.begin()->first)) {
      auto node = slices_.extract(slices_.begin());
      set_slice_namespace(node.key());
      for (const auto& key : node.mapped().keys) {
        backend_->set_current_key(key);
        contents_.clear();
      }
    }
  }

  // -- timers -----------------------------------------------------------------------

  // Flink's WindowOperator.onEventTime / onProcessingTime; the backend set
  // the timer's key and namespace.
  void on_timer(event_time t, bool event_time_timer) {
    const auto& p = *plan_;
    const time_window w = decode_window(backend_->current_namespace());
    window_mapping mapping;
    time_window state_window = w;
    const bool merging = p.assigner->as_merging() != nullptr;
    if (merging) {
      mapping = load_mapping();
      auto it = mapping.find(w);
      if (it == mapping.end())
        return; // a timer of a window merged away (its trigger did not delete it)
      state_window = it->second;
    }
    trigger_result r;
    {
      context ctx{*this, w};
      r = event_time_timer ? p.trigger->on_event_time(t, w, ctx)
                           : p.trigger->on_processing_time(t, w, ctx);
    }
    apply(r, w, state_window);
    if (event_time_timer == p.assigner->is_event_time() && !p.assigner->is_global()
        && t == cleanup_time(w)) {
      clear_all_state(w, state_window);
      if (merging) {
        mapping.erase(w);
        persist_mapping(mapping);
      }
    }
  }

  void clear_all_state(const time_window& w, const time_window& state_window) {
    const auto& p = *plan_;
    set_namespace(state_window);
    if (p.buffered)
      rows_.clear();
    else
      contents_.clear();
    {
      context ctx{*this, w};
      p.trigger->clear(w, ctx);
    }
    if (fires_) {
      set_namespace(w);
      fires_.clear();
    }
  }

  // -- output -------------------------------------------------------------------------

  void emit(const time_window& actual, const time_window& state_window) {
    const auto& p = *plan_;
    set_namespace(state_window);
    if (p.buffered ? !fold_buffered(actual) : contents_.accumulator() == nullptr)
      return; // nothing in the window (Flink: "if (contents == null) return")
    std::int64_t fire = 0;
    if (p.assigner->is_global()) {
      set_namespace(actual);
      fire = fires_.value_or(0) + 1;
      fires_.update(fire);
    }
    // Read the accumulators after the last state write: a write may move them.
    const internal::accumulator* accs = fold_.data();
    if (!p.buffered) {
      set_namespace(state_window);
      accs = contents_fn_->check(*contents_.accumulator()).data();
    }
    append_row(actual, accs, fire);
  }

  // Appends one result row for the current key: key fields, the window (or
  // the firing number of the global window), the aggregates' results.
  void append_row(const time_window& actual, const internal::accumulator* accs,
                  std::int64_t fire) {
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

  // Evicts and aggregates the buffered rows of the current namespace into
  // fold_; false when there are none (Flink's EvictingWindowOperator).
  bool fold_buffered(const time_window& w) {
    const auto& p = *plan_;
    auto span = rows_.get();
    if (span.empty())
      return false;
    std::vector<buffered_row> rows{span.begin(), span.end()};
    bool changed = false;
    auto evict = [&](bool before) {
      if (!p.evictor)
        return;
      stamps_.clear();
      for (const auto& r : rows)
        stamps_.push_back(std::get<1>(r));
      std::vector<bool> drop(rows.size(), false);
      if (before)
        p.evictor->evict_before(stamps_, w, drop);
      else
        p.evictor->evict_after(stamps_, w, drop);
      std::vector<buffered_row> kept;
      for (std::size_t i = 0; i < rows.size(); ++i)
        if (!drop[i])
          kept.push_back(std::move(rows[i]));
      changed = changed || kept.size() != rows.size();
      rows = std::move(kept);
    };
    evict(true);
    fold_.assign(p.aggregates.size(), internal::accumulator{});
    if (!rows.empty()) {
      batch_builder bb{p.input};
      for (const auto& r : rows) {
        const auto& fields = std::get<2>(r);
        for (std::size_t c = 0; c < fields.size(); ++c)
          bb.col(c).append_value(fields[c]);
        bb.timestamps().push_back(std::get<1>(r));
        bb.commit_row();
      }
      auto batch = bb.finish();
      auto args = p.aggregates.evaluate(*batch);
      for (std::uint32_t i = 0; i < batch->num_rows; ++i)
        p.aggregates.update_row(*batch, args, i, std::get<0>(rows[i]), fold_.data());
    }
    const bool any = !rows.empty();
    evict(false);
    if (changed)
      rows_.update(std::move(rows));
    return any;
  }

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
  state::list_state<buffered_row> rows_;
  state::value_state<std::int64_t> trigger_state_;
  state::value_state<std::int64_t> fires_;
  state::map_state<window_pair, window_pair> merging_set_;
  state::value_state<std::int64_t> slices_watermark_;
  /// After a restore: key group -> the watermark its previous subtask had
  /// fired windows through, where above this subtask's (see snapshot_state).
  std::unordered_map<std::uint16_t, event_time> restored_fired_;
  const processing_clock* clock_ = nullptr;
  std::uint64_t next_seq_ = 0;
  std::uint64_t late_ = 0;
  std::uint64_t emitted_ = 0;

  // Scratch reused across rows and batches.
  std::optional<batch_builder> builder_;
  std::vector<time_window> assigned_;
  std::vector<merging_window_assigner::merge_group> merges_;
  bool partial_input_ = false;
  std::vector<std::size_t> partial_key_fields_ = first_indices(plan_->key_fields.size());
  accumulators partial_scratch_;
  std::string key_scratch_;
  std::string ns_scratch_;
  // add_batch_to_slices: the batch's encoded keys back to back, where each
  // ends, their state addresses, and the namespace being encoded.
  std::string batch_keys_;
  std::vector<std::size_t> batch_key_ends_;
  std::vector<state::key_address> batch_addresses_;
  std::string batch_ns_;
  std::optional<event_time> scratch_slice_; ///< the slice ns_scratch_ holds, if one
  std::vector<std::uint32_t> late_rows_;
  std::vector<event_time> stamps_;
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

  /// Sliced aggregation: slice start (ms) -> keys with contents in it.
  std::map<event_time, slice_keys> slices_;
};


/// The local phase of a two-phase window aggregation (Flink SQL's
/// `LocalSlicingWindowAggOperator`, chained before the key-by exchange):
/// folds the rows of each (key, slice) into accumulators and emits them as
/// partial rows, so the exchange and the window operator see one row per
/// key and slice instead of one per record. A partial is held until the
/// watermark passes its slice's last ms (it then goes out before that
/// watermark, so downstream it is never late), until a checkpoint barrier
/// (`prepare_snapshot_pre_barrier`: no state of its own), the subtask going
/// idle, the end of input, or more than `max_held` partials. A row whose slice the operator's watermark already passed is
/// emitted at once, keeping its place among the records, so the global
/// phase judges it late or not exactly as it would the record.
class local_window_aggregate final : public stream_operator {
public:
  explicit local_window_aggregate(std::shared_ptr<const window_plan::impl> plan)
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

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
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

  void process_watermark(event_time wm, output_collector& out) override {
    watermark_ = std::max(watermark_, wm);
    if (!partials_.empty() && last_ms(oldest_) <= watermark_)
      emit(out, watermark_);
    out.emit_watermark(wm);
  }

  void prepare_snapshot_pre_barrier(std::uint64_t, output_collector& out) override {
    emit(out, max_watermark);
  }

  void prepare_idle(output_collector& out) override { emit(out, max_watermark); }

  void finish(output_collector& out) override { emit(out, max_watermark); }

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
    return saturating_add(slice_start, plan_->slicing->slice - 1);
  }

  // A new partial for row `row`'s key and slice `a`; returns its index.
  std::size_t add_partial(const record_batch& in, std::uint32_t row, event_time a) {
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

  // The index of partials by (int64 key or null, slice): open addressing,
  // linear probing, at most half full.
  struct int_slot {
    std::int64_t key = 0;
    event_time slice = 0;
    partial* at = nullptr; // in partials_ (a deque: stable); null = empty slot
    bool null = false;
  };

  // The slot of (v, null, a): where it is, or the empty slot to put it in.
  std::size_t find_int(std::int64_t v, bool null, event_time a) {
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
  void rebuild_int_index(std::size_t slots) {
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
  void emit(output_collector& out, event_time through) {
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
  p->trigger = spec.trigger ? std::move(spec.trigger) : p->assigner->default_trigger();
  p->evictor = std::move(spec.evictor);
  p->allowed_lateness = p->assigner->is_event_time() ? spec.allowed_lateness.count() : 0;
  if (p->assigner->as_merging() && !p->trigger->can_merge())
    return make_error(errc::invalid_argument,
                      "window: " + p->trigger->describe() + " cannot be used with "
                        + p->assigner->describe() + ", whose windows merge");

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
  const bool global = p->assigner->is_global();
  const std::vector<field> shape_fields =
    global ? std::vector<field>{{"fire", type_id::int64}}
           : std::vector<field>{{"window_start", type_id::timestamp},
                                {"window_end", type_id::timestamp}};
  for (const auto& f : shape_fields) {
    if (std::find(spec.key_by.begin(), spec.key_by.end(), f.name) != spec.key_by.end())
      return make_error(errc::invalid_argument,
                        "window: key field '" + f.name
                          + "' clashes with the window field of that name");
    out_fields.push_back(f);
  }

  auto aggs = internal::aggregate_set::make(spec.aggregates, *input, true);
  if (!aggs)
    return aggs.error();
  for (auto& f : aggs->output_fields()) {
    for (const auto& existing : out_fields)
      if (existing.name == f.name) {
        const bool window_field = std::any_of(
          shape_fields.begin(), shape_fields.end(),
          [&](const field& s) { return s.name == existing.name; });
        return make_error(errc::invalid_argument,
                          "aggregate '" + f.name + "': name clashes with the "
                            + (window_field ? "window" : "key") + " field of that name");
      }
    out_fields.push_back(std::move(f));
  }
  p->aggregates = std::move(*aggs);
  // Evictors need the records; a fold (reduce) cannot merge two partial
  // results, so merging windows with one keep the records too.
  p->buffered = p->evictor != nullptr
                || (p->assigner->as_merging() != nullptr && p->aggregates.has_reduce());
  p->output = make_schema(std::move(out_fields));
  if (spec.allow_slicing && p->allowed_lateness == 0 && !p->buffered && !p->evictor
      && p->trigger->only_registers_window_end_timer()) {
    if (const auto* t = dynamic_cast<const tumbling_event_time_windows*>(p->assigner.get()))
      p->slicing = slicing_plan{t->size().count(), t->size().count(), t->offset().count(),
                                t->size().count()};
    else if (const auto* sl =
               dynamic_cast<const sliding_event_time_windows*>(p->assigner.get());
             sl && sl->slide() <= sl->size() && !p->aggregates.has_reduce())
      p->slicing = slicing_plan{sl->size().count(), sl->slide().count(),
                                sl->offset().count(),
                                std::gcd(sl->size().count(), sl->slide().count())};
  if (p->slicing) {
    auto& s = *p->slicing;
    s.end_offset = (s.offset % s.slide + s.size % s.slide) % s.slide;
  }
  }
  if (p->slicing && p->assigner->is_event_time()) {
    // Two phases give the same results when merging partial accumulators
    // cannot depend on how rows were split or ordered: not first/last/reduce
    // (arrival order), not float sums (rounding depends on the grouping),
    // not float min/max (a NaN first in a group hides the group's values).
    bool splittable = true;
    for (std::size_t i = 0; i < p->aggregates.size(); ++i) {
      const auto& fn = p->aggregates.function(i);
      switch (fn.kind) {
        case internal::aggregate_kind::first:
        case internal::aggregate_kind::last:
        case internal::aggregate_kind::reduce:
          splittable = false;
          break;
        case internal::aggregate_kind::sum:
        case internal::aggregate_kind::avg:
        case internal::aggregate_kind::min: // NaN makes float min/max order-dependent
        case internal::aggregate_kind::max:
          splittable = splittable && fn.input_type != type_id::float64;
          break;
        default:
          break;
      }
    }
    if (splittable) {
      std::vector<field> partial_fields;
      for (auto k : p->key_fields)
        partial_fields.push_back(input->at(k));
      partial_fields.push_back(field{"rows", type_id::int64});
      partial_fields.push_back(field{"partial", type_id::string});
      p->partial = make_schema(std::move(partial_fields));
      p->local_reads = p->key_fields;
      for (std::size_t i = 0; i < p->aggregates.size(); ++i)
        if (const auto& arg = p->aggregates.function(i).argument)
          for (auto c : arg->referenced_fields())
            p->local_reads.push_back(c);
    }
  }
  return window_plan{std::move(p)};
}

const schema_ptr& window_plan::output_schema() const noexcept {
  return impl_->output;
}

const std::vector<std::size_t>& window_plan::key_fields() const noexcept {
  return impl_->key_fields;
}

stream_operator_ptr window_plan::make_operator() const {
  return std::make_unique<window_operator_impl>(impl_, false);
}

bool window_plan::supports_local_aggregation() const noexcept {
  return impl_->partial != nullptr;
}

const schema_ptr& window_plan::partial_schema() const noexcept {
  return impl_->partial;
}

const std::vector<std::size_t>& window_plan::local_reads() const noexcept {
  return impl_->local_reads;
}

stream_operator_ptr window_plan::make_local_operator() const {
  if (!impl_->partial)
    throw std::logic_error("window_plan: this window has no local aggregation");
  return std::make_unique<local_window_aggregate>(impl_);
}

stream_operator_ptr window_plan::make_global_operator() const {
  if (!impl_->partial)
    throw std::logic_error("window_plan: this window has no local aggregation");
  return std::make_unique<window_operator_impl>(impl_, true);
}

} // namespace weir::window
