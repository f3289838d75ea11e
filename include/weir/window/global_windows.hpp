// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/window/window_assigner.hpp"

namespace weir::window {

/// Puts every record of a key into one window, `global_window()`, that never
/// ends (Flink's `GlobalWindows`). Its default trigger never fires, so a
/// global window needs a trigger (typically `count_trigger`); it is not
/// flushed at the end of input and never cleaned up. Results are numbered
/// per key: `{keys..., fire, aggregates...}` with `fire` = 1, 2, ...
///
/// Flink's keyed count windows are built on it: `countWindow(n)` = global
/// windows + `purging_trigger(count_trigger(n))`; `countWindow(n, s)` =
/// global windows + `count_evictor(n)` + `count_trigger(s)`.
class global_windows final : public window_assigner {
public:
  /// Appends `global_window()`.
  void assign(event_time ts, std::vector<time_window>& out) const override;
  bool is_event_time() const noexcept override { return false; }
  bool is_global() const noexcept override { return true; }
  /// A `never_trigger`.
  std::shared_ptr<const trigger> default_trigger() const override;
  std::string describe() const override { return "global_windows"; }
};

} // namespace weir::window
