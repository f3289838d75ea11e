// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <stdexcept>
#include <string>

namespace weir {

/// A failure that a restart from the latest checkpoint cannot fix, thrown by
/// an operator: the job fails at once (exit code 1) without applying its
/// restart strategy. Example: an exactly-once Kafka sink fenced by another
/// producer with its transactional id — restarting would fence that producer
/// in turn, and the two jobs would take the id from each other until their
/// restart attempts ran out.
class unrecoverable_error : public std::runtime_error {
public:
  explicit unrecoverable_error(const std::string& what) : std::runtime_error(what) {}
};

} // namespace weir
