// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"

#include <stdexcept>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

struct read_result {
  std::vector<std::vector<value>> rows;
  std::vector<event_time> timestamps;
  std::vector<bad_record> bad;
  std::vector<std::uint64_t> positions; ///< position() after each batch
  std::size_t batches = 0;
};

read_result read_all(const file_source_options& o, std::size_t max_rows = 1000) {
  read_result out;
  auto reader = make_file_source_reader(o, [&](const bad_record& r) { out.bad.push_back(r); });
  REQUIRE(reader);
  while (auto b = (*reader)->poll_next(max_rows)) {
    CHECK(b->num_rows <= max_rows);
    ++out.batches;
    for (std::size_t r = 0; r < b->num_rows; ++r) {
      std::vector<value> row;
      for (const auto& c : b->columns)
        row.push_back(c.get(r));
      out.rows.push_back(std::move(row));
    }
    out.timestamps.insert(out.timestamps.end(), b->timestamps.begin(), b->timestamps.end());
    out.positions.push_back((*reader)->position());
  }
  CHECK((*reader)->poll_next(max_rows) == nullptr); // stays exhausted
  return out;
}

file_source_options jsonl_opts(std::string path, std::size_t chunk) {
  file_source_options o;
  o.path = std::move(path);
  o.decoder.kind = format_kind::jsonl;
  o.decoder.schema = make_schema({{"key", type_id::string}, {"ts", type_id::timestamp}});
  o.chunk_bytes = chunk;
  return o;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("file source reader gives the same rows with a 7-byte chunk as with a big one") {
  temp_dir dir{"chunks"};
  std::string text;
  for (int i = 0; i < 50; ++i)
    text += R"({"key": "k)" + std::to_string(i) + R"(", "ts": )" + std::to_string(i * 1000)
            + "}\n";
  auto path = dir.file("in.jsonl", text);
  auto small = read_all(jsonl_opts(path, 7), 8);
  auto big = read_all(jsonl_opts(path, 1 << 20), 8);
  CHECK(small.rows.size() == 50);
  CHECK(small.rows == big.rows);
  CHECK(small.batches == 7); // 6 full batches of 8 and one of 2
  CHECK(small.positions == big.positions);
  CHECK(small.positions.back() == text.size());
  CHECK(small.rows[49] == std::vector<value>{S("k49"), I(49000)});
}

TEST_CASE("file source reader reports line numbers and offsets and raw text of bad records") {
  temp_dir dir{"bad"};
  const std::string text = "{\"key\": \"a\"}\n"    // line 1, offset 0
                           "not json\n"            // line 2, offset 13
                           "\n"                    // line 3 (blank)
                           "{\"key\": 5}\r\n"      // line 4, offset 23
                           "{\"key\": \"b\"}\n";   // line 5
  auto path = dir.file("in.jsonl", text);
  for (std::size_t chunk : {std::size_t{3}, std::size_t{1 << 16}}) {
    CAPTURE(chunk);
    auto r = read_all(jsonl_opts(path, chunk));
    CHECK(r.rows.size() == 2);
    REQUIRE(r.bad.size() == 2);
    CHECK(r.bad[0].origin == path);
    CHECK(r.bad[0].line == 2);
    CHECK(r.bad[0].offset == 13);
    CHECK(r.bad[0].raw == "not json");
    CHECK(r.bad[0].reason.rfind("invalid JSON: ", 0) == 0);
    CHECK(r.bad[1].line == 4);
    CHECK(r.bad[1].offset == 23);
    CHECK(r.bad[1].raw == "{\"key\": 5}");
    CHECK(r.bad[1].reason == "field 'key': expected string, got integer");
  }
}

TEST_CASE("file source reader counts lines inside quoted CSV fields across chunks") {
  temp_dir dir{"csvlines"};
  const std::string text = "name,n\n"
                           "\"multi\nline\ncell\",1\n"  // lines 2-4
                           "bad,x\n"                   // line 5
                           "\"a,b\",2";                // line 6, no final newline
  auto path = dir.file("in.csv", text);
  file_source_options o;
  o.path = path;
  o.decoder.kind = format_kind::csv;
  o.decoder.schema = make_schema({{"name", type_id::string}, {"n", type_id::int64}});
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{4096}}) {
    CAPTURE(chunk);
    o.chunk_bytes = chunk;
    auto r = read_all(o);
    REQUIRE(r.rows.size() == 2);
    CHECK(r.rows[0] == std::vector<value>{S("multi\nline\ncell"), I(1)});
    CHECK(r.rows[1] == std::vector<value>{S("a,b"), I(2)});
    REQUIRE(r.bad.size() == 1);
    CHECK(r.bad[0].line == 5);
    CHECK(r.bad[0].offset == text.find("bad,x"));
    CHECK(r.positions.back() == text.size());
  }
}

TEST_CASE("file source reader yields a last record without newline and skips a BOM") {
  temp_dir dir{"bom"};
  auto path = dir.file("in.jsonl", "\xEF\xBB\xBF{\"key\": \"a\"}\n{\"key\": \"b\"}");
  for (std::size_t chunk : {std::size_t{1}, std::size_t{2}, std::size_t{100}}) {
    CAPTURE(chunk);
    auto r = read_all(jsonl_opts(path, chunk));
    CHECK(r.bad.empty());
    REQUIRE(r.rows.size() == 2);
    CHECK(r.rows[0][0] == S("a"));
    CHECK(r.rows[1][0] == S("b"));
  }
}

TEST_CASE("file source reader position is the offset after the last consumed record") {
  temp_dir dir{"pos"};
  const std::string l1 = "{\"key\": \"a\"}\n", l2 = "{\"key\": \"b\"}\n";
  auto path = dir.file("in.jsonl", l1 + l2 + l1);
  auto reader = make_file_source_reader(jsonl_opts(path, 4), {});
  REQUIRE(reader);
  auto& rd = **reader;
  CHECK(rd.position() == 0);
  auto b1 = rd.poll_next(1);
  REQUIRE(b1);
  CHECK(b1->num_rows == 1);
  CHECK(rd.position() == l1.size());
  auto b2 = rd.poll_next(1);
  REQUIRE(b2);
  CHECK(rd.position() == l1.size() + l2.size());
  auto b3 = rd.poll_next(5);
  REQUIRE(b3);
  CHECK(b3->num_rows == 1);
  CHECK(rd.position() == 2 * l1.size() + l2.size());
  CHECK(rd.poll_next(5) == nullptr);
}

TEST_CASE("file source reader resumes from a position with exact line numbers") {
  temp_dir dir{"resume"};
  const std::string text = "name,n\nr1,1\nr2,2\nbad,x\nr3,3\n";
  auto path = dir.file("in.csv", text);
  file_source_options o;
  o.path = path;
  o.decoder.kind = format_kind::csv;
  o.decoder.schema = make_schema({{"n", type_id::int64}, {"name", type_id::string}});
  o.chunk_bytes = 3;
  o.start_offset = text.find("r2");
  auto r = read_all(o);
  REQUIRE(r.rows.size() == 2);
  // The header before the resume point still maps columns by name.
  CHECK(r.rows[0] == std::vector<value>{I(2), S("r2")});
  CHECK(r.rows[1] == std::vector<value>{I(3), S("r3")});
  REQUIRE(r.bad.size() == 1);
  CHECK(r.bad[0].line == 4);
}

TEST_CASE("a resumed file source reader never reports a position before its start offset") {
  // A checkpoint taken while the reader still splits the records before the
  // resume point must not move the source back (records would count twice).
  temp_dir dir{"resume-pos"};
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += R"({"key": "k)" + std::to_string(i) + R"(", "ts": )" + std::to_string(i) + "}\n";
  auto path = dir.file("in.jsonl", text);
  auto o = jsonl_opts(path, 16);
  o.start_offset = text.find("\"k150\"") - std::string{"{\"key\": "}.size();
  auto reader = make_file_source_reader(o, {});
  REQUIRE(reader);
  auto& rd = **reader;
  CHECK(rd.position() == o.start_offset);
  std::uint64_t last = rd.position();
  std::size_t rows = 0;
  while (auto b = rd.poll_next(1)) {
    CHECK(rd.position() > last);
    last = rd.position();
    rows += b->num_rows;
  }
  CHECK(rows == 50);
  CHECK(last == text.size());
}

TEST_CASE("file source reader returns io_error for a missing file") {
  auto reader = make_file_source_reader(jsonl_opts("/nonexistent/dir/in.jsonl", 10), {});
  REQUIRE_FALSE(reader);
  CHECK(reader.error().code == errc::io_error);
  CHECK(reader.error().message
        == "cannot open /nonexistent/dir/in.jsonl: No such file or directory");
  temp_dir dir{"isdir"};
  auto on_dir = make_file_source_reader(jsonl_opts(dir.path().string(), 10), {});
  REQUIRE_FALSE(on_dir);
  CHECK(on_dir.error().code == errc::io_error);
}

TEST_CASE("file source reader rejects an event time field of the wrong type") {
  auto o = jsonl_opts("/nonexistent", 10);
  o.event_time_field = "key";
  auto reader = make_file_source_reader(o, {});
  REQUIRE_FALSE(reader);
  CHECK(reader.error().code == errc::invalid_argument);
  o.event_time_field = "missing";
  CHECK_FALSE(make_file_source_reader(o, {}));
}

TEST_CASE("file source reader makes a record with a null event time bad and keeps timestamps aligned") {
  temp_dir dir{"et"};
  auto path = dir.file("in.jsonl", "{\"key\": \"a\", \"ts\": 10}\n"
                                   "{\"key\": \"b\", \"ts\": null}\n"
                                   "{\"key\": \"c\"}\n"
                                   "{\"key\": \"d\", \"ts\": 40}\n");
  auto o = jsonl_opts(path, 1 << 10);
  o.event_time_field = "ts";
  auto r = read_all(o);
  REQUIRE(r.rows.size() == 2);
  CHECK(r.rows[0][0] == S("a"));
  CHECK(r.rows[1][0] == S("d"));
  CHECK(r.timestamps == std::vector<event_time>{10, 40});
  REQUIRE(r.bad.size() == 2);
  CHECK(r.bad[0].reason == "event time field 'ts' is null");
  CHECK(r.bad[0].line == 2);
  CHECK(r.bad[1].line == 3);
}

TEST_CASE("file source reader lets an exception from the bad-record handler propagate") {
  temp_dir dir{"throw"};
  auto path = dir.file("in.jsonl", "{\"key\": \"a\"}\n{oops\n{\"key\": \"b\"}\n");
  auto reader = make_file_source_reader(jsonl_opts(path, 8), [](const bad_record& r) {
    throw std::runtime_error("bad record at line " + std::to_string(r.line));
  });
  REQUIRE(reader);
  CHECK_THROWS_WITH_AS((*reader)->poll_next(10), "bad record at line 2", std::runtime_error);
}

TEST_CASE("file source reader keeps at most 4096 bytes of a long bad record") {
  temp_dir dir{"long"};
  std::string junk(10000, 'z');
  auto path = dir.file("in.jsonl", junk + "\n{\"key\": \"ok\"}\n");
  auto r = read_all(jsonl_opts(path, 1000));
  REQUIRE(r.bad.size() == 1);
  CHECK(r.bad[0].raw.size() == 4096);
  CHECK(r.rows.size() == 1);
}

TEST_CASE("file source reader returns empty batches rather than block on a long run of bad records") {
  temp_dir dir{"manybad"};
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += "x\n";
  text += "{\"key\": \"last\"}\n";
  auto reader = make_file_source_reader(jsonl_opts(dir.file("in.jsonl", text), 1 << 16),
                                        [](const bad_record&) {});
  REQUIRE(reader);
  auto b1 = (*reader)->poll_next(10);
  REQUIRE(b1);
  CHECK(b1->num_rows == 0);
  CHECK((*reader)->position() == 2 * (10 + 4096));
  std::size_t rows = 0;
  while (auto b = (*reader)->poll_next(10))
    rows += b->num_rows;
  CHECK(rows == 1);
}
}
