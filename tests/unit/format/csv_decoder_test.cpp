// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"

#include "../../../src/format/internal/decoder_common.hpp"
#include "source_dir.hpp"

#include <charconv>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

schema_ptr sensor_schema() {
  return make_schema({{"id", type_id::string},
                      {"value", type_id::int64},
                      {"temp", type_id::float64},
                      {"ok", type_id::boolean},
                      {"ts", type_id::timestamp}});
}

decoder_options csv(schema_ptr s, bool header = true) {
  decoder_options o;
  o.kind = format_kind::csv;
  o.schema = std::move(s);
  o.csv_header = header;
  return o;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("csv maps header columns to schema fields by name") {
  auto dec = decoder(csv(sensor_schema()));
  auto d = decode_text(*dec, "ts,extra,value,id\n1000,zzz,5,a\n2000,,6,b\n");
  CHECK(d.skipped == 1); // the header
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  // temp and ok are absent from the header: always null; "extra" is ignored.
  CHECK(d.rows[0] == std::vector<value>{S("a"), I(5), N, N, I(1000)});
  CHECK(d.rows[1] == std::vector<value>{S("b"), I(6), N, N, I(2000)});
}

TEST_CASE("csv without a header maps columns by position") {
  auto dec = decoder(csv(sensor_schema(), false));
  auto d = decode_text(*dec, "a,1,2.5,true,2015-05-17\nb,-2,3,0,7\n");
  CHECK(d.skipped == 0);
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("a"), I(1), F(2.5), B(true), I(1431820800000)});
  CHECK(d.rows[1] == std::vector<value>{S("b"), I(-2), F(3.0), B(false), I(7)});
}

TEST_CASE("csv quoted fields keep delimiters and doubled quotes and newlines") {
  auto dec = decoder(csv(make_schema({{"a", type_id::string}, {"b", type_id::string}})));
  auto d = decode_text(*dec,
                       "a,b\n"
                       "\"x, y\",\"say \"\"hi\"\"\"\n"
                       "\"two\nlines\",plain\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("x, y"), S("say \"hi\"")});
  CHECK(d.rows[1] == std::vector<value>{S("two\nlines"), S("plain")});
}

TEST_CASE("csv next_record waits for the closing quote before ending a record") {
  auto dec = decoder(csv(make_schema({{"a", type_id::string}})));
  std::size_t lines = 0;
  std::string_view partial = "\"one\ntwo";
  CHECK(dec->next_record(partial, false, lines) == 0);
  std::string_view full = "\"one\ntwo\"\nnext\n";
  CHECK(dec->next_record(full, false, lines) == 10);
  CHECK(lines == 2);
  std::string_view escaped = "\"a\"\"\nb\"\n";
  CHECK(dec->next_record(escaped, false, lines) == escaped.size());
  CHECK(lines == 2);
  // At EOF a final record without newline is complete.
  CHECK(dec->next_record("x,y", true, lines) == 3);
  CHECK(lines == 0);
  CHECK(dec->next_record("x,y", false, lines) == 0);
}

TEST_CASE("csv accepts CRLF line endings") {
  auto dec = decoder(csv(make_schema({{"a", type_id::string}, {"n", type_id::int64}})));
  auto d = decode_text(*dec, "a,n\r\n\"q\",1\r\nr,2\r\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("q"), I(1)});
  CHECK(d.rows[1] == std::vector<value>{S("r"), I(2)});
}

TEST_CASE("csv empty cells are null and a quoted empty cell is an empty string") {
  auto dec = decoder(csv(make_schema({{"s", type_id::string}, {"n", type_id::int64}}), false));
  auto d = decode_text(*dec, ",\n\"\",\"\"\nx,\n");
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0] == std::vector<value>{N, N});
  CHECK(d.rows[1] == std::vector<value>{S(""), N});
  CHECK(d.rows[2] == std::vector<value>{S("x"), N});
}

TEST_CASE("csv row with a different number of cells than the header is bad") {
  auto dec = decoder(csv(make_schema({{"a", type_id::string}, {"b", type_id::string}})));
  auto d = decode_text(*dec, "a,b\n1,2,3\nonly\n4,5\n");
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0] == "expected 2 fields, got 3");
  CHECK(d.bad[1] == "expected 2 fields, got 1");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{S("4"), S("5")});
}

TEST_CASE("csv numbers must consume the whole cell") {
  auto dec = decoder(csv(make_schema({{"n", type_id::int64}, {"f", type_id::float64}}), false));
  auto d = decode_text(*dec, "12x,1\n1.5,1\n 3,1\n4,2.5z\n5,1e3\n");
  REQUIRE(d.bad.size() == 4);
  CHECK(d.bad[0] == "field 'n': cannot parse \"12x\" as int64");
  CHECK(d.bad[1] == "field 'n': cannot parse \"1.5\" as int64");
  CHECK(d.bad[2] == "field 'n': cannot parse \" 3\" as int64");
  CHECK(d.bad[3] == "field 'f': cannot parse \"2.5z\" as float64");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{I(5), F(1000.0)});
}

TEST_CASE("csv bools accept true/false in any case and 1/0") {
  auto dec = decoder(csv(make_schema({{"b", type_id::boolean}}), false));
  auto d = decode_text(*dec, "TRUE\nFalse\n1\n0\nyes\n");
  REQUIRE(d.rows.size() == 4);
  CHECK(d.rows[0][0] == B(true));
  CHECK(d.rows[1][0] == B(false));
  CHECK(d.rows[2][0] == B(true));
  CHECK(d.rows[3][0] == B(false));
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0] == "field 'b': cannot parse \"yes\" as bool");
}

TEST_CASE("csv rejects an unterminated quote and text after a closing quote") {
  auto dec = decoder(csv(make_schema({{"a", type_id::string}, {"b", type_id::string}}), false));
  auto d = decode_text(*dec, "\"ab\"c,d\nx,\"open\n");
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0] == "unexpected text after the closing quote in column 1");
  CHECK(d.bad[1] == "unterminated quote in column 2 (no closing quote before the end of the file)");
  CHECK(d.rows.empty());
}

TEST_CASE("csv a bad cell rolls back the cells decoded before it") {
  auto dec = decoder(csv(make_schema({{"s", type_id::string}, {"n", type_id::int64}}), false));
  batch_builder b{dec->output_schema()};
  std::string reason;
  CHECK(dec->decode("keep,1", b, reason) == record_decoder::status::ok);
  CHECK(dec->decode("drop,x", b, reason) == record_decoder::status::bad);
  CHECK(dec->decode("also,2", b, reason) == record_decoder::status::ok);
  auto batch = b.finish();
  REQUIRE(batch->num_rows == 2);
  CHECK(batch->columns[0].size() == 2);
  CHECK(batch->columns[0].str(1) == "also");
  CHECK(batch->columns[1].ints[1] == 2);
}

TEST_CASE("csv honours another delimiter and rejects a quote as delimiter") {
  auto o = csv(make_schema({{"a", type_id::string}, {"b", type_id::int64}}), false);
  o.csv_delimiter = ';';
  auto dec = decoder(o);
  auto d = decode_text(*dec, "x,y;3\n");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{S("x,y"), I(3)});
  o.csv_delimiter = '"';
  auto bad = make_decoder(o);
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code == errc::invalid_argument);
}

TEST_CASE("csv timestamps accept ms integers and ISO-8601 text") {
  auto dec = decoder(csv(make_schema({{"ts", type_id::timestamp}}), false));
  auto d = decode_text(*dec, "2023-03-05T15:13:37.320Z\n-5\nyesterday\n");
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0][0] == I(1678029217320));
  CHECK(d.rows[1][0] == I(-5));
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0] == "field 'ts': cannot parse \"yesterday\" as timestamp");
}

TEST_CASE("csv decodes the first rows of the real USGS file") {
  auto s = make_schema({{"time", type_id::timestamp},
                        {"mag", type_id::float64},
                        {"nst", type_id::int64},
                        {"place", type_id::string},
                        {"type", type_id::string}});
  auto dec = decoder(csv(s));
  std::ifstream f{weir::test::source_dir() +
                  "/data/usgs_earthquakes/all_month_2023-04-04.csv"};
  REQUIRE(f);
  std::string text, line;
  for (int i = 0; i < 4 && std::getline(f, line); ++i)
    text += line + "\n";
  auto d = decode_text(*dec, text);
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0] == std::vector<value>{I(1680620628180), F(1.05), I(10),
                                        S("7km NW of The Geysers, CA"), S("earthquake")});
}

TEST_CASE("csv event time field null makes the record bad") {
  auto o = csv(make_schema({{"k", type_id::string}, {"ts", type_id::timestamp}}), false);
  o.event_time_field = "ts";
  auto dec = decoder(o);
  auto d = decode_text(*dec, "a,10\nb,\nc,30\n");
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0] == "event time field 'ts' is null");
  REQUIRE(d.rows.size() == 2);
  CHECK(d.timestamps == std::vector<event_time>{10, 30});
}
}

// The decoders' integer parser (csv int64 and timestamp cells, apache_combined
// status and bytes): the short-text loop must agree with std::from_chars on
// every text, at and around the 18-digit switch and int64's bounds.
TEST_CASE("parse_int64 agrees with std::from_chars, short and long") {
  using weir::format::internal::parse_int64;
  auto reference = [](std::string_view s) -> std::optional<std::int64_t> {
    std::int64_t v = 0;
    if (s.empty())
      return std::nullopt;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc{} || p != s.data() + s.size())
      return std::nullopt;
    return v;
  };
  std::vector<std::string> texts = {
    "", "-", "+1", " 1", "1 ", "0", "-0", "007", "42", "-42", "1a", "a1", "--1", "1-",
    "999999999999999999", "-999999999999999999",     // 18 digits: the loop
    "1000000000000000000", "-1000000000000000000",   // 19: from_chars
    "9223372036854775807", "-9223372036854775808",   // the bounds
    "9223372036854775808", "-9223372036854775809",   // just past them
    "000000000000000000000000042", "1.5", "1e3", std::string("1\0", 2)};
  std::mt19937_64 rng{20261202};
  for (int i = 0; i < 2000; ++i) {
    std::string s;
    if (rng() % 4 == 0)
      s += '-';
    const auto len = static_cast<int>(rng() % 22);
    for (int k = 0; k < len; ++k)
      s += rng() % 40 == 0 ? "x+- "[rng() % 4] : static_cast<char>('0' + rng() % 10);
    texts.push_back(std::move(s));
  }
  for (const auto& t : texts) {
    CAPTURE(t);
    std::int64_t got = 12345;
    const bool ok = parse_int64(t, got);
    const auto want = reference(t);
    REQUIRE(ok == want.has_value());
    CHECK(got == (ok ? *want : 12345)); // written only on success
  }
}
