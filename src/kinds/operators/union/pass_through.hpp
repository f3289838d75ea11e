// SPDX-License-Identifier: Apache-2.0
#pragma once
// The union kind's runtime operator.

#include "weir/operators/stream_operator.hpp"

namespace weir::internal {

/// Forwards every batch unchanged (union; the input gate merges watermarks).
class pass_through final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    out.collect(batch);
  }
};

} // namespace weir::internal
