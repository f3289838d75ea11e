// SPDX-License-Identifier: Apache-2.0
// `type = "interval_join"`: joins two keyed inputs over an event-time
// interval (Flink's IntervalJoin): its keys, parsing, planning and
// `keyed_stream::interval_join`; the operator is interval_join_operator.
#include "interval_join_operator.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

struct interval_join_spec : internal::join_spec {
  std::chrono::milliseconds lower{0}, upper{0};
  bool lower_exclusive = false, upper_exclusive = false;
  bool bounds_ok = false;
};
} // namespace

kind_descriptor describe_operators_interval_join() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "interval_join";
  d.min_inputs = 2;
  d.max_inputs = 2;
  d.keys = internal::join_keys();
  d.keys.insert(d.keys.begin() + 3,
                {{"lower", "duration", true, "",
                  "left.ts + lower <= right.ts (may be negative: \"-2s\")"},
                 {"upper", "duration", true, "", "right.ts <= left.ts + upper"},
                 {"lower_bound_exclusive", "boolean", false, "false", "left.ts + lower < right.ts"},
                 {"upper_bound_exclusive", "boolean", false, "false",
                  "right.ts < left.ts + upper"}});
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<interval_join_spec>();
    internal::parse_join(c, *s);
    auto lower = c.hard.duration("lower", reader::sign::any, true);
    auto upper = c.hard.duration("upper", reader::sign::any, true);
    if (auto v = c.hard.boolean("lower_bound_exclusive"))
      s->lower_exclusive = *v;
    if (auto v = c.hard.boolean("upper_bound_exclusive"))
      s->upper_exclusive = *v;
    if (lower && upper) {
      s->lower = *lower;
      s->upper = *upper;
      s->bounds_ok = true;
    }
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<interval_join_spec>(ks);
    auto inputs = internal::plan_join_inputs(c, s);
    if (!inputs || !s.bounds_ok)
      return;
    interval_join_options o;
    o.lower = s.lower;
    o.upper = s.upper;
    o.lower_bound_exclusive = s.lower_exclusive;
    o.upper_bound_exclusive = s.upper_exclusive;
    o.select = internal::select_of(s);
    o.left_late_output = s.left_late_output.value;
    o.right_late_output = s.right_late_output.value;
    auto r = inputs->first.interval_join(inputs->second, std::move(o), c.options);
    if (r)
      return;
    if (r.error().message.rfind("lower", 0) == 0)
      c.report_api(c.table.get("upper"), "", error{r.error().code, r.error().message,
                                                  error::npos});
    else
      internal::report_join_error(c, s, r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream> keyed_stream::interval_join(const keyed_stream& right,
                                                  interval_join_options jopts,
                                                  operator_options opts) const {
  const auto& l = input_;
  const auto& r = right.input_;
  if (l.graph_ != r.graph_)
    return make_error(errc::invalid_argument, "interval_join: streams belong to different jobs");
  if (auto ok = internal::check_join_keys(*l.output_schema(), key_idx_, *r.output_schema(),
                                          right.key_idx_);
      !ok)
    return ok.error();
  // Flink's IntervalJoinOperator shifts exclusive bounds by one ms.
  const std::int64_t lower = jopts.lower.count() + (jopts.lower_bound_exclusive ? 1 : 0);
  const std::int64_t upper = jopts.upper.count() - (jopts.upper_bound_exclusive ? 1 : 0);
  if (lower > upper)
    return make_error(errc::invalid_argument,
                      "lower bound (" + std::to_string(lower) +
                        " ms) must not be above the upper bound (" + std::to_string(upper) +
                        " ms), exclusive bounds counted");
  auto rows = internal::join_rows::make(l.output_schema(), r.output_schema(), right.key_idx_,
                                        jopts.select, false);
  if (!rows)
    return rows.error();
  auto id = internal::add_join_node(
    *l.graph_, opts, "interval_join", rows->output_schema(), {l.node_, l.port_},
    l.output_schema(), key_idx_, {r.node_, r.port_}, r.output_schema(), right.key_idx_,
    jopts.left_late_output, jopts.right_late_output,
    [rows = *rows, lk = key_idx_, rk = right.key_idx_, lower, upper] {
      return std::make_unique<internal::interval_join_operator>(rows, lk, rk, lower, upper);
    });
  if (!id)
    return id.error();
  return data_stream{l.graph_, *id, 0};
}

} // namespace weir
