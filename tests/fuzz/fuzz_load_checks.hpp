// SPDX-License-Identifier: Apache-2.0
// What the loader fuzz targets (fuzz_loader: TOML, fuzz_sql: SQL) require of
// a load's result, whatever the text: a job, or at least one diagnostic,
// each with a message and a line within the text. A check that fails aborts
// the process, which libFuzzer reports with the input.
#pragma once

#include "weir/config/diagnostic.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace weir_fuzz {

[[noreturn]] inline void fail_load(const char* what, const std::string& detail) {
  std::fprintf(stderr, "%s: %s\n%s\n", program_invocation_short_name, what, detail.c_str());
  std::abort();
}

/// `r`: the loader's expected<job pointer, diagnostics> for `text`.
template <class Result>
void check_load(const Result& r, std::string_view text) {
  if (r) {
    if (!*r)
      fail_load("a loaded job is null", std::string{text});
    return;
  }
  if (r.error().empty())
    fail_load("a failed load reports no diagnostic", std::string{text});
  const auto lines = static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')) + 1;
  for (const auto& d : r.error()) {
    if (d.message.empty())
      fail_load("a diagnostic without message", d.to_string());
    if (d.line > lines)
      fail_load("a diagnostic past the last line", d.to_string());
    (void) d.to_string();
  }
  (void) weir::config::to_string(r.error());
}

} // namespace weir_fuzz
