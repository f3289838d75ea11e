// SPDX-License-Identifier: Apache-2.0
// Fuzz target: format = "avro" (src/format/avro.hpp). The input's first byte
// picks the surface:
// - even: the rest is one datum (a Kafka message's value) of a writer schema
//   with every Avro type weir reads, decoded against declared fields that
//   take each of them (as weir's types, nested values as JSON text);
// - odd: the rest is an Object Container File (any writer schema, any
//   codec), read by the file source's reader to its end.
//
// Checked besides "no crash, hang or sanitizer report": `decode` commits one
// row on ok and none otherwise, every column one value per row; a bad datum
// or block has a reason and its dead-letter line is valid JSON; a container
// file's positions never go back. Nothing a datum says (lengths, counts) is
// allocated before its bytes are there.
#include "weir/format/format.hpp"

#include "fuzz_checks.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

using weir::type_id;
using weir::format::decoder_options;
using weir::format::format_kind;

using weir_fuzz::check_dead_letter;
using weir_fuzz::fail;

constexpr const char* writer_schema = R"({"type":"record","name":"r","fields":[
  {"name":"b","type":"boolean"},
  {"name":"i","type":"int"},
  {"name":"l","type":["null","long"]},
  {"name":"f","type":"float"},
  {"name":"d","type":"double"},
  {"name":"s","type":"string"},
  {"name":"by","type":"bytes"},
  {"name":"e","type":{"type":"enum","name":"E","symbols":["A","B","C"]}},
  {"name":"ts","type":{"type":"long","logicalType":"timestamp-micros"}},
  {"name":"day","type":{"type":"int","logicalType":"date"}},
  {"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":30,"scale":3}},
  {"name":"fx","type":{"type":"fixed","name":"F","size":4,"logicalType":"decimal","precision":8,"scale":1}},
  {"name":"skipped","type":{"type":"map","values":{"type":"array","items":["null","r"]}}},
  {"name":"nested","type":{"type":"record","name":"n","fields":[
    {"name":"a","type":{"type":"array","items":"null"}},
    {"name":"m","type":{"type":"map","values":"bytes"}},
    {"name":"self","type":["null","r"]}]}}
]})";

weir::schema_ptr reader_schema() {
  return weir::make_schema({{"b", type_id::boolean},   {"i", type_id::float64},
                            {"l", type_id::int64},     {"f", type_id::float64},
                            {"d", type_id::float64},   {"s", type_id::string},
                            {"by", type_id::string},   {"e", type_id::string},
                            {"ts", type_id::timestamp}, {"day", type_id::int64},
                            {"dec", type_id::string},  {"fx", type_id::float64},
                            {"nested", type_id::string}, {"absent", type_id::string}});
}

void one_datum(std::string_view datum) {
  static auto dec = [] {
    decoder_options o;
    o.kind = format_kind::avro;
    o.schema = reader_schema();
    o.avro_schema = writer_schema;
    auto d = weir::format::make_decoder(o);
    if (!d)
      fail("cannot make the decoder: " + d.error().message);
    return std::move(*d);
  }();
  weir_fuzz::decode_one(*dec, datum);
}

void container(std::string_view file) {
  const auto& path = weir_fuzz::write_input(file, ".avro");
  weir::format::file_source_options o;
  o.path = path;
  o.decoder.kind = format_kind::avro;
  o.decoder.schema = reader_schema();
  std::size_t bad = 0;
  auto reader = weir::format::make_avro_file_reader(o, [&](const weir::bad_record& r) {
    ++bad;
    check_dead_letter(r);
  });
  if (!reader)
    return; // not a container file, or a schema these fields cannot read
  weir_fuzz::drain(**reader, [&] { return (*reader)->position(); });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view rest{reinterpret_cast<const char*>(data) + 1, size - 1};
  if (data[0] & 1)
    container(rest);
  else
    one_datum(rest);
  return 0;
}
