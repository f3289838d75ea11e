// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/expr/expression.hpp"
#include "weir/operators/stream_operator.hpp"
#include "weir/state/keyed_state_backend.hpp"

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace weir::internal {

/// Forwards every batch unchanged (union; the input gate merges watermarks).
class pass_through final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    out.collect(batch);
  }
};


} // namespace weir::internal
