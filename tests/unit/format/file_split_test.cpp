// SPDX-License-Identifier: Apache-2.0
// One file read as byte-range splits cut at line boundaries
// (weir/format/file_split.hpp).
#include "format_test_util.hpp"

#include "weir/format/file_split.hpp"

#include <stdexcept>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

file_split_options split_opts(const std::string& path, format_kind kind = format_kind::jsonl) {
  file_split_options o;
  o.file.path = path;
  o.file.decoder.kind = kind;
  o.file.decoder.schema = make_schema({{"key", type_id::string}, {"ts", type_id::timestamp}});
  o.file.decoder.csv_header = kind == format_kind::csv;
  o.file.event_time_field = "ts";
  o.file.chunk_bytes = 7; // records cross chunk ends
  return o;
}

/// "key:ts" per row.
std::vector<std::string> rows_of(const record_batch& b) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < b.num_rows; ++r)
    out.push_back(std::string{b.columns[0].str(r)} + ":" + std::to_string(b.columns[1].ints[r]));
  return out;
}

std::vector<std::string> drain(source_reader& r, std::size_t max_rows = 2,
                               std::size_t max_batches = 1'000'000) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < max_batches; ++i) {
    auto b = r.poll_next(max_rows);
    if (!b)
      break;
    auto rs = rows_of(*b);
    out.insert(out.end(), rs.begin(), rs.end());
  }
  return out;
}

source_reader_ptr make(file_split_options o, std::vector<bad_record>* bad = nullptr) {
  auto r = make_file_split_reader(std::move(o), [bad](const bad_record& b) {
    if (bad == nullptr)
      FAIL("unexpected bad record: " << b.reason);
    else
      bad->push_back(b);
  });
  REQUIRE(r);
  return std::move(*r);
}

/// The rows of every subtask of `parallelism`, one after another (each
/// subtask reads one split when count = parallelism: file order).
std::vector<std::string> read_split(file_split_options o, std::size_t parallelism,
                                    std::vector<bad_record>* bad = nullptr) {
  std::vector<std::string> out;
  for (std::size_t s = 0; s < parallelism; ++s) {
    auto so = o;
    so.count = parallelism;
    so.parallelism = parallelism;
    so.subtask = s;
    auto r = make(so, bad);
    auto rows = drain(*r);
    out.insert(out.end(), rows.begin(), rows.end());
  }
  return out;
}

std::string jsonl(int from, int to, std::string_view eol = "\n") {
  std::string out;
  for (int i = from; i < to; ++i)
    out += R"({"key": ")" + std::string(static_cast<std::size_t>(i % 7) + 1, 'k') + R"(", "ts": )"
           + std::to_string(i) + "}" + std::string{eol};
  return out;
}

std::vector<std::string> want_rows(int from, int to) {
  std::vector<std::string> out;
  for (int i = from; i < to; ++i)
    out.push_back(std::string(static_cast<std::size_t>(i % 7) + 1, 'k') + ":" + std::to_string(i));
  return out;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("file splits: equal nominal ranges that cover the file, or split_size pieces") {
  CHECK(plan_file_splits(10, 3) == std::vector<file_split>{{0, 3}, {3, 6}, {6, 10}});
  CHECK(plan_file_splits(0, 2) == std::vector<file_split>{{0, 0}, {0, 0}});
  CHECK(plan_file_splits(10, 0) == std::vector<file_split>{{0, 10}});
  CHECK(plan_file_splits(10, 1, 4) == std::vector<file_split>{{0, 4}, {4, 8}, {8, 10}});
  CHECK(plan_file_splits(8, 1, 4) == std::vector<file_split>{{0, 4}, {4, 8}});
  CHECK(plan_file_splits(0, 1, 4) == std::vector<file_split>{{0, 0}});
  CHECK(file_split{4, 8}.name("a.jsonl") == "a.jsonl@4-8");
  CHECK(split_subtask(5, 2) == 1);
}

TEST_CASE("file splits: every line is read once, in order, wherever the bounds fall") {
  temp_dir dir{"split-every"};
  SUBCASE("lines ending in \\n") {
    const auto content = jsonl(0, 23);
    const auto path = dir.file("a.jsonl", content);
    // From one split to more splits than bytes: bounds at line starts, at
    // newlines, inside lines.
    for (std::size_t n : {1, 2, 3, 4, 5, 7, 11, 23, 40, 97, 200})
      CHECK_MESSAGE(read_split(split_opts(path), n) == want_rows(0, 23), n << " splits");
    CHECK(content.size() < 1000);
    for (std::size_t n = content.size() - 3; n <= content.size() + 3; ++n)
      CHECK_MESSAGE(read_split(split_opts(path), n) == want_rows(0, 23), n << " splits");
  }
  SUBCASE("CRLF line ends") {
    const auto path = dir.file("crlf.jsonl", jsonl(0, 17, "\r\n"));
    for (std::size_t n : {1, 2, 3, 6, 17, 50})
      CHECK_MESSAGE(read_split(split_opts(path), n) == want_rows(0, 17), n << " splits");
  }
  SUBCASE("the last line without newline") {
    auto content = jsonl(0, 9);
    content.pop_back();
    const auto path = dir.file("nonl.jsonl", content);
    for (std::size_t n : {1, 2, 3, 9, 30})
      CHECK_MESSAGE(read_split(split_opts(path), n) == want_rows(0, 9), n << " splits");
  }
  SUBCASE("a UTF-8 BOM is skipped by the first split only") {
    const auto path = dir.file("bom.jsonl", "\xEF\xBB\xBF" + jsonl(0, 5));
    for (std::size_t n : {1, 2, 5})
      CHECK_MESSAGE(read_split(split_opts(path), n) == want_rows(0, 5), n << " splits");
  }
  SUBCASE("a file shorter than the number of splits: the extra splits are empty") {
    const auto path = dir.file("short.jsonl", jsonl(0, 2));
    CHECK(read_split(split_opts(path), 64) == want_rows(0, 2));
    auto o = split_opts(path);
    o.count = 8;
    o.parallelism = 8;
    o.subtask = 7; // holds (s_7, size]: no line starts there
    auto r = make(o);
    CHECK(drain(*r).empty());
    REQUIRE(r->positions().size() == 1);
    CHECK(r->positions()[0].finished);
  }
  SUBCASE("an empty file: every split ends at once") {
    const auto path = dir.file("empty.jsonl", "");
    CHECK(read_split(split_opts(path), 3).empty());
  }
  SUBCASE("split_size: several splits per subtask, read in turn") {
    const auto path = dir.file("sized.jsonl", jsonl(0, 40));
    auto o = split_opts(path);
    o.split_size = 50;
    o.parallelism = 1;
    auto r = make(o);
    auto rows = drain(*r, 1);
    std::sort(rows.begin(), rows.end());
    auto want = want_rows(0, 40);
    std::sort(want.begin(), want.end());
    CHECK(rows == want);
    CHECK(r->positions().size() > 10);
  }
}

TEST_CASE("file splits: each split is a partition named by its range") {
  temp_dir dir{"split-names"};
  const auto content = jsonl(0, 10);
  const auto path = dir.file("a.jsonl", content);
  auto o = split_opts(path);
  o.count = 2;
  o.parallelism = 2;
  o.subtask = 1;
  auto r = make(o);
  CHECK_FALSE(r->has_split_partitions());
  auto b = r->poll_next(100);
  REQUIRE(b);
  const auto name = path + "@" + std::to_string(content.size() / 2) + "-"
                    + std::to_string(content.size());
  CHECK(r->batch_split() == name);
  CHECK(r->has_split_partitions());
  CHECK(r->take_split_changes().begun == std::vector<std::string>{name});
  CHECK(r->poll_next(100) == nullptr);
  CHECK(r->take_split_changes().finished == std::vector<std::string>{name});
}

TEST_CASE("file splits: a CSV header is read from the file's start by every split") {
  temp_dir dir{"split-csv"};
  std::string content = "ts,key\n";
  for (int i = 0; i < 20; ++i)
    content += std::to_string(i) + "," + std::string(static_cast<std::size_t>(i % 7) + 1, 'k')
               + "\n";
  const auto path = dir.file("a.csv", content);
  for (std::size_t n : {1, 2, 3, 7, 20, 60})
    CHECK_MESSAGE(read_split(split_opts(path, format_kind::csv), n) == want_rows(0, 20),
                  n << " splits");
}

TEST_CASE("file splits: a record spanning lines (a quoted newline) fails the job") {
  temp_dir dir{"split-quoted"};
  const auto path = dir.file("q.csv", "ts,key\n1,\"a\nb\"\n2,c\n");
  auto o = split_opts(path, format_kind::csv);
  auto r = make(o);
  CHECK_THROWS_WITH_AS(drain(*r), doctest::Contains("a record spans 2 lines"), std::runtime_error);
}

TEST_CASE("file splits: bad records carry their exact line and offset in every split") {
  temp_dir dir{"split-bad"};
  std::string content = jsonl(0, 10);
  const auto bad_offset = content.size();
  content += "not json\n" + jsonl(10, 20) + "{\"key\": 1}\n";
  const auto path = dir.file("bad.jsonl", content);
  for (std::size_t n : {1, 2, 3, 5}) {
    std::vector<bad_record> bad;
    CHECK(read_split(split_opts(path), n, &bad) == want_rows(0, 20));
    REQUIRE(bad.size() == 2);
    CHECK(bad[0].line == 11);
    CHECK(bad[0].offset == bad_offset);
    CHECK(bad[0].origin == path);
    CHECK(bad[1].line == 22);
  }
}

TEST_CASE("file splits: a restored split resumes at its position; a finished one stays done") {
  temp_dir dir{"split-restore"};
  const auto path = dir.file("a.jsonl", jsonl(0, 30));
  auto o = split_opts(path);
  o.count = 3;
  o.parallelism = 3;
  std::vector<std::string> all;
  for (std::size_t s = 0; s < 3; ++s) {
    o.subtask = s;
    auto r = make(o);
    auto head = drain(*r, 2, 2); // 4 rows
    auto pos = r->positions();
    auto again = make(o);
    again->seek(pos);
    auto tail = drain(*again);
    all.insert(all.end(), head.begin(), head.end());
    all.insert(all.end(), tail.begin(), tail.end());
    // Finished: nothing more after a restore.
    auto done = r->positions();
    drain(*r);
    done = r->positions();
    REQUIRE(done.size() == 1);
    CHECK(done[0].finished);
    auto after = make(o);
    after->seek(done);
    CHECK(drain(*after).empty());
  }
  CHECK(all == want_rows(0, 30));

  // A checkpoint of other splits (the file's size changed): a clear error.
  o.subtask = 0;
  auto r = make(o);
  CHECK_THROWS_WITH_AS(
    r->seek({{path + "@0-5", position_unit::byte_offset, 3, false}}),
    doctest::Contains("the same size, split_size and parallelism"), std::runtime_error);
}
}
