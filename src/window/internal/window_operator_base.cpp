// SPDX-License-Identifier: Apache-2.0
#include "window_operator_base.hpp"

#include "weir/format/format.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace weir::window::internal {

window_operator_base::window_operator_base(std::shared_ptr<const window_plan::impl> plan)
  : plan_(std::move(plan)),
    contents_fn_(std::make_shared<const contents_function>(&plan_->aggregates)) {}

void window_operator_base::open(const operator_context& ctx) {
  clock_ = ctx.clock;
  name_ = ctx.operator_name;
  subtask_ = ctx.subtask_index;
  init_backend(state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                                  ctx.subtask_index),
               ctx.max_parallelism);
}

void window_operator_base::init_backend(state::key_group_range range,
                                        std::size_t max_parallelism) {
  backend_ = std::make_unique<state::keyed_state_backend>(range, max_parallelism);
  register_states();
}

void window_operator_base::snapshot_state(std::uint64_t, operator_snapshot& out) {
  out.keyed_state = backend_->snapshot();
  out.operator_state.clear();
  state::wire::put_u64(out.operator_state, next_seq_);
  // The watermark at the barrier: a restored operator judges lateness as
  // the uninterrupted one did (watermarks are not replayed).
  state::wire::put_u64(out.operator_state,
                       static_cast<std::uint64_t>(backend_->current_watermark()));
}

void window_operator_base::restore_state(const operator_restore& in) {
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
}

std::optional<std::string> window_operator_base::query_state(std::string_view encoded_key) {
  const auto& p = *plan_;
  std::vector<std::string> namespaces;
  backend_->for_each_key(contents_state, [&](std::string_view k, std::string_view ns) {
    if (k == encoded_key)
      namespaces.emplace_back(ns);
  });
  if (namespaces.empty())
    return std::string{"null"};
  backend_->set_current_key(encoded_key);
  const auto n = p.aggregates.size();
  std::map<std::pair<event_time, event_time>, std::vector<accumulator>> windows;
  std::vector<time_window> of;
  for (const auto& ns : namespaces) {
    if (ns.size() != 15 && ns.size() != 16)
      continue; // not a window (none of the strategies keeps such contents)
    backend_->set_current_namespace(ns);
    const auto* acc = contents_.accumulator();
    if (acc == nullptr)
      continue;
    contents_fn_->check(*acc);
    of.clear();
    windows_of_namespace(decode_window(ns), of);
    for (const auto& w : of) {
      auto [it, fresh] = windows.try_emplace({w.start, w.end});
      if (fresh)
        it->second.assign(acc->data(), acc->data() + n);
      else
        p.aggregates.merge(it->second.data(), acc->data());
    }
  }
  if (windows.empty())
    return std::string{"null"};
  batch_builder b{p.output};
  auto key_values = must(state::decode_key(encoded_key));
  for (const auto& [w, accs] : windows) {
    const std::size_t nk = key_values.size();
    for (std::size_t k = 0; k < nk; ++k)
      b.col(k).append_value(key_values[k]);
    std::size_t next = nk;
    if (p.assigner->is_global()) {
      b.col(next++).append_int(0);
    } else {
      b.col(next++).append_int(w.first);
      b.col(next++).append_int(w.second);
    }
    p.aggregates.append_results(accs.data(), &b.col(next));
    b.commit_row();
  }
  auto batch = b.finish();
  const auto& fields = batch->schema->fields();
  std::string out = "{\"windows\":[";
  for (std::size_t r = 0; r < batch->num_rows; ++r) {
    out += r == 0 ? "{" : ",{";
    for (std::size_t i = 0; i < fields.size(); ++i) {
      if (i > 0)
        out += ',';
      format::append_json_string(fields[i].name, out);
      out += ':';
      format::append_json(batch->columns[i].get(r), fields[i].type, out);
    }
    out += '}';
  }
  out += "]}";
  return out;
}

} // namespace weir::window::internal
