// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/loss_check.hpp"

#include <algorithm>
#include <cstdio>

namespace weir::runtime {

std::string with_commas(std::uint64_t n) {
  auto s = std::to_string(n);
  for (auto i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

std::string format_percent(double ratio) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.4g%%", ratio * 100.0); // 1%, 0.5%, 12.5%, 0.01%
  return buf;
}

namespace {

std::string share(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", ratio * 100.0);
  return buf;
}

} // namespace

std::string loss_finding::message(const job_options& o) const {
  std::string out = subject + ": " + with_commas(count) + " of " + with_commas(total) +
                    (late ? " records late (" : " records bad (") + share(ratio()) + "), above ";
  if (!fatal)
    return out + "job.warn_ratio " + format_percent(o.warn_ratio);
  if (o.strict)
    return out + "0% (--strict)";
  return out + (late ? "job.max_late_ratio " + format_percent(*o.max_late_ratio)
                     : "job.max_bad_ratio " + format_percent(*o.max_bad_ratio));
}

std::string loss_finding::brief() const {
  return subject + " " + share(ratio()) + (late ? " late" : " bad");
}

std::vector<loss_finding> check_loss(const job_options& o, const std::vector<node_counts>& counts,
                                     std::uint64_t min_records) {
  std::vector<loss_finding> out;
  auto judge = [&](const node_counts& c, bool late) {
    loss_finding f;
    f.subject = (c.is_source ? "source '" : "operator '") + c.name + "'";
    f.late = late;
    f.count = late ? c.late_records : c.bad_records;
    // A source's input is what its decoder saw; an operator's what it received.
    f.total = c.is_source ? c.records_out + c.bad_records : std::max(c.records_in, f.count);
    if (f.count == 0 || f.total < std::max<std::uint64_t>(min_records, 1))
      return;
    const auto& limit = late ? o.max_late_ratio : o.max_bad_ratio;
    if (limit && f.ratio() > *limit)
      f.fatal = true;
    else if (f.ratio() <= o.warn_ratio)
      return;
    out.push_back(std::move(f));
  };
  for (const auto& c : counts) {
    judge(c, false);
    judge(c, true);
  }
  std::stable_partition(out.begin(), out.end(), [](const loss_finding& f) { return f.fatal; });
  return out;
}

} // namespace weir::runtime
