// SPDX-License-Identifier: Apache-2.0
#include "weir/expr/expression.hpp"

#include <doctest/doctest.h>

TEST_SUITE("expr") {
TEST_CASE("smoke") {
  auto s = weir::make_schema({{"status", weir::type_id::int64}});
  auto e = weir::expr::compile("status + 1", *s);
  REQUIRE(e);
}
}
