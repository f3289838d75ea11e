// SPDX-License-Identifier: Apache-2.0
#pragma once
// Messages of the embedding API (weir/runtime/job_control.hpp): a host's
// state queries and savepoint requests reach the job manager, which routes
// a query on to the subtask that owns the key (`subtask_state_query`, in
// job_messages.hpp).

#include "job_messages.hpp"
#include "weir/runtime/job_control.hpp"

#include <caf/allowed_unsafe_message_type.hpp>

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::state_query)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::savepoint_request)
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(weir::runtime::subtask_state_query)
