// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"
#include "source_dir.hpp"

#include <simdjson.h>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

decoder_options apache() {
  decoder_options o;
  o.kind = format_kind::apache_combined;
  return o;
}

const std::string log_path =
    weir::test::source_dir() + "/data/apache_access_logs/apache_logs_anon.log";
const std::string jsonl_path =
    weir::test::source_dir() + "/data/apache_access_logs/apache_logs_anon.jsonl";

} // namespace

TEST_SUITE("format") {
TEST_CASE("apache_combined decodes a typical line into the fixed schema") {
  auto dec = decoder(apache());
  CHECK(*dec->output_schema() == *apache_combined_schema());
  auto d = decode_text(*dec,
    R"x(198.18.0.1 - - [17/May/2015:10:05:03 +0000] "GET /path?q=1 HTTP/1.1" 200 203023 "http://ref/" "Mozilla/5.0 (X11)")x");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{S("198.18.0.1"), N, N, I(1431857103000), S("GET"),
                                        S("/path?q=1"), S("HTTP/1.1"), I(200), I(203023),
                                        S("http://ref/"), S("Mozilla/5.0 (X11)")});
}

TEST_CASE("apache_combined maps '-' bytes and ident and user to null but keeps '-' referrer") {
  auto dec = decoder(apache());
  auto d = decode_text(*dec,
    R"x(10.0.0.1 id42 alice [01/Jan/2020:00:00:00 +0000] "HEAD / HTTP/1.0" 304 - "-" "-")x" "\n"
    R"x(10.0.0.2 - - [01/Jan/2020:00:00:00 +0000] "GET / HTTP/1.0" 200 0 "-" "agent")x" "\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("10.0.0.1"), S("id42"), S("alice"), I(1577836800000),
                                        S("HEAD"), S("/"), S("HTTP/1.0"), I(304), N, S("-"),
                                        S("-")});
  CHECK(d.rows[1][1] == N);
  CHECK(d.rows[1][8] == I(0));
}

TEST_CASE("apache_combined honours the zone offset of the timestamp") {
  auto dec = decoder(apache());
  auto d = decode_text(*dec,
    R"x(c - - [17/May/2015:12:05:03 +0200] "GET / HTTP/1.1" 200 1 "-" "a")x" "\n"
    R"x(c - - [17/May/2015:04:35:03 -0530] "GET / HTTP/1.1" 200 1 "-" "a")x" "\n"
    R"x(c - - [31/Dec/1969:23:59:59 +0000] "GET / HTTP/1.1" 200 1 "-" "a")x" "\n");
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0][3] == I(1431857103000));
  CHECK(d.rows[1][3] == I(1431857103000));
  CHECK(d.rows[2][3] == I(-1000));
}

TEST_CASE("apache_combined unescapes quotes and backslashes inside quoted fields") {
  auto dec = decoder(apache());
  auto d = decode_text(*dec,
    R"x(c - - [17/May/2015:10:05:03 +0000] "GET /a\"b HTTP/1.1" 200 5 "http://\xe4/" "Bot \"quoted\" \\ end")x");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0][5] == S("/a\"b"));
  CHECK(d.rows[0][9] == S(R"x(http://\xe4/)x")); // Apache's \xhh stays as text
  CHECK(d.rows[0][10] == S(R"x(Bot "quoted" \ end)x"));
}

TEST_CASE("apache_combined handles odd request lines") {
  auto dec = decoder(apache());
  auto d = decode_text(*dec,
    R"x(c - - [17/May/2015:10:05:03 +0000] "-" 408 - "-" "-")x" "\n"
    R"x(c - - [17/May/2015:10:05:03 +0000] "junk" 400 10 "-" "-")x" "\n"
    R"x(c - - [17/May/2015:10:05:03 +0000] "GET /x" 200 10 "-" "-")x" "\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0][4] == N);
  CHECK(d.rows[0][5] == N);
  CHECK(d.rows[0][6] == N);
  CHECK(d.rows[1][4] == N);
  CHECK(d.rows[1][5] == S("junk"));
  CHECK(d.rows[2][4] == S("GET"));
  CHECK(d.rows[2][5] == S("/x"));
  CHECK(d.rows[2][6] == N);
}

TEST_CASE("apache_combined malformed lines are bad with a clear reason") {
  auto dec = decoder(apache());
  struct tc { const char* line; const char* reason; };
  const tc cases[] = {
    {R"x(c - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5 "-" "Mozilla)x",
     "unterminated quote in agent"},
    {R"x(c - - [17/Foo/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5 "-" "a")x",
     "bad timestamp \"17/Foo/2015:10:05:03 +0000\", expected dd/Mon/yyyy:HH:MM:SS +zzzz"},
    {R"x(c - - [17/May/2015:10:05:03 +0000 "GET / HTTP/1.1" 200 5 "-" "a")x",
     "missing ']' after the timestamp"},
    {R"x(c - - 17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5 "-" "a")x",
     "missing '[' before the timestamp"},
    {R"x(c - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" OK 5 "-" "a")x",
     "bad status \"OK\""},
    {R"x(c - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5k "-" "a")x",
     "bad bytes \"5k\""},
    {R"x(c - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5)x", "missing referrer"},
    {R"x(c - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 5 "-")x", "missing agent"},
    {"just-one-token", "missing client"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.line);
    batch_builder b{dec->output_schema()};
    std::string reason;
    CHECK(dec->decode(c.line, b, reason) == record_decoder::status::bad);
    CHECK(reason == c.reason);
    CHECK(b.rows() == 0);
  }
}

TEST_CASE("apache_combined line 8899 of the real log is bad: its agent quote is unterminated") {
  std::ifstream f{log_path};
  REQUIRE(f);
  std::string line;
  for (int i = 0; i < 8899; ++i)
    REQUIRE(std::getline(f, line));
  auto dec = decoder(apache());
  batch_builder b{dec->output_schema()};
  std::string reason;
  CHECK(dec->decode(line, b, reason) == record_decoder::status::bad);
  CHECK(reason == "unterminated quote in agent");
}

TEST_CASE("apache_combined decodes the real log exactly like the reference JSONL") {
  file_source_options o;
  o.path = log_path;
  o.decoder = apache();
  o.event_time_field = "ts";
  o.chunk_bytes = 64 * 1024;
  std::vector<bad_record> bad;
  auto reader = make_file_source_reader(o, [&](const bad_record& r) { bad.push_back(r); });
  REQUIRE(reader);
  std::vector<record_batch_ptr> batches;
  while (auto b = (*reader)->poll_next(1000))
    batches.push_back(b);

  REQUIRE(bad.size() == 1);
  CHECK(bad[0].line == 8899);
  CHECK(bad[0].reason == "unterminated quote in agent");
  CHECK(bad[0].raw.rfind("198.18.4.44 - - [20/May/2015:12:05:17 +0000]", 0) == 0);

  simdjson::dom::parser parser;
  simdjson::dom::document_stream stream;
  auto json = simdjson::padded_string::load(jsonl_path);
  REQUIRE(json.error() == simdjson::SUCCESS);
  REQUIRE(parser.parse_many(json.value()).get(stream) == simdjson::SUCCESS);

  const auto& s = *apache_combined_schema();
  std::size_t bi = 0, row = 0, compared = 0, mismatches = 0;
  for (auto doc : stream) {
    simdjson::dom::object obj;
    REQUIRE(doc.get_object().get(obj) == simdjson::SUCCESS);
    while (bi < batches.size() && row >= batches[bi]->num_rows) {
      ++bi;
      row = 0;
    }
    REQUIRE(bi < batches.size());
    const auto& batch = *batches[bi];
    for (const char* name : {"ts", "client", "method", "path", "protocol", "status",
                             "bytes", "referrer", "agent"}) {
      const auto& col = batch.columns[*s.index_of(name)];
      simdjson::dom::element e = obj[name];
      bool same = false;
      if (e.is_null())
        same = col.is_null(row);
      else if (e.is_int64())
        same = col.is_valid(row) && col.ints[row] == e.get_int64().value();
      else if (e.is_string())
        same = col.is_valid(row) && col.str(row) == e.get_string().value();
      if (!same && ++mismatches <= 5)
        FAIL_CHECK("line " << int64_t(obj["line"]) << " field " << name);
    }
    CHECK(batch.timestamps[row] == int64_t(obj["ts"]));
    ++row;
    ++compared;
  }
  CHECK(compared == 9999);
  CHECK(mismatches == 0);
  std::size_t total = 0;
  for (const auto& b : batches)
    total += b->num_rows;
  CHECK(total == 9999);
}
}
