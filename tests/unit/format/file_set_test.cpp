// SPDX-License-Identifier: Apache-2.0
// A file source over a directory or glob (weir/format/file_set.hpp).
#include "format_test_util.hpp"

#include "weir/format/file_set.hpp"

#include <filesystem>
#include <set>
#include <thread>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

std::string lines(const std::string& key, int from, int to) {
  std::string out;
  for (int i = from; i < to; ++i)
    out += R"({"key": ")" + key + R"(", "ts": )" + std::to_string(i) + "}\n";
  return out;
}

file_set_options set_opts(std::string path) {
  file_set_options o;
  o.path = std::move(path);
  o.file.decoder.kind = format_kind::jsonl;
  o.file.decoder.schema = make_schema({{"key", type_id::string}, {"ts", type_id::timestamp}});
  o.file.event_time_field = "ts";
  o.file.chunk_bytes = 64;
  return o;
}

/// "key:ts" per row.
std::vector<std::string> rows_of(const record_batch& b) {
  std::vector<std::string> out;
  for (std::size_t r = 0; r < b.num_rows; ++r)
    out.push_back(std::string{b.columns[0].str(r)} + ":" + std::to_string(b.columns[1].ints[r]));
  return out;
}

source_reader_ptr make(const file_set_options& o) {
  auto r = make_file_set_reader(o, [](const bad_record& b) {
    FAIL("unexpected bad record: " << b.reason);
  });
  REQUIRE(r);
  return std::move(*r);
}

/// Polls until the end (or `max_batches`), collecting rows.
std::vector<std::string> drain(source_reader& r, std::size_t max_rows = 3,
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

std::vector<std::string> expected_rows(std::initializer_list<std::tuple<std::string, int, int>> fs) {
  std::vector<std::string> out;
  for (const auto& [k, from, to] : fs)
    for (int i = from; i < to; ++i)
      out.push_back(k + ":" + std::to_string(i));
  return out;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("file set: a directory's files in name order, hidden and temporary names left out") {
  temp_dir dir{"set-list"};
  dir.file("b.jsonl", lines("b", 0, 5));
  dir.file("a.jsonl", lines("a", 0, 4));
  dir.file("c.log", lines("c", 0, 2));
  dir.file(".hidden.jsonl", lines("h", 0, 1));
  dir.file("_tmp.jsonl", lines("t", 0, 1));
  std::filesystem::create_directories(dir.path() / "sub");
  const auto d = dir.path().string();
  auto all = list_files(d);
  REQUIRE(all);
  CHECK(*all == std::vector<std::string>{d + "/a.jsonl", d + "/b.jsonl", d + "/c.log"});
  auto g = list_files(d + "/*.jsonl");
  REQUIRE(g);
  CHECK(*g == std::vector<std::string>{d + "/a.jsonl", d + "/b.jsonl"});
  CHECK(*list_files(d + "/_*") == std::vector<std::string>{d + "/_tmp.jsonl"}); // asked for
  CHECK(*list_files(d + "/[bc].*") == std::vector<std::string>{d + "/b.jsonl", d + "/c.log"});
  CHECK(*list_files(d + "/?.log") == std::vector<std::string>{d + "/c.log"});
  CHECK(list_files(d + "/*.csv")->empty());
  CHECK(!list_files(d + "/missing"));
  CHECK(is_glob("logs/*.log"));
  CHECK(!is_glob("logs/a.log"));

  auto r = make(set_opts(d));
  CHECK(drain(*r) == expected_rows({{"a", 0, 4}, {"b", 0, 5}, {"c", 0, 2}}));
  CHECK(r->poll_next(3) == nullptr);
  CHECK(r->batch_split() == std::nullopt); // one stream: no split partitions
}

TEST_CASE("file set: positions per file; a restore continues mid-file and skips finished files") {
  temp_dir dir{"set-restore"};
  dir.file("1.jsonl", lines("a", 0, 10));
  dir.file("2.jsonl", lines("b", 0, 10));
  dir.file("3.jsonl", lines("c", 0, 10));
  const auto d = dir.path().string();
  const auto want = expected_rows({{"a", 0, 10}, {"b", 0, 10}, {"c", 0, 10}});
  for (std::size_t cut = 0; cut <= 11; ++cut) {
    CAPTURE(cut);
    auto first = make(set_opts(d));
    auto got = drain(*first, 3, cut);
    auto pos = first->positions();
    auto second = make(set_opts(d));
    second->seek(pos);
    CHECK(second->positions() == pos); // a checkpoint before the first poll keeps them
    auto rest = drain(*second, 3);
    got.insert(got.end(), rest.begin(), rest.end());
    CHECK(got == want);
    if (cut == 5) { // 13 rows (3, 3, 3, 1, 3): 1.jsonl finished, 2.jsonl begun
      REQUIRE(pos.size() == 2);
      CHECK(pos[0].split == d + "/1.jsonl");
      CHECK(pos[0].finished);
      CHECK(pos[1].split == d + "/2.jsonl");
      CHECK(!pos[1].finished);
      CHECK(pos[1].value > 0);
      CHECK(describe(pos[0]).ends_with("(finished)"));
    }
  }
  // A finished file that grows is not read again (files are immutable once seen).
  auto first = make(set_opts(d));
  drain(*first, 3, 5);
  auto pos = first->positions();
  dir.file("1.jsonl", lines("a", 0, 20));
  auto second = make(set_opts(d));
  second->seek(pos);
  CHECK(drain(*second).size() == 17); // 2.jsonl's last 7 rows and 3.jsonl
  // A file begun but gone cannot resume.
  std::filesystem::remove(dir.path() / "2.jsonl");
  auto third = make(set_opts(d));
  third->seek(pos);
  CHECK_THROWS_WITH(third->poll_next(3), doctest::Contains("2.jsonl at byte"));
}

TEST_CASE("file set: partitioned, each file a split of one subtask, read in turn") {
  temp_dir dir{"set-part"};
  std::vector<std::string> names;
  for (int i = 0; i < 6; ++i) {
    names.push_back("f" + std::to_string(i) + ".jsonl");
    dir.file(names.back(), lines("k" + std::to_string(i), 0, 7));
  }
  const auto d = dir.path().string();
  std::multiset<std::string> all;
  for (std::size_t sub = 0; sub < 2; ++sub) {
    auto o = set_opts(d);
    o.mode = file_set_mode::partitioned;
    o.subtask = sub;
    o.parallelism = 2;
    auto r = make(o);
    std::set<std::string> mine, begun, finished;
    for (const auto& n : names)
      if (file_subtask(n, 2) == sub)
        mine.insert(d + "/" + n);
    std::vector<std::string> order; // the split of each batch
    while (auto b = r->poll_next(3)) {
      auto ch = r->take_split_changes();
      begun.insert(ch.begun.begin(), ch.begun.end());
      for (const auto& f : ch.finished) {
        CHECK(begun.contains(f));
        finished.insert(f);
      }
      auto split = r->batch_split();
      REQUIRE(split);
      CHECK(mine.contains(*split));
      CHECK(!finished.contains(*split));
      order.push_back(*split);
      for (const auto& row : rows_of(*b)) {
        // Each row comes from its batch's file.
        auto key = row.substr(0, row.find(':'));
        CHECK(split->ends_with("f" + key.substr(1) + ".jsonl"));
        all.insert(row);
      }
    }
    auto last = r->take_split_changes();
    finished.insert(last.finished.begin(), last.finished.end());
    CHECK(begun == mine);
    CHECK(finished == mine);
    if (mine.size() > 1) // in turn: the second batch is of another file
      CHECK(order.at(0) != order.at(1));
  }
  CHECK(all.size() == 42);
  // By name below the directory: these six spread over both subtasks.
  std::set<std::size_t> used;
  for (const auto& n : names)
    used.insert(file_subtask(n, 2));
  CHECK(used.size() == 2);
  CHECK(std::set<std::string>(all.begin(), all.end()).size() == 42);
}

TEST_CASE("file set: monitor_interval picks up new files, in name order, and never ends") {
  temp_dir dir{"set-monitor"};
  const auto d = dir.path().string();
  auto o = set_opts(d);
  o.monitor_interval = std::chrono::milliseconds{10};
  auto r = make(o);
  auto b = r->poll_next(100);
  REQUIRE(b); // nothing yet: an empty batch, and a wait
  CHECK(b->num_rows == 0);
  CHECK(r->next_poll_delay() > std::chrono::nanoseconds{0});
  CHECK(r->next_poll_delay() <= std::chrono::milliseconds{10});
  dir.file("b.jsonl", lines("b", 0, 3));
  dir.file("a.jsonl", lines("a", 0, 2));
  std::vector<std::string> got;
  auto until = [&](std::size_t n) {
    for (int i = 0; i < 500 && got.size() < n; ++i) {
      auto x = r->poll_next(100);
      REQUIRE(x);
      auto rs = rows_of(*x);
      got.insert(got.end(), rs.begin(), rs.end());
      if (x->num_rows == 0)
        std::this_thread::sleep_for(r->next_poll_delay());
    }
  };
  until(5);
  CHECK(got == expected_rows({{"a", 0, 2}, {"b", 0, 3}}));
  dir.file("c.jsonl", lines("c", 0, 4));
  until(9);
  CHECK(got == expected_rows({{"a", 0, 2}, {"b", 0, 3}, {"c", 0, 4}}));
  auto idle = r->poll_next(100);
  REQUIRE(idle);
  CHECK(idle->num_rows == 0);
}
} // TEST_SUITE
