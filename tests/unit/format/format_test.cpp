// SPDX-License-Identifier: Apache-2.0
#include "format_test_util.hpp"

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

decoder_options jsonl_with_types() {
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = make_schema({{"key", type_id::string},
                          {"value", type_id::int64},
                          {"ts", type_id::timestamp}});
  return o;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("make_decoder rejects a missing schema and a bad event time field") {
  decoder_options o;
  o.kind = format_kind::jsonl;
  auto no_schema = make_decoder(o);
  REQUIRE_FALSE(no_schema);
  CHECK(no_schema.error().code == errc::invalid_argument);
  o.kind = format_kind::csv;
  CHECK_FALSE(make_decoder(o));

  o = jsonl_with_types();
  o.event_time_field = "nope";
  auto missing = make_decoder(o);
  REQUIRE_FALSE(missing);
  CHECK(missing.error().code == errc::invalid_argument);
  CHECK(missing.error().message.find("'nope'") != std::string::npos);
  o.event_time_field = "key";
  auto wrong = make_decoder(o);
  REQUIRE_FALSE(wrong);
  CHECK(wrong.error().message.find("timestamp or int64") != std::string::npos);
  o.event_time_field = "value"; // int64 is allowed
  CHECK(make_decoder(o));
}

TEST_CASE("parse_format and to_string round trip") {
  for (auto k : {format_kind::jsonl, format_kind::csv, format_kind::apache_combined})
    CHECK(parse_format(to_string(k)) == k);
  CHECK_FALSE(parse_format("json"));
}
TEST_CASE("apache_combined_schema lists the documented fields") {
  CHECK(apache_combined_schema()->to_string()
        == "client:string, ident:string, user:string, ts:timestamp, method:string, "
           "path:string, protocol:string, status:int64, bytes:int64, referrer:string, "
           "agent:string");
}
}
