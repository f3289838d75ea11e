// SPDX-License-Identifier: Apache-2.0
// format = "avro", single datums (a Kafka message's value): schema resolution
// between the writer's schema and the declared fields, logical types, and the
// bad datums (src/format/avro.hpp). The datums are encoded here by hand, from
// the specification's binary encoding.
#include "format_test_util.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>

using namespace weir;
using namespace weir::format;

namespace {

// The specification's binary encoding, enough to write test datums.
struct enc {
  std::string out;
  enc& lng(std::int64_t v) {
    auto z = (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
    while (z >= 0x80) {
      out += static_cast<char>((z & 0x7F) | 0x80);
      z >>= 7;
    }
    out += static_cast<char>(z);
    return *this;
  }
  enc& str(std::string_view s) {
    lng(static_cast<std::int64_t>(s.size()));
    out += s;
    return *this;
  }
  enc& boolean(bool b) {
    out += static_cast<char>(b ? 1 : 0);
    return *this;
  }
  enc& flt(float f) {
    char b[4];
    std::memcpy(b, &f, 4);
    out.append(b, 4);
    return *this;
  }
  enc& dbl(double d) {
    char b[8];
    std::memcpy(b, &d, 8);
    out.append(b, 8);
    return *this;
  }
  enc& raw(std::string_view s) {
    out += s;
    return *this;
  }
};

decoder_options avro_opts(std::string writer, schema_ptr reader) {
  decoder_options o;
  o.kind = format_kind::avro;
  o.schema = std::move(reader);
  o.avro_schema = std::move(writer);
  return o;
}

test::decoded decode_one(record_decoder& dec, const std::string& datum) {
  test::decoded out;
  batch_builder b{dec.output_schema()};
  std::string reason;
  if (dec.decode(datum, b, reason) == record_decoder::status::bad)
    out.bad.push_back(reason);
  auto batch = b.finish();
  for (std::size_t r = 0; r < batch->num_rows; ++r) {
    std::vector<value> row;
    for (const auto& c : batch->columns)
      row.push_back(c.get(r));
    out.rows.push_back(std::move(row));
  }
  out.timestamps.assign(batch->timestamps.begin(), batch->timestamps.end());
  return out;
}

std::string record(std::string fields) {
  return R"({"type":"record","name":"r","fields":[)" + fields + "]}";
}

} // namespace

TEST_CASE("avro: fields resolve by name; extra writer fields skipped, missing ones null") {
  // Writer: a, skipped (a nested record not declared), b. Reader: b, a, c.
  auto dec = test::decoder(avro_opts(
    record(R"({"name":"a","type":"long"},
              {"name":"skipped","type":{"type":"record","name":"in","fields":[
                 {"name":"x","type":"string"},{"name":"y","type":{"type":"array","items":"int"}}]}},
              {"name":"b","type":"string"})"),
    make_schema({{"b", type_id::string}, {"a", type_id::int64}, {"c", type_id::float64}})));
  enc e;
  e.lng(-42).str("nested").lng(2).lng(1).lng(2).lng(0).str("hello");
  auto d = decode_one(*dec, e.out);
  REQUIRE(d.bad.empty());
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{std::string{"hello"}, std::int64_t{-42}, std::monostate{}});
}

TEST_CASE("avro: promotions int and long to float64, float to float64, bytes to string") {
  auto dec = test::decoder(avro_opts(
    record(R"({"name":"i","type":"int"},{"name":"l","type":"long"},
              {"name":"f","type":"float"},{"name":"by","type":"bytes"})"),
    make_schema({{"i", type_id::float64}, {"l", type_id::float64}, {"f", type_id::float64},
                 {"by", type_id::string}})));
  enc e;
  e.lng(7).lng(std::int64_t{1} << 40).flt(1.5f).str("raw");
  auto d = decode_one(*dec, e.out);
  REQUIRE(d.bad.empty());
  CHECK(d.rows[0] == std::vector<value>{7.0, static_cast<double>(std::int64_t{1} << 40), 1.5,
                                        std::string{"raw"}});
}

TEST_CASE("avro: a type that cannot be read into its field is refused when resolved") {
  auto d1 = make_decoder(avro_opts(record(R"({"name":"s","type":"string"})"),
                                   make_schema({{"s", type_id::int64}})));
  REQUIRE_FALSE(d1);
  CHECK(d1.error().message == "field 's': the writer's string cannot be read as int64");
  // No demotion: a double is not read as int64; a union needs every branch.
  auto d2 = make_decoder(avro_opts(record(R"({"name":"x","type":["null","long","double"]})"),
                                   make_schema({{"x", type_id::int64}})));
  REQUIRE_FALSE(d2);
  CHECK(d2.error().message.find("double cannot be read as int64") != std::string::npos);
  auto d3 = make_decoder(avro_opts(R"("long")", make_schema({{"x", type_id::int64}})));
  REQUIRE_FALSE(d3);
  CHECK(d3.error().message == "the Avro writer schema must be a record, got long");
  auto d4 = make_decoder(avro_opts(R"({"type":"record","name":"r","fields":[{"name":"a"}]})",
                                   make_schema({{"a", type_id::int64}})));
  REQUIRE_FALSE(d4);
  CHECK(d4.error().message.rfind("invalid Avro schema: ", 0) == 0);
  auto d5 = make_decoder(avro_opts(record(R"({"name":"r","type":{"type":"array","items":"int"}})"),
                                   make_schema({{"r", type_id::int64}})));
  REQUIRE_FALSE(d5);
  CHECK(d5.error().message.find("declare it a string") != std::string::npos);
}

TEST_CASE("avro: unions with null are nullable fields") {
  auto dec = test::decoder(avro_opts(record(R"({"name":"x","type":["null","long"]},
                                               {"name":"y","type":["string","null"]})"),
                                     make_schema({{"x", type_id::int64}, {"y", type_id::string}})));
  enc a;
  a.lng(0).lng(0).str("s");
  enc b;
  b.lng(1).lng(5).lng(1);
  auto da = decode_one(*dec, a.out);
  auto db = decode_one(*dec, b.out);
  REQUIRE(da.bad.empty());
  REQUIRE(db.bad.empty());
  CHECK(da.rows[0] == std::vector<value>{std::monostate{}, std::string{"s"}});
  CHECK(db.rows[0] == std::vector<value>{std::int64_t{5}, std::monostate{}});
}

TEST_CASE("avro: logical types timestamp-millis/micros, date, decimal, uuid, enum") {
  auto dec = test::decoder(avro_opts(
    record(R"({"name":"ms","type":{"type":"long","logicalType":"timestamp-millis"}},
              {"name":"us","type":{"type":"long","logicalType":"timestamp-micros"}},
              {"name":"day","type":{"type":"int","logicalType":"date"}},
              {"name":"days","type":{"type":"int","logicalType":"date"}},
              {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":9,"scale":2}},
              {"name":"decf","type":{"type":"fixed","name":"d8","size":2,"logicalType":"decimal","precision":4,"scale":1}},
              {"name":"id","type":{"type":"string","logicalType":"uuid"}},
              {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B"]}})"),
    make_schema({{"ms", type_id::timestamp}, {"us", type_id::timestamp},
                 {"day", type_id::timestamp}, {"days", type_id::int64},
                 {"dec", type_id::string}, {"decf", type_id::float64},
                 {"id", type_id::string}, {"e", type_id::string}})));
  enc e;
  e.lng(1'700'000'000'123).lng(-1'500).lng(19'000).lng(19'000);
  e.str(std::string{"\xFF\x85", 2});                // -123 scaled 2: -1.23
  e.raw(std::string{"\x01\x00", 2});                // 256 scaled 1: 25.6
  e.str("123e4567-e89b-12d3-a456-426614174000").lng(1);
  auto d = decode_one(*dec, e.out);
  REQUIRE(d.bad.empty());
  CHECK(d.rows[0] == std::vector<value>{
    std::int64_t{1'700'000'000'123}, std::int64_t{-2}, // micros floored to ms
    std::int64_t{19'000} * 86'400'000, std::int64_t{19'000}, std::string{"-1.23"}, 25.6,
    std::string{"123e4567-e89b-12d3-a456-426614174000"}, std::string{"B"}});
}

TEST_CASE("avro: records, arrays and maps read into a string field as JSON text") {
  auto dec = test::decoder(avro_opts(
    record(R"({"name":"r","type":{"type":"record","name":"in","fields":[
                 {"name":"a","type":"long"},{"name":"b","type":["null","string"]}]}},
              {"name":"arr","type":{"type":"array","items":"double"}},
              {"name":"m","type":{"type":"map","values":"boolean"}})"),
    make_schema({{"r", type_id::string}, {"arr", type_id::string}, {"m", type_id::string}})));
  enc e;
  e.lng(3).lng(1).str("q\"").lng(-2).lng(16).dbl(0.5).dbl(-2).lng(0).lng(1).str("k").boolean(true)
    .lng(0);
  auto d = decode_one(*dec, e.out);
  REQUIRE(d.bad.empty());
  CHECK(d.rows[0] == std::vector<value>{std::string{R"({"a":3,"b":"q\""})"},
                                        std::string{"[0.5,-2]"}, std::string{R"({"k":true})"}});
}

TEST_CASE("avro: bad datums are bad records with the field and byte") {
  auto dec = test::decoder(avro_opts(
    record(R"({"name":"a","type":"long"},{"name":"u","type":["null","string"]},
              {"name":"arr","type":{"type":"array","items":"null"}})"),
    make_schema({{"a", type_id::int64}, {"u", type_id::string}, {"arr", type_id::string}})));
  SUBCASE("truncated") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(1).lng(10).raw("abc").out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.rows.empty());
    CHECK(d.bad[0] == "field 'u': truncated datum: string at byte 3");
  }
  SUBCASE("union index out of range") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(7).out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "field 'u': union branch 7 out of range (2 branches) at byte 2");
  }
  SUBCASE("trailing bytes: another writer schema") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(0).lng(0).raw("zz").out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "2 bytes after the datum's end at byte 3 (another writer schema?)");
  }
  SUBCASE("a forged count of empty items is bounded") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(0).lng(std::int64_t{1} << 60).out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0].find("exceeds 2^20") != std::string::npos);
  }
  SUBCASE("a huge string length allocates nothing") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(1).lng(std::int64_t{1} << 62).out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0].find("truncated datum: string") != std::string::npos);
  }
  SUBCASE("invalid UTF-8 in a string") {
    auto d = decode_one(*dec, enc{}.lng(1).lng(1).str("\xC3(").lng(0).out);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "field 'u': invalid UTF-8 at byte 0 of its value");
  }
  SUBCASE("a good datum after a bad one") {
    (void) decode_one(*dec, enc{}.lng(1).lng(7).out);
    auto d = decode_one(*dec, enc{}.lng(9).lng(0).lng(0).out);
    REQUIRE(d.bad.empty());
    CHECK(d.rows[0] == std::vector<value>{std::int64_t{9}, std::monostate{}, std::string{"[]"}});
  }
}

TEST_CASE("avro: an event-time field that is null makes the datum bad") {
  auto o = avro_opts(record(R"({"name":"ts","type":["null",{"type":"long","logicalType":"timestamp-millis"}]})"),
                     make_schema({{"ts", type_id::timestamp}}));
  o.event_time_field = "ts";
  auto dec = test::decoder(o);
  auto good = decode_one(*dec, enc{}.lng(1).lng(1234).out);
  REQUIRE(good.bad.empty());
  CHECK(good.timestamps == std::vector<event_time>{1234});
  auto bad = decode_one(*dec, enc{}.lng(0).out);
  REQUIRE(bad.bad.size() == 1);
  CHECK(bad.bad[0] == "event time field 'ts' is null");
}

TEST_CASE("avro: a datum ending in a newline byte is kept whole") {
  // 5 encodes as 0x0a: a text decoder's line end, an Avro datum's last byte.
  auto dec = test::decoder(avro_opts(record(R"({"name":"a","type":"long"})"),
                                     make_schema({{"a", type_id::int64}})));
  auto d = decode_one(*dec, enc{}.lng(5).out);
  REQUIRE(d.bad.empty());
  CHECK(d.rows[0] == std::vector<value>{std::int64_t{5}});
}

namespace {

// An Object Container File (codec null) of `blocks`, each a list of `long`
// ids; `bad_sync_after`: the block whose trailing sync marker is damaged.
std::string container_file(const std::vector<std::vector<std::int64_t>>& blocks,
                           int bad_sync_after = -1) {
  const std::string sync = "0123456789abcdef";
  enc e;
  e.raw(std::string{"Obj\x01", 4}).lng(2).str("avro.schema")
    .str(record(R"({"name":"id","type":"long"})")).str("avro.codec").str("null").lng(0).raw(sync);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    enc data;
    for (auto id : blocks[b])
      data.lng(id);
    e.lng(static_cast<std::int64_t>(blocks[b].size())).str(data.out);
    e.raw(static_cast<int>(b) == bad_sync_after ? std::string(16, 'x') : sync);
  }
  return e.out;
}

std::vector<std::int64_t> read_ids(source_reader& r, std::size_t max_rows,
                                   std::size_t max_batches = 1000) {
  std::vector<std::int64_t> ids;
  for (std::size_t i = 0; i < max_batches; ++i) {
    auto b = r.poll_next(max_rows);
    if (!b)
      break;
    for (std::size_t row = 0; row < b->num_rows; ++row)
      ids.push_back(std::get<std::int64_t>(b->columns[0].get(row)));
  }
  return ids;
}

file_source_options container_opts(const std::string& path) {
  file_source_options o;
  o.path = path;
  o.decoder.kind = format_kind::avro;
  o.decoder.schema = make_schema({{"id", type_id::int64}});
  return o;
}

} // namespace

TEST_CASE("avro: a container file's position counts records; a restore skips as many") {
  test::temp_dir dir{"avro-seek"};
  const auto path = dir.file("ids.avro", container_file({{0, 1}, {2, 3}, {4}}));
  auto first = make_avro_file_reader(container_opts(path), nullptr);
  REQUIRE(first);
  CHECK(read_ids(**first, 3, 1) == std::vector<std::int64_t>{0, 1, 2});
  const auto at = (*first)->positions();
  REQUIRE(at.size() == 1);
  CHECK(at[0] == source_position{path, position_unit::event_number, 3, false});
  auto second = make_avro_file_reader(container_opts(path), nullptr);
  REQUIRE(second);
  (*second)->seek(at);
  CHECK(read_ids(**second, 100) == std::vector<std::int64_t>{3, 4});
  CHECK((*second)->positions()[0] == source_position{path, position_unit::event_number, 5, true});
}

TEST_CASE("avro: a corrupt container block is one bad record; the next block is read") {
  test::temp_dir dir{"avro-corrupt"};
  // The first block's sync marker damaged: it is corrupt; reading resumes
  // after the next marker found, the second block's, so the third is read.
  const auto path = dir.file("ids.avro", container_file({{0, 1}, {2, 3}, {4}}, 0));
  std::vector<bad_record> bad;
  auto r = make_avro_file_reader(container_opts(path),
                                 [&](const bad_record& b) { bad.push_back(b); });
  REQUIRE(r);
  CHECK(read_ids(**r, 100) == std::vector<std::int64_t>{4});
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].origin == path);
  CHECK(bad[0].offset > 0);
  CHECK(bad[0].reason.find("sync marker mismatch") != std::string::npos);
}

TEST_CASE("avro: a file that is not a container file is refused when the reader is made") {
  test::temp_dir dir{"avro-notavro"};
  const auto path = dir.file("x.avro", "{\"id\": 1}\n");
  auto r = make_avro_file_reader(container_opts(path), nullptr);
  REQUIRE_FALSE(r);
  CHECK(r.error().message == path + " is not an Avro container file: no 'Obj\\x01' magic");
}
