// SPDX-License-Identifier: Apache-2.0
#include "weir/state/codec.hpp"

#include "weir/state/keyed_process_function.hpp"
#include "state_test_support.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <limits>

using weir::value;
using weir::state::codec;
using weir::state::decode_from_string;
using weir::state::encode_to_string;

namespace {

struct point {
  std::int64_t x = 0;
  std::string label;
  friend bool operator==(const point&, const point&) = default;
};

} // namespace

template <>
struct weir::state::codec<point> {
  static void encode(const point& p, std::string& out) {
    wire::put_i64(out, p.x);
    wire::put_bytes(out, p.label);
  }
  static bool decode(std::string_view& in, point& p) {
    std::string_view label;
    if (!wire::get_i64(in, p.x) || !wire::get_bytes(in, label))
      return false;
    p.label.assign(label);
    return true;
  }
};

namespace {

template <class T>
void check_round_trip(const T& v) {
  auto bytes = encode_to_string(v);
  auto back = decode_from_string<T>(bytes);
  REQUIRE(back.has_value());
  CHECK(*back == v);
  // Every strict prefix is malformed: decoding never reads past its input.
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    CAPTURE(n);
    CHECK_FALSE(decode_from_string<T>(std::string_view{bytes}.substr(0, n)).has_value());
  }
  // Trailing bytes are rejected by decode_from_string.
  CHECK_FALSE(decode_from_string<T>(bytes + "x").has_value());
}

} // namespace

TEST_SUITE("state") {
TEST_CASE("built-in codecs round-trip and reject every truncation") {
  check_round_trip<std::int64_t>(-42);
  check_round_trip<std::int64_t>(std::numeric_limits<std::int64_t>::min());
  check_round_trip<std::uint16_t>(65535);
  check_round_trip<double>(-1.5e300);
  check_round_trip<bool>(true);
  check_round_trip<bool>(false);
  check_round_trip(std::string{"h\xC3\xA9llo\0world", 12});
  check_round_trip<value>(value{});
  check_round_trip<value>(value{true});
  check_round_trip<value>(value{std::int64_t{7}});
  check_round_trip<value>(value{2.25});
  check_round_trip<value>(value{std::string{"text"}});
  check_round_trip(std::vector<value>{value{}, value{std::int64_t{1}}, value{std::string{"a"}}});
  check_round_trip(std::pair<std::string, std::int64_t>{"k", 3});
  check_round_trip(std::tuple<std::int64_t, bool, std::string>{1, false, "z"});
  check_round_trip(std::optional<std::string>{"x"});
  check_round_trip(std::map<std::string, std::vector<std::int64_t>>{{"a", {1, 2}}, {"b", {}}});
  check_round_trip(point{5, "five"});
  check_round_trip(std::vector<point>{{1, "a"}, {2, "b"}});
}

TEST_CASE("an empty optional and an empty vector round-trip") {
  auto e = decode_from_string<std::optional<std::int64_t>>(encode_to_string(std::optional<std::int64_t>{}));
  REQUIRE(e.has_value());
  CHECK_FALSE(e->has_value());
  auto v = decode_from_string<std::vector<std::string>>(encode_to_string(std::vector<std::string>{}));
  REQUIRE(v.has_value());
  CHECK(v->empty());
}

TEST_CASE("NaN survives a round trip bit for bit") {
  auto bytes = encode_to_string(std::numeric_limits<double>::quiet_NaN());
  auto back = decode_from_string<double>(bytes);
  REQUIRE(back.has_value());
  CHECK(std::isnan(*back));
}

TEST_CASE("codecs reject malformed bytes") {
  SUBCASE("a bool other than 0 or 1") {
    CHECK_FALSE(decode_from_string<bool>(std::string{"\x02", 1}).has_value());
  }
  SUBCASE("a variant index out of range") {
    CHECK_FALSE(decode_from_string<value>(std::string{"\x05", 1}).has_value());
  }
  SUBCASE("a vector count larger than the remaining bytes") {
    std::string b;
    weir::state::wire::put_u32(b, 0xffffffffu);
    CHECK_FALSE(decode_from_string<std::vector<std::int64_t>>(b).has_value());
  }
  SUBCASE("a string length past the end") {
    std::string b;
    weir::state::wire::put_u32(b, 10);
    b += "abc";
    CHECK_FALSE(decode_from_string<std::string>(b).has_value());
  }
  SUBCASE("a map with a duplicate key") {
    std::string b;
    weir::state::wire::put_u32(b, 2);
    for (int i = 0; i < 2; ++i) {
      codec<std::string>::encode("k", b);
      codec<std::int64_t>::encode(1, b);
    }
    CHECK_FALSE((decode_from_string<std::map<std::string, std::int64_t>>(b).has_value()));
  }
  SUBCASE("an optional flag other than 0 or 1") {
    CHECK_FALSE(decode_from_string<std::optional<bool>>(std::string{"\x07\x01", 2}).has_value());
  }
}

TEST_CASE("decode_key inverts encode_key for every key type") {
  weir::batch_builder b(weir::make_schema({{"s", weir::type_id::string},
                                           {"i", weir::type_id::int64},
                                           {"f", weir::type_id::float64},
                                           {"b", weir::type_id::boolean},
                                           {"n", weir::type_id::string}}));
  b.col(0).append_string("alice");
  b.col(1).append_int(-9);
  b.col(2).append_float(0.5);
  b.col(3).append_bool(true);
  b.col(4).append_null();
  b.commit_row();
  auto batch = b.finish();
  std::string key;
  const std::size_t fields[] = {0, 1, 2, 3, 4};
  weir::encode_key(*batch, fields, 0, key);
  auto decoded = weir::state::decode_key(key);
  REQUIRE(decoded.has_value());
  CHECK(*decoded == std::vector<value>{value{std::string{"alice"}}, value{std::int64_t{-9}},
                                       value{0.5}, value{true}, value{}});
}

TEST_CASE("decode_key rejects malformed keys") {
  CHECK_FALSE(weir::state::decode_key("x").has_value());
  CHECK_FALSE(weir::state::decode_key(std::string{"i\x01\x02", 3}).has_value());
  CHECK_FALSE(weir::state::decode_key(std::string{"s\x09\x00\x00\x00" "ab", 7}).has_value());
  CHECK_FALSE(weir::state::decode_key(std::string{"b\x03", 2}).has_value());
  auto empty = weir::state::decode_key("");
  REQUIRE(empty.has_value());
  CHECK(empty->empty());
}
}
