// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/dead_letter_queue.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using weir::bad_record;
using weir::runtime::dead_letter_queue;

namespace {

struct temp_dir {
  fs::path path;
  temp_dir() {
    std::string tmpl = (fs::temp_directory_path() / "weir-dlq-XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~temp_dir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

bad_record at_line(std::uint64_t line) {
  bad_record r{"in.jsonl", line, line * 10, "bad", "x"};
  r.source = weir::bad_record_source::file;
  return r;
}

/// The lines of the dead-letter file, as their "line" numbers.
std::vector<int> lines_of(const fs::path& p) {
  std::ifstream in{p};
  std::vector<int> out;
  std::string l;
  while (std::getline(in, l)) {
    auto at = l.find("\"line\":");
    REQUIRE(at != std::string::npos);
    out.push_back(std::stoi(l.substr(at + 7)));
  }
  return out;
}

constexpr auto two_phase = dead_letter_queue::commit_mode::two_phase;

/// bad.jsonl in a fresh directory: the dead-letter file a test's queues write.
struct dead_letter_file {
  temp_dir d;
  fs::path file = d.path / "bad.jsonl";

  /// A new queue writing `file` in `mode` (exactly once by default).
  dead_letter_queue open(dead_letter_queue::commit_mode mode = two_phase) const {
    return dead_letter_queue{file.string(), mode};
  }
};

} // namespace

TEST_SUITE("runtime") {
TEST_CASE_FIXTURE(dead_letter_file,
                  "exactly-once dead letters reach the file when their checkpoint completes") {
  auto q = open();
  q.restore(0, 0);
  q.write(at_line(1), 0, 0);
  q.write(at_line(2), 1, 0);
  CHECK(lines_of(file).empty());
  q.seal(0, 0, 1);
  q.seal(1, 0, 1);
  q.write(at_line(3), 0, 0);
  CHECK(lines_of(file).empty());
  q.commit(1);
  CHECK(lines_of(file) == std::vector<int>{1, 2});
  CHECK(q.committed_count() == 2);
  q.finish();
  CHECK(lines_of(file) == std::vector<int>{1, 2, 3});
  CHECK(q.committed_count() == 3);
}

TEST_CASE_FIXTURE(dead_letter_file,
                  "a restore discards what came after its checkpoint and completes its commits") {
  {
    auto q = open();
    q.restore(0, 0);
    q.write(at_line(1), 0, 0);
    q.seal(0, 0, 1);
    q.commit(1);
    q.write(at_line(2), 0, 0);
    q.seal(0, 0, 2); // checkpoint 2 completes, the process dies before the commit
    q.write(at_line(3), 0, 0);
    q.seal(0, 0, 3); // checkpoint 3 never completes
    q.write(at_line(4), 0, 0);
  }
  SUBCASE("from the checkpoint that completed") {
    auto q = open();
    q.restore(2, 0);
    CHECK(lines_of(file) == std::vector<int>{1, 2});
    CHECK(q.committed_count() == 2);
  }
  SUBCASE("from an earlier one, the file is cut back to it") {
    auto q = open();
    q.restore(2, 0);
    auto q2 = open();
    q2.restore(1, 0);
    CHECK(lines_of(file) == std::vector<int>{1});
  }
  SUBCASE("a torn append after the last logged commit is cut off") {
    {
      std::ofstream out{file, std::ios::app};
      out << "{\"origin\":\"in.jsonl:9\",\"line\":9,\"off";
    }
    auto q = open();
    q.restore(2, 0);
    CHECK(lines_of(file) == std::vector<int>{1, 2});
  }
  SUBCASE("from nothing, the file starts empty") {
    auto q = open();
    q.restore(0, 0);
    CHECK(lines_of(file).empty());
  }
}

TEST_CASE_FIXTURE(dead_letter_file,
                  "writes and seals of an attempt before the last restore are dropped") {
  auto q = open();
  q.restore(0, 0);
  q.write(at_line(1), 0, 0);
  q.restore(0, 1); // an in-process restart from nothing
  q.write(at_line(2), 0, 0); // a subtask of attempt 0 still winding down
  q.seal(0, 0, 1);
  q.write(at_line(1), 0, 1);
  q.seal(0, 1, 1);
  q.commit(1);
  CHECK(lines_of(file) == std::vector<int>{1});
}

TEST_CASE_FIXTURE(dead_letter_file,
                  "a writer whose input ended pre-commits under the checkpoint after its last seal") {
  auto q = open();
  q.restore(4, 0);
  q.write(at_line(7), 0, 0);
  q.seal_final(0, 0);
  q.commit(4);
  CHECK(lines_of(file).empty());
  q.commit(5);
  CHECK(lines_of(file) == std::vector<int>{7});
}

TEST_CASE_FIXTURE(dead_letter_file, "direct dead letters are written at once") {
  auto q = open(dead_letter_queue::commit_mode::direct);
  q.write(at_line(1));
  q.seal(0, 0, 1);
  CHECK(lines_of(file) == std::vector<int>{1});
  CHECK(q.committed_count() == 0);
}
}
