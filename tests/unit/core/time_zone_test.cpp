// SPDX-License-Identifier: Apache-2.0
#include "weir/core/time_zone.hpp"
#include "weir/core/timestamp.hpp"

#include <doctest/doctest.h>

#include <filesystem>

using namespace weir;

namespace {

event_time utc(std::string_view text) {
  auto t = parse_iso8601(text);
  REQUIRE(t);
  return *t;
}

bool have_zoneinfo() {
  return std::filesystem::exists("/usr/share/zoneinfo/Europe/Berlin");
}

} // namespace

TEST_SUITE("core") {
TEST_CASE("time_zone parses UTC and fixed offsets and refuses anything else") {
  CHECK(time_zone{}.is_utc());
  CHECK(time_zone::parse("UTC")->is_utc());
  CHECK(time_zone::parse("Z")->is_utc());
  CHECK(time_zone::parse("+02:00")->offset_at(0) == 7'200'000);
  CHECK(time_zone::parse("-0530")->offset_at(0) == -19'800'000);
  CHECK(time_zone::parse("+02")->offset_at(0) == 7'200'000);
  CHECK(time_zone::parse("+24:00").error().code == errc::invalid_argument);
  CHECK(time_zone::parse("+2").error().code == errc::invalid_argument);
  CHECK(time_zone::parse("Mars/Olympus").error().message.find("cannot be read")
        != std::string::npos);
  CHECK(time_zone::parse("../etc/passwd").error().code == errc::invalid_argument);
  CHECK(time_zone::parse("").error().code == errc::invalid_argument);
}

TEST_CASE("a zone-less timestamp is local time in the zone; an explicit offset wins") {
  auto z = time_zone::parse("+02:00");
  REQUIRE(z);
  CHECK(parse_iso8601("2023-03-05T12:00:00", *z) == utc("2023-03-05T10:00:00Z"));
  CHECK(parse_iso8601("2023-03-05", *z) == utc("2023-03-04T22:00:00Z"));
  CHECK(parse_iso8601("2023-03-05T12:00:00Z", *z) == utc("2023-03-05T12:00:00Z"));
  CHECK(parse_iso8601("2023-03-05T12:00:00-01:00", *z) == utc("2023-03-05T13:00:00Z"));
}

TEST_CASE("Europe/Berlin: winter and summer offsets, the gap and the overlap, and beyond 2037") {
  if (!have_zoneinfo())
    return; // no tz database on this system
  auto z = time_zone::parse("Europe/Berlin");
  REQUIRE(z);
  CHECK(parse_iso8601("2023-01-15T12:00:00", *z) == utc("2023-01-15T11:00:00Z"));
  CHECK(parse_iso8601("2023-07-15T12:00:00", *z) == utc("2023-07-15T10:00:00Z"));
  // 2023-03-26 02:30 does not exist: later by the gap (03:30 CEST).
  CHECK(parse_iso8601("2023-03-26T02:30:00", *z) == utc("2023-03-26T01:30:00Z"));
  // 2023-10-29 02:30 happens twice: the earlier (CEST) instant.
  CHECK(parse_iso8601("2023-10-29T02:30:00", *z) == utc("2023-10-29T00:30:00Z"));
  CHECK(parse_iso8601("2023-10-29T03:30:00", *z) == utc("2023-10-29T02:30:00Z"));
  // After the file's last transition, its footer rule (CET-1CEST,M3.5.0,M10.5.0/3).
  CHECK(parse_iso8601("2100-07-01T12:00:00", *z) == utc("2100-07-01T10:00:00Z"));
  CHECK(parse_iso8601("2100-12-01T12:00:00", *z) == utc("2100-12-01T11:00:00Z"));
  CHECK(z->offset_at(utc("2100-03-28T00:59:59Z")) == 3'600'000);  // last Sunday of March
  CHECK(z->offset_at(utc("2100-03-28T01:00:00Z")) == 7'200'000);
  // Before the first transition: local mean time (+0:53:28).
  CHECK(z->offset_at(utc("1850-01-01T00:00:00Z")) == 3'208'000);
}

TEST_CASE("Australia/Sydney: summer time across the new year (southern hemisphere)") {
  if (!have_zoneinfo())
    return;
  auto z = time_zone::parse("Australia/Sydney");
  REQUIRE(z);
  CHECK(z->offset_at(utc("2120-01-15T00:00:00Z")) == 11 * 3'600'000);
  CHECK(z->offset_at(utc("2120-07-15T00:00:00Z")) == 10 * 3'600'000);
  CHECK(parse_iso8601("2024-01-15T12:00:00", *z) == utc("2024-01-15T01:00:00Z"));
}
} // TEST_SUITE
