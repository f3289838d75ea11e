// SPDX-License-Identifier: Apache-2.0
// format = "protobuf" (src/format/protobuf.hpp): the mapping of Protobuf
// types to declared fields, presence and defaults, bad messages, and the
// file of length-delimited messages (positions, resume, a cut-off tail).
// The messages are written by libprotobuf itself (DynamicMessage over the
// same .proto, compiled here by the Importer independently of weir), the
// reference the decoder must agree with.
#include "weir/format/format.hpp"

#include <doctest/doctest.h>

#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <unistd.h>

using namespace weir;
using namespace weir::format;
namespace gp = google::protobuf;

namespace {

constexpr const char* proto_text = R"(
syntax = "proto2";
package t;
import "google/protobuf/timestamp.proto";
import "google/protobuf/wrappers.proto";
enum Kind { A = 1; B = 2; }
message Sub { optional int64 x = 1; optional string y = 2; }
message M {
  required int64 id = 1;
  optional uint64 big = 2;
  optional Kind kind = 3;
  optional int32 i32 = 4;
  optional float f = 5;
  optional string s = 6;
  optional bytes b = 7;
  optional google.protobuf.Timestamp ts = 8;
  optional google.protobuf.DoubleValue dv = 9;
  optional Sub sub = 10;
  repeated Sub subs = 11;
  map<int32, string> m = 12;
}
)";

struct fixture {
  std::string dir;
  gp::compiler::DiskSourceTree tree;
  struct quiet : gp::compiler::MultiFileErrorCollector {
    void AddError(const std::string&, int, int, const std::string& m) override {
      FAIL("the test's .proto does not compile: " << m);
    }
  } errors;
  std::unique_ptr<gp::compiler::Importer> importer;
  gp::DynamicMessageFactory factory;
  const gp::Descriptor* desc = nullptr;

  fixture() {
    dir = (std::filesystem::temp_directory_path()
           / ("weir-pb-test-" + std::to_string(::getpid())))
            .string();
    std::filesystem::create_directories(dir);
    std::ofstream{dir + "/m.proto"} << proto_text;
    tree.MapPath("", dir);
    tree.MapPath("", "/usr/include");
    importer = std::make_unique<gp::compiler::Importer>(&tree, &errors);
    REQUIRE(importer->Import("m.proto") != nullptr);
    desc = importer->pool()->FindMessageTypeByName("t.M");
    REQUIRE(desc != nullptr);
  }
  ~fixture() { std::filesystem::remove_all(dir); }

  std::unique_ptr<gp::Message> make() { return std::unique_ptr<gp::Message>(
      factory.GetPrototype(desc)->New()); }

  decoder_options options(schema_ptr s) const {
    decoder_options o;
    o.kind = format_kind::protobuf;
    o.schema = std::move(s);
    o.proto_file = dir + "/m.proto";
    o.proto_message = "t.M";
    return o;
  }
};

const gp::FieldDescriptor* fd(const gp::Message& m, const char* name) {
  return m.GetDescriptor()->FindFieldByName(name);
}

} // namespace

TEST_CASE("protobuf: every mapped type reads as its declared field") {
  if (!protobuf_built())
    return;
  fixture fx;
  auto m = fx.make();
  const auto* r = m->GetReflection();
  r->SetInt64(m.get(), fd(*m, "id"), -7);
  r->SetUInt64(m.get(), fd(*m, "big"), 42);
  r->SetEnumValue(m.get(), fd(*m, "kind"), 2);
  r->SetInt32(m.get(), fd(*m, "i32"), -3);
  r->SetFloat(m.get(), fd(*m, "f"), 1.5F);
  r->SetString(m.get(), fd(*m, "s"), "h\xC3\xA9");
  r->SetString(m.get(), fd(*m, "b"), std::string{"\x00\xFF\x10", 3});
  auto* ts = r->MutableMessage(m.get(), fd(*m, "ts"));
  ts->GetReflection()->SetInt64(ts, ts->GetDescriptor()->field(0), -2);
  ts->GetReflection()->SetInt32(ts, ts->GetDescriptor()->field(1), 500'000'001);
  auto* sub = r->MutableMessage(m.get(), fd(*m, "sub"));
  sub->GetReflection()->SetInt64(sub, fd(*sub, "x"), 9);
  auto* e1 = r->AddMessage(m.get(), fd(*m, "subs"));
  e1->GetReflection()->SetString(e1, fd(*e1, "y"), "a\"b");
  r->AddMessage(m.get(), fd(*m, "subs"));
  const std::string bytes = m->SerializeAsString();

  auto s = make_schema({{"id", type_id::int64}, {"big", type_id::float64},
                        {"kind", type_id::string}, {"i32", type_id::float64},
                        {"f", type_id::float64}, {"s", type_id::string},
                        {"b", type_id::string}, {"ts", type_id::timestamp},
                        {"dv", type_id::float64}, {"sub", type_id::string},
                        {"sub.x", type_id::int64}, {"sub.y", type_id::string},
                        {"subs", type_id::string}, {"m", type_id::string}});
  auto dec = make_decoder(fx.options(s));
  REQUIRE_MESSAGE(dec, (dec ? "" : dec.error().message));
  batch_builder b{s};
  std::string reason;
  REQUIRE_MESSAGE((*dec)->decode(bytes, b, reason) == record_decoder::status::ok, reason);
  auto batch = b.finish();
  auto v = [&](std::size_t c) { return batch->columns[c].get(0); };
  CHECK(v(0) == value{std::int64_t{-7}});
  CHECK(v(1) == value{42.0});
  CHECK(v(2) == value{std::string{"B"}});
  CHECK(v(3) == value{-3.0});
  CHECK(v(4) == value{1.5});
  CHECK(v(5) == value{std::string{"h\xC3\xA9"}});
  CHECK(v(6) == value{std::string{"AP8Q"}}); // base64 of 00 ff 10
  // -2 s + 500.000001 ms: -1499.999999 ms, floored to -1500.
  CHECK(batch->columns[7].ints[0] == -1500);
  CHECK(batch->columns[8].is_null(0)); // an absent wrapper
  CHECK(v(9) == value{std::string{R"({"x":9})"}});
  CHECK(v(10) == value{std::int64_t{9}});
  CHECK(batch->columns[11].is_null(0)); // proto2 optional, absent
  CHECK(v(12) == value{std::string{R"([{"y":"a\"b"},{}])"}});
  CHECK(v(13) == value{std::string{"{}"}});
}

TEST_CASE("protobuf: enum numbers, unknown enum numbers and wide uint64") {
  if (!protobuf_built())
    return;
  fixture fx;
  auto s = make_schema({{"id", type_id::int64}, {"big", type_id::int64},
                        {"kind", type_id::int64}});
  auto dec = make_decoder(fx.options(s));
  REQUIRE(dec);
  auto m = fx.make();
  const auto* r = m->GetReflection();
  r->SetInt64(m.get(), fd(*m, "id"), 1);
  r->SetEnumValue(m.get(), fd(*m, "kind"), 1);
  r->SetUInt64(m.get(), fd(*m, "big"), (std::uint64_t{1} << 63) - 1);
  batch_builder b{s};
  std::string reason;
  REQUIRE((*dec)->decode(m->SerializeAsString(), b, reason) == record_decoder::status::ok);
  r->SetUInt64(m.get(), fd(*m, "big"), std::uint64_t{1} << 63);
  CHECK((*dec)->decode(m->SerializeAsString(), b, reason) == record_decoder::status::bad);
  CHECK(reason.find("field 'big': uint64 9223372036854775808 is beyond int64") == 0);
  auto batch = b.finish();
  REQUIRE(batch->num_rows == 1);
  CHECK(batch->columns[1].ints[0] == INT64_MAX);
  CHECK(batch->columns[2].ints[0] == 1);
}

TEST_CASE("protobuf: bad messages are bad records with a reason") {
  if (!protobuf_built())
    return;
  fixture fx;
  auto s = make_schema({{"id", type_id::int64}, {"s", type_id::string}});
  auto dec = make_decoder(fx.options(s));
  REQUIRE(dec);
  auto m = fx.make();
  const auto* r = m->GetReflection();
  r->SetInt64(m.get(), fd(*m, "id"), 5);
  r->SetString(m.get(), fd(*m, "s"), "abcdef");
  const std::string good = m->SerializeAsString();
  batch_builder b{s};
  std::string reason;
  // Cut inside the string.
  CHECK((*dec)->decode(std::string_view{good}.substr(0, good.size() - 2), b, reason)
        == record_decoder::status::bad);
  CHECK(reason.find("not a valid t.M message") == 0);
  // The required id missing.
  auto no_id = fx.make();
  no_id->GetReflection()->SetString(no_id.get(), fd(*no_id, "s"), "x");
  CHECK((*dec)->decode(no_id->SerializePartialAsString(), b, reason)
        == record_decoder::status::bad);
  CHECK(reason.find("required fields: id") != std::string::npos);
  // A NUL byte and invalid UTF-8 in a proto2 string (the parser lets them through).
  r->SetString(m.get(), fd(*m, "s"), std::string{"a\0b", 3});
  CHECK((*dec)->decode(m->SerializeAsString(), b, reason) == record_decoder::status::bad);
  CHECK(reason.find("field 's': NUL byte") == 0);
  r->SetString(m.get(), fd(*m, "s"), "a\xFF");
  CHECK((*dec)->decode(m->SerializeAsString(), b, reason) == record_decoder::status::bad);
  CHECK(reason.find("field 's': invalid UTF-8") == 0);
  CHECK(b.rows() == 0);
  CHECK((*dec)->decode(good, b, reason) == record_decoder::status::ok);
  CHECK(b.rows() == 1);
}

TEST_CASE("protobuf: load-time problems name the key and offer candidates") {
  if (!protobuf_built())
    return;
  fixture fx;
  auto o = fx.options(make_schema({{"sub.z", type_id::int64}}));
  auto p = check_protobuf(o);
  REQUIRE(p);
  CHECK(p->where == protobuf_problem::at::field);
  CHECK(p->field == "sub.z");
  CHECK(std::find(p->candidates.begin(), p->candidates.end(), "sub.x") != p->candidates.end());
  o.schema = make_schema({{"subs", type_id::int64}});
  p = check_protobuf(o);
  REQUIRE(p);
  CHECK(p->message.find("no array type") != std::string::npos);
  o.proto_message = "t.N";
  p = check_protobuf(o);
  REQUIRE(p);
  CHECK(p->where == protobuf_problem::at::message);
  o.proto_file = fx.dir + "/nope.proto";
  p = check_protobuf(o);
  REQUIRE(p);
  CHECK(p->where == protobuf_problem::at::proto_file);
  CHECK(p->message.find("cannot read") == 0);
  std::ofstream{fx.dir + "/broken.proto"} << "syntax = \"proto3\";\nmessage X { int64 a = ; }\n";
  o.proto_file = fx.dir + "/broken.proto";
  p = check_protobuf(o);
  REQUIRE(p);
  CHECK(p->message.find("broken.proto:2:") == 0);
}

TEST_CASE("protobuf: a file of length-delimited messages, resumed at a position") {
  if (!protobuf_built())
    return;
  fixture fx;
  std::string data;
  {
    gp::io::StringOutputStream sos{&data};
    gp::io::CodedOutputStream out{&sos};
    for (int i = 0; i < 5; ++i) {
      auto m = fx.make();
      m->GetReflection()->SetInt64(m.get(), fd(*m, "id"), i * 10);
      out.WriteVarint32(static_cast<std::uint32_t>(m->ByteSizeLong()));
      m->SerializeToCodedStream(&out);
    }
  }
  data += "\x20\x08"; // a prefix of 32 bytes with one byte after it
  const std::string path = fx.dir + "/d.pb";
  std::ofstream{path, std::ios::binary} << data;
  file_source_options fo;
  fo.path = path;
  fo.decoder = fx.options(make_schema({{"id", type_id::int64}}));
  fo.chunk_bytes = 3; // messages across reads
  std::vector<bad_record> bad;
  auto reader = make_protobuf_file_reader(fo, [&](const bad_record& r) { bad.push_back(r); });
  REQUIRE(reader);
  auto first = (*reader)->poll_next(2);
  REQUIRE(first);
  CHECK(first->num_rows == 2);
  const auto pos = (*reader)->positions();
  REQUIRE(pos.size() == 1);
  CHECK(pos[0].unit == position_unit::byte_offset);
  CHECK(pos[0].value == 6); // two messages of a 1-byte prefix and 2 bytes
  std::vector<std::int64_t> ids;
  for (auto b = (*reader)->poll_next(100); b; b = (*reader)->poll_next(100))
    for (std::size_t i = 0; i < b->num_rows; ++i)
      ids.push_back(b->columns[0].ints[i]);
  CHECK(ids == std::vector<std::int64_t>{20, 30, 40});
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].line == 6);
  CHECK(bad[0].offset == data.size() - 2);
  CHECK(bad[0].reason.find("truncated message") == 0);
  CHECK(bad[0].raw == "08");
  // Resumed at the position: the rest only, numbered as before.
  bad.clear();
  auto again = make_protobuf_file_reader(fo, [&](const bad_record& r) { bad.push_back(r); });
  REQUIRE(again);
  (*again)->seek(pos);
  ids.clear();
  for (auto b = (*again)->poll_next(100); b; b = (*again)->poll_next(100))
    for (std::size_t i = 0; i < b->num_rows; ++i)
      ids.push_back(b->columns[0].ints[i]);
  CHECK(ids == std::vector<std::int64_t>{20, 30, 40});
  REQUIRE(bad.size() == 1);
  CHECK(bad[0].line == 6);
}

TEST_CASE("protobuf: the wire-format fast path agrees with DynamicMessage on merges, "
          "repeats and oneofs") {
  if (!protobuf_built())
    return;
  const auto dir = std::filesystem::temp_directory_path()
                   / ("weir-pb-fast-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream{dir / "p3.proto"} << R"(
syntax = "proto3";
package f;
import "google/protobuf/timestamp.proto";
message Sub { int64 x = 1; int64 y = 2; }
message M {
  int64 a = 1;
  string s = 2;
  Sub sub = 3;
  oneof o { int64 p = 4; string q = 5; }
  google.protobuf.Timestamp ts = 6;
}
)";
  auto s = make_schema({{"a", type_id::int64}, {"s", type_id::string},
                        {"sub.x", type_id::int64}, {"sub.y", type_id::int64},
                        {"p", type_id::int64}, {"q", type_id::string},
                        {"ts", type_id::timestamp}});
  auto decoder = [&](bool reference) {
    decoder_options o;
    o.kind = format_kind::protobuf;
    o.schema = s;
    o.proto_file = (dir / "p3.proto").string();
    o.proto_message = "f.M";
    o.proto_reference = reference;
    auto d = make_decoder(o);
    REQUIRE(d);
    return std::move(*d);
  };
  auto fast = decoder(false);
  auto ref = decoder(true);
  // a twice (the last wins), sub twice (merged: x from the first, y from
  // the second), the oneof's p then q (q wins, p is cleared), ts twice
  // (merged: seconds 10, nanos 2,000,000), then s.
  const std::string msg{"\x08\x01\x08\x02"
                        "\x1a\x02\x08\x05\x1a\x02\x10\x07"
                        "\x20\x09\x2a\x01z"
                        "\x32\x02\x08\x0a\x32\x04\x10\x80\x89\x7a"
                        "\x12\x02hi",
                        31};
  const std::vector<value> want{value{std::int64_t{2}}, value{std::string{"hi"}},
                                value{std::int64_t{5}}, value{std::int64_t{7}},
                                value{},                value{std::string{"z"}}};
  for (auto* d : {fast.get(), ref.get()}) {
    batch_builder b{s};
    std::string reason;
    REQUIRE_MESSAGE(d->decode(msg, b, reason) == record_decoder::status::ok, reason);
    auto batch = b.finish();
    for (std::size_t c = 0; c < want.size(); ++c)
      CHECK_MESSAGE(batch->columns[c].get(0) == want[c], "field " << s->at(c).name);
    CHECK(batch->columns[6].ints[0] == 10'002);
  }
  // Cut inside the last string: bad, with the reference's reason, either way.
  std::string r1, r2;
  batch_builder b1{s}, b2{s};
  CHECK(fast->decode(std::string_view{msg}.substr(0, 30), b1, r1)
        == record_decoder::status::bad);
  CHECK(ref->decode(std::string_view{msg}.substr(0, 30), b2, r2)
        == record_decoder::status::bad);
  CHECK(r1 == r2);
  CHECK(b1.rows() == 0);
  std::filesystem::remove_all(dir);
}
