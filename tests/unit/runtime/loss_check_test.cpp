// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/loss_check.hpp"

#include <doctest/doctest.h>

using namespace weir;
using namespace weir::runtime;

namespace {

node_counts source(std::string name, std::uint64_t decoded, std::uint64_t bad) {
  node_counts c;
  c.name = std::move(name);
  c.is_source = true;
  c.records_out = decoded;
  c.bad_records = bad;
  return c;
}

node_counts op(std::string name, std::uint64_t in, std::uint64_t late) {
  node_counts c;
  c.name = std::move(name);
  c.records_in = in;
  c.late_records = late;
  return c;
}

} // namespace

TEST_SUITE("runtime") {
TEST_CASE("loss above warn_ratio is a warning naming the source or operator") {
  job_options o; // warn_ratio 1%
  auto f = check_loss(o, {source("logs", 0, 2665), op("views", 12569, 11545),
                          source("quiet", 1000, 10)},
                      0);
  REQUIRE(f.size() == 2);
  CHECK_FALSE(f[0].fatal);
  CHECK(f[0].message(o) == "source 'logs': 2,665 of 2,665 records bad (100.0%), above "
                           "job.warn_ratio 1%");
  CHECK(f[1].message(o) == "operator 'views': 11,545 of 12,569 records late (91.9%), above "
                           "job.warn_ratio 1%");
  CHECK(f[1].brief() == "operator 'views' 91.9% late");
  // 10 of 1,010 is under 1%: no finding for "quiet".
}

TEST_CASE("loss above max_bad_ratio / max_late_ratio is fatal, fatal findings first") {
  job_options o;
  o.max_late_ratio = 0.5;
  auto f = check_loss(o, {source("logs", 90, 10), op("views", 100, 60)}, 0);
  REQUIRE(f.size() == 2);
  CHECK(f[0].fatal);
  CHECK(f[0].message(o) == "operator 'views': 60 of 100 records late (60.0%), above "
                           "job.max_late_ratio 50%");
  CHECK_FALSE(f[1].fatal); // no max_bad_ratio: 10% bad only warns
  o.max_bad_ratio = 0.0;
  o.strict = true;
  f = check_loss(o, {source("logs", 999, 1)}, 0);
  REQUIRE(f.size() == 1);
  CHECK(f[0].fatal);
  CHECK(f[0].message(o) == "source 'logs': 1 of 1,000 records bad (0.1%), above 0% (--strict)");
}

TEST_CASE("a periodic check judges nobody before min_records records") {
  job_options o;
  o.max_bad_ratio = 0.5;
  // The first record of a job is bad: 100%, but only one record seen.
  CHECK(check_loss(o, {source("logs", 0, 1)}, min_records_for_ratio).empty());
  CHECK(check_loss(o, {source("logs", 10, 990)}, min_records_for_ratio).size() == 1);
  // At the end every count is judged.
  CHECK(check_loss(o, {source("logs", 0, 1)}, 0).front().fatal);
  // Equal to the limit is not above it.
  CHECK(check_loss(o, {source("logs", 5, 5)}, 0).empty() == false); // 50% > warn 1%
  CHECK_FALSE(check_loss(o, {source("logs", 5, 5)}, 0).front().fatal);
}

TEST_CASE("format_percent shows as few digits as the value needs") {
  CHECK(format_percent(0.01) == "1%");
  CHECK(format_percent(0.005) == "0.5%");
  CHECK(format_percent(0.125) == "12.5%");
  CHECK(format_percent(0) == "0%");
  CHECK(with_commas(12569) == "12,569");
}
}
