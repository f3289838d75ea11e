// SPDX-License-Identifier: Apache-2.0
// Savepoint paths through the API (src/server/savepoint_root.hpp) resolved
// inside the root on a real directory tree: relative and absolute targets,
// '..', backslashes, NUL and a symbolic link out of the root refused.
#include "savepoint_root.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <unistd.h>

using weir::server::internal::savepoint_root;
namespace fs = std::filesystem;

namespace {

/// A fresh directory tree: `root` (the savepoint root) and `outside`.
struct tree {
  fs::path base;
  tree() {
    std::string templ = (fs::temp_directory_path() / "weir-savepoint-root-XXXXXX").string();
    REQUIRE(::mkdtemp(templ.data()) != nullptr);
    base = templ;
    fs::create_directories(base / "root");
    fs::create_directories(base / "outside");
  }
  ~tree() {
    std::error_code ec;
    fs::remove_all(base, ec);
  }
};

} // namespace

TEST_SUITE("server") {
TEST_CASE("savepoint targets resolve inside the root") {
  tree t;
  savepoint_root root{(t.base / "root").string()};
  CHECK(root.path() == t.base / "root");

  auto rel = root.resolve("views/1", "unused");
  REQUIRE(rel);
  CHECK(*rel == t.base / "root/views/1");

  auto abs = root.resolve((t.base / "root/views-2/").string(), "unused");
  REQUIRE(abs);
  CHECK(*abs == t.base / "root/views-2");

  auto fallback = root.resolve("", "savepoint-abc-123");
  REQUIRE(fallback);
  CHECK(*fallback == t.base / "root/savepoint-abc-123");
}

TEST_CASE("savepoint targets leading outside the root are refused with the subject named") {
  tree t;
  savepoint_root root{(t.base / "root").string()};
  fs::create_directory_symlink(t.base / "outside", t.base / "root/link");
  struct refusal {
    std::string target;
    std::string why;
  };
  const refusal cases[] = {
    {"../outside", "'..' is not allowed"},
    {"a/../../outside", "'..' is not allowed"},
    {(t.base / "outside").string(), "an absolute path outside the savepoint directory"},
    {(t.base / "root").string(), "an absolute path outside the savepoint directory"},
    {"a\\b", "no backslash or NUL"},
    {std::string{"a\0b", 3}, "no backslash or NUL"},
    {"link/sp", "it resolves outside the savepoint directory"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.target);
    auto r = root.resolve(c.target, "unused", "savepointPath");
    REQUIRE_FALSE(r);
    CHECK(r.error().code == weir::errc::invalid_argument);
    CHECK(r.error().message.rfind("savepointPath '", 0) == 0);
    CHECK(r.error().message.find(c.why) != std::string::npos);
  }
}

TEST_CASE("a relative savepoint root is made absolute against the working directory") {
  savepoint_root root{"sp/dir/"};
  CHECK(root.path().is_absolute());
  CHECK(root.path() == (fs::current_path() / "sp/dir").lexically_normal());
  savepoint_root none{""};
  CHECK(none.path() == fs::current_path() / "savepoints");
}
}
