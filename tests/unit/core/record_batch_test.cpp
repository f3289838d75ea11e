// SPDX-License-Identifier: Apache-2.0
#include "weir/core/record_batch.hpp"

#include <doctest/doctest.h>

#include <algorithm>

using weir::batch_builder;
using weir::field;
using weir::make_schema;
using weir::type_id;

TEST_SUITE("core") {
TEST_CASE("a rolled-back row leaves no trace in any column") {
  batch_builder b{make_schema({{"k", type_id::string}, {"v", type_id::int64}})};
  b.col(0).append_string("kept");
  b.col(1).append_int(1);
  b.commit_row();
  b.timestamps().push_back(1);
  b.col(0).append_string("dropped");
  b.timestamps().push_back(5);
  b.rollback_row();
  b.col(0).append_string("second");
  b.commit_row(); // v receives an implicit null
  b.timestamps().push_back(2);
  auto batch = b.finish();
  REQUIRE(batch->num_rows == 2);
  CHECK(batch->columns[0].str(0) == "kept");
  CHECK(batch->columns[0].str(1) == "second");
  CHECK(batch->columns[1].is_valid(0));
  CHECK(batch->columns[1].is_null(1));
  CHECK(batch->timestamps == weir::buffer<weir::event_time>{1, 2});
}

TEST_CASE("take copies the selected rows with their timestamps and nulls") {
  batch_builder b{make_schema({{"s", type_id::string}, {"f", type_id::float64}})};
  for (int i = 0; i < 5; ++i) {
    b.col(0).append_string(std::string(static_cast<std::size_t>(i), 'x'));
    if (i % 2 == 0)
      b.col(1).append_float(i * 1.5);
    b.commit_row();
    b.timestamps().push_back(i * 10);
  }
  auto batch = b.finish();
  auto picked = batch->take({4, 1});
  REQUIRE(picked.num_rows == 2);
  CHECK(picked.columns[0].str(0) == "xxxx");
  CHECK(picked.columns[0].str(1) == "x");
  CHECK(picked.columns[1].floats[0] == doctest::Approx(6.0));
  CHECK(picked.columns[1].is_null(1));
  CHECK(picked.timestamps == weir::buffer<weir::event_time>{40, 10});
}

TEST_CASE("take of an all-null column keeps its value slots, zero-filled") {
  batch_builder b{make_schema({{"i", type_id::int64}, {"s", type_id::string}})};
  for (int i = 0; i < 4; ++i) {
    b.col(0).append_null();
    b.col(1).append_null();
    b.commit_row();
  }
  auto batch = b.finish();
  REQUIRE(batch->columns[0].has_values());
  const auto picked = batch->take({3, 0});
  CHECK(picked.columns[0].has_values());
  CHECK(picked.columns[0].ints == weir::buffer<std::int64_t>{0, 0});
  CHECK(picked.columns[1].has_values());
  CHECK(picked.columns[1].str(1).empty());
  CHECK(picked.columns[0].is_null(0));
}

TEST_CASE("finish hands over the rows and starts an empty batch with the same schema") {
  batch_builder b{make_schema({{"v", type_id::int64}})};
  b.col(0).append_int(7);
  b.commit_row();
  auto first = b.finish();
  CHECK(first->num_rows == 1);
  CHECK(b.rows() == 0);
  b.col(0).append_int(8);
  b.commit_row();
  auto second = b.finish();
  CHECK(second->columns[0].ints == weir::buffer<std::int64_t>{8});
  CHECK(first->schema == second->schema);
}

TEST_CASE("max_timestamp is the largest event time at every length and position") {
  // The AVX-512 path takes sixteen at a time: lengths around multiples of
  // 16, the largest in the vector part and in the tail, negative times.
  for (std::size_t n = 0; n <= 70; ++n)
    for (std::size_t top = 0; top < std::max<std::size_t>(n, 1); top += 3) {
      CAPTURE(n);
      CAPTURE(top);
      weir::record_batch b;
      for (std::size_t i = 0; i < n; ++i)
        b.timestamps.push_back(-1'000'000 + static_cast<weir::event_time>((i * 7919) % 1000));
      if (n > 0)
        b.timestamps[top] = 5'000'000;
      const auto want = n == 0 ? weir::min_watermark
                               : *std::max_element(b.timestamps.begin(), b.timestamps.end());
      CHECK(b.max_timestamp() == want);
    }
}

TEST_CASE("first_null finds the first null row, or says there is none") {
  weir::column c{weir::type_id::int64};
  CHECK(c.first_null() == 0);
  for (int i = 0; i < 100; ++i)
    c.append_int(i);
  CHECK(c.first_null() == 100);
  c.validity[77] = 0;
  c.validity[90] = 0;
  CHECK(c.first_null() == 77);
  c.validity[0] = 0;
  CHECK(c.first_null() == 0);
}

TEST_CASE("schema looks fields up by name and renders itself") {
  weir::schema s{{{"a", type_id::int64}, {"b", type_id::timestamp}}};
  CHECK(s.index_of("b") == 1u);
  CHECK_FALSE(s.index_of("c").has_value());
  CHECK(s.to_string() == "a:int64, b:timestamp");
  CHECK(weir::parse_type_id("double") == type_id::float64);
  CHECK_FALSE(weir::parse_type_id("decimal").has_value());
}
}
