// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

schema_ptr all_types() {
  return make_schema({{"key", type_id::string},
                      {"value", type_id::int64},
                      {"f", type_id::float64},
                      {"b", type_id::boolean},
                      {"ts", type_id::timestamp}});
}

decoder_options jsonl(schema_ptr s) {
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = std::move(s);
  return o;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("jsonl decodes every type by field name in any key order") {
  auto dec = decoder(jsonl(all_types()));
  auto d = decode_text(*dec,
    R"({"ts": 1000, "b": true, "f": 2.5, "value": -7, "key": "a"})" "\n"
    R"({"key": "\u00e9\n", "value": 9223372036854775807, "f": 3, "b": false, "ts": "2015-05-17T10:05:03+02:00"})" "\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{S("a"), I(-7), F(2.5), B(true), I(1000)});
  CHECK(d.rows[1] == std::vector<value>{S("\xc3\xa9\n"), I(INT64_MAX), F(3.0), B(false),
                                        I(1431849903000)});
}

TEST_CASE("jsonl control lines advance the replay clock only when enabled") {
  auto opts = jsonl(all_types());
  opts.control_lines = true;
  auto dec = decoder(opts);
  auto d = decode_text(*dec,
    R"({"key": "a", "value": 1})" "\n"
    R"({"control": "advance_processing_time", "proc_time": 5000})" "\n"
    R"({"control": "pause"})" "\n"
    R"({"control": "advance_processing_time", "proc_time": "soon"})" "\n");
  CHECK(d.rows.size() == 1);
  CHECK(d.controls == std::vector<event_time>{5000});
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0] == "unknown control line (known: \"advance_processing_time\")");
  CHECK(d.bad[1] == "control line advance_processing_time needs an integer proc_time");

  auto plain = decoder(jsonl(all_types()));
  auto p = decode_text(*plain, R"({"control": "advance_processing_time", "proc_time": 5})" "\n");
  CHECK(p.controls.empty());
  CHECK(p.rows.size() == 1); // without control lines it is an ordinary record
}

TEST_CASE("jsonl missing fields and JSON null are null and unknown keys are ignored") {
  auto dec = decoder(jsonl(all_types()));
  auto d = decode_text(*dec, R"({"key": null, "extra": [1, {"x": 2}], "value": 3})" "\n{}\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0] == std::vector<value>{N, I(3), N, N, N});
  CHECK(d.rows[1] == std::vector<value>{N, N, N, N, N});
}

TEST_CASE("jsonl a duplicate key keeps its last value") {
  auto dec = decoder(jsonl(all_types()));
  auto d = decode_text(*dec, R"({"value": 1, "value": 2})");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0][1] == I(2));
}

TEST_CASE("jsonl keeps arrays and objects in string fields as minified JSON text") {
  auto dec = decoder(jsonl(all_types()));
  auto d = decode_text(*dec, R"({"key": ["x", 1, {"a": [true]}]})" "\n"
                             R"({"key": {"a": 1}})" "\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 2);
  CHECK(d.rows[0][0] == S(R"(["x",1,{"a":[true]}])"));
  CHECK(d.rows[1][0] == S(R"({"a":1})"));
}

TEST_CASE("jsonl values of the wrong type are bad records with a reason") {
  auto dec = decoder(jsonl(all_types()));
  struct tc { const char* line; const char* reason; };
  const tc cases[] = {
    {R"({"value": "12"})", "field 'value': expected int64, got string"},
    {R"({"value": 1.5})", "field 'value': expected int64, got float"},
    {R"({"value": 3.0})", "field 'value': expected int64, got float"},
    {R"({"value": 18446744073709551615})",
     "field 'value': expected int64, got integer out of int64 range"},
    {R"({"f": "1"})", "field 'f': expected float64, got string"},
    {R"({"b": 1})", "field 'b': expected bool, got integer"},
    {R"({"key": 5})", "field 'key': expected string, got integer"},
    {R"({"ts": 1.5})", "field 'ts': expected timestamp, got float"},
    {R"({"ts": "May 17"})", "field 'ts': cannot parse \"May 17\" as an ISO-8601 timestamp"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.line);
    batch_builder b{dec->output_schema()};
    std::string reason;
    CHECK(dec->decode(c.line, b, reason) == record_decoder::status::bad);
    CHECK(reason == c.reason);
    CHECK(b.rows() == 0);
    for (std::size_t i = 0; i < 5; ++i)
      CHECK(b.col(i).size() == 0); // the partial row was rolled back
  }
}

TEST_CASE("jsonl a line that is not a JSON object is bad") {
  auto dec = decoder(jsonl(all_types()));
  batch_builder b{dec->output_schema()};
  std::string reason;
  CHECK(dec->decode(R"({"key": "a",)", b, reason) == record_decoder::status::bad);
  CHECK(reason.rfind("invalid JSON: ", 0) == 0);
  CHECK(reason.size() > 14);
  CHECK(dec->decode(R"({"key": "a"} trailing)", b, reason) == record_decoder::status::bad);
  CHECK(reason.rfind("invalid JSON: ", 0) == 0);
  CHECK(dec->decode("[1, 2]", b, reason) == record_decoder::status::bad);
  CHECK(reason == "invalid JSON: expected an object, got array");
  CHECK(dec->decode("42", b, reason) == record_decoder::status::bad);
  CHECK(reason == "invalid JSON: expected an object, got integer");
  CHECK(b.rows() == 0);
  // The parser is reused: a good line after bad ones still decodes.
  CHECK(dec->decode(R"({"key": "ok"})", b, reason) == record_decoder::status::ok);
  CHECK(b.rows() == 1);
}

TEST_CASE("jsonl blank lines are skipped") {
  auto dec = decoder(jsonl(all_types()));
  auto d = decode_text(*dec, "\n   \n{\"value\": 1}\n\r\n");
  CHECK(d.skipped == 3);
  CHECK(d.rows.size() == 1);
  CHECK(d.bad.empty());
}

TEST_CASE("jsonl decodes a line longer than simdjson's padding from a tight buffer") {
  auto dec = decoder(jsonl(all_types()));
  std::string big(100000, 'x');
  std::string line = R"({"key": ")" + big + R"("})";
  // A buffer that ends exactly at the record: no slack for simdjson.
  std::vector<char> exact(line.begin(), line.end());
  batch_builder b{dec->output_schema()};
  std::string reason;
  REQUIRE(dec->decode({exact.data(), exact.size()}, b, reason) == record_decoder::status::ok);
  auto batch = b.finish();
  CHECK(batch->columns[0].str(0) == big);
}

TEST_CASE("jsonl event time must be present and not null") {
  auto o = jsonl(all_types());
  o.event_time_field = "ts";
  auto dec = decoder(o);
  auto d = decode_text(*dec, "{\"ts\": 5}\n{\"ts\": null}\n{}\n{\"ts\": \"1970-01-01T00:00:01Z\"}\n");
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0] == "event time field 'ts' is null");
  CHECK(d.bad[1] == "event time field 'ts' is null");
  CHECK(d.rows.size() == 2);
  CHECK(d.timestamps == std::vector<event_time>{5, 1000});
}
}
