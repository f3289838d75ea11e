// SPDX-License-Identifier: Apache-2.0
// The driver of a fuzz target in a build without libFuzzer (gcc, or clang
// without WEIR_FUZZ): runs LLVMFuzzerTestOneInput once on every file named
// on the command line and on every file in every directory named there, in
// name order, as `fuzzer -runs=0 corpus/ regressions/` does. Arguments
// starting with '-' (libFuzzer options) are ignored. A crash, an abort or a
// sanitizer report fails the run; otherwise it exits 0.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

int run_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s\n", p.c_str());
    return 1;
  }
  std::vector<char> bytes{std::istreambuf_iterator<char>(in), {}};
  // A heap copy of exactly the input's size, so that ASan sees a read past it.
  std::vector<std::uint8_t> data(bytes.begin(), bytes.end());
  LLVMFuzzerTestOneInput(data.data(), data.size());
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (LLVMFuzzerInitialize)
    LLVMFuzzerInitialize(&argc, &argv);
  std::size_t runs = 0;
  int failures = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (!arg.empty() && arg[0] == '-')
      continue;
    std::error_code ec;
    if (std::filesystem::is_directory(arg, ec)) {
      std::vector<std::filesystem::path> files;
      for (const auto& e : std::filesystem::recursive_directory_iterator(arg))
        if (e.is_regular_file())
          files.push_back(e.path());
      std::sort(files.begin(), files.end());
      for (const auto& f : files) {
        failures += run_file(f);
        ++runs;
      }
    } else {
      failures += run_file(arg);
      ++runs;
    }
  }
  std::fprintf(stderr, "%s: executed %zu inputs\n", argv[0], runs);
  return failures == 0 ? 0 : 1;
}
