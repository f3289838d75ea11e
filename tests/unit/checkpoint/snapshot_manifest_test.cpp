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

TEST_SUITE("checkpoint") {
TEST_CASE("a handle's state descriptor survives encoding and decoding") {
  auto m = sample();
  m.handles[1].state_descriptor = "window tumbling_event_time_windows; aggregates count(*)";
  auto back = decode_manifest(encode_manifest(m));
  REQUIRE(back);
  CHECK(back->handles[1].state_descriptor == m.handles[1].state_descriptor);
  CHECK(back->handles[0].state_descriptor.empty());
}

TEST_CASE("a manifest of format version 1 is read with no state descriptors") {
  // Version 1 is version 2 without the descriptor string (u32 length 0)
  // ending each handle.
  auto m = sample();
  auto v2 = encode_manifest(m);
  std::string body = v2.substr(0, v2.size() - 8);
  // Drop each handle's trailing empty descriptor: handle ends are found by
  // re-encoding with one handle at a time.
  std::string v1;
  {
    auto head = m;
    head.handles.clear();
    auto h = encode_manifest(head);
    v1 = h.substr(0, h.size() - 8);
    v1.replace(v1.size() - 4, 4, body.substr(v1.size() - 4, 4)); // the handle count
    std::size_t at = v1.size();
    for (const auto& handle : m.handles) {
      auto one = head;
      one.handles = {handle};
      auto e = encode_manifest(one);
      auto len = e.size() - 8 - h.size() + 8 - 4; // the handle without its descriptor
      v1 += body.substr(at, len);
      at += len + 4;
    }
    CHECK(at == body.size());
  }
  v1[4] = 1; // u16 version, little-endian
  auto sum = state_checksum(v1);
  v1.append(reinterpret_cast<const char*>(&sum), 8);
  auto back = decode_manifest(v1);
  REQUIRE(back);
  CHECK(*back == m);
  v1[4] = 3;
  CHECK_FALSE(decode_manifest(v1));
}

TEST_CASE("state compatibility: equal or unrecorded descriptors restore, others are refused") {
  CHECK_FALSE(check_state_compatibility("per_user", "window a; count(*)", "window a; count(*)",
                                        "checkpoint 3 in state"));
  CHECK_FALSE(check_state_compatibility("per_user", "", "window a; count(*)", "checkpoint 3"));
  auto why = check_state_compatibility("per_user", "window a; count(*)",
                                       "window a; sum(float64)", "checkpoint 3 in state");
  REQUIRE(why);
  for (const char* words : {"operator 'per_user'", "checkpoint 3 in state",
                            "holds [window a; count(*)]", "now has [window a; sum(float64)]",
                            "--fresh", "--allow-non-restored-state"})
    CHECK_MESSAGE(why->find(words) != std::string::npos, *why, " lacks ", words);
  auto gone = check_state_compatibility("per_user", "window a; count(*)", "", "savepoint sp");
  REQUIRE(gone);
  CHECK(gone->find("now has [no such state]") != std::string::npos);
}
}
