// SPDX-License-Identifier: Apache-2.0
// Load-time checks of output paths (src/config/output_path.hpp). Tests run
// as root, for whom permission bits do not count: the unwritable places are
// paths under a regular file and /proc.
#include "config/output_path.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using weir::config::output_path_kind;
using weir::config::output_path_problem;
namespace fs = std::filesystem;

namespace {

struct temp_dir {
  fs::path path = fs::temp_directory_path() / ("weir-output-path-" + std::to_string(::getpid()));
  temp_dir() { fs::create_directories(path); }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

} // namespace

TEST_SUITE("config") {
TEST_CASE("an output path that can be created or written has no problem, and nothing is left") {
  temp_dir d;
  CHECK_FALSE(output_path_problem((d.path / "a/b/out.jsonl").string(), output_path_kind::file));
  CHECK_FALSE(output_path_problem((d.path / "state").string(), output_path_kind::directory));
  CHECK_FALSE(output_path_problem(d.path.string(), output_path_kind::directory));
  std::ofstream(d.path / "existing.jsonl") << "kept\n";
  CHECK_FALSE(output_path_problem((d.path / "existing.jsonl").string(), output_path_kind::file));
  CHECK_FALSE(output_path_problem("/dev/null", output_path_kind::file));
  // The probe created nothing, and the existing file was not truncated.
  std::size_t entries = 0;
  for (auto& e : fs::directory_iterator(d.path)) {
    (void) e;
    ++entries;
  }
  CHECK(entries == 1);
  CHECK(fs::file_size(d.path / "existing.jsonl") == 5);
}

TEST_CASE("output paths the job could not write are named with the reason") {
  temp_dir d;
  const auto file = (d.path / "a-file").string();
  std::ofstream(file) << "x";
  CHECK(output_path_problem(file + "/out.jsonl", output_path_kind::file) ==
        "cannot create \"" + file + "/out.jsonl\": \"" + file + "\" is not a directory");
  CHECK(output_path_problem(file + "/x/y", output_path_kind::directory) ==
        "cannot create \"" + file + "/x/y\": \"" + file + "\" is not a directory");
  CHECK(output_path_problem(file, output_path_kind::directory) ==
        "\"" + file + "\" is not a directory");
  CHECK(output_path_problem(d.path.string(), output_path_kind::file) ==
        "\"" + d.path.string() + "\" is a directory");
  auto proc = output_path_problem("/proc/weir-test/out.jsonl", output_path_kind::file);
  REQUIRE(proc);
  CHECK(proc->rfind("cannot create \"/proc/weir-test/out.jsonl\": directory \"/proc\" is not "
                    "writable (",
                    0) == 0);
  CHECK(output_path_problem("/proc/weir-test", output_path_kind::directory));
}
}
