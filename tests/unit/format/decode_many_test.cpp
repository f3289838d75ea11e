// SPDX-License-Identifier: Apache-2.0
// record_decoder::decode_many: jsonl's batch path (simdjson iterate_many)
// against the per-line path (the default implementation, next_record +
// decode) on the same bytes, and the file reader with batch_decode on and off.
#include "format_test_util.hpp"

#include "weir/format/file_split.hpp"

#include "../../../src/format/internal/decoder_common.hpp"

#include <random>
#include <tuple>

using namespace weir;
using namespace weir::format;
using namespace weir::format::test;

namespace {

struct bad_line {
  std::size_t offset = 0, line = 0;
  std::string raw, reason;
  friend bool operator==(const bad_line&, const bad_line&) = default;
};

struct call_progress {
  std::size_t bytes = 0, lines = 0, records = 0;
  bool control = false;
  friend bool operator==(const call_progress&, const call_progress&) = default;
};

struct many_run {
  std::vector<std::vector<value>> rows;
  std::vector<event_time> timestamps;
  std::vector<bad_line> bad;
  std::vector<call_progress> calls;   ///< what each call consumed
  std::vector<event_time> controls;
  std::vector<std::size_t> batch_rows; ///< rows per call
};

// Decodes `text` with repeated decode_many calls, as the file reader does,
// each call from where the last stopped (`per_line`: the default
// implementation, record_decoder::decode_many). The text sits in a buffer
// whose padding is garbage, as the reader's next partial line would be.
many_run run_many(record_decoder& dec, std::string_view text, bool per_line,
                  record_decoder::batch_limits lim = {}, bool at_eof = true) {
  std::vector<char> buf(text.begin(), text.end());
  buf.insert(buf.end(), decode_many_padding, '"');
  many_run out;
  batch_builder b{dec.output_schema()};
  std::size_t at = 0, line = 0;
  for (int guard = 0; guard < 100000; ++guard) {
    record_decoder::batch_progress pr;
    const std::string_view rest{buf.data() + at, text.size() - at};
    auto sink = [&](std::size_t offset, std::size_t l, std::string_view raw,
                    const std::string& reason) {
      out.bad.push_back({at + offset, line + l, std::string{raw}, reason});
    };
    if (per_line)
      dec.record_decoder::decode_many(rest, at_eof, lim, b, pr, sink);
    else
      dec.decode_many(rest, at_eof, lim, b, pr, sink);
    out.calls.push_back({pr.bytes, pr.lines, pr.records, pr.control});
    if (pr.control)
      out.controls.push_back(dec.control_time());
    at += pr.bytes;
    line += pr.lines;
    auto batch = b.finish();
    out.batch_rows.push_back(batch->num_rows);
    for (std::size_t r = 0; r < batch->num_rows; ++r) {
      std::vector<value> row;
      for (const auto& c : batch->columns)
        row.push_back(c.get(r));
      out.rows.push_back(std::move(row));
    }
    out.timestamps.insert(out.timestamps.end(), batch->timestamps.begin(),
                          batch->timestamps.end());
    if (pr.records == 0)
      break;
  }
  return out;
}

decoder_options jsonl_options(std::size_t window = 0, bool event_time = true) {
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = make_schema({{"key", type_id::string},
                          {"ts", type_id::timestamp},
                          {"n", type_id::int64},
                          {"x", type_id::float64}});
  if (event_time)
    o.event_time_field = "ts";
  o.batch_window = window;
  return o;
}

// Both paths over `text` with fresh decoders: every row, bad record (offset,
// line, raw text, reason), control and per-call progress must be equal.
// Returns the batch path's counters.
internal::jsonl_batch_counters check_same(const decoder_options& o, std::string_view text,
                                          record_decoder::batch_limits lim = {},
                                          bool at_eof = true) {
  auto batch_dec = decoder(o);
  auto line_dec = decoder(o);
  auto batch = run_many(*batch_dec, text, false, lim, at_eof);
  auto ref = run_many(*line_dec, text, true, lim, at_eof);
  CHECK(batch.rows == ref.rows);
  CHECK(batch.timestamps == ref.timestamps);
  REQUIRE(batch.bad.size() == ref.bad.size());
  for (std::size_t i = 0; i < ref.bad.size(); ++i) {
    CAPTURE(i);
    CHECK(batch.bad[i].offset == ref.bad[i].offset);
    CHECK(batch.bad[i].line == ref.bad[i].line);
    CHECK(batch.bad[i].raw == ref.bad[i].raw);
    CHECK(batch.bad[i].reason == ref.bad[i].reason);
  }
  CHECK(batch.calls == ref.calls);
  CHECK(batch.controls == ref.controls);
  CHECK(batch.batch_rows == ref.batch_rows);
  for (auto n : batch.batch_rows)
    CHECK(n <= lim.max_rows);
  return *internal::jsonl_counters(*batch_dec);
}

std::string good_line(int i) {
  return R"({"key": "k)" + std::to_string(i) + R"(", "ts": )" + std::to_string(1000 + i)
         + R"(, "n": )" + std::to_string(i * 7) + R"(, "x": )" + std::to_string(i) + ".5"
         + R"(, "other": {"deep": [1, 2, {"s": "}{\"]"}]}})";
}

// Lines the batch path must leave to the per-line path, one of each kind.
const std::vector<std::string>& odd_lines() {
  static const std::vector<std::string> lines = {
    "not json",
    R"({"key": 5, "ts": 1})",                 // wrong type: the walk bails
    R"({"key": "a", "ts": 1} trailing)",      // text after the object
    R"({"key": "a", "ts": 1} {"key": "b"})",  // two documents on one line
    R"({"key": "a", "ts": 1}})",              // a stray brace
    R"({"key": "unclosed, "ts": 1})",         // an odd number of quotes
    R"({"key": "x", "ts": 1, "n": tru})",     // a bad literal in a read field
    R"({"key": "x", "ts": 1, "zz": tru})",    // ... in an unread one: ok, as per line
    R"({"key": "x"})",                        // event time missing: bad at commit
    R"({"key": "x", "ts": null})",
    "[1, 2]",
    "42",
    "\"str\"",
    std::string{"{\"key\": \"a\xff\", \"ts\": 1}"},       // invalid UTF-8
    std::string{"{\"key\": \"a\", \"ts\": 1, \"q\": \0}", 29}, // a NUL byte
    R"({"key": "a", "ts": 1, "n": 99999999999999999999})", // beyond int64
    R"({"k\u0065y": "esc", "ts": 3})",        // an escaped key
    R"({"key": "a",)",                        // truncated
    "{",
    "}",
    R"(  {"key": "lead", "ts": 5})",          // leading blanks: fine
    "{\"key\": \"tab\", \"ts\": 6}\t \r",       // trailing blanks and a CR
    R"({"ts": "2023-03-05T15:13:37.320Z", "key": "iso"})",
    R"({"ts": "not a time", "key": "iso"})",
    R"({"key": ["arr", 1], "ts": 7})",        // nested value in a string field
  };
  return lines;
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("jsonl decode_many equals the per-line path around every kind of bad line") {
  std::string text;
  int i = 0;
  for (const auto& odd : odd_lines()) {
    text += good_line(i) + "\n" + good_line(i + 1) + "\r\n\n" + odd + "\n";
    i += 2;
    text += "   \n" + good_line(i++) + "\n";
  }
  text += good_line(i++); // a final line without newline
  for (std::size_t window : {std::size_t{0}, std::size_t{64}, std::size_t{200},
                             std::size_t{1000}, std::size_t{4096}}) {
    CAPTURE(window);
    check_same(jsonl_options(window), text);
    check_same(jsonl_options(window, false), text);
    check_same(jsonl_options(window), text, {}, false); // the last line not complete yet
  }
}

TEST_CASE("jsonl decode_many decodes a clean chunk from one stream, bad lines per line") {
  std::string clean;
  for (int i = 0; i < 500; ++i)
    clean += good_line(i) + "\n";
  auto c = check_same(jsonl_options(), clean);
  CHECK(c.streams == 1);
  CHECK(c.failures == 0);
  CHECK(c.batched >= 499);   // the stream's last document: per line
  CHECK(c.per_line <= 1);

  // A wrong type mid-chunk costs its line only: the stream goes on.
  std::string typed = clean;
  typed.insert(typed.find("\n", typed.size() / 2) + 1, R"({"key": 5, "ts": 1})" "\n");
  c = check_same(jsonl_options(), typed);
  CHECK(c.streams == 1);
  CHECK(c.batched >= 499);

  // An odd quote derails stage 1: the stream is dropped, the lines of one
  // window go per line, then a new stream.
  std::string quoted = clean;
  quoted.insert(quoted.find("\n", quoted.size() / 2) + 1, R"({"key": "x, "ts": 1})" "\n");
  c = check_same(jsonl_options(4096), quoted);
  CHECK(c.failures >= 1);
  CHECK(c.streams >= 2);
  CHECK(c.batched > 300);
}

TEST_CASE("jsonl decode_many tells apart keys that share their first 8 bytes or a length") {
  // The walk compares a key with the one seen at its position last time a
  // word of 8 bytes at a time: keys equal in their first 8 bytes, keys one
  // byte longer or shorter, and keys differing in their last byte must each
  // find their own field (or none).
  decoder_options o;
  o.kind = format_kind::jsonl;
  o.schema = make_schema({{"date_time", type_id::timestamp},
                          {"abcdefgh", type_id::int64},
                          {"abc", type_id::string}});
  o.event_time_field = "date_time";
  const std::vector<std::string> shapes = {
    R"({"date_time": 1, "abcdefgh": 2, "abc": "x"})",
    R"({"date_timf": 9, "abcdefgi": 9, "abd": "no", "date_time": 3, "abcdefgh": 4, "abc": "y"})",
    R"({"date_tim": 9, "abcdefg": 9, "ab": "no", "date_time": 5, "abcdefgh": 6, "abc": "z"})",
    R"({"date_timee": 9, "abcdefghh": 9, "abcd": "no", "date_time": 7, "abcdefgh": 8, "abc": "w"})",
    R"({"abc": "v", "abcdefgh": 10, "date_time": 11})",
  };
  std::string text;
  for (int round = 0; round < 40; ++round)
    for (std::size_t s = 0; s < shapes.size(); ++s)
      text += shapes[(s + static_cast<std::size_t>(round)) % shapes.size()] + "\n";
  auto c = check_same(o, text);
  CHECK(c.batched >= 190); // all but a stream's last line go the batched way
  auto dec = decoder(o);
  auto got = run_many(*dec, text, false);
  REQUIRE(got.rows.size() == 200);
  for (std::size_t r = 0; r < got.rows.size(); ++r) {
    CAPTURE(r);
    const auto shape = (r % shapes.size() + r / shapes.size()) % shapes.size();
    const std::vector<std::vector<value>> want = {
      {std::int64_t{1}, std::int64_t{2}, std::string{"x"}},
      {std::int64_t{3}, std::int64_t{4}, std::string{"y"}},
      {std::int64_t{5}, std::int64_t{6}, std::string{"z"}},
      {std::int64_t{7}, std::int64_t{8}, std::string{"w"}},
      {std::int64_t{11}, std::int64_t{10}, std::string{"v"}},
    };
    CHECK(got.rows[r] == want[shape]);
  }
}

TEST_CASE("jsonl decode_many stops at max_rows, max_records and max_start as the per-line path") {
  std::string text;
  for (int i = 0; i < 120; ++i) {
    text += good_line(i) + (i % 3 == 0 ? "\r\n" : "\n");
    if (i % 17 == 0)
      text += odd_lines()[static_cast<std::size_t>(i) % odd_lines().size()] + "\n\n";
  }
  for (std::size_t window : {std::size_t{0}, std::size_t{300}}) {
    for (std::size_t rows : {std::size_t{1}, std::size_t{7}, std::size_t{64}}) {
      CAPTURE(window);
      CAPTURE(rows);
      record_decoder::batch_limits lim;
      lim.max_rows = rows;
      check_same(jsonl_options(window), text, lim);
      lim.max_records = rows + 2;
      check_same(jsonl_options(window), text, lim);
    }
    record_decoder::batch_limits lim;
    lim.max_start = text.size() / 2; // a split's end
    check_same(jsonl_options(window), text, lim);
  }
}

TEST_CASE("jsonl decode_many reads a line longer than its window per line") {
  std::string text = good_line(1) + "\n";
  text += R"({"key": ")" + std::string(5000, 'y') + R"(", "ts": 9})" "\n";
  text += good_line(2) + "\n" + good_line(3) + "\n";
  auto c = check_same(jsonl_options(256), text);
  CHECK(c.per_line >= 1);
  CHECK(c.batched >= 1);
}

TEST_CASE("jsonl decode_many stops after a control line, as the per-line path") {
  auto o = jsonl_options();
  o.control_lines = true;
  std::string text;
  for (int i = 0; i < 40; ++i) {
    text += good_line(i) + "\n";
    if (i % 9 == 4)
      text += R"({"control": "advance_processing_time", "proc_time": )" + std::to_string(i)
              + "}\n";
    if (i == 20)
      text += R"({"control": "rewind"})" "\n"; // unknown: bad
    if (i == 30)
      text += R"({"key": "c", "ts": 1, "control": "advance_processing_time", "proc_time": 3})"
              "\n";
  }
  check_same(o, text);
  auto dec = decoder(o);
  auto run = run_many(*dec, text, false);
  CHECK(run.controls == std::vector<event_time>{4, 13, 22, 3, 31});
  CHECK(run.calls.front().control);
}

TEST_CASE("jsonl decode_many equals the per-line path on random mixes of lines") {
  std::mt19937 rng{20};
  for (int round = 0; round < 40; ++round) {
    CAPTURE(round);
    std::string text;
    const int n = static_cast<int>(rng() % 300);
    for (int i = 0; i < n; ++i) {
      const auto pick = rng() % 20;
      if (pick == 0)
        text += odd_lines()[rng() % odd_lines().size()];
      else if (pick == 1)
        text += " \t";
      else
        text += good_line(i);
      text += rng() % 5 == 0 ? "\r\n" : "\n";
    }
    if (rng() % 2)
      text += good_line(n);
    record_decoder::batch_limits lim;
    lim.max_rows = 1 + rng() % 100;
    const std::size_t windows[] = {0, 128, 700, 5000};
    check_same(jsonl_options(windows[rng() % 4]), text, lim);
  }
}
}

namespace {

struct reader_run {
  std::vector<std::vector<value>> rows;
  std::vector<bad_record> bad;
  std::vector<std::uint64_t> positions; ///< after each batch
  std::vector<std::size_t> sizes;
  std::vector<std::optional<event_time>> advances;
  std::optional<std::uint64_t> lines;
};

reader_run read_with(file_source_options o, bool batch, std::size_t max_rows,
                     std::optional<file_split_range> split = std::nullopt) {
  o.batch_decode = batch;
  reader_run out;
  auto on_bad = [&](const bad_record& r) { out.bad.push_back(r); };
  auto reader = split ? make_file_split_source_reader(o, *split, on_bad)
                      : make_file_source_reader(o, on_bad);
  REQUIRE(reader);
  while (auto b = (*reader)->poll_next(max_rows)) {
    out.sizes.push_back(b->num_rows);
    for (std::size_t r = 0; r < b->num_rows; ++r) {
      std::vector<value> row;
      for (const auto& c : b->columns)
        row.push_back(c.get(r));
      out.rows.push_back(std::move(row));
    }
    out.positions.push_back((*reader)->position());
    out.advances.push_back((*reader)->take_processing_time_advance());
  }
  out.lines = (*reader)->lines_read();
  return out;
}

void check_same_reads(const reader_run& a, const reader_run& b) {
  CHECK(a.rows == b.rows);
  CHECK(a.positions == b.positions);
  CHECK(a.sizes == b.sizes);
  CHECK(a.advances == b.advances);
  CHECK(a.lines == b.lines);
  REQUIRE(a.bad.size() == b.bad.size());
  for (std::size_t i = 0; i < a.bad.size(); ++i) {
    CAPTURE(i);
    CHECK(a.bad[i].origin == b.bad[i].origin);
    CHECK(a.bad[i].line == b.bad[i].line);
    CHECK(a.bad[i].offset == b.bad[i].offset);
    CHECK(a.bad[i].raw == b.bad[i].raw);
    CHECK(a.bad[i].reason == b.bad[i].reason);
  }
}

} // namespace

TEST_SUITE("format") {
TEST_CASE("file reader: batch decoding gives the per-line rows, bad records and positions") {
  temp_dir dir{"many"};
  std::string text = "\xEF\xBB\xBF"; // a BOM
  int i = 0;
  for (const auto& odd : odd_lines()) {
    text += good_line(i) + "\n" + good_line(i + 1) + "\r\n" + odd + "\n\n";
    i += 2;
    text += good_line(i++) + "\n";
  }
  text += good_line(i++); // no final newline
  const auto path = dir.file("mixed.jsonl", text);
  file_source_options o;
  o.path = path;
  o.decoder = jsonl_options(300);
  for (std::size_t chunk : {std::size_t{7}, std::size_t{100}, std::size_t{4096},
                            std::size_t{1} << 20}) {
    for (std::size_t rows : {std::size_t{1}, std::size_t{5}, std::size_t{1000}}) {
      CAPTURE(chunk);
      CAPTURE(rows);
      o.chunk_bytes = chunk;
      auto batch = read_with(o, true, rows);
      auto ref = read_with(o, false, rows);
      check_same_reads(batch, ref);
      CHECK(batch.positions.back() == text.size());
      CHECK(!batch.bad.empty());
    }
  }
}

TEST_CASE("file reader: batch decoding keeps control lines' clock advances and resumes") {
  temp_dir dir{"many-control"};
  std::string text;
  for (int i = 0; i < 60; ++i) {
    text += good_line(i) + "\n";
    if (i % 11 == 3)
      text += R"({"control": "advance_processing_time", "proc_time": )"
              + std::to_string(100 + i) + "}\r\n";
  }
  const auto path = dir.file("control.jsonl", text);
  file_source_options o;
  o.path = path;
  o.decoder = jsonl_options();
  o.decoder.control_lines = true;
  for (std::size_t chunk : {std::size_t{50}, std::size_t{1} << 20}) {
    CAPTURE(chunk);
    o.chunk_bytes = chunk;
    auto batch = read_with(o, true, 8);
    check_same_reads(batch, read_with(o, false, 8));
    std::size_t advances = 0;
    for (const auto& a : batch.advances)
      advances += a ? 1 : 0;
    CHECK(advances == 6);
    // Resuming from a position after each batch gives the same rest.
    for (std::size_t k = 0; k < batch.positions.size(); k += 3) {
      auto from = o;
      from.start_offset = batch.positions[k];
      check_same_reads(read_with(from, true, 8), read_with(from, false, 8));
    }
  }
}

TEST_CASE("file reader: batch decoding of line-boundary splits equals the per-line path") {
  temp_dir dir{"many-split"};
  std::string text;
  for (int i = 0; i < 400; ++i) {
    text += good_line(i) + "\n";
    if (i % 37 == 5)
      text += odd_lines()[static_cast<std::size_t>(i) % odd_lines().size()] + "\n";
  }
  const auto path = dir.file("split.jsonl", text);
  file_source_options o;
  o.path = path;
  o.decoder = jsonl_options(1000);
  o.chunk_bytes = 3000;
  auto whole = read_with(o, false, 64);
  std::vector<std::vector<value>> rows;
  std::size_t bad = 0;
  const auto splits = plan_file_splits(text.size(), 4);
  for (std::size_t k = 0; k < splits.size(); ++k) {
    CAPTURE(k);
    file_split_range sr{splits[k], k == 0, splits[k].name(path)};
    auto batch = read_with(o, true, 64, sr);
    check_same_reads(batch, read_with(o, false, 64, sr));
    rows.insert(rows.end(), batch.rows.begin(), batch.rows.end());
    bad += batch.bad.size();
  }
  CHECK(rows == whole.rows);
  CHECK(bad == whole.bad.size());
}

TEST_CASE("file reader: csv and apache_combined read the same through the default decode_many") {
  temp_dir dir{"many-csv"};
  std::string csv = "key,ts,n,x\n";
  for (int i = 0; i < 200; ++i) {
    csv += "k" + std::to_string(i) + "," + std::to_string(1000 + i) + "," + std::to_string(i)
           + "," + std::to_string(i) + ".25" + (i % 4 == 0 ? "\r\n" : "\n");
    if (i % 23 == 0)
      csv += "\"multi\nline\",5,6,7\n";
    if (i % 31 == 0)
      csv += "only,two\n\n";
  }
  file_source_options o;
  o.path = dir.file("in.csv", csv);
  o.decoder = jsonl_options();
  o.decoder.kind = format_kind::csv;
  for (std::size_t chunk : {std::size_t{9}, std::size_t{1} << 20}) {
    CAPTURE(chunk);
    o.chunk_bytes = chunk;
    auto batch = read_with(o, true, 16);
    check_same_reads(batch, read_with(o, false, 16));
    CHECK(batch.bad.size() == 7);
  }
  std::string log;
  for (int i = 0; i < 50; ++i)
    log += "10.0.0." + std::to_string(i)
           + " - - [05/Mar/2023:15:13:37 +0000] \"GET /a HTTP/1.1\" 200 12 \"-\" \"ua\"\n";
  log += "garbage\n";
  file_source_options a;
  a.path = dir.file("access.log", log);
  a.decoder.kind = format_kind::apache_combined;
  a.chunk_bytes = 64;
  auto batch = read_with(a, true, 8);
  check_same_reads(batch, read_with(a, false, 8));
  CHECK(batch.rows.size() == 50);
}
}
