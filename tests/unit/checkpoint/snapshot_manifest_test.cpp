// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/snapshot_manifest.hpp"

#include <doctest/doctest.h>

using namespace weir::checkpoint;

namespace {

snapshot_manifest sample() {
  snapshot_manifest m;
  m.checkpoint_id = 12;
  m.trigger_ms = 1'700'000'000'000;
  m.completion_ms = 1'700'000'000'250;
  m.alignment_ms = 4;
  operator_state_handle src;
  src.operator_uid = "logs";
  src.has_operator_state = true;
  src.operator_state_bytes = 16;
  src.operator_state_checksum = 99;
  src.source_position = "byte 1234 of access.log";
  operator_state_handle views;
  views.operator_uid = "views";
  views.subtask = 1;
  views.parallelism = 2;
  views.key_groups = {{64, 100, 1}, {70, 5, 2}};
  m.handles = {src, views};
  return m;
}

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("a manifest survives encoding and decoding unchanged") {
  auto m = sample();
  auto bytes = encode_manifest(m);
  auto back = decode_manifest(bytes);
  REQUIRE(back);
  CHECK(*back == m);
  CHECK(back->duration_ms() == 250);
  CHECK(back->size_bytes() == 121);
  m.status = checkpoint_status::in_progress;
  m.handles.clear();
  auto back2 = decode_manifest(encode_manifest(m));
  REQUIRE(back2);
  CHECK(*back2 == m);
}

TEST_CASE("decoding rejects every truncation of a manifest") {
  auto bytes = encode_manifest(sample());
  for (std::size_t n = 0; n < bytes.size(); ++n) {
    auto r = decode_manifest(std::string_view{bytes}.substr(0, n));
    CHECK_FALSE(r);
    if (!r)
      CHECK(r.error().code == weir::errc::parse_error);
  }
}

TEST_CASE("decoding rejects a manifest with any byte flipped") {
  auto bytes = encode_manifest(sample());
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    auto damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x40);
    CHECK_FALSE(decode_manifest(damaged));
  }
  auto r = decode_manifest(bytes + "x");
  REQUIRE_FALSE(r);
  CHECK(r.error().message.find("checksum") != std::string::npos);
}

TEST_CASE("the state checksum is xxhash64 with a fixed seed") {
  CHECK(state_checksum("abc") == state_checksum(std::string{"abc"}));
  CHECK(state_checksum("abc") != state_checksum("abd"));
}
}
