// SPDX-License-Identifier: Apache-2.0
// Fuzz target: one record decoder (WEIR_FUZZ_FORMAT = jsonl, csv or
// apache_combined), fed the input as the bytes of a file the way the file
// source feeds it (src/format/file_source_reader.cpp): a UTF-8 BOM skipped,
// the bytes arriving in chunks, `next_record` splitting records, the line
// end stripped, `decode` into a batch_builder, bad records to a handler that
// counts and dead-letters them.
//
// Checked besides "no crash, hang or sanitizer report":
// - records split the same way whatever the chunk size (against one pass
//   over the whole input at end of file), with the same line counts;
// - `decode` commits exactly one row on ok and none otherwise, leaving every
//   column (and the event times) one value per row; a bad record has a reason;
// - a bad record's dead-letter line is valid JSON;
// - every decoded row encodes as valid JSON, and its jsonl and csv
//   encodings decode again (same schema) without being bad;
// - decode_many over the whole input (jsonl: simdjson iterate_many) gives
//   the rows, bad records and positions of decoding one record at a time.
//
// The decoder's options (event-time field, CSV header and delimiter, jsonl
// control lines, chunk size) are taken from a hash of the input, so that the
// seed corpus is plain file text.
#include "weir/format/format.hpp"

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#define WEIR_FUZZ_STR2(x) #x
#define WEIR_FUZZ_STR(x) WEIR_FUZZ_STR2(x)

namespace {

using weir::batch_builder;
using weir::type_id;
using weir::format::decoder_options;
using weir::format::format_kind;
using weir::format::record_decoder;

constexpr std::string_view format_name = WEIR_FUZZ_STR(WEIR_FUZZ_FORMAT);

std::string_view input_text; // for failure messages

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "fuzz_%s: %s\n", std::string{format_name}.c_str(), what.c_str());
  std::abort();
}

// A schema with every field type; the names are those of the seed files
// (the access log as jsonl, the earthquake and occupancy CSVs).
weir::schema_ptr test_schema(format_kind k) {
  if (k == format_kind::apache_combined)
    return weir::format::apache_combined_schema();
  if (k == format_kind::jsonl)
    return weir::make_schema({{"line", type_id::int64},
                              {"ts", type_id::timestamp},
                              {"client", type_id::string},
                              {"path", type_id::string},
                              {"status", type_id::int64},
                              {"bytes", type_id::int64},
                              {"ratio", type_id::float64},
                              {"ok", type_id::boolean},
                              {"agent", type_id::string}});
  return weir::make_schema({{"time", type_id::timestamp},
                            {"latitude", type_id::float64},
                            {"mag", type_id::float64},
                            {"nst", type_id::int64},
                            {"place", type_id::string},
                            {"Occupancy", type_id::boolean},
                            {"date", type_id::string}});
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 14695981039346656037ULL;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  return h;
}

decoder_options options_for(std::uint64_t h) {
  decoder_options o;
  o.kind = *weir::format::parse_format(format_name);
  o.schema = test_schema(o.kind);
  if (h & 1)
    o.event_time_field = o.kind == format_kind::csv ? "time" : "ts";
  o.csv_header = (h & 2) == 0;
  static constexpr char delimiters[] = {',', ',', ';', '\t'};
  o.csv_delimiter = delimiters[(h >> 2) & 3];
  o.control_lines = (h & 16) != 0;
  if ((h >> 8) & 1)
    o.invalid_utf8 = weir::format::invalid_utf8_policy::replace;
  if ((h >> 9) & 1) {
    // A zone with summer time, when the system has it (the fuzzer runs
    // where /usr/share/zoneinfo may be absent: then a fixed offset).
    auto z = weir::time_zone::parse("Europe/Berlin");
    o.zone = z ? *z : *weir::time_zone::parse("+02:00");
  }
  return o;
}

simdjson::dom::parser& json_parser() {
  static simdjson::dom::parser p;
  return p;
}

void check_json(std::string_view line, const char* what) {
  simdjson::padded_string padded{line};
  simdjson::dom::element doc;
  if (auto err = json_parser().parse(padded).get(doc))
    fail(std::string{what} + " is not valid JSON (" + simdjson::error_message(err)
         + "): " + std::string{line});
}

// Decodes `text` (one encoded row) with a fresh decoder of `opts`, expecting
// no bad record.
void check_reads_back(const decoder_options& opts, std::string_view text, const char* what) {
  auto dec = weir::format::make_decoder(opts);
  if (!dec)
    fail("make_decoder failed for the read-back");
  batch_builder b((*dec)->output_schema());
  std::size_t pos = 0;
  std::string reason;
  while (pos < text.size()) {
    std::size_t lines = 0;
    const std::size_t n = (*dec)->next_record(text.substr(pos), true, lines);
    if (n == 0 || n > text.size() - pos)
      fail(std::string{what} + ": next_record returned " + std::to_string(n));
    std::string_view rec = text.substr(pos, n);
    pos += n;
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);
    if ((*dec)->decode(rec, b, reason) == record_decoder::status::bad)
      fail(std::string{what} + " does not read back (" + reason + "): " + std::string{text});
  }
}

// Encodes every row of `batch` as jsonl and csv and checks them.
void check_encodings(const weir::record_batch& batch) {
  if (batch.num_rows != batch.columns.front().size())
    fail("finish() gave a batch whose columns do not have num_rows rows");
  auto jsonl = weir::format::make_encoder(format_kind::jsonl);
  auto csv = weir::format::make_encoder(format_kind::csv);
  decoder_options back;
  back.kind = format_kind::jsonl;
  back.schema = batch.schema;
  decoder_options csv_back = back;
  csv_back.kind = format_kind::csv;
  std::string out;
  for (std::size_t row = 0; row < batch.num_rows; ++row) {
    out.clear();
    jsonl->encode(batch, row, out);
    if (out.empty() || out.back() != '\n')
      fail("a jsonl row does not end with a newline");
    check_json(std::string_view{out}.substr(0, out.size() - 1), "an encoded jsonl row");
    check_reads_back(back, out, "an encoded jsonl row");
    out = csv->header(*batch.schema);
    csv->encode(batch, row, out);
    // CSV cannot carry a NUL (a jsonl "\u0000" decodes to one), which makes
    // a csv record bad: the read-back only holds without.
    if (out.find('\0') == std::string::npos)
      check_reads_back(csv_back, out, "an encoded csv row");
  }
}

// The rows of `b` as jsonl lines (empty when it has none), for comparing two
// decoders' output.
std::string rows_as_jsonl(batch_builder& b) {
  std::string out;
  if (b.rows() == 0)
    return out;
  auto batch = b.finish();
  auto jsonl = weir::format::make_encoder(format_kind::jsonl);
  for (std::size_t row = 0; row < batch->num_rows; ++row)
    jsonl->encode(*batch, row, out);
  return out;
}

// record_decoder::decode_many (jsonl: simdjson iterate_many over windows of
// the text, a per-line fallback around what the stream does not settle)
// against next_record + decode one record at a time, on the whole input at
// end of file: the same rows, the same bad records (offset, line, reason)
// and the same bytes, lines and records consumed. The window (64 B to the
// 256 KiB default) comes from the input's hash; the text carries the padding
// decode_many may read.
void check_decode_many(std::string_view file, const decoder_options& opts, std::uint64_t h) {
  static constexpr std::size_t windows[] = {64, 100, 512, 4096, 0};
  decoder_options many_opts = opts;
  many_opts.batch_window = windows[(h >> 11) % 5];
  auto one = weir::format::make_decoder(opts);
  auto many = weir::format::make_decoder(many_opts);
  if (!one || !many)
    fail("make_decoder failed for the decode_many check");
  using bad_list = std::vector<std::string>;
  auto bad_key = [](std::size_t offset, std::size_t line, const std::string& reason) {
    return std::to_string(offset) + ":" + std::to_string(line) + ":" + reason;
  };

  // One record at a time.
  batch_builder one_rows((*one)->output_schema());
  bad_list one_bad;
  std::size_t one_records = 0, line = 0;
  std::string reason;
  for (std::size_t pos = 0; pos < file.size();) {
    std::size_t lines = 0;
    const std::size_t n = (*one)->next_record(file.substr(pos), true, lines);
    std::string_view rec = file.substr(pos, n);
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);
    reason.clear();
    if ((*one)->decode(rec, one_rows, reason) == record_decoder::status::bad)
      one_bad.push_back(bad_key(pos, line, reason));
    ++one_records;
    pos += n;
    line += lines;
  }

  // decode_many, called again after each stop (a control line stops it).
  std::string text{file};
  text.append(weir::format::decode_many_padding, '\0');
  const std::string_view all{text.data(), file.size()};
  batch_builder many_rows((*many)->output_schema());
  bad_list many_bad;
  std::size_t at = 0, at_line = 0, many_records = 0;
  while (at < all.size()) {
    record_decoder::batch_progress pr;
    (*many)->decode_many(all.substr(at), true, {}, many_rows, pr,
                         [&](std::size_t offset, std::size_t l, std::string_view,
                             const std::string& why) {
                           many_bad.push_back(bad_key(at + offset, at_line + l, why));
                         });
    if (pr.records == 0 || pr.bytes == 0 || pr.bytes > all.size() - at)
      fail("decode_many consumed " + std::to_string(pr.records) + " records, "
           + std::to_string(pr.bytes) + " bytes with " + std::to_string(all.size() - at)
           + " left at end of file");
    at += pr.bytes;
    at_line += pr.lines;
    many_records += pr.records;
  }
  if (many_records != one_records || at_line != line)
    fail("decode_many consumed " + std::to_string(many_records) + " records and "
         + std::to_string(at_line) + " lines, one at a time " + std::to_string(one_records)
         + " and " + std::to_string(line));
  if (many_bad != one_bad)
    fail("decode_many's bad records differ (" + std::to_string(many_bad.size()) + " vs "
         + std::to_string(one_bad.size()) + "), first: "
         + (many_bad.empty() ? std::string{"-"} : many_bad.front()) + " / "
         + (one_bad.empty() ? std::string{"-"} : one_bad.front()));
  if (rows_as_jsonl(many_rows) != rows_as_jsonl(one_rows))
    fail("decode_many's rows differ from decoding one record at a time");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view file{reinterpret_cast<const char*>(data), size};
  input_text = file;
  const std::uint64_t h = fnv1a(file);
  const decoder_options opts = options_for(h);
  auto made = weir::format::make_decoder(opts);
  auto ref_made = weir::format::make_decoder(opts);
  if (!made || !ref_made)
    fail("make_decoder failed: " + made.error().message);
  record_decoder& dec = **made;

  // As the reader: a UTF-8 BOM at the start is skipped.
  if (file.substr(0, 3) == "\xEF\xBB\xBF")
    file.remove_prefix(3);

  // The split of the whole file in one pass, at end of file.
  std::vector<std::pair<std::size_t, std::size_t>> ref;
  for (std::size_t pos = 0; pos < file.size();) {
    std::size_t lines = 0;
    const std::size_t n = (*ref_made)->next_record(file.substr(pos), true, lines);
    if (n == 0 || n > file.size() - pos)
      fail("next_record at end of file returned " + std::to_string(n) + " with "
           + std::to_string(file.size() - pos) + " bytes left");
    ref.emplace_back(n, lines);
    pos += n;
  }

  // The same bytes in chunks, as the file source reads them.
  static constexpr std::size_t chunk_sizes[] = {1, 2, 3, 7, 16, 64, 4096, 1 << 20};
  const std::size_t chunk = chunk_sizes[(h >> 5) % 8];
  batch_builder builder(dec.output_schema());
  std::string buf;
  std::size_t start = 0, fed = 0, records = 0, bad = 0;
  bool eof = false;
  std::string reason, dead_letter;
  std::uint64_t line = 1, offset = 0;
  while (true) {
    std::string_view avail{buf.data() + start, buf.size() - start};
    std::size_t lines = 0;
    const std::size_t n = avail.empty() ? 0 : dec.next_record(avail, eof, lines);
    if (n > avail.size())
      fail("next_record returned more bytes than it was given");
    if (n == 0) {
      if (eof)
        break;
      buf.erase(0, start);
      start = 0;
      const std::size_t take = std::min(chunk, file.size() - fed);
      buf.append(file.substr(fed, take));
      fed += take;
      eof = take == 0;
      continue;
    }
    if (records >= ref.size() || ref[records].first != n || ref[records].second != lines)
      fail("record " + std::to_string(records + 1) + " splits differently in chunks of "
           + std::to_string(chunk) + " bytes");
    ++records;
    std::string_view rec = avail.substr(0, n);
    start += n;
    const std::uint64_t rec_line = line, rec_offset = offset;
    line += lines;
    offset += n;
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);

    const std::size_t rows_before = builder.rows();
    reason.clear();
    const auto st = dec.decode(rec, builder, reason);
    const std::size_t rows_after = builder.rows();
    if (rows_after != rows_before + (st == record_decoder::status::ok ? 1 : 0))
      fail("decode returned status " + std::to_string(static_cast<int>(st)) + " and went from "
           + std::to_string(rows_before) + " to " + std::to_string(rows_after) + " rows");
    for (std::size_t i = 0; i < dec.output_schema()->size(); ++i)
      if (builder.col(i).size() != rows_after)
        fail("column " + std::to_string(i) + " has " + std::to_string(builder.col(i).size())
             + " values for " + std::to_string(rows_after) + " rows");
    if (!opts.event_time_field.empty() && builder.timestamps().size() != rows_after)
      fail("event times and rows differ in number");
    if (st == record_decoder::status::bad) {
      if (reason.empty())
        fail("a bad record without reason");
      ++bad; // the handler of the file source: count, dead-letter
      weir::bad_record r{"fuzz." + std::string{format_name}, rec_line, rec_offset, reason,
                         std::string{rec.substr(0, 4096)}};
      dead_letter.clear();
      weir::format::append_bad_record_json(r, dead_letter);
      if (dead_letter.empty() || dead_letter.back() != '\n')
        fail("a dead-letter line does not end with a newline");
      check_json(std::string_view{dead_letter}.substr(0, dead_letter.size() - 1),
                 "a dead-letter line");
    }
    if (st == record_decoder::status::control)
      (void) dec.control_time();
    if (records % 5 == 0 && builder.rows() > 0)
      check_encodings(*builder.finish());
  }
  if (records != ref.size())
    fail("the chunked read found " + std::to_string(records) + " records, one pass "
         + std::to_string(ref.size()));
  if (builder.rows() > 0)
    check_encodings(*builder.finish());
  (void) bad;
  check_decode_many(file, opts, h);
  return 0;
}
