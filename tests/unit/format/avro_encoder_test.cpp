// SPDX-License-Identifier: Apache-2.0
// format = "avro" written (format::avro_encoder, a Kafka sink's values): the
// generated writer schema, and rows read back by the Avro datum decoder
// through that schema equal to the rows written; the schema registry's
// subject names and frame header.
#include "format_test_util.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <limits>
#include <string>

using namespace weir;
using namespace weir::format;

TEST_CASE("avro encoder: the generated schema is a record of nullable fields") {
  auto s = make_schema({{"id", type_id::int64}, {"ok", type_id::boolean},
                        {"ts", type_id::timestamp}, {"x", type_id::float64},
                        {"name", type_id::string}});
  auto e = avro_encoder::make(s, "shop.orders.Order");
  REQUIRE(e);
  CHECK(e->schema_json()
        == R"({"type":"record","name":"Order","namespace":"shop.orders","fields":[)"
           R"({"name":"id","type":["null","long"],"default":null},)"
           R"({"name":"ok","type":["null","boolean"],"default":null},)"
           R"({"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}],"default":null},)"
           R"({"name":"x","type":["null","double"],"default":null},)"
           R"({"name":"name","type":["null","string"],"default":null}]})");
  auto bad_record = avro_encoder::make(s, "shop.9orders");
  REQUIRE_FALSE(bad_record);
  CHECK(bad_record.error().message.find("'shop.9orders' is not an Avro record name")
        == 0);
  auto bad_field = avro_encoder::make(make_schema({{"window-start", type_id::int64}}), "r");
  REQUIRE_FALSE(bad_field);
  CHECK(bad_field.error().message.find("field 'window-start' is not an Avro name") == 0);
}

TEST_CASE("avro encoder: rows read back through the generated schema are the rows written") {
  auto s = make_schema({{"id", type_id::int64}, {"ok", type_id::boolean},
                        {"ts", type_id::timestamp}, {"x", type_id::float64},
                        {"name", type_id::string}});
  const std::vector<std::vector<value>> rows = {
    {std::int64_t{0}, true, std::int64_t{1'700'000'000'123}, 0.25, std::string{"a \"b\" é"}},
    {std::numeric_limits<std::int64_t>::min(), false, std::int64_t{-1}, -1e300, std::string{}},
    {std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{}, std::monostate{}},
    {std::numeric_limits<std::int64_t>::max(), true, std::int64_t{0}, 3.5,
     std::string(300, 'z')},
  };
  batch_builder b{s};
  for (const auto& r : rows) {
    for (std::size_t i = 0; i < r.size(); ++i)
      b.col(i).append_value(r[i]);
    b.commit_row();
  }
  auto batch = b.finish();
  auto e = avro_encoder::make(s, "r");
  REQUIRE(e);
  decoder_options o;
  o.kind = format_kind::avro;
  o.schema = s;
  o.avro_schema = e->schema_json();
  auto dec = test::decoder(o);
  batch_builder back{s};
  for (std::size_t r = 0; r < batch->num_rows; ++r) {
    std::string datum;
    e->encode(*batch, r, datum);
    std::string reason;
    REQUIRE_MESSAGE(dec->decode(datum, back, reason) == record_decoder::status::ok, reason);
  }
  auto read = back.finish();
  REQUIRE(read->num_rows == rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r)
    for (std::size_t i = 0; i < s->size(); ++i)
      CHECK(read->columns[i].get(r) == rows[r][i]);
}

TEST_CASE("schema registry: subject names and the frame header") {
  CHECK(subject_name(subject_strategy::topic, "orders", "shop.Order") == "orders-value");
  CHECK(subject_name(subject_strategy::topic, "orders", "shop.Order", true) == "orders-key");
  CHECK(subject_name(subject_strategy::record, "orders", "shop.Order") == "shop.Order");
  CHECK(subject_name(subject_strategy::topic_record, "orders", "shop.Order")
        == "orders-shop.Order");
  CHECK(schema_registry_frame(0x01020304) == std::string("\0\x01\x02\x03\x04", 5));
  CHECK(schema_registry_frame(7) == std::string("\0\0\0\0\x07", 5));
}
