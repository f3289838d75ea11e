// SPDX-License-Identifier: Apache-2.0
// weir_baseline: runs one hand-written baseline query and prints one JSON
// line; or writes the shared generator test vectors.
//   weir_baseline q0|q1|q2|q3|q5|q7|q8|tumble|ysb [--events N] [--seed S] [--digest]
//   weir_baseline vectors nexmark|ysb [--events N] [--seed S]
#include "baseline.hpp"

#include "weir/expr/random.hpp"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

namespace {

using namespace weir::bench;

int usage() {
  std::fprintf(stderr,
               "usage: weir_baseline q0|q1|q2|q3|q5|q7|q8|tumble|ysb [--events N] [--seed S] [--digest]\n"
               "       weir_baseline vectors nexmark|ysb [--events N] [--seed S]\n");
  return 2;
}

int write_vectors(std::string_view which, const options& o) {
  if (which == "nexmark") {
    const weir::nexmark::generator gen{nexmark_config(o)};
    for (std::uint64_t n = 0; n < o.events; ++n)
      std::printf("%s\n", gen.describe(n).c_str());
    return 0;
  }
  if (which == "ysb") {
    const auto mseed = weir::expr::mixed_seed(o.seed);
    ysb_event e;
    for (std::uint64_t n = 0; n < o.events; ++n) {
      make_ysb_event(mseed, static_cast<std::int64_t>(n), e);
      std::printf("Y|%llu|%lld|%lld|%lld|%lld|%lld|%lld|%lld\n",
                  static_cast<unsigned long long>(n), static_cast<long long>(e.user_id),
                  static_cast<long long>(e.page_id), static_cast<long long>(e.ad_id),
                  static_cast<long long>(e.ad_type), static_cast<long long>(e.event_type),
                  static_cast<long long>(e.event_time), static_cast<long long>(e.ip_address));
    }
    return 0;
  }
  return usage();
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return usage();
  const std::string_view query = argv[1];
  std::string_view which;
  int i = 2;
  if (query == "vectors") {
    if (argc < 3)
      return usage();
    which = argv[2];
    i = 3;
  }
  options o;
  for (; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--digest") {
      o.digest = true;
    } else if ((a == "--events" || a == "--seed") && i + 1 < argc) {
      char* end = nullptr;
      const auto v = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0')
        return usage();
      (a == "--events" ? o.events : o.seed) = v;
    } else {
      return usage();
    }
  }
  if (query == "vectors")
    return write_vectors(which, o);

  result (*run)(const options&) = nullptr;
  if (query == "q0")
    run = run_q0;
  else if (query == "q1")
    run = run_q1;
  else if (query == "q2")
    run = run_q2;
  else if (query == "q3")
    run = run_q3;
  else if (query == "q5")
    run = run_q5;
  else if (query == "q7")
    run = run_q7;
  else if (query == "q8")
    run = run_q8;
  else if (query == "tumble")
    run = run_tumble;
  else if (query == "ysb")
    run = run_ysb;
  else
    return usage();
  const auto start = std::chrono::steady_clock::now();
  const result r = run(o);
  const double seconds =
    std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("{\"engine\":\"baseline\",\"query\":\"%s\",\"events\":%llu,\"seconds\":%.6f,"
              "\"events_per_s\":%.1f,\"rows\":%llu",
              std::string{query}.c_str(), static_cast<unsigned long long>(o.events), seconds,
              seconds > 0 ? static_cast<double>(o.events) / seconds : 0.0,
              static_cast<unsigned long long>(r.rows));
  if (o.digest)
    std::printf(",\"digest\":\"%016llx\"", static_cast<unsigned long long>(r.digest));
  else
    std::printf(",\"checksum\":%llu", static_cast<unsigned long long>(r.checksum));
  std::printf("}\n");
  return 0;
}
