// SPDX-License-Identifier: Apache-2.0
#include "weir/core/timestamp.hpp"

#include <doctest/doctest.h>

using weir::format_iso8601;
using weir::parse_iso8601;

TEST_SUITE("core") {
TEST_CASE("parse_iso8601 reads dates, times, fractions and zone offsets") {
  CHECK(parse_iso8601("1970-01-01") == 0);
  CHECK(parse_iso8601("1970-01-01T00:00:00Z") == 0);
  CHECK(parse_iso8601("2015-05-17T10:05:03Z") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17t10:05:03z") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17 10:05:03") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17T10:05") == 1431857100000);
  CHECK(parse_iso8601("2015-05-17T10:05:03.1Z") == 1431857103100);
  CHECK(parse_iso8601("2015-05-17T10:05:03.123456789Z") == 1431857103123);
  CHECK(parse_iso8601("2015-05-17T10:05:03,5") == 1431857103500);
  CHECK(parse_iso8601("2015-05-17T12:05:03+02:00") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17T08:35:03-0130") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17T11:05:03+01") == 1431857103000);
  CHECK(parse_iso8601("1969-12-31T23:59:59.999Z") == -1);
  CHECK(parse_iso8601("2016-02-29") == 1456704000000);
  CHECK(parse_iso8601("2000-02-29") == 951782400000);
}

TEST_CASE("parse_iso8601 rejects malformed or out-of-range text") {
  for (const char* bad : {"", "2015", "2015-5-17", "2015-05-17T", "2015-05-17X10:00",
                          "2015-13-01", "2015-00-01", "2015-04-31", "2015-02-29",
                          "1900-02-29", "2015-05-17T24:00:00", "2015-05-17T10:60",
                          "2015-05-17T10:05:60", "2015-05-17T10:05:03.",
                          "2015-05-17T10:05:03.1234567890", "2015-05-17T10:05:03Zx",
                          "2015-05-17T10:05:03+2", "2015-05-17T10:05:03+24:00",
                          "2015-05-17T10:05:03 ", " 2015-05-17", "yesterday"}) {
    CAPTURE(bad);
    CHECK_FALSE(parse_iso8601(bad).has_value());
  }
}

TEST_CASE("format_iso8601 writes UTC with milliseconds and round-trips") {
  CHECK(format_iso8601(0) == "1970-01-01T00:00:00.000Z");
  CHECK(format_iso8601(1431857103250) == "2015-05-17T10:05:03.250Z");
  CHECK(format_iso8601(-1) == "1969-12-31T23:59:59.999Z");
  CHECK(format_iso8601(951782400000) == "2000-02-29T00:00:00.000Z");
  for (weir::event_time t : {0LL, 1LL, -1LL, 1431857103250LL, -62135596800000LL,
                             253402300799999LL}) {
    CAPTURE(t);
    CHECK(parse_iso8601(format_iso8601(t)) == t);
  }
}
TEST_CASE("parse_iso8601 accepts the forms CSV and JSON sources meet and times with fractions and offsets") {
  CHECK(parse_iso8601("2023-03-05T15:13:37.320Z") == 1678029217320);
  CHECK(parse_iso8601("2015-05-17 10:05:03") == 1431857103000);
  CHECK(parse_iso8601("2015-05-17T10:05:03+02:00") == 1431849903000);
  CHECK(parse_iso8601("2015-05-17T10:05:03+0200") == 1431849903000);
  CHECK(parse_iso8601("2015-05-17T10:05:03+02") == 1431849903000);
  CHECK(parse_iso8601("2000-02-29T12:00:00-05:30") == 951845400000);
  CHECK(parse_iso8601("2015-05-17") == 1431820800000);
  CHECK(parse_iso8601("2015-05-17T10:05") == 1431857100000);
  CHECK(parse_iso8601("2015-05-17T10:05:03.1Z") == 1431857103100);
  CHECK(parse_iso8601("2015-05-17T10:05:03.123456789Z") == 1431857103123);
  CHECK(parse_iso8601("1970-01-01T00:00:00Z") == 0);
}

TEST_CASE("parse_iso8601 handles dates before 1970") {
  CHECK(parse_iso8601("1969-12-31T23:59:59Z") == -1000);
  CHECK(parse_iso8601("1969-12-31T23:59:59.999Z") == -1);
  CHECK(parse_iso8601("1900-01-01") == -2208988800000);
  CHECK(parse_iso8601("1600-03-01") == -11670912000000);
  CHECK(parse_iso8601("0001-01-01") == -62135596800000);
}

TEST_CASE("parse_iso8601 rejects truncated dates and stray text") {
  for (const char* s : {"", "2015", "2015-5-17", "2015-13-01", "2015-02-29", "2016-02-30",
                        "2015-05-17T", "2015-05-17T25:00:00", "2015-05-17T10:60",
                        "2015-05-17T10:05:61", "2015-05-17T10:05:03.", "2015-05-17T10:05:03X",
                        "2015-05-17T10:05:03+2", "2015-05-17T10:05:03+02:00junk",
                        "2015-05-17X10:05:03", "17/May/2015"}) {
    CAPTURE(s);
    CHECK_FALSE(parse_iso8601(s));
  }
  CHECK(parse_iso8601("2016-02-29")); // a leap day
}
}
