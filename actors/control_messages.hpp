// SPDX-License-Identifier: Apache-2.0
#pragma once
// Messages of the embedding API (weir/runtime/job_control.hpp): a host's
// state queries and savepoint requests reach the job manager, which routes
// a query on to the subtask that owns the key.

#include "weir/runtime/job_control.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

#include <cstddef>
#include <string>

namespace weir::runtime {

/// Job manager -> the subtask owning the key: answer `query` for chain
/// member `member` with the state of `encoded_key`; `result` comes filled
/// in but for the watermark and the state.
struct subtask_state_query {
  std::size_t member = 0;
  std::string encoded_key;
  state_query_result result;
  reply_ptr<state_query_result> reply;
};

} // namespace weir::runtime

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::state_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::savepoint_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::subtask_state_query)
