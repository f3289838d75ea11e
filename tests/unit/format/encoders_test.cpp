// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"

#include <charconv>
#include <cmath>
#include <limits>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

schema_ptr mixed() {
  return make_schema({{"s", type_id::string},
                      {"i", type_id::int64},
                      {"f", type_id::float64},
                      {"b", type_id::boolean},
                      {"ts", type_id::timestamp}});
}

record_batch_ptr batch_of(const schema_ptr& s, const std::vector<std::vector<value>>& rows) {
  batch_builder b{s};
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i)
      b.col(i).append_value(row[i]);
    b.commit_row();
  }
  return b.finish();
}

std::string encode_all(format_kind k, const record_batch_ptr& batch) {
  auto enc = make_encoder(k);
  REQUIRE(enc);
  std::string out = enc->header(*batch->schema);
  for (std::size_t r = 0; r < batch->num_rows; ++r)
    enc->encode(*batch, r, out);
  return out;
}

bool internal_parse_check(const std::string& text, double& out) {
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
  return ec == std::errc{} && p == text.data() + text.size();
}

std::string json_of(double d) {
  std::string out;
  append_json_double(d, out);
  return out;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("jsonl encoder writes fields in schema order with nulls") {
  auto batch = batch_of(mixed(), {{S("a"), I(-3), F(22.0), B(true), I(1431857103000)},
                                  {N, N, N, N, N}});
  CHECK(encode_all(format_kind::jsonl, batch)
        == "{\"s\":\"a\",\"i\":-3,\"f\":22.0,\"b\":true,\"ts\":1431857103000}\n"
           "{\"s\":null,\"i\":null,\"f\":null,\"b\":null,\"ts\":null}\n");
}

TEST_CASE("floats are written in shortest round-trip form with .0 on integral values") {
  CHECK(json_of(22.0) == "22.0");
  CHECK(json_of(28.75) == "28.75");
  CHECK(json_of(-0.5) == "-0.5");
  CHECK(json_of(0.1) == "0.1");
  CHECK(json_of(1e300) == "1e+300");
  CHECK(json_of(1e-7) == "1e-07");
  CHECK(json_of(123456789012345678.0) == "123456789012345680.0"); // shorter than 1.23e+17 form
  CHECK(json_of(std::nan("")) == "null");
  CHECK(json_of(std::numeric_limits<double>::infinity()) == "null");
  CHECK(json_of(-std::numeric_limits<double>::infinity()) == "null");
  for (double d : {22.0, 28.75, 1e300, 0.1, 1.0 / 3.0, -2.5e-300}) {
    double back = 0;
    REQUIRE(internal_parse_check(json_of(d), back));
    CHECK(back == d);
  }
}

TEST_CASE("json strings are escaped per RFC 8259") {
  std::string out;
  append_json_string("q\"b\\s/\n\r\t\b\f\x01\x1f\x7f \xc3\xa9 \xe2\x82\xac", out);
  CHECK(out == "\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0001\\u001f\x7f \xc3\xa9 \xe2\x82\xac\"");
  out.clear();
  append_json_string("bad \xff byte \xc3", out); // invalid UTF-8 -> U+FFFD
  CHECK(out == "\"bad \xEF\xBF\xBD byte \xEF\xBF\xBD\"");
}

TEST_CASE("jsonl output decodes back to the same rows") {
  auto s = mixed();
  auto batch = batch_of(s, {{S("tab\there \"q\" \\ \x02"), I(INT64_MIN), F(1e300), B(false), I(-1)},
                            {S(""), I(0), F(-0.25), B(true), N}});
  auto text = encode_all(format_kind::jsonl, batch);
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = s;
  auto dec = decoder(o);
  auto d = decode_text(*dec, text);
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("tab\there \"q\" \\ \x02"), I(INT64_MIN), F(1e300),
                                        B(false), I(-1)});
  CHECK(d.rows[1] == std::vector<value>{S(""), I(0), F(-0.25), B(true), N});
}

TEST_CASE("csv encoder quotes cells only when needed and writes null as empty") {
  auto batch = batch_of(mixed(), {{S("a,b"), I(1), F(2.5), B(true), I(7)},
                                  {S("say \"hi\""), N, F(3.0), N, N},
                                  {S("two\nlines"), I(2), N, B(false), I(8)},
                                  {S(""), I(3), F(1e300), B(true), I(9)},
                                  {N, I(4), F(0.5), B(true), I(10)}});
  auto text = encode_all(format_kind::csv, batch);
  CHECK(text == "s,i,f,b,ts\n"
                "\"a,b\",1,2.5,true,7\n"
                "\"say \"\"hi\"\"\",,3.0,,\n"
                "\"two\nlines\",2,,false,8\n"
                "\"\",3,1e+300,true,9\n"
                ",4,0.5,true,10\n");
  decoder_options o;
  o.kind = format_kind::csv;
  o.schema = mixed();
  auto dec = decoder(o);
  auto d = decode_text(*dec, text);
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 5);
  for (std::size_t r = 0; r < 5; ++r)
    for (std::size_t c = 0; c < 5; ++c)
      CHECK(d.rows[r][c] == batch->columns[c].get(r));
}

TEST_CASE("append_json writes each value kind") {
  std::string out;
  append_json(value{}, type_id::string, out);
  out += ' ';
  append_json(I(5), type_id::float64, out);
  out += ' ';
  append_json(I(5), type_id::int64, out);
  out += ' ';
  append_json(F(0.5), type_id::float64, out);
  out += ' ';
  append_json(B(false), type_id::boolean, out);
  out += ' ';
  append_json(S("x"), type_id::string, out);
  CHECK(out == "null 5.0 5 0.5 false \"x\"");
}

TEST_CASE("a bad record of a file is dead-lettered with its path, line and byte offset") {
  bad_record r{"logs/a.log", 8899, 1234, "unterminated quote in agent", "raw \"text\""};
  r.source = weir::bad_record_source::file;
  std::string out;
  append_bad_record_json(r, out);
  CHECK(out == "{\"origin\":\"logs/a.log:8899\",\"file\":\"logs/a.log\",\"line\":8899,"
               "\"offset\":1234,\"reason\":\"unterminated quote in agent\","
               "\"raw\":\"raw \\\"text\\\"\"}\n");
}

TEST_CASE("a bad Kafka record is dead-lettered with topic, partition, offset, key and timestamp") {
  bad_record r;
  r.source = weir::bad_record_source::kafka;
  r.topic = "events";
  r.partition = 3;
  r.offset = 25;
  r.reason = "bad";
  r.raw = "x";
  std::string out;
  SUBCASE("with a key and a timestamp") {
    r.key = "k1";
    r.timestamp = 1700000000000;
    append_bad_record_json(r, out);
    CHECK(out == "{\"origin\":\"events/3@25\",\"topic\":\"events\",\"partition\":3,"
                 "\"offset\":25,\"key\":\"k1\",\"timestamp\":1700000000000,"
                 "\"reason\":\"bad\",\"raw\":\"x\"}\n");
  }
  SUBCASE("without either") {
    append_bad_record_json(r, out);
    CHECK(out == "{\"origin\":\"events/3@25\",\"topic\":\"events\",\"partition\":3,"
                 "\"offset\":25,\"key\":null,\"timestamp\":null,"
                 "\"reason\":\"bad\",\"raw\":\"x\"}\n");
  }
}

TEST_CASE("a bad record of an http request is dead-lettered with source, request id and line") {
  bad_record r{"http source 'in' request r-7", 2, 10, "bad", "x"};
  r.source = weir::bad_record_source::http;
  r.source_name = "in";
  r.request_id = "r-7";
  std::string out;
  append_bad_record_json(r, out);
  CHECK(out == "{\"origin\":\"http source 'in' request r-7:2\",\"source\":\"in\","
               "\"request_id\":\"r-7\",\"line\":2,\"reason\":\"bad\",\"raw\":\"x\"}\n");
}

TEST_CASE("apache_combined has no encoder") {
  CHECK(make_encoder(format_kind::apache_combined) == nullptr);
}
}
