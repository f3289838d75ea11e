// SPDX-License-Identifier: Apache-2.0
#include "weir/window/window_operator.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/tumbling_windows.hpp"

#include "global_window_aggregate.hpp"
#include "internal/window_plan_impl.hpp"
#include "local_window_aggregate.hpp"
#include "merging_window_operator.hpp"
#include "per_window_operator.hpp"
#include "sliced_window_operator.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <utility>

// The plan resolves a spec once and chooses the strategy its operators use
// (src/window/README.md): sliced aggregation when `slicing` is set (with a
// local and a global phase when `partial` is), else merging windows for
// session assigners, else per-window aggregation.

namespace weir::window {

expected<type_id> check_aggregate(std::string_view call, const schema& input) {
  auto fn = internal::parse_aggregate(call, input);
  if (!fn)
    return fn.error();
  return fn->result_type;
}

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
      p->slicing = internal::slicing_plan{t->size().count(), t->size().count(), t->offset().count(),
                                t->size().count()};
    else if (const auto* sl =
               dynamic_cast<const sliding_event_time_windows*>(p->assigner.get());
             sl && sl->slide() <= sl->size() && !p->aggregates.has_reduce())
      p->slicing = internal::slicing_plan{sl->size().count(), sl->slide().count(),
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
  if (impl_->slicing)
    return std::make_unique<sliced_window_operator>(impl_);
  if (impl_->assigner->as_merging())
    return std::make_unique<merging_window_operator>(impl_);
  return std::make_unique<per_window_operator>(impl_);
}

namespace {
/// "tumbling_event_time_windows(1h, offset 0ms)" -> "tumbling_event_time_windows".
std::string kind_of(const std::string& describe) {
  return describe.substr(0, describe.find('('));
}
} // namespace

std::string window_plan::state_descriptor() const {
  const auto& p = *impl_;
  std::string d = "window " + kind_of(p.assigner->describe()) + "; keys (";
  for (std::size_t i = 0; i < p.key_fields.size(); ++i)
    d += (i ? ", " : "") + std::string{to_string(p.input->at(p.key_fields[i]).type)};
  d += "); aggregates ";
  for (std::size_t i = 0; i < p.aggregates.size(); ++i) {
    const auto& f = p.aggregates.function(i);
    d += i ? ", " : "";
    if (f.kind == weir::internal::aggregate_kind::count_rows)
      d += "count(*)";
    else
      d += std::string{weir::internal::to_string(f.kind)} + "(" + std::string{to_string(f.input_type)}
           + ")";
  }
  if (p.trigger)
    d += "; trigger " + kind_of(p.trigger->describe());
  if (p.evictor)
    d += "; evictor " + kind_of(p.evictor->describe());
  d += p.slicing ? "; sliced"
       : p.buffered ? "; buffered"
       : p.assigner->as_merging() ? "; merging"
                                  : "; per window";
  return d;
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
  return std::make_unique<global_window_aggregate>(impl_);
}

} // namespace weir::window
