// SPDX-License-Identifier: Apache-2.0
// The Redis and PostgreSQL sinks' factories: what they refuse before any
// connection (the servers themselves are in tests/dbsinks/, ctest labels
// redis and postgres).
#include "weir/postgres/sink.hpp"
#include "weir/redis/sink.hpp"

#include <doctest/doctest.h>

#include <string>

namespace {

weir::schema_ptr clicks_schema() {
  return weir::make_schema({{"page", weir::type_id::string},
                            {"clicks", weir::type_id::int64},
                            {"window_start", weir::type_id::timestamp}});
}

weir::redis::sink hset() {
  weir::redis::sink s;
  s.command = weir::redis_command::hset;
  s.key = "concat('clicks:', window_start - to_timestamp(0))";
  s.field = "page";
  s.value = "clicks";
  return s;
}

} // namespace

TEST_SUITE("connectors") {
TEST_CASE("redis sink: a valid hset, set and zadd are made without a server") {
  CHECK(weir::make_redis_sink(hset(), clicks_schema()));
  auto set = hset();
  set.command = weir::redis_command::set;
  set.field.clear();
  CHECK(weir::make_redis_sink(set, clicks_schema()));
  auto zadd = set;
  zadd.command = weir::redis_command::zadd;
  zadd.score = "clicks";
  CHECK(weir::make_redis_sink(zadd, clicks_schema()));
}

TEST_CASE("redis sink: refuses what a command does not take or lacks") {
  auto s = hset();
  s.field.clear();
  auto r = weir::make_redis_sink(s, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message.find("field: command \"hset\" needs") == 0);

  s = hset();
  s.command = weir::redis_command::set;
  r = weir::make_redis_sink(s, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message == "field: only command \"hset\" takes a field");

  s = hset();
  s.command = weir::redis_command::zadd;
  s.field.clear();
  s.score = "page";
  r = weir::make_redis_sink(s, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().code == weir::errc::type_error);
  CHECK(r.error().message == "score: must be a number or timestamp, got string");
}

TEST_CASE("redis sink: an expression error keeps its offset, prefixed with the key") {
  auto s = hset();
  s.key = "concat('x', pgae)";
  auto r = weir::make_redis_sink(s, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message.find("key: unknown field 'pgae'") == 0);
  CHECK(r.error().offset == 12);
}

TEST_CASE("postgres sink: upsert needs key columns among the columns written") {
  weir::postgres::sink s;
  s.connection = "host=127.0.0.1";
  s.table = "clicks";
  weir::postgres_sink_job job;
  CHECK(weir::make_postgres_sink(s, job, clicks_schema()));
  s.mode = weir::postgres_write_mode::upsert;
  auto r = weir::make_postgres_sink(s, job, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message.find("key_columns: mode \"upsert\" needs") == 0);
  s.key_columns = {"page", "minute"};
  r = weir::make_postgres_sink(s, job, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message == "key_columns: 'minute' is not one of the columns written");
  s.columns = {{"page", "page"}, {"minute", "window_start"}, {"clicks", "clicks"}};
  CHECK(weir::make_postgres_sink(s, job, clicks_schema()));
  s.columns.push_back({"page", "clicks"});
  r = weir::make_postgres_sink(s, job, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message == "columns: column 'page' named twice");
}

TEST_CASE("postgres sink: exactly_once needs checkpoints") {
  weir::postgres::sink s;
  s.connection = "host=127.0.0.1";
  s.table = "clicks";
  s.delivery = weir::postgres_delivery::exactly_once;
  weir::postgres_sink_job job;
  auto r = weir::make_postgres_sink(s, job, clicks_schema());
  REQUIRE(!r);
  CHECK(r.error().message.find("delivery: \"exactly_once\" needs a [checkpoint]") == 0);
  job.checkpoints = true;
  CHECK(weir::make_postgres_sink(s, job, clicks_schema()));
}
}
