// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the SQL front end (weir::sql::load_sql: libpg_query's parse,
// the lowering to TOML and the loader on the result). Any text must give a
// job or a list of diagnostics, never a crash, a hang or a sanitizer report;
// every diagnostic points into the text (or at the file as a whole) and
// renders.
//
// The seed scripts read /tmp/weir-fuzz/in.jsonl, which LLVMFuzzerInitialize
// writes, so that their sources load and the queries behind them are
// checked too. Nothing is started and no output is written.
#include "weir/core/log.hpp"
#include "weir/sql/sql.hpp"

#include "fuzz_load_checks.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

#include <unistd.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  weir::log::set_log_level(weir::log_level::off);
  namespace fs = std::filesystem;
  const fs::path dir = "/tmp/weir-fuzz";
  std::error_code ec;
  fs::create_directories(dir, ec);
  // Written under a unique name and renamed: several fuzzers may start at once.
  const fs::path tmp = dir / ("in.jsonl." + std::to_string(::getpid()));
  std::ofstream(tmp) << "{\"ts\": 1000, \"user\": \"a\", \"n\": 1}\n";
  fs::rename(tmp, dir / "in.jsonl", ec);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  weir::config::load_options opts;
  opts.check_paths = false; // random paths: probing them would write anywhere
  auto r = weir::sql::load_sql(text, "fuzz.sql", opts);
  weir_fuzz::check_load(r, text);
  return 0;
}
