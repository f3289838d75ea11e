// SPDX-License-Identifier: Apache-2.0
#include "weir/checkpoint/checkpoint_report.hpp"

#include "checkpoint_test_util.hpp"

#include <doctest/doctest.h>

using namespace weir::checkpoint;
using weir::checkpoint::test::temp_dir;

namespace {

void write_checkpoint(lmdb_checkpoint_store& s, std::uint64_t id,
                      std::string position = "byte 4096 of a.log") {
  operator_state_write src;
  src.operator_uid = "logs";
  src.operator_state = "12345678";
  src.source_position = std::move(position);
  operator_state_write views;
  views.operator_uid = "views";
  views.first_key_group = 0;
  views.last_key_group = 127;
  views.serialize_key_group = [](std::uint16_t g, std::string& out) {
    if (g < 2)
      out.assign(1024, 'x');
  };
  auto h = s.write_state(id, std::vector{src, views});
  REQUIRE(h);
  snapshot_manifest m;
  m.checkpoint_id = id;
  m.trigger_ms = 1000;
  m.completion_ms = 1042;
  m.alignment_ms = 3;
  m.handles = *h;
  REQUIRE(s.commit_manifest(m));
}

} // namespace

TEST_SUITE("checkpoint") {
TEST_CASE("format_bytes picks a binary unit with one decimal") {
  CHECK(format_bytes(0) == "0 B");
  CHECK(format_bytes(1023) == "1023 B");
  CHECK(format_bytes(1536) == "1.5 KiB");
  CHECK(format_bytes(std::uint64_t{3} << 20) == "3.0 MiB");
  CHECK(format_bytes(std::uint64_t{5} << 30) == "5.0 GiB");
}

TEST_CASE("checkpoints list prints one row per checkpoint with its figures") {
  temp_dir dir{"cli"};
  {
    store_options o;
    o.dir = dir.str();
    o.retain = 2;
    auto s = lmdb_checkpoint_store::open(o);
    REQUIRE(s);
    write_checkpoint(**s, 1);
    write_checkpoint(**s, 2);
  }
  std::string out, err;
  REQUIRE(run_checkpoints_command("list", dir.str(), std::nullopt, out, err) == 0);
  CHECK(err.empty());
  CHECK(out
        == "ID  STATUS    TRIGGERED (UTC)           DURATION  ALIGNMENT     SIZE  "
           "STATE BY OPERATOR        SOURCE POSITIONS\n"
           " 1  complete  1970-01-01T00:00:01.000Z     42 ms       3 ms  2.0 KiB  "
           "logs 8 B, views 2.0 KiB  logs: byte 4096 of a.log\n"
           " 2  complete  1970-01-01T00:00:01.000Z     42 ms       3 ms  2.0 KiB  "
           "logs 8 B, views 2.0 KiB  logs: byte 4096 of a.log\n");

  out.clear();
  REQUIRE(run_checkpoints_command("show", dir.str(), std::nullopt, out, err) == 0);
  CHECK(out.rfind("checkpoint 2  complete\n", 0) == 0);
  CHECK(out.find("  duration    42 ms\n") != std::string::npos);
  CHECK(out.find("  size        2.0 KiB (2056 bytes)\n") != std::string::npos);
  CHECK(out.find("views     2.0 KiB") != std::string::npos);
  CHECK(out.find("logs          8 B") != std::string::npos);
  CHECK(out.find("byte 4096 of a.log") != std::string::npos);

  out.clear();
  REQUIRE(run_checkpoints_command("show", dir.str(), 1, out, err) == 0);
  CHECK(out.rfind("checkpoint 1  complete\n", 0) == 0);
}

TEST_CASE("a source with several splits shows one position line per split") {
  temp_dir dir{"cli-splits"};
  {
    store_options o;
    o.dir = dir.str();
    auto s = lmdb_checkpoint_store::open(o);
    REQUIRE(s);
    write_checkpoint(**s, 1, "offset 17 of orders/0\noffset 4 of orders/1");
  }
  std::string out, err;
  REQUIRE(run_checkpoints_command("list", dir.str(), std::nullopt, out, err) == 0);
  CHECK(out.find("logs: offset 17 of orders/0, offset 4 of orders/1\n") != std::string::npos);
  out.clear();
  REQUIRE(run_checkpoints_command("show", dir.str(), 1, out, err) == 0);
  auto first = out.find("offset 17 of orders/0\n");
  auto second = out.find("offset 4 of orders/1\n");
  REQUIRE(first != std::string::npos);
  REQUIRE(second != std::string::npos);
  CHECK(first < second);
  // The second split's line is a row of its own, under the first.
  auto line_start = out.rfind('\n', second);
  CHECK(out.substr(line_start + 1, second - line_start - 1).find_first_not_of(' ')
        == std::string::npos);
}

TEST_CASE("checkpoints show fails with a message for a missing checkpoint or directory") {
  temp_dir dir{"cli-missing"};
  std::string out, err;
  CHECK(run_checkpoints_command("list", (dir.path() / "nope").string(), std::nullopt, out,
                                err)
        == 1);
  CHECK(err.find("no checkpoints here") != std::string::npos);
  {
    store_options o;
    o.dir = dir.str();
    auto s = lmdb_checkpoint_store::open(o);
    REQUIRE(s);
    write_checkpoint(**s, 1);
  }
  err.clear();
  CHECK(run_checkpoints_command("show", dir.str(), 9, out, err) == 1);
  CHECK(err == "weir: no checkpoint 9 in " + dir.str() + "\n");
}

TEST_CASE("the list marks damaged checkpoints and says why") {
  checkpoint_listing ok;
  ok.checkpoint_id = 1;
  ok.manifest = snapshot_manifest{};
  ok.manifest->checkpoint_id = 1;
  ok.restorable = true;
  checkpoint_listing bad;
  bad.checkpoint_id = 2;
  bad.problem = "manifest fails its checksum";
  auto text = format_checkpoint_list({ok, bad});
  CHECK(text.find(" 2  damaged") != std::string::npos);
  CHECK(text.find("checkpoint 2: manifest fails its checksum\n") != std::string::npos);
  CHECK(format_checkpoint_list({}) == "no checkpoints\n");
}
}
