// SPDX-License-Identifier: Apache-2.0
// The checks the format fuzz targets (fuzz_avro, fuzz_protobuf) share: what
// must hold of one decoded record, of a dead letter, and of a file reader
// run to its end. A check that fails aborts the process, which libFuzzer
// reports with the input.
#pragma once

#include "weir/connectors/source_reader.hpp"
#include "weir/format/format.hpp"

#include <simdjson.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>
#include <unistd.h>

namespace weir_fuzz {

/// Prints `what` after the target's name and aborts.
[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::abort();
}

/// A dead letter has a reason and is one line of JSON.
inline void check_dead_letter(const weir::bad_record& r) {
  if (r.reason.empty())
    fail("a bad record without a reason");
  std::string line;
  weir::format::append_bad_record_json(r, line);
  simdjson::dom::parser p;
  simdjson::dom::element e;
  if (p.parse(line).get(e) != simdjson::SUCCESS)
    fail("a dead letter that is not JSON: " + line);
}

/// Decodes `record` with `dec`: one row in every column when it is good,
/// none when it is bad, and then a valid dead letter.
inline void decode_one(weir::format::record_decoder& dec, std::string_view record) {
  using weir::format::record_decoder;
  weir::batch_builder b{dec.output_schema()};
  std::string reason;
  const auto st = dec.decode(record, b, reason);
  const std::size_t want = st == record_decoder::status::ok ? 1 : 0;
  if (b.rows() != want)
    fail("rows after decode: " + std::to_string(b.rows()));
  for (std::size_t c = 0; c < b.output_schema().size(); ++c)
    if (b.col(c).size() != want)
      fail("column " + std::to_string(c) + " has " + std::to_string(b.col(c).size())
           + " values for " + std::to_string(want) + " rows");
  if (st == record_decoder::status::bad)
    check_dead_letter(weir::bad_record{"topic/0", 0, 0, reason, ""});
}

/// Writes `bytes` to a file of this process's own in the working directory
/// (<target>_<pid><ext>) and returns its path.
inline const std::string& write_input(std::string_view bytes, const char* ext) {
  static const std::string path =
    std::string{program_invocation_short_name} + "_" + std::to_string(::getpid()) + ext;
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f)
    fail("cannot write " + path);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  return path;
}

/// Polls `reader` to its end (at most 100,000 polls of 64 rows): its
/// position (`position()`) never goes back and every batch's columns hold
/// its rows.
inline void drain(weir::source_reader& reader, const std::function<std::uint64_t()>& position) {
  std::uint64_t last = 0;
  for (int polls = 0; polls < 100000; ++polls) {
    auto batch = reader.poll_next(64);
    const auto pos = position();
    if (pos < last)
      fail("the position went back");
    last = pos;
    if (!batch)
      return;
    for (const auto& c : batch->columns)
      if (c.size() != batch->num_rows)
        fail("a column's size differs from the batch's rows");
  }
  fail("the reader did not end");
}

} // namespace weir_fuzz
