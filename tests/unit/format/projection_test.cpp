// SPDX-License-Identifier: Apache-2.0
// Projection push-down into the decoders (decoder_options::read_fields):
// an unread field is not decoded, so nothing in it can make a record bad, and
// its column is all null without values (column::has_values false).
#include "format_test_util.hpp"

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

schema_ptr bid_schema() {
  return make_schema({{"auction", type_id::int64},
                      {"price", type_id::int64},
                      {"url", type_id::string},
                      {"ts", type_id::timestamp}});
}

// read: auction and ts (ts is also the event time); price and url unread.
decoder_options projected(format_kind k) {
  decoder_options o;
  o.kind = k;
  o.schema = bid_schema();
  o.event_time_field = "ts";
  o.read_fields = {true, false, false, false};
  return o;
}

struct result {
  record_batch_ptr batch;
  std::vector<std::string> bad;
};

result decode_all(record_decoder& dec, std::string_view text) {
  result out;
  batch_builder b{dec.output_schema()};
  std::string reason;
  while (!text.empty()) {
    std::size_t lines = 0;
    const std::size_t n = dec.next_record(text, true, lines);
    REQUIRE(n > 0);
    std::string_view rec = text.substr(0, n);
    text.remove_prefix(n);
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    reason.clear();
    if (dec.decode(rec, b, reason) == record_decoder::status::bad)
      out.bad.push_back(reason);
  }
  out.batch = b.finish();
  return out;
}

void check_projected(const result& r, std::size_t rows) {
  REQUIRE(r.batch->num_rows == rows);
  const auto& cols = r.batch->columns;
  for (std::size_t c : {1u, 2u}) {
    CHECK(cols[c].size() == rows);
    CHECK_FALSE(cols[c].has_values()); // not materialised
    CHECK(cols[c].first_null() == 0);
  }
  CHECK(cols[0].has_values());
  CHECK(cols[3].has_values());
  CHECK(r.batch->timestamps.size() == rows);
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("jsonl with read_fields: an unread field of the wrong type does not make the record bad") {
  const std::string text =
    R"({"auction": 1, "price": "not a number", "url": 42, "ts": 1000})" "\n"
    R"({"auction": 2, "price": 7, "url": "u", "ts": "1970-01-01T00:00:02Z"})" "\n"
    R"({"auction": 3, "price": 99999999999999999999999, "url": [1, {"a": 2}], "ts": 3000})" "\n";
  SUBCASE("projected: every record is read, unread columns without values") {
    auto dec = decoder(projected(format_kind::jsonl));
    auto r = decode_all(*dec, text);
    CHECK(r.bad.empty());
    check_projected(r, 3);
    CHECK(r.batch->columns[0].ints[2] == 3);
    CHECK(r.batch->timestamps[1] == 2000);
  }
  SUBCASE("every field read: the same text has bad records") {
    auto o = projected(format_kind::jsonl);
    o.read_fields.clear();
    auto r = decode_all(*decoder(o), text);
    CHECK(r.bad.size() == 2);
    CHECK(r.batch->num_rows == 1);
  }
  SUBCASE("a read field still makes its record bad, and the row is rolled back") {
    auto dec = decoder(projected(format_kind::jsonl));
    auto r = decode_all(*dec, R"({"auction": "x", "price": 1, "ts": 5})" "\n"
                              R"({"auction": 4, "ts": null})" "\n"
                              R"({"auction": 5, "ts": 6})" "\n");
    REQUIRE(r.bad.size() == 2);
    CHECK(r.bad[0] == "field 'auction': expected int64, got string");
    CHECK(r.bad[1] == "event time field 'ts' is null");
    check_projected(r, 1);
    CHECK(r.batch->columns[0].ints[0] == 5);
  }
  SUBCASE("the event-time field is decoded even when read_fields leaves it out") {
    auto o = projected(format_kind::jsonl);
    o.read_fields = {true, false, false, false}; // (ts unmarked)
    auto r = decode_all(*decoder(o), R"({"auction": 1, "ts": 42})" "\n");
    REQUIRE(r.batch->num_rows == 1);
    CHECK(r.batch->timestamps[0] == 42);
    CHECK(r.batch->columns[3].ints[0] == 42);
  }
}

TEST_CASE("csv with read_fields: an unread cell that does not parse does not make the record bad") {
  const std::string text = "auction,price,url,ts\n"
                           "1,not a number,\"a,b\",1000\n"
                           "2,7,u,1970-01-01T00:00:02Z\n"
                           "3,99999999999999999999999,,3000\n";
  SUBCASE("projected") {
    auto dec = decoder(projected(format_kind::csv));
    auto r = decode_all(*dec, text);
    CHECK(r.bad.empty());
    check_projected(r, 3);
    CHECK(r.batch->columns[0].ints[2] == 3);
    CHECK(r.batch->timestamps[1] == 2000);
  }
  SUBCASE("every field read") {
    auto o = projected(format_kind::csv);
    o.read_fields.clear();
    auto r = decode_all(*decoder(o), text);
    CHECK(r.bad.size() == 2);
  }
  SUBCASE("the cell count is still checked: a short row is bad") {
    auto dec = decoder(projected(format_kind::csv));
    auto r = decode_all(*dec, "auction,price,url,ts\n1,2,3\n4,5,6,7\n");
    REQUIRE(r.bad.size() == 1);
    CHECK(r.bad[0] == "expected 4 fields, got 3");
    check_projected(r, 1);
  }
}

TEST_CASE("the file reader with read_fields: rows, unread columns without values") {
  temp_dir dir{"projection"};
  std::string text;
  for (int i = 0; i < 5000; ++i)
    text += R"({"auction": )" + std::to_string(i) + R"(, "price": "p", "url": "x", "ts": )"
            + std::to_string(i * 10) + "}\n";
  file_source_options fo;
  fo.path = dir.file("bids.jsonl", text);
  fo.decoder = projected(format_kind::jsonl);
  fo.event_time_field = "ts";
  fo.chunk_bytes = 4096;
  std::size_t bad = 0;
  auto rd = make_file_source_reader(fo, [&](const bad_record&) { ++bad; });
  REQUIRE(rd);
  std::size_t rows = 0;
  std::int64_t sum = 0;
  while (auto b = (*rd)->poll_next(1000)) {
    CHECK_FALSE(b->columns[1].has_values());
    CHECK_FALSE(b->columns[2].has_values());
    for (std::size_t i = 0; i < b->num_rows; ++i)
      sum += b->columns[0].ints[i];
    rows += b->num_rows;
  }
  CHECK(bad == 0);
  CHECK(rows == 5000);
  CHECK(sum == 4999 * 5000 / 2);
}
}

TEST_SUITE("format") {
TEST_CASE("jsonl On-Demand fast path: what it leaves to DOM gives DOM's answer") {
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = make_schema({{"a", type_id::int64}, {"s", type_id::string}});
  auto dec = decoder(o);
  auto r = decode_all(*dec,
    R"({"a": 1, "s": "x"} {"a": 2})" "\n"        // two objects on a line: bad
    R"({"\u0061": 3, "s": "y"})" "\n"             // an escaped key: read as "a"
    R"({"a": 4, "s": "z", "a": 5})" "\n"          // a duplicate key keeps the last
    R"({"a": 6, "s": [1, {"b": 2}]})" "\n"        // nested value in a string field
    R"({"a": 7, "zz": tru, "s": "w"})" "\n"       // a malformed undeclared value: skipped
    R"({"a": 8.5, "s": "v"})" "\n");              // wrong type: DOM's reason
  REQUIRE(r.bad.size() == 2);
  CHECK(r.bad[0].rfind("invalid JSON: ", 0) == 0);
  CHECK(r.bad[1] == "field 'a': expected int64, got float");
  REQUIRE(r.batch->num_rows == 4);
  const auto& a = r.batch->columns[0];
  const auto& s = r.batch->columns[1];
  CHECK(a.ints[0] == 3);
  CHECK(s.str(0) == "y");
  CHECK(a.ints[1] == 5);
  CHECK(s.str(1) == "z");
  CHECK(a.ints[2] == 6);
  CHECK(s.str(2) == R"([1,{"b":2}])");
  CHECK(a.ints[3] == 7);
  CHECK(s.str(3) == "w");
}
}
