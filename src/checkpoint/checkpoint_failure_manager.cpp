// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_failure_manager.hpp"

namespace weir::checkpoint {

std::optional<std::string>
checkpoint_failure_manager::failed(std::uint64_t checkpoint_id, const std::string& reason) {
  // Ids only grow; the failures of one checkpoint arrive together.
  if (checkpoint_id <= last_completed_ || checkpoint_id <= last_failed_)
    return std::nullopt;
  last_failed_ = checkpoint_id;
  ++consecutive_;
  ++total_;
  if (consecutive_ <= tolerable_)
    return std::nullopt;
  std::string msg = "checkpoint " + std::to_string(checkpoint_id) + " failed: " + reason + " (";
  if (tolerable_ == 0)
    msg += "[checkpoint] tolerable_failures = 0: no failed checkpoint is tolerated";
  else
    msg += std::to_string(consecutive_) + " failed checkpoints in a row; [checkpoint] "
           "tolerable_failures = " + std::to_string(tolerable_);
  msg += ")";
  return msg;
}

void checkpoint_failure_manager::completed(std::uint64_t checkpoint_id) noexcept {
  if (checkpoint_id > last_completed_)
    last_completed_ = checkpoint_id;
  consecutive_ = 0;
}

} // namespace weir::checkpoint
