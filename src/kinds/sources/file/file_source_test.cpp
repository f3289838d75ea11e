// SPDX-License-Identifier: Apache-2.0
// The sources' `rate` (rate_limited_reader over the file reader, and over a
// reader that assigns its partitions when it starts, as the Kafka reader does).
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

namespace {

/// A reader that, like the Kafka reader, knows its partitions only once its
/// first poll has started it.
class assigning_reader final : public weir::source_reader {
public:
  const weir::schema_ptr& output_schema() const override { return schema_; }
  weir::record_batch_ptr poll_next(std::size_t) override {
    started_ = true;
    auto b = std::make_shared<weir::record_batch>();
    b->schema = schema_;
    b->columns.emplace_back(weir::type_id::int64);
    b->columns[0].append_int(0);
    b->num_rows = 1;
    return b;
  }
  std::vector<weir::source_position> positions() const override { return {}; }
  const std::vector<std::string>* partitions() const override {
    return started_ ? &assigned_ : &none_;
  }

private:
  weir::schema_ptr schema_ = weir::make_schema({{"id", weir::type_id::int64}});
  bool started_ = false;
  std::vector<std::string> assigned_{"t/0", "t/1"};
  std::vector<std::string> none_; ///< before the first poll
};

} // namespace

TEST_CASE("a paced reader declares no partitions before its inner reader was first polled") {
  // An empty list before the first poll would make the source subtask idle:
  // its watermark would hold nothing back and the rows read next would be late.
  auto inner = std::make_unique<assigning_reader>();
  weir::internal::rate_limited_reader r(std::move(inner), 1000.0, std::chrono::milliseconds{5});
  CHECK(r.partitions() == nullptr);
  // The pacer holds the first polls back (a batch waits to fill or for the
  // buffer timeout): until a row comes from the inner reader, no partitions.
  for (int polls = 0;; ++polls) {
    REQUIRE(polls < 1000);
    auto b = r.poll_next(1000);
    REQUIRE(b);
    if (b->num_rows > 0)
      break;
    CHECK(r.partitions() == nullptr);
    std::this_thread::sleep_for(r.next_poll_delay());
  }
  REQUIRE(r.partitions() != nullptr);
  CHECK(r.partitions()->size() == 2);
}
