// SPDX-License-Identifier: Apache-2.0
// Fuzz target: format = "protobuf" (src/format/protobuf.hpp), the message
// type test.events.Event of tests/integration/protobuf/events.proto (every
// scalar type, an enum, Timestamp, wrappers, nested and repeated messages,
// a map, a oneof). The input's first byte picks the surface:
// - even: the rest is one message (a Kafka message's value), decoded
//   against declared fields that take each of its fields, by path too;
// - odd: the rest is a file of length-delimited messages, read by the file
//   source's reader to its end.
//
// Checked besides "no crash, hang or sanitizer report": `decode` commits one
// row on ok and none otherwise, every column one value per row; a bad
// message has a reason and its dead-letter line is valid JSON; the file's
// position never goes back and its reader ends.
#include "weir/format/format.hpp"

#include "fuzz_checks.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <variant>
#include <string>
#include <string_view>
#include <unistd.h>

namespace {

using weir::type_id;
using weir::format::decoder_options;
using weir::format::format_kind;

using weir_fuzz::check_dead_letter;
using weir_fuzz::fail;

decoder_options options() {
  decoder_options o;
  o.kind = format_kind::protobuf;
  o.proto_file = WEIR_PROTO_DIR "/events.proto";
  o.proto_include = {WEIR_PROTO_DIR};
  o.proto_message = "test.events.Event";
  o.schema = weir::make_schema(
    {{"ts", type_id::timestamp},  {"id", type_id::int64},        {"ok", type_id::boolean},
     {"small", type_id::float64}, {"u64", type_id::int64},       {"f64", type_id::float64},
     {"s64", type_id::int64},     {"ratio", type_id::float64},   {"name", type_id::string},
     {"blob", type_id::string},   {"color", type_id::string},    {"maybe", type_id::int64},
     {"wrapped", type_id::int64}, {"wrapped_text", type_id::string},
     {"inner", type_id::string},  {"inner.deeper.c", type_id::int64},
     {"tags", type_id::string},   {"counts", type_id::string},   {"attrs", type_id::string},
     {"where.label", type_id::string}, {"word", type_id::string}, {"number", type_id::int64}});
  return o;
}

// The declared fields without JSON text (the wire-format fast path reads
// them), decoded by the fast path and by DynamicMessage alone: both must
// give the same status and the same row.
decoder_options scalar_options(bool reference) {
  auto o = options();
  o.schema = weir::make_schema(
    {{"ts", type_id::timestamp},  {"id", type_id::int64},        {"ok", type_id::boolean},
     {"small", type_id::float64}, {"u64", type_id::int64},       {"f64", type_id::float64},
     {"s64", type_id::int64},     {"s32", type_id::int64},       {"sf32", type_id::int64},
     {"ratio", type_id::float64}, {"score", type_id::float64},   {"name", type_id::string},
     {"blob", type_id::string},   {"color", type_id::string},    {"maybe", type_id::int64},
     {"wrapped", type_id::int64}, {"wrapped_text", type_id::string},
     {"inner.a", type_id::int64}, {"inner.deeper.c", type_id::int64},
     {"where.label", type_id::string}, {"where.lat", type_id::float64},
     {"word", type_id::string},   {"number", type_id::int64}});
  o.proto_reference = reference;
  return o;
}

bool same(const weir::value& a, const weir::value& b) {
  const auto* x = std::get_if<double>(&a);
  const auto* y = std::get_if<double>(&b);
  if (x && y)
    return std::memcmp(x, y, sizeof(double)) == 0 || (*x != *x && *y != *y);
  return a == b;
}

void fast_against_reference(std::string_view msg) {
  static auto fast = weir::format::make_decoder(scalar_options(false));
  static auto ref = weir::format::make_decoder(scalar_options(true));
  if (!fast || !ref)
    fail("cannot make the scalar decoders");
  weir::batch_builder a{(*fast)->output_schema()}, b{(*ref)->output_schema()};
  std::string ra, rb;
  const auto sa = (*fast)->decode(msg, a, ra);
  const auto sb = (*ref)->decode(msg, b, rb);
  if (sa != sb || ra != rb)
    fail("fast path and reference differ: '" + ra + "' and '" + rb + "'");
  if (a.rows() != b.rows())
    fail("fast path and reference give different row counts");
  for (std::size_t c = 0; c < a.output_schema().size() && a.rows() == 1; ++c)
    if (!same(a.col(c).get(0), b.col(c).get(0)))
      fail("fast path and reference differ in field " + a.output_schema().at(c).name);
}

void one_message(std::string_view msg) {
  fast_against_reference(msg);
  static auto dec = [] {
    auto d = weir::format::make_decoder(options());
    if (!d)
      fail("cannot make the decoder: " + d.error().message);
    return std::move(*d);
  }();
  weir_fuzz::decode_one(*dec, msg);
}

void delimited(std::string_view file) {
  const auto& path = weir_fuzz::write_input(file, ".pb");
  weir::format::file_source_options o;
  o.path = path;
  o.decoder = options();
  o.chunk_bytes = 7; // messages across reads
  auto reader = weir::format::make_protobuf_file_reader(o, check_dead_letter);
  if (!reader)
    fail("cannot make the reader: " + reader.error().message);
  weir_fuzz::drain(**reader, [&] { return (*reader)->positions().at(0).value; });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0)
    return 0;
  const std::string_view rest{reinterpret_cast<const char*>(data) + 1, size - 1};
  if (data[0] & 1)
    delimited(rest);
  else
    one_message(rest);
  return 0;
}
