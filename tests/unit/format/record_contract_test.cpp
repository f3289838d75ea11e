// SPDX-License-Identifier: Apache-2.0
// The record contract (docs/concepts/bad-input.md) for jsonl, csv and apache_combined:
// one test per malformed-record kind per format. Each case is a bad record with a
// reason (the reader adds file and line) or parsed as documented in
// weir/format/format.hpp; never a crash, a hang or a silently altered value.
#include "format_test_util.hpp"

#include <string>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

decoder_options opts(format_kind k, schema_ptr s = nullptr) {
  decoder_options o;
  o.kind = k;
  o.schema = std::move(s);
  return o;
}

schema_ptr kv() {
  return make_schema({{"key", type_id::string}, {"n", type_id::int64}, {"f", type_id::float64}});
}

decoder_options jsonl() { return opts(format_kind::jsonl, kv()); }
decoder_options csv() { return opts(format_kind::csv, kv()); }
decoder_options apache() { return opts(format_kind::apache_combined); }

decoder_options with_replace(decoder_options o) {
  o.invalid_utf8 = invalid_utf8_policy::replace;
  return o;
}

const std::string apache_line =
  R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET /a HTTP/1.1" 200 12 "-" "agent")";

// An apache line with `request` (between its quotes) and `agent`.
std::string apache_with(std::string_view request, std::string_view agent = "agent") {
  return R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] ")" + std::string{request}
         + R"(" 200 12 "-" ")" + std::string{agent} + "\"";
}

constexpr std::string_view fffd = "\xEF\xBF\xBD";

struct read_result {
  std::size_t rows = 0;
  std::vector<bad_record> bad;
  std::vector<std::vector<value>> values;
};

read_result read_file_rows(file_source_options o, std::size_t max_rows) {
  read_result out;
  auto reader = make_file_source_reader(o, [&](const bad_record& r) { out.bad.push_back(r); });
  REQUIRE(reader);
  while (auto b = (*reader)->poll_next(max_rows)) {
    out.rows += b->num_rows;
    for (std::size_t r = 0; r < b->num_rows; ++r) {
      std::vector<value> row;
      for (const auto& c : b->columns)
        row.push_back(c.get(r));
      out.values.push_back(std::move(row));
    }
  }
  return out;
}

} // namespace

TEST_SUITE("format") {

// --- text that is not UTF-8, or holds a NUL byte --------------------------

TEST_CASE("jsonl: invalid UTF-8 is a bad record, or U+FFFD per invalid sequence with replace") {
  const std::string line = "{\"key\": \"a\xFF\xE2\x82z\", \"n\": 1}\n";
  auto bad = decode_text(*decoder(jsonl()), line);
  REQUIRE(bad.bad.size() == 1);
  CHECK(bad.bad[0] == "invalid UTF-8 at byte 11 (invalid_utf8 = \"replace\" reads it as U+FFFD)");
  CHECK(bad.rows.empty());
  auto ok = decode_text(*decoder(with_replace(jsonl())), line);
  CHECK(ok.bad.empty());
  REQUIRE(ok.rows.size() == 1);
  // \xFF is one invalid sequence, \xE2\x82 (a truncated 3-byte one) another.
  CHECK(ok.rows[0][0] == S("a" + std::string{fffd} + std::string{fffd} + "z"));
}

TEST_CASE("csv: invalid UTF-8 is a bad record, or U+FFFD per invalid sequence with replace") {
  const std::string text = "key,n,f\n\xC0\xAFx,1,2\nok,2,3\n";
  auto bad = decode_text(*decoder(csv()), text);
  REQUIRE(bad.bad.size() == 1);
  CHECK(bad.bad[0].starts_with("invalid UTF-8 at byte 1 "));
  CHECK(bad.rows.size() == 1);
  auto ok = decode_text(*decoder(with_replace(csv())), text);
  CHECK(ok.bad.empty());
  REQUIRE(ok.rows.size() == 2);
  // \xC0 can never start a sequence: two bytes, two U+FFFD.
  CHECK(ok.rows[0][0] == S(std::string{fffd} + std::string{fffd} + "x"));
}

TEST_CASE("apache_combined: invalid UTF-8 is a bad record, or U+FFFD with replace") {
  const std::string line = apache_with("GET /caf\xE9 HTTP/1.1") + "\n";
  auto bad = decode_text(*decoder(apache()), line);
  REQUIRE(bad.bad.size() == 1);
  CHECK(bad.bad[0].starts_with("invalid UTF-8 at byte 51 "));
  auto ok = decode_text(*decoder(with_replace(apache())), line);
  REQUIRE(ok.rows.size() == 1);
  CHECK(ok.rows[0][5] == S("/caf" + std::string{fffd}));
}

TEST_CASE("a NUL byte makes a record bad in every format, whatever invalid_utf8 says") {
  using namespace std::string_literals;
  SUBCASE("jsonl") {
    auto d = decode_text(*decoder(with_replace(jsonl())), "{\"key\": \"a\0b\"}\n"s);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "NUL byte at byte 11");
  }
  SUBCASE("csv") {
    auto d = decode_text(*decoder(with_replace(csv())), "key,n,f\na\0b,1,2\n"s);
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "NUL byte at byte 2");
  }
  SUBCASE("apache_combined") {
    auto d = decode_text(*decoder(with_replace(apache())), apache_with("GET /\0 HTTP/1.1"s) + "\n");
    REQUIRE(d.bad.size() == 1);
    CHECK(d.bad[0] == "NUL byte at byte 48");
  }
  SUBCASE("jsonl: an escaped \\u0000 is valid JSON and kept as a NUL character") {
    auto d = decode_text(*decoder(jsonl()), R"({"key": "a\u0000b"})" "\n");
    REQUIRE(d.rows.size() == 1);
    CHECK(d.rows[0][0] == S("a\0b"s));
  }
}

// --- integers beyond int64 ------------------------------------------------

TEST_CASE("jsonl: an integer beyond int64 is bad in an int field and a double in a float field") {
  auto d = decode_text(*decoder(jsonl()),
    R"({"key": "u64", "n": 18446744073709551615})" "\n"
    R"({"key": "big", "n": 123456789012345678901234567890})" "\n"
    R"({"key": "neg", "n": -9223372036854775809})" "\n"
    R"({"key": "f", "f": 123456789012345678901234567890})" "\n"
    R"({"key": "f2", "f": -18446744073709551617, "n": 5})" "\n"
    R"({"key": "inf", "f": 1e400})" "\n"
    R"({"key": "edge", "n": -9223372036854775808, "f": 18446744073709551615})" "\n");
  REQUIRE(d.bad.size() == 4);
  CHECK(d.bad[0] == "field 'n': expected int64, got integer out of int64 range");
  CHECK(d.bad[1] == "field 'n': expected int64, got integer out of int64 range");
  CHECK(d.bad[2] == "field 'n': expected int64, got integer out of int64 range");
  CHECK(d.bad[3] == "field 'f': number \"1e400\" is out of float64 range");
  REQUIRE(d.rows.size() == 3);
  CHECK(d.rows[0] == std::vector<value>{S("f"), N, F(1.2345678901234568e29)});
  CHECK(d.rows[1] == std::vector<value>{S("f2"), I(5), F(-1.8446744073709552e19)});
  CHECK(d.rows[2] == std::vector<value>{S("edge"), I(INT64_MIN), F(1.8446744073709552e19)});
}

TEST_CASE("jsonl: a big number in an undeclared field is skipped, the rest still validated") {
  auto d = decode_text(*decoder(jsonl()),
    R"({"x": 123456789012345678901234567890, "y": [1e999, {"z": -1e400}], "key": "a", "n": 1})" "\n"
    R"({"x": 123456789012345678901234567890, "key": "b", "n": [1,}})" "\n"
    R"({"x": 123456789012345678901234567890, "key": "c"} trailing)" "\n"
    R"([123456789012345678901234567890])" "\n");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{S("a"), I(1), N});
  REQUIRE(d.bad.size() == 3);
  CHECK(d.bad[0].starts_with("invalid JSON: "));
  CHECK(d.bad[1].starts_with("invalid JSON: "));
  CHECK(d.bad[2] == "invalid JSON: expected an object, got array");
}

TEST_CASE("csv: an integer beyond int64 is bad in an int field and a double in a float field") {
  auto d = decode_text(*decoder(csv()),
    "key,n,f\n"
    "a,9223372036854775808,1\n"
    "b,1,123456789012345678901234567890\n"
    "c,1,1e400\n");
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0] == "field 'n': cannot parse \"9223372036854775808\" as int64 (out of int64 range)");
  CHECK(d.bad[1] == "field 'f': cannot parse \"1e400\" as float64 (out of float64 range)");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0] == std::vector<value>{S("b"), I(1), F(1.2345678901234568e29)});
}

TEST_CASE("apache_combined: status or bytes beyond int64 is a bad record") {
  const std::string line = R"(1.2.3.4 - - [17/May/2015:10:05:03 +0000] "GET / HTTP/1.1" 200 )"
                           R"(99999999999999999999 "-" "a")";
  auto d = decode_text(*decoder(apache()), line + "\n");
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0] == "bad bytes \"99999999999999999999\"");
}

// --- undeclared fields of any size and depth; deep declared fields --------

TEST_CASE("jsonl: an undeclared field nested 2000 (and 100000) deep is skipped") {
  for (std::size_t depth : {std::size_t{1025}, std::size_t{2000}, std::size_t{100000}}) {
    CAPTURE(depth);
    const std::string deep = std::string(depth, '[') + std::string(depth, ']');
    auto d = decode_text(*decoder(jsonl()),
                         "{\"u\": " + deep + ", \"key\": \"a\", \"n\": 1}\n"
                         "{\"key\": \"b\", \"n\": 2}\n");
    CHECK(d.bad.empty());
    REQUIRE(d.rows.size() == 2);
    CHECK(d.rows[0] == std::vector<value>{S("a"), I(1), N});
  }
}

TEST_CASE("jsonl: a declared field nested 2000 deep is minified JSON text in a string field, bad elsewhere") {
  std::string nested;
  for (int i = 0; i < 2000; ++i)
    nested += "{\"a\": [";
  nested += "1";
  std::string minified = std::string{};
  for (int i = 0; i < 2000; ++i)
    minified += "{\"a\":[";
  minified += "1";
  for (int i = 0; i < 2000; ++i) {
    nested += "] }";
    minified += "]}";
  }
  auto d = decode_text(*decoder(jsonl()), "{\"key\": " + nested + "}\n{\"n\": " + nested + "}\n");
  REQUIRE(d.rows.size() == 1);
  CHECK(d.rows[0][0] == S(minified));
  REQUIRE(d.bad.size() == 1);
  CHECK(d.bad[0] == "field 'n': expected int64, got object");
}

TEST_CASE("jsonl: an undeclared field of 8 MiB is skipped; csv: an undeclared column of 8 MiB too") {
  const std::string big(8 << 20, 'x');
  auto j = decode_text(*decoder(jsonl()), "{\"skip\": \"" + big + "\", \"key\": \"a\"}\n");
  CHECK(j.bad.empty());
  CHECK(j.rows.size() == 1);
  auto c = decode_text(*decoder(csv()), "key,skip,n,f\na," + big + ",1,2\n");
  CHECK(c.bad.empty());
  REQUIRE(c.rows.size() == 1);
  CHECK(c.rows[0] == std::vector<value>{S("a"), I(1), F(2.0)});
}

// --- lines of several MiB through the file reader ------------------------

TEST_CASE("lines of 8 MiB decode correctly in every format through the file reader") {
  temp_dir dir{"contract-big"};
  const std::string big(8 << 20, 'y');
  for (std::size_t chunk : {std::size_t{4096}, std::size_t{1} << 20}) {
    CAPTURE(chunk);
    SUBCASE("jsonl") {
      file_source_options o;
      o.path = dir.file("big.jsonl", "{\"key\": \"" + big + "\", \"n\": 1}\n{\"key\": \"b\"}\n");
      o.decoder = jsonl();
      o.chunk_bytes = chunk;
      auto r = read_file_rows(o, 1024);
      CHECK(r.bad.empty());
      REQUIRE(r.values.size() == 2);
      CHECK(std::get<std::string>(r.values[0][0]).size() == big.size());
    }
    SUBCASE("csv, quoted and unquoted") {
      file_source_options o;
      o.path = dir.file("big.csv", "key,n,f\n\"" + big + "\n" + big + "\",1,2\n" + big + ",2,3\n");
      o.decoder = csv();
      o.chunk_bytes = chunk;
      auto r = read_file_rows(o, 1024);
      CHECK(r.bad.empty());
      REQUIRE(r.values.size() == 2);
      CHECK(std::get<std::string>(r.values[0][0]).size() == 2 * big.size() + 1);
      CHECK(std::get<std::string>(r.values[1][0]) == big);
    }
    SUBCASE("apache_combined") {
      file_source_options o;
      o.path = dir.file("big.log", apache_with("GET /a HTTP/1.1", big) + "\n" + apache_line + "\n");
      o.decoder = apache();
      o.chunk_bytes = chunk;
      auto r = read_file_rows(o, 1024);
      CHECK(r.bad.empty());
      REQUIRE(r.values.size() == 2);
      CHECK(std::get<std::string>(r.values[0][10]) == big);
    }
  }
}

// --- a CSV quote left open at end of file --------------------------------

TEST_CASE("csv: a quote left open at end of file is one bad record on its line; later lines are read") {
  temp_dir dir{"contract-quote"};
  const std::string text = "key,n,f\n"
                           "a,1,2\n"
                           "\"b\nstill b\",2,3\n"    // a closed quoted field over two lines
                           "c,\"3,4\n"               // line 5: the quote never closes
                           "d,4,5\n"
                           "e,5,6";
  for (std::size_t chunk : {std::size_t{1}, std::size_t{5}, std::size_t{1} << 20}) {
    CAPTURE(chunk);
    file_source_options o;
    o.path = dir.file("open.csv", text);
    o.decoder = csv();
    o.chunk_bytes = chunk;
    auto r = read_file_rows(o, 2);
    REQUIRE(r.bad.size() == 1);
    CHECK(r.bad[0].line == 5);
    CHECK(r.bad[0].raw == "c,\"3,4");
    CHECK(r.bad[0].reason
          == "unterminated quote in column 2 (no closing quote before the end of the file)");
    REQUIRE(r.values.size() == 4);
    CHECK(r.values[1][0] == S("b\nstill b"));
    CHECK(r.values[2] == std::vector<value>{S("d"), I(4), F(5.0)});
    CHECK(r.values[3] == std::vector<value>{S("e"), I(5), F(6.0)});
  }
}

TEST_CASE("csv: a quote opened after a closed multi-line field cuts the record after its own line") {
  auto d = decode_text(*decoder(csv()), "key,n,f\n\"x\ny\",\"1\n2,3\n");
  REQUIRE(d.bad.size() == 2);
  CHECK(d.bad[0].starts_with("unterminated quote in column 2"));
  CHECK(d.bad[1] == "expected 3 fields, got 2");
  CHECK(d.rows.empty());
}

// --- apache requests that are not METHOD PATH PROTOCOL --------------------

TEST_CASE("apache_combined: a request that is not METHOD PATH PROTOCOL is parsed with nulls") {
  auto d = decode_text(*decoder(apache()),
    apache_with("-") + "\n" +
    apache_with("") + "\n" +
    apache_with(R"(\x16\x03\x01\x00\xa5\x01)") + "\n" +
    apache_with("GET /old") + "\n" +
    apache_with("GET /a b HTTP/1.1") + "\n" +
    apache_with("hello world foo") + "\n" +
    apache_with("GET  HTTP/1.1") + "\n" +
    apache_with("GET") + "\n" +
    apache_with("GET HTTP/1.1") + "\n" +
    apache_with("hello") + "\n");
  CHECK(d.bad.empty());
  REQUIRE(d.rows.size() == 10);
  auto req = [&](std::size_t r) {
    return std::vector<value>{d.rows[r][4], d.rows[r][5], d.rows[r][6]};
  };
  CHECK(req(0) == std::vector<value>{N, N, N});
  CHECK(req(1) == std::vector<value>{N, N, N});
  CHECK(req(2) == std::vector<value>{N, S(R"(\x16\x03\x01\x00\xa5\x01)"), N});
  CHECK(req(3) == std::vector<value>{S("GET"), S("/old"), N});
  CHECK(req(4) == std::vector<value>{S("GET"), S("/a b"), S("HTTP/1.1")});
  CHECK(req(5) == std::vector<value>{N, S("hello world foo"), N});
  CHECK(req(6) == std::vector<value>{N, S("GET  HTTP/1.1"), N});
  // A method alone, or with a protocol only: no target, so path is null.
  CHECK(req(7) == std::vector<value>{S("GET"), N, N});
  CHECK(req(8) == std::vector<value>{S("GET"), N, S("HTTP/1.1")});
  CHECK(req(9) == std::vector<value>{N, S("hello"), N});
}

// --- every bad line counted once, whatever the batch size -----------------

TEST_CASE("every bad line is reported once whatever the batch size and chunk size") {
  temp_dir dir{"contract-once"};
  struct fmt_case {
    const char* name;
    decoder_options o;
    std::string text;
    std::size_t good, bad;
  };
  std::string jl, cs = "key,n,f\n", ap;
  for (int i = 0; i < 300; ++i) {
    const bool bad = i % 3 == 0;
    jl += bad ? "{\"n\": 99999999999999999999}\n" : "{\"key\": \"k\", \"n\": 1}\n";
    cs += bad ? "k,x,1\n" : "k,1,1\n";
    ap += bad ? "garbage line\n" : apache_line + "\n";
  }
  fmt_case cases[] = {{"jsonl", jsonl(), jl, 200, 100},
                      {"csv", csv(), cs, 200, 100},
                      {"apache_combined", apache(), ap, 200, 100}};
  for (auto& c : cases) {
    for (std::size_t batch : {std::size_t{1}, std::size_t{2}, std::size_t{7}, std::size_t{1024}}) {
      for (std::size_t chunk : {std::size_t{3}, std::size_t{1} << 20}) {
        CAPTURE(c.name);
        CAPTURE(batch);
        CAPTURE(chunk);
        file_source_options o;
        o.path = dir.file(std::string{"once."} + c.name, c.text);
        o.decoder = c.o;
        o.chunk_bytes = chunk;
        auto r = read_file_rows(o, batch);
        CHECK(r.rows == c.good);
        REQUIRE(r.bad.size() == c.bad);
        for (std::size_t k = 0; k < r.bad.size(); ++k)
          CHECK(r.bad[k].line == 3 * k + 1 + (c.o.kind == format_kind::csv ? 1 : 0));
      }
    }
  }
}

} // TEST_SUITE

TEST_SUITE("format") {
TEST_CASE("csv: a header line that cannot be read makes every record bad, not guessed") {
  using namespace std::string_literals;
  auto d = decode_text(*decoder(csv()), "key,\0n,f\na,1,2\nb,2,3\n"s);
  REQUIRE(d.bad.size() == 3);
  CHECK(d.bad[0] == "NUL byte at byte 5");
  CHECK(d.bad[1] == "the header line could not be read (NUL byte at byte 5)");
  CHECK(d.rows.empty());
  // Invalid UTF-8 in the header is replaced: that column matches no field.
  auto r = decode_text(*decoder(csv()), "key,n\xFF,f\na,1,2\n");
  CHECK(r.bad.empty());
  REQUIRE(r.rows.size() == 1);
  CHECK(r.rows[0] == std::vector<value>{S("a"), N, F(2.0)});
}
} // TEST_SUITE
