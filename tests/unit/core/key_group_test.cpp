// SPDX-License-Identifier: Apache-2.0
#include "weir/core/key_group.hpp"

#include <doctest/doctest.h>

#include <set>

using weir::batch_builder;
using weir::make_schema;
using weir::type_id;

namespace {

std::string key_of(const std::string& path, std::int64_t status) {
  batch_builder b{make_schema({{"path", type_id::string}, {"status", type_id::int64}})};
  b.col(0).append_string(path);
  b.col(1).append_int(status);
  b.commit_row();
  auto batch = b.finish();
  std::string out;
  std::size_t fields[] = {0, 1};
  weir::encode_key(*batch, fields, 0, out);
  return out;
}

} // namespace

TEST_SUITE("core") {
TEST_CASE("key groups are fixed values, stable across runs, builds and machines") {
  // Pinned: snapshots store state by key group, so these must never change.
  CHECK(weir::assign_key_group(key_of("/index.html", 200), 128) == 22);
  CHECK(weir::assign_key_group(key_of("/robots.txt", 404), 128) == 104);
  CHECK(weir::assign_key_group(key_of("", 0), 32768) == 8518);
}

TEST_CASE("equal keys encode equally and different keys differently") {
  CHECK(key_of("/a", 1) == key_of("/a", 1));
  CHECK(key_of("/a", 1) != key_of("/a", 2));
  // Length prefixes keep ("ab", "c") apart from ("a", "bc")-like collisions.
  CHECK(key_of("/a1", 1) != key_of("/a", 1));
}

TEST_CASE("key groups map onto subtasks as contiguous ranges") {
  std::set<std::size_t> seen;
  std::size_t last = 0;
  for (std::size_t g = 0; g < 128; ++g) {
    auto s = weir::operator_index_for_key_group(g, 128, 3);
    CHECK(s >= last);
    CHECK(s < 3);
    last = s;
    seen.insert(s);
  }
  CHECK(seen.size() == 3);
  CHECK(weir::operator_index_for_key_group(127, 128, 2) == 1);
  CHECK(weir::operator_index_for_key_group(63, 128, 2) == 0);
}

TEST_CASE("keys spread over key groups") {
  std::set<std::uint16_t> groups;
  for (int i = 0; i < 1000; ++i)
    groups.insert(weir::assign_key_group(key_of("/page/" + std::to_string(i), 200), 128));
  CHECK(groups.size() > 120);
}
}
