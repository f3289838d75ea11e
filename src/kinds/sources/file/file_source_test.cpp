// SPDX-License-Identifier: Apache-2.0
// The file source's `rate` (rate_limited_reader over the file reader).
#include "connectors/internal/rate_limited_reader.hpp"

#include "weir/format/format.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

namespace {

std::string write_rows(std::size_t n) {
  auto path = (std::filesystem::temp_directory_path()
               / ("weir_rate_test_" + std::to_string(::getpid()) + ".jsonl"))
                .string();
  std::ofstream out(path);
  for (std::size_t i = 0; i < n; ++i)
    out << "{\"id\":" << i << "}\n";
  return path;
}

} // namespace

TEST_CASE("file source rate: never ahead of rate * elapsed, every row once, positions exact") {
  const std::size_t rows = 400;
  const auto path = write_rows(rows);
  weir::format::file_source_options fo;
  fo.path = path;
  fo.decoder.kind = weir::format::format_kind::jsonl;
  fo.decoder.schema = weir::make_schema({{"id", weir::type_id::int64}});
  auto inner = weir::format::make_file_source_reader(fo, nullptr);
  REQUIRE(inner);
  const double rate = 2000; // rows/s: the file takes 0.2 s
  weir::internal::rate_limited_reader r(std::move(*inner), rate, std::chrono::milliseconds{5});
  const auto start = std::chrono::steady_clock::now();
  std::size_t got = 0;
  std::int64_t next_id = 0;
  std::size_t empty_polls = 0;
  while (auto b = r.poll_next(1000)) {
    const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    // Row k is due at k / rate: at most rate * elapsed + 1 rows may be out.
    got += b->num_rows;
    CHECK(static_cast<double>(got) <= rate * elapsed + 1.0);
    for (std::size_t i = 0; i < b->num_rows; ++i)
      CHECK(b->columns[0].ints[i] == next_id++);
    if (b->num_rows == 0) {
      ++empty_polls;
      CHECK(r.next_poll_delay().count() > 0); // it asks to wait, not to spin
      std::this_thread::sleep_for(r.next_poll_delay());
    }
    REQUIRE(got <= rows);
  }
  CHECK(got == rows);
  CHECK(empty_polls > 0);
  CHECK(r.position() == std::filesystem::file_size(path)); // the inner reader's offset
  std::remove(path.c_str());
}
