// SPDX-License-Identifier: Apache-2.0
#pragma once
// Loss made visible: which sources drop too many bad records and which
// operators find too many late ones, against `job_options::warn_ratio`,
// `max_bad_ratio` and `max_late_ratio`. Used by the job manager with the
// status line (periodic check) and by `job::execute` at the end.

#include "weir/api/job.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace weir::runtime {

/// One source or operator above a threshold.
struct loss_finding {
  std::string subject;     ///< "source 'logs'", "operator 'views'"
  bool late = false;       ///< late records (an operator), else bad ones (a source)
  std::uint64_t count = 0; ///< bad or late records
  std::uint64_t total = 0; ///< records seen: decoded + bad, or received
  bool fatal = false;      ///< above max_bad_ratio / max_late_ratio: the job fails

  double ratio() const { return total == 0 ? 0.0 : static_cast<double>(count) / static_cast<double>(total); }
  /// "source 'logs': 2,665 of 2,665 records bad (100.0%), above job.warn_ratio 1%".
  std::string message(const job_options& o) const;
  /// "source 'logs' 100.0% bad": for the status line.
  std::string brief() const;
};

/// The findings over `counts`, fatal ones first; a source or operator that
/// has seen fewer than `min_records` records is not judged yet.
std::vector<loss_finding> check_loss(const job_options& o, const std::vector<node_counts>& counts,
                                     std::uint64_t min_records);

/// "12.5%", "0.01%", "100%".
std::string format_percent(double ratio);
/// "12,569".
std::string with_commas(std::uint64_t n);

} // namespace weir::runtime
