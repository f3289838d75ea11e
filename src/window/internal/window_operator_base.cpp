// SPDX-License-Identifier: Apache-2.0
#include "window_operator_base.hpp"

#include <algorithm>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace weir::window::internal {

window_operator_base::window_operator_base(std::shared_ptr<const window_plan::impl> plan)
  : plan_(std::move(plan)),
    contents_fn_(std::make_shared<const contents_function>(&plan_->aggregates)) {}

void window_operator_base::open(const operator_context& ctx) {
  clock_ = ctx.clock;
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

} // namespace weir::window::internal
