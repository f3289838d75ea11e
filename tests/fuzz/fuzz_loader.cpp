// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the TOML pipeline loader. Any text must give a job or a list
// of diagnostics, never a crash, a hang or a sanitizer report; every
// diagnostic points into the text (or at the file as a whole) and renders.
//
// The loader opens the source files it is given (to report unreadable ones
// early): the seed pipelines read /tmp/weir-fuzz/in.{jsonl,csv,log}, which
// LLVMFuzzerInitialize writes, so that their sources load and the operators
// behind them are checked too. Nothing is started and no output is written.
#include "weir/config/loader.hpp"
#include "weir/core/log.hpp"

#include "fuzz_load_checks.hpp"

#include <filesystem>
#include <fstream>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include <unistd.h>

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  // The loader's warnings would flood the fuzzer's output.
  weir::log::set_log_level(weir::log_level::off);
  namespace fs = std::filesystem;
  const fs::path dir = "/tmp/weir-fuzz";
  std::error_code ec;
  fs::create_directories(dir, ec);
  const std::pair<const char*, const char*> files[] = {
    {"in.jsonl", "{\"ts\": 1000, \"user\": \"a\", \"n\": 1}\n"},
    {"in.csv", "ts,user,n\n1000,a,1\n"},
    {"in.log", "198.18.0.1 - - [17/May/2015:10:05:03 +0000] \"GET /a HTTP/1.1\" 200 7 "
               "\"-\" \"agent\"\n"}};
  for (const auto& [name, text] : files) {
    // Written under a unique name and renamed: several fuzzers may start at once.
    const fs::path tmp = dir / (std::string{name} + "." + std::to_string(::getpid()));
    std::ofstream(tmp) << text;
    fs::rename(tmp, dir / name, ec);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text{reinterpret_cast<const char*>(data), size};
  weir::config::load_options opts;
  opts.check_paths = false; // random paths: probing them would write anywhere
  // Half the inputs also override batch size and parallelism, as the CLI does.
  if (size % 2 == 1) {
    opts.batch_size = 1 + size % 7;
    opts.parallelism = 1 + size % 3;
  }
  auto r = weir::config::load_pipeline(text, "fuzz.toml", opts);
  weir_fuzz::check_load(r, text);
  return 0;
}
