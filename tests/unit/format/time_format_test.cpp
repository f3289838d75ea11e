// SPDX-License-Identifier: Apache-2.0
// Output time formats (a sink's timestamp_format) and the zone of zone-less
// input timestamps (a source's time_zone).
#include "format_test_util.hpp"

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

record_batch_ptr window_row() {
  batch_builder b{make_schema({{"key", type_id::string},
                               {"window_start", type_id::timestamp},
                               {"window_end", type_id::timestamp},
                               {"n", type_id::int64}})};
  b.col(0).append_string("a");
  b.col(1).append_int(1'678'028'400'000); // 2023-03-05T15:00:00Z
  b.col(2).append_int(1'678'028'460'000);
  b.col(3).append_int(7);
  b.commit_row();
  b.col(0).append_string("b");
  b.col(1).append_int(-1);
  b.col(2).append_null();
  b.col(3).append_int(1'678'028'400'000); // an int64, not a timestamp: stays a number
  b.commit_row();
  return b.finish();
}

std::string encode_all(format_kind k, timestamp_format ts) {
  auto enc = make_encoder(k, ts);
  auto batch = window_row();
  std::string out = enc->header(*batch->schema);
  for (std::size_t r = 0; r < batch->num_rows; ++r)
    enc->encode(*batch, r, out);
  return out;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("timestamp_format epoch_ms (the default) writes timestamps as integer ms") {
  CHECK(encode_all(format_kind::jsonl, timestamp_format::epoch_ms)
        == "{\"key\":\"a\",\"window_start\":1678028400000,\"window_end\":1678028460000,\"n\":7}\n"
           "{\"key\":\"b\",\"window_start\":-1,\"window_end\":null,\"n\":1678028400000}\n");
  auto dflt = make_encoder(format_kind::csv);
  CHECK(encode_all(format_kind::csv, timestamp_format::epoch_ms)
        == "key,window_start,window_end,n\na,1678028400000,1678028460000,7\n"
           "b,-1,,1678028400000\n");
}

TEST_CASE("timestamp_format iso8601 writes timestamp fields as UTC text, in jsonl and csv") {
  CHECK(encode_all(format_kind::jsonl, timestamp_format::iso8601)
        == "{\"key\":\"a\",\"window_start\":\"2023-03-05T15:00:00.000Z\","
           "\"window_end\":\"2023-03-05T15:01:00.000Z\",\"n\":7}\n"
           "{\"key\":\"b\",\"window_start\":\"1969-12-31T23:59:59.999Z\","
           "\"window_end\":null,\"n\":1678028400000}\n");
  CHECK(encode_all(format_kind::csv, timestamp_format::iso8601)
        == "key,window_start,window_end,n\n"
           "a,2023-03-05T15:00:00.000Z,2023-03-05T15:01:00.000Z,7\n"
           "b,1969-12-31T23:59:59.999Z,,1678028400000\n");
}

TEST_CASE("iso8601 output reads back to the same ms in jsonl and csv") {
  for (auto k : {format_kind::jsonl, format_kind::csv}) {
    decoder_options o;
    o.kind = k;
    o.schema = window_row()->schema;
    auto d = decode_text(*decoder(o), encode_all(k, timestamp_format::iso8601));
    CHECK(d.bad.empty());
    REQUIRE(d.rows.size() == 2);
    CHECK(d.rows[0][1] == I(1'678'028'400'000));
    CHECK(d.rows[1][1] == I(-1));
  }
}

TEST_CASE("a source's time zone applies to zone-less timestamps in jsonl and csv") {
  auto z = time_zone::parse("+02:00");
  REQUIRE(z);
  auto s = make_schema({{"ts", type_id::timestamp}});
  decoder_options j;
  j.kind = format_kind::jsonl;
  j.schema = s;
  j.zone = *z;
  auto dj = decode_text(*decoder(j), R"({"ts": "2023-03-05 17:00:00"})" "\n"
                                     R"({"ts": "2023-03-05T17:00:00Z"})" "\n"
                                     R"({"ts": 1000})" "\n");
  REQUIRE(dj.rows.size() == 3);
  CHECK(dj.rows[0][0] == I(1'678'028'400'000));
  CHECK(dj.rows[1][0] == I(1'678'035'600'000));
  CHECK(dj.rows[2][0] == I(1000)); // epoch ms are instants: no zone
  decoder_options c = j;
  c.kind = format_kind::csv;
  auto dc = decode_text(*decoder(c), "ts\n2023-03-05T17:00:00\n");
  REQUIRE(dc.rows.size() == 1);
  CHECK(dc.rows[0][0] == I(1'678'028'400'000));
}
} // TEST_SUITE
