// SPDX-License-Identifier: Apache-2.0
// `type = "window_join"`: joins two keyed inputs within event-time windows
// (Flink's window join): its keys, parsing, planning and
// `keyed_stream::window_join`; the operator is window_join_operator.
#include "window_join_operator.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/window/session_windows.hpp"
#include "weir/window/sliding_windows.hpp"
#include "weir/window/tumbling_windows.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;
using std::chrono::milliseconds;

const key_list join_window_types = {"tumbling", "sliding", "session"};

struct window_join_spec : internal::join_spec {
  std::string type; ///< empty when broken (reported)
  milliseconds size{0}, slide{0}, offset{0}, gap{0};
  const toml::node* window_node = nullptr;
};

void parse_window(parse_context& c, window_join_spec& s) {
  s.window_node = c.hard.get("window");
  const auto* w = c.hard.subtable("window", c.keys_required);
  if (!w)
    return;
  auto wr = c.hard.sub(*w, "window");
  auto type = wr.choice("type", join_window_types, true);
  if (!type)
    return;
  key_list allowed = type->value == "tumbling"  ? key_list{"type", "size", "offset"}
                     : type->value == "sliding" ? key_list{"type", "size", "slide", "offset"}
                                                : key_list{"type", "gap"};
  wr.check_keys(allowed);
  bool ok = true;
  if (type->value == "session") {
    auto gap = wr.duration("gap", reader::sign::positive, true);
    ok = gap.has_value();
    if (gap)
      s.gap = *gap;
  } else {
    auto size = wr.duration("size", reader::sign::positive, true);
    ok = size.has_value();
    if (size)
      s.size = *size;
    if (type->value == "sliding") {
      auto slide = wr.duration("slide", reader::sign::positive, true);
      ok = ok && slide.has_value();
      if (slide)
        s.slide = *slide;
    }
    if (w->get("offset")) {
      auto off = wr.duration("offset", reader::sign::any);
      ok = ok && off.has_value();
      if (off)
        s.offset = *off;
    }
  }
  if (ok)
    s.type = type->value;
}

expected<std::shared_ptr<const window::window_assigner>> make_assigner(const window_join_spec& s) {
  auto share = [](auto made) -> expected<std::shared_ptr<const window::window_assigner>> {
    if (!made)
      return made.error();
    return std::shared_ptr<const window::window_assigner>{
      std::make_shared<const std::decay_t<decltype(*made)>>(std::move(*made))};
  };
  if (s.type == "session")
    return share(window::event_time_session_windows::make(s.gap));
  if (s.type == "sliding")
    return share(window::sliding_event_time_windows::make(s.size, s.slide, s.offset));
  return share(window::tumbling_event_time_windows::make(s.size, s.offset));
}

} // namespace

kind_descriptor describe_operators_window_join() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "window_join";
  d.min_inputs = 2;
  d.max_inputs = 2;
  d.keys = internal::join_keys();
  d.keys.insert(d.keys.begin() + 3,
                {{"window", "table", true, "", "the window: type = tumbling | sliding | session"},
                 {"window.type", "string", true, "", "tumbling | sliding | session (event time)"},
                 {"window.size", "duration", false, "", "tumbling/sliding: length"},
                 {"window.slide", "duration", false, "", "sliding: step"},
                 {"window.offset", "duration", false, "\"0s\"",
                  "tumbling/sliding: shift of the window starts"},
                 {"window.gap", "duration", false, "", "session: inactivity that closes a session"}});
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<window_join_spec>();
    internal::parse_join(c, *s);
    parse_window(c, *s);
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<window_join_spec>(ks);
    auto inputs = internal::plan_join_inputs(c, s);
    if (!inputs || s.type.empty())
      return;
    auto assigner = make_assigner(s);
    if (!assigner) {
      c.report_api(s.window_node, "window",
                   error{assigner.error().code, assigner.error().message, error::npos});
      return;
    }
    window_join_options o;
    o.select = internal::select_of(s);
    o.left_late_output = s.left_late_output.value;
    o.right_late_output = s.right_late_output.value;
    auto r = inputs->first.window_join(inputs->second, *assigner, std::move(o), c.options);
    if (!r)
      internal::report_join_error(c, s, r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's method: the operator this kind plans.
expected<data_stream>
keyed_stream::window_join(const keyed_stream& right,
                          std::shared_ptr<const window::window_assigner> assigner,
                          window_join_options jopts, operator_options opts) const {
  const auto& l = input_;
  const auto& r = right.input_;
  if (l.graph_ != r.graph_)
    return make_error(errc::invalid_argument, "window_join: streams belong to different jobs");
  if (!assigner || !assigner->is_event_time() || assigner->is_global())
    return make_error(errc::invalid_argument,
                      "window_join: needs an event-time tumbling, sliding or session assigner");
  if (auto ok = internal::check_join_keys(*l.output_schema(), key_idx_, *r.output_schema(),
                                          right.key_idx_);
      !ok)
    return ok.error();
  auto rows = internal::join_rows::make(l.output_schema(), r.output_schema(), right.key_idx_,
                                        jopts.select, true);
  if (!rows)
    return rows.error();
  auto id = internal::add_join_node(
    *l.graph_, opts, "window_join", rows->output_schema(), {l.node_, l.port_},
    l.output_schema(), key_idx_, {r.node_, r.port_}, r.output_schema(), right.key_idx_,
    jopts.left_late_output, jopts.right_late_output,
    [rows = *rows, lk = key_idx_, rk = right.key_idx_, a = std::move(assigner)] {
      return std::make_unique<internal::window_join_operator>(rows, lk, rk, a);
    });
  if (!id)
    return id.error();
  return data_stream{l.graph_, *id, 0};
}

} // namespace weir
