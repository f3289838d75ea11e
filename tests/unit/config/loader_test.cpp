// SPDX-License-Identifier: Apache-2.0
#include "weir/config/loader.hpp"

#include "weir/runtime/job_graph.hpp"
#include "source_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <string_view>

using namespace std::chrono_literals;
using weir::config::diagnostic;
using weir::config::load_options;
using weir::config::load_pipeline;

namespace {

// Lines 1-7 of most test pipelines; relative paths resolve from the
// repository root (see `load`).
const std::string source_block = R"~([[source]]
name = "readings"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { key = "string", ts = "timestamp", value = "int64" }
event_time = { field = "ts" }
)~";

auto load(std::string_view text, const load_options& opts = {}) {
  std::filesystem::current_path(weir::test::source_dir());
  return load_pipeline(text, "p.toml", opts);
}

/// The rendered diagnostics of a pipeline that must fail to load.
std::string errors(std::string_view text) {
  auto r = load(text);
  REQUIRE_FALSE(r);
  return weir::config::to_string(r.error());
}

} // namespace

TEST_SUITE("config") {

TEST_CASE("a minimal pipeline builds its job through the API") {
  auto r = load(source_block + R"~(
[[operator]]
name = "big"
type = "filter"
input = "readings"
where = "value > 20"

[[sink]]
name = "out"
input = "big"
type = "stdout"
)~");
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  auto& j = **r;
  CHECK(j.options().name == "p"); // the file's stem
  REQUIRE(j.stream("readings"));
  CHECK(j.stream("readings")->output_schema()->to_string() ==
        "key:string, ts:timestamp, value:int64");
  REQUIRE(j.stream("big"));
  CHECK(j.graph()->nodes.size() == 3);
  CHECK(j.graph()->nodes[0].kind == "file_source");
  CHECK(j.graph()->nodes[1].kind == "filter");
  CHECK(j.graph()->nodes[2].kind == "stdout_sink");
  CHECK(j.graph()->nodes[2].name == "out");
}

TEST_CASE("schema fields keep the order written in the file") {
  SUBCASE("inline table") {
    auto r = load(R"~([[source]]
name = "readings"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { value = "int64", key = "string", id = "string", ts = "timestamp" }

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~");
    REQUIRE(r);
    CHECK((*r)->stream("readings")->output_schema()->to_string() ==
          "value:int64, key:string, id:string, ts:timestamp");
  }
  SUBCASE("sub-table, with type aliases") {
    auto r = load(R"~([[source]]
name = "readings"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"

[source.schema]
ts = "timestamp"
value = "int"
key = "string"
id = "string"

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~");
    REQUIRE(r);
    CHECK((*r)->stream("readings")->output_schema()->to_string() ==
          "ts:timestamp, value:int64, key:string, id:string");
  }
}

TEST_CASE("[job] keys map onto job_options and load options override them") {
  const std::string text = R"~([job]
name = "nightly"
parallelism = 2
max_parallelism = 64
batch_size = 10
buffer_timeout = "5ms"
on_bad_record = "dead_letter"
dead_letter = { path = "out/bad.jsonl" }
status_interval = "0s"
worker_threads = 3

)~" + source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~";
  auto r = load(text);
  REQUIRE(r);
  const auto& o = (*r)->options();
  CHECK(o.name == "nightly");
  CHECK(o.parallelism == 2);
  CHECK(o.max_parallelism == 64);
  CHECK(o.batch_size == 10);
  CHECK(o.buffer_timeout == 5ms);
  CHECK(o.on_bad_record == weir::bad_record_policy::dead_letter);
  CHECK(o.dead_letter_path == "out/bad.jsonl");
  CHECK(o.status_interval == 0ms);
  CHECK(o.worker_threads == 3);

  load_options overrides;
  overrides.batch_size = 1;
  overrides.parallelism = 4;
  auto r2 = load(text, overrides);
  REQUIRE(r2);
  CHECK((*r2)->options().batch_size == 1);
  CHECK((*r2)->options().parallelism == 4);
}

TEST_CASE("job.log_level sets the job's log level, and another value lists the allowed ones") {
  auto r = load(source_block + R"~(
[job]
log_level = "debug"

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~");
  REQUIRE(r);
  CHECK((*r)->options().log_level == weir::log_level::debug);

  auto d = load(source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~");
  REQUIRE(d);
  CHECK((*d)->options().log_level == weir::log_level::info);

  CHECK(errors(source_block + R"~(
[job]
log_level = "verbose"

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == R"~(p.toml:10:13: error: job.log_level must be one of "trace", "debug", "info", "warn", "error", "off", got "verbose"
)~");
}

TEST_CASE("defaults apply when [job] is absent") {
  auto r = load(source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~");
  REQUIRE(r);
  const auto& o = (*r)->options();
  CHECK(o.name == "p");
  CHECK(o.parallelism == 1);
  CHECK(o.max_parallelism == 128);
  CHECK(o.batch_size == 1024);
  CHECK(o.buffer_timeout == 10ms);
  CHECK(o.on_bad_record == weir::bad_record_policy::fail);
  CHECK(o.status_interval == 1000ms);
  CHECK(o.worker_threads == 0);
}

TEST_CASE("operators may appear in any order and are built after their inputs") {
  auto r = load(source_block + R"~(
[[sink]]
name = "out"
input = "per_key"
type = "file"
path = "out/never-written.jsonl"
format = "csv"

[[operator]]
name = "per_key"
type = "window"
input = "doubled"
key_by = ["key"]
window = { type = "tumbling", size = "5s", offset = "-1s" }
aggregate = { n = "count(*)", total = "sum(twice)" }
allowed_lateness = "1s"
late_output = "too_late"
parallelism = 2

[[operator]]
name = "doubled"
type = "map"
input = "positive"
fields = { twice = "value * 2" }

[[operator]]
name = "positive"
type = "filter"
input = "readings"
where = "value > 0"

[[sink]]
name = "late"
input = "too_late"
type = "stdout"
)~");
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  auto& j = **r;
  REQUIRE(j.stream("per_key"));
  CHECK(j.stream("per_key")->output_schema()->to_string() ==
        "key:string, window_start:timestamp, window_end:timestamp, n:int64, total:int64");
  REQUIRE(j.stream("too_late"));
  CHECK(j.stream("too_late")->output_schema()->to_string() ==
        "key:string, ts:timestamp, value:int64, twice:int64");
  CHECK_FALSE(std::filesystem::exists("out/never-written.jsonl"));
  std::size_t window_parallelism = 0;
  for (const auto& n : j.graph()->nodes)
    if (n.name == "per_key")
      window_parallelism = n.parallelism;
  CHECK(window_parallelism == 2);
}

TEST_CASE("a window without key_by and a union load") {
  auto r = load(source_block + R"~(
[[source]]
name = "replay"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { key = "string", ts = "timestamp", value = "int64" }

[[operator]]
name = "both"
type = "union"
inputs = ["readings", "replay"]

[[operator]]
name = "totals"
type = "window"
input = "both"
window = { type = "tumbling", size = "1m" }
aggregate = { total = "sum(value)" }

[[operator]]
name = "keys"
type = "select"
input = "both"
fields = { k = "upper(key)", v = "value" }

[[sink]]
name = "out"
input = "totals"
type = "stdout"

[[sink]]
name = "top"
input = "keys"
type = "summary"
title = "Keys"
group_by = ["k"]
aggregate = { rows = "count(*)", total = "sum(v)" }
order_by = "total"
ascending = true
limit = 3
highlight = { label = "big", where = "v > 20" }
)~");
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  CHECK((*r)->stream("totals")->output_schema()->to_string() ==
        "window_start:timestamp, window_end:timestamp, total:int64");
  CHECK((*r)->stream("keys")->output_schema()->to_string() == "k:string, v:int64");
}

TEST_CASE("a TOML syntax error is reported with the parser's message and position") {
  CHECK(errors("[job]\nname = = 1\n") ==
        "p.toml:2:8: error: Error while parsing value: could not determine value type\n");
}

TEST_CASE("an empty file needs a source and a sink") {
  CHECK(errors("") == "p.toml: error: a pipeline needs at least one [[source]]\n"
                      "p.toml: error: a pipeline needs at least one [[sink]]\n");
}

TEST_CASE("unknown keys are errors with a did-you-mean hint") {
  CHECK(errors(source_block + R"~(
[job]
paralelism = 2

[[operator]]
name = "big"
type = "filter"
input = "readings"
wehre = "value > 20"

[[sink]]
name = "out"
input = "big"
type = "stdout"

[checkpoints]
interval = "1s"
)~") == R"~(p.toml:10:1: error: unknown key 'job.paralelism'
  hint: did you mean 'parallelism'?
p.toml:12:1: error: missing required key 'where'
  in [[operator]] #1 (name = "big")
p.toml:16:1: error: unknown key 'wehre'
  in [[operator]] #1 (name = "big")
  hint: did you mean 'where'?
p.toml:23:2: error: unknown key 'checkpoints'
  hint: did you mean 'checkpoint'?
)~");
}

TEST_CASE("a key of another operator or sink type is named as such") {
  CHECK(errors(source_block + R"~(
[[operator]]
name = "big"
type = "filter"
input = "readings"
where = "value > 20"
fields = { v = "value" }

[[operator]]
name = "both"
type = "union"
input = "readings"

[[sink]]
name = "out"
input = "big"
type = "stdout"
path = "out/x.jsonl"
)~") == R"~(p.toml:14:1: error: 'fields' does not apply to a filter operator
  in [[operator]] #1 (name = "big")
  hint: 'fields' is a key of select, map, enrich operators
p.toml:16:1: error: missing required key 'inputs'
  in [[operator]] #2 (name = "both")
p.toml:19:1: error: 'input' does not apply to a union operator
  in [[operator]] #2 (name = "both")
  hint: a union reads inputs = ["a", "b"]
p.toml:25:1: error: 'path' does not apply to a stdout sink
  in [[sink]] #1 (name = "out")
  hint: 'path' is a key of file sinks
)~");
}

TEST_CASE("wrong types and out-of-range integers name the key and what was found") {
  CHECK(errors(source_block + R"~(
[job]
parallelism = "2"
batch_size = 0
buffer_timeout = 10
max_parallelism = 40000
worker_threads = -1

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == R"~(p.toml:10:15: error: job.parallelism must be an integer, got string
p.toml:11:14: error: job.batch_size must be between 1 and 1048576, got 0
p.toml:12:18: error: job.buffer_timeout must be a duration, got integer
  hint: write an integer with a unit (ms, s, m, h, d): "500ms", "10s", "5m"
p.toml:13:19: error: job.max_parallelism must be between 1 and 32768, got 40000
p.toml:14:18: error: job.worker_threads must be at least 0, got -1
)~");
}

TEST_CASE("missing required keys point at the table header") {
  CHECK(errors(source_block + R"~(
[[operator]]
name = "big"
type = "filter"

[[sink]]
input = "readings"
type = "file"
)~") == R"~(p.toml:9:1: error: missing required key 'input'
  in [[operator]] #1 (name = "big")
p.toml:9:1: error: missing required key 'where'
  in [[operator]] #1 (name = "big")
p.toml:13:1: error: missing required key 'name'
  in [[sink]] #1
p.toml:13:1: error: missing required key 'path'
  in [[sink]] #1
)~");
}

TEST_CASE("bad enum values list the allowed ones") {
  CHECK(errors(source_block + R"~(
[job]
on_bad_record = "drop"

[[operator]]
name = "big"
type = "filtre"
input = "readings"

[[sink]]
name = "out"
input = "readings"
type = "file"
path = "out/x.jsonl"
format = "json"
)~") == R"~(p.toml:10:17: error: job.on_bad_record must be one of "fail", "skip", "dead_letter", got "drop"
p.toml:14:8: error: unknown operator type 'filtre'
  in [[operator]] #1 (name = "big")
  hint: did you mean "filter"?
  hint: operator types: "filter", "select", "map", "window", "union", "running_count", "split", "explode", "interval_join", "window_join", "enrich", "pattern"
p.toml:22:10: error: format must be one of "jsonl", "csv", got "json"
  in [[sink]] #1 (name = "out")
  hint: did you mean "jsonl"?
)~");
}

TEST_CASE("on_bad_record = dead_letter needs a dead_letter path") {
  CHECK(errors(R"~([job]
on_bad_record = "dead_letter"

)~" + source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == R"~(p.toml:1:1: error: missing required key 'job.dead_letter'
  hint: on_bad_record = "dead_letter" needs dead_letter = { path = "bad_records.jsonl" }
)~");
}

TEST_CASE("a duplicate name points at the second and notes the first") {
  CHECK(errors(source_block + R"~(
[[operator]]
name = "readings"
type = "filter"
input = "readings"
where = "value > 20"

[[sink]]
name = "out"
input = "readings"
type = "stdout"

[[operator]]
name = "w"
type = "window"
input = "readings"
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)" }
late_output = "out"
)~") == R"~(p.toml:10:8: error: duplicate name "readings"
  in [[operator]] #1 (name = "readings")
  note: first defined at p.toml:2:8
p.toml:26:15: error: duplicate name "out"
  in [[operator]] #2 (name = "w")
  note: first defined at p.toml:16:8
)~");
}

TEST_CASE("an input that names no stream gets a did-you-mean hint") {
  CHECK(errors(source_block + R"~(
[[operator]]
name = "big"
type = "filter"
input = "reading"
where = "value > 20"

[[sink]]
name = "out"
input = "big"
type = "stdout"

[[sink]]
name = "again"
input = "out"
type = "stdout"
)~") == R"~(p.toml:12:9: error: input "reading" names no stream
  in [[operator]] #1 (name = "big")
  hint: did you mean "readings"?
p.toml:22:9: error: input "out" names a sink, not a stream
  in [[sink]] #2 (name = "again")
)~");
}

TEST_CASE("a cycle among operators is reported once, in data-flow order") {
  SUBCASE("two operators") {
    CHECK(errors(source_block + R"~(
[[operator]]
name = "a"
type = "filter"
input = "b"
where = "value > 1"

[[operator]]
name = "b"
type = "filter"
input = "a"
where = "value > 2"

[[sink]]
name = "out"
input = "b"
type = "stdout"
)~") == R"~(p.toml:12:9: error: cycle: a -> b -> a
  in [[operator]] #1 (name = "a")
)~");
  }
  SUBCASE("three operators, a union among them") {
    CHECK(errors(source_block + R"~(
[[operator]]
name = "a"
type = "union"
inputs = ["readings", "c"]

[[operator]]
name = "b"
type = "filter"
input = "a"
where = "value > 2"

[[operator]]
name = "c"
type = "filter"
input = "b"
where = "value > 3"

[[sink]]
name = "out"
input = "c"
type = "stdout"
)~") == R"~(p.toml:12:23: error: cycle: a -> b -> c -> a
  in [[operator]] #1 (name = "a")
)~");
  }
  SUBCASE("an operator reading itself") {
    CHECK(errors(source_block + R"~(
[[operator]]
name = "a"
type = "filter"
input = "a"
where = "value > 1"

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == R"~(p.toml:12:9: error: cycle: a -> a
  in [[operator]] #1 (name = "a")
)~");
  }
}

TEST_CASE("bad durations explain how to write one") {
  CHECK(errors(source_block + R"~(
[job]
buffer_timeout = "60x"

[[operator]]
name = "w"
type = "window"
input = "readings"
window = { type = "tumbling", size = "0s" }
aggregate = { n = "count(*)" }
allowed_lateness = "-1s"

[[operator]]
name = "v"
type = "window"
input = "readings"
window = { type = "tumbling", size = "1h", offset = "-1h" }
aggregate = { n = "count(*)" }

[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == R"~(p.toml:10:18: error: job.buffer_timeout must be a duration, got "60x"
  hint: write an integer with a unit (ms, s, m, h, d): "500ms", "10s", "5m"
p.toml:16:38: error: window.size must be a positive duration, got "0s"
  in [[operator]] #1 (name = "w")
  hint: write an integer with a unit (ms, s, m, h, d): "500ms", "10s", "5m"
p.toml:18:20: error: allowed_lateness must not be negative, got "-1s"
  in [[operator]] #1 (name = "w")
p.toml:24:53: error: window.offset must be smaller than window.size (1h) in magnitude, got "-1h"
  in [[operator]] #2 (name = "v")
)~");
}

namespace {

/// A pipeline with one window operator `w` on the test source, the given
/// `window = ...` line and extra lines, and a stdout sink of `w`.
std::string window_pipeline(std::string_view window, std::string_view extra = "",
                            std::string_view aggregate = R"w(aggregate = { n = "count(*)" })w") {
  return source_block + R"~(
[[operator]]
name = "w"
type = "window"
input = "readings"
key_by = ["key"]
)~" + std::string(window) + "\n" + std::string(aggregate) + "\n" + std::string(extra) +
         R"~(
[[sink]]
name = "out"
input = "w"
type = "stdout"
)~";
}

std::string window_schema(std::string_view window, std::string_view extra = "",
                          std::string_view aggregate = R"w(aggregate = { n = "count(*)" })w") {
  auto r = load(window_pipeline(window, extra, aggregate));
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  REQUIRE((*r)->stream("w"));
  return (*r)->stream("w")->output_schema()->to_string();
}

const std::string time_shape = "key:string, window_start:timestamp, window_end:timestamp, n:int64";
const std::string fire_shape = "key:string, fire:int64, n:int64";

} // namespace

TEST_CASE("every window type loads, with the result shape of its kind") {
  CHECK(window_schema(R"w(window = { type = "tumbling", size = "1d", offset = "-8h" })w") ==
        time_shape);
  CHECK(window_schema(R"w(window = { type = "tumbling", size = "10s", time = "processing" })w") ==
        time_shape);
  CHECK(window_schema(R"w(window = { type = "sliding", size = "10s", slide = "5s", offset = "-9s" })w",
                      R"w(allowed_lateness = "1s")w") == time_shape);
  CHECK(window_schema(R"w(window = { type = "sliding", size = "10s", slide = "5s", time = "processing" })w") ==
        time_shape);
  CHECK(window_schema(R"w(window = { type = "session", gap = "5s" })w",
                      "late_output = \"late\"") == time_shape);
  CHECK(window_schema(R"w(window = { type = "session", gap = "5s", time = "event" })w",
                      R"w(trigger = { type = "count", count = 2, purge = true })w") == time_shape);
  CHECK(window_schema(R"w(window = { type = "global" })w",
                      R"w(trigger = { type = "count", count = 2 })w") == fire_shape);
  CHECK(window_schema(R"w(window = { type = "global" })w",
                      R"w(trigger = { type = "processing_time", purge = false })w") == fire_shape);
  CHECK(window_schema(R"w(window = { type = "count", size = 3 })w") == fire_shape);
  CHECK(window_schema(R"w(window = { type = "count", size = 3, slide = 1 })w") == fire_shape);
  CHECK(window_schema(R"w(window = { type = "tumbling", size = "1s" })w", "",
                      R"w(aggregate = { f = "first(key)", l = "last(ts)", d = "count_distinct(value)", r = "reduce(acc + value, 0.0)" })w") ==
        "key:string, window_start:timestamp, window_end:timestamp, f:string, l:timestamp, "
        "d:int64, r:float64");
}

TEST_CASE("window keys are checked per window type, with hints") {
  CHECK(errors(window_pipeline(
          R"w(window = { type = "tumbling", size = "10s", gap = "1s", slid = "1s" })w")) ==
        R"~(p.toml:14:45: error: 'gap' does not apply to a tumbling window
  in [[operator]] #1 (name = "w")
  hint: 'gap' is a key of session windows
p.toml:14:57: error: unknown key 'window.slid'
  in [[operator]] #1 (name = "w")
  hint: did you mean 'slide'? It is a key of count, sliding windows
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "sliding", size = "10s" })w")) ==
        R"~(p.toml:14:10: error: missing required key 'window.slide'
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(
          R"w(window = { type = "sliding", size = "10s", slide = "0s", offset = "10s" })w")) ==
        R"~(p.toml:14:52: error: window.slide must be a positive duration, got "0s"
  in [[operator]] #1 (name = "w")
  hint: write an integer with a unit (ms, s, m, h, d): "500ms", "10s", "5m"
p.toml:14:67: error: window.offset must be smaller than window.size (10s) in magnitude, got "10s"
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "session", size = "5s", time = "wall" })w")) ==
        R"~(p.toml:14:10: error: missing required key 'window.gap'
  in [[operator]] #1 (name = "w")
p.toml:14:30: error: 'size' does not apply to a session window
  in [[operator]] #1 (name = "w")
  hint: 'size' is a key of count, sliding, tumbling windows
p.toml:14:50: error: window.time must be one of "event", "processing", got "wall"
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "count", size = "3", offset = "1s" })w")) ==
        R"~(p.toml:14:35: error: window.size must be an integer, got string
  in [[operator]] #1 (name = "w")
p.toml:14:40: error: 'offset' does not apply to a count window
  in [[operator]] #1 (name = "w")
  hint: 'offset' is a key of sliding, tumbling windows
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "count", slide = 0 })w")) ==
        R"~(p.toml:14:10: error: missing required key 'window.size'
  in [[operator]] #1 (name = "w")
  hint: a count window's size and slide are numbers of records: window = { type = "count", size = 100, slide = 10 }
p.toml:14:36: error: window.slide must be at least 1, got 0
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "sesion", gap = "5s" })w")) ==
        R"~(p.toml:14:19: error: unknown window type 'sesion'
  in [[operator]] #1 (name = "w")
  hint: did you mean "session"?
  hint: window types: "tumbling", "sliding", "session", "global", "count"
)~");
}

TEST_CASE("triggers are checked, and required or refused where they must be") {
  CHECK(errors(window_pipeline(R"w(window = { type = "global" })w")) ==
        R"~(p.toml:14:10: error: a global window needs a trigger, or it never fires
  in [[operator]] #1 (name = "w")
  hint: add trigger = { type = "count", count = 100 } (purge = true to emit disjoint batches)
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "count", size = 2 })w",
                               R"w(trigger = { type = "count", count = 2 })w")) ==
        R"~(p.toml:16:11: error: a count window has its own trigger
  in [[operator]] #1 (name = "w")
  hint: for another trigger write window = { type = "global" } and the trigger
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "global" })w",
                               R"w(trigger = { type = "count", purge = 1 })w")) ==
        R"~(p.toml:16:11: error: missing required key 'trigger.count'
  in [[operator]] #1 (name = "w")
  hint: count is the number of records per firing: trigger = { type = "count", count = 100 }
p.toml:16:37: error: trigger.purge must be a boolean (true or false), got integer
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "tumbling", size = "1s" })w",
                               R"w(trigger = { type = "event", count = 0, every = 1 })w")) ==
        R"~(p.toml:16:20: error: trigger.type must be one of "event_time", "processing_time", "count", got "event"
  in [[operator]] #1 (name = "w")
p.toml:16:40: error: unknown key 'trigger.every'
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "tumbling", size = "1s" })w",
                               R"w(trigger = { type = "event_time", count = 2 })w")) ==
        R"~(p.toml:16:42: error: trigger.count applies to a count trigger only, not to "event_time"
  in [[operator]] #1 (name = "w")
)~");
}

TEST_CASE("lateness and a late output are refused where nothing is ever late") {
  CHECK(errors(window_pipeline(R"w(window = { type = "tumbling", size = "1s", time = "processing" })w",
                               "allowed_lateness = \"1s\"\nlate_output = \"late\"")) ==
        R"~(p.toml:16:20: error: allowed_lateness applies to event-time windows only; a processing-time window is never late
  in [[operator]] #1 (name = "w")
p.toml:17:15: error: late_output applies to event-time windows only; a processing-time window is never late
  in [[operator]] #1 (name = "w")
)~");
  CHECK(errors(window_pipeline(R"w(window = { type = "count", size = 2 })w",
                               "late_output = \"late\"")) ==
        R"~(p.toml:16:15: error: late_output applies to event-time windows only; a count window is never late
  in [[operator]] #1 (name = "w")
)~");
  // Zero lateness is harmless anywhere.
  CHECK(window_schema(R"w(window = { type = "count", size = 2 })w", "allowed_lateness = \"0s\"") ==
        fire_shape);
}

TEST_CASE("a broken reduce points at the column of its problem") {
  CHECK(errors(window_pipeline(R"w(window = { type = "tumbling", size = "1s" })w", "",
                               R"w(aggregate = { r = "reduce(acc + value / 2.0, 0)", s = "reduce(acc, 0, 1)" })w")) ==
        R"~(p.toml:15:27: error: aggregate 'r': reduce: the expression has type float64 but the start value has type int64 (write the start value as 0.0)
  in [[operator]] #1 (name = "w")
p.toml:15:69: error: aggregate 's': reduce takes two arguments, an expression over 'acc' and the record and the start value: reduce(acc + value, 0)
  in [[operator]] #1 (name = "w")
)~");
}

// The Kafka source's keys: only in a weir built with it (WEIR_WITH_KAFKA).
#ifdef WEIR_HAVE_KAFKA
TEST_CASE("source problems: kafka keys missing, missing file, schema and event time") {
  CHECK(errors(R"~([[source]]
name = "k"
type = "kafka"

[[source]]
name = "missing"
type = "file"
path = "no/such/file.jsonl"
format = "jsonl"
schema = { ts = "time" }
csv = { header = false }

[[source]]
name = "logs"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "apache_combined"
schema = { ts = "timestamp" }
parallelism = 2

[[source]]
name = "nothing_declared"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "csv"
event_time = { field = "ts" }
csv = { delimiter = ";;" }

[[source]]
name = "bad_time"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { key = "string", ts = "timestamp" }
event_time = { field = "key" }

[[source]]
name = "typo_time"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { key = "string", ts = "timestamp" }
event_time = { field = "tss" }

[[sink]]
name = "out"
input = "bad_time"
type = "stdout"
)~") == R"~(p.toml:1:1: error: missing required key 'topics'
  in [[source]] #1 (name = "k")
  hint: topics = ["logs"], or topic_pattern = "logs-.*"
p.toml:1:1: error: missing required key 'bootstrap_servers'
  in [[source]] #1 (name = "k")
p.toml:1:1: error: missing required key 'format'
  in [[source]] #1 (name = "k")
p.toml:8:8: error: cannot read source file "no/such/file.jsonl": No such file or directory
  in [[source]] #2 (name = "missing")
p.toml:10:17: error: schema.ts has unknown type "time"
  in [[source]] #2 (name = "missing")
  hint: types are bool, int64, float64, string, timestamp
p.toml:11:7: error: csv options apply only to format = "csv", not "jsonl"
  in [[source]] #2 (name = "missing")
p.toml:18:10: error: schema must not be set for format "apache_combined" (its schema is fixed)
  in [[source]] #3 (name = "logs")
  hint: its fields are client:string, ident:string, user:string, ts:timestamp, method:string, path:string, protocol:string, status:int64, bytes:int64, referrer:string, agent:string
p.toml:21:1: error: missing required key 'schema'
  in [[source]] #4 (name = "nothing_declared")
  hint: format "csv" needs the fields and their types: schema = { ts = "timestamp", key = "string" }
p.toml:27:21: error: csv.delimiter must be a single character, got ";;"
  in [[source]] #4 (name = "nothing_declared")
p.toml:35:24: error: event_time.field "key" must name a timestamp or int64 field, got string
  in [[source]] #5 (name = "bad_time")
p.toml:43:24: error: event_time.field "tss" is not a field of the schema
  in [[source]] #6 (name = "typo_time")
  hint: did you mean "ts"?
  hint: the fields are key:string, ts:timestamp
)~");
}
#endif

TEST_CASE("file source splits: csv only on request, not with split = none, one file only") {
  const std::string file =
      "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl";
  auto source = [&](const std::string& path, const std::string& keys) {
    return R"~([[source]]
name = "in"
type = "file"
path = ")~" + path + R"~("
schema = { ts = "timestamp" }
)~" + keys + R"~(

[[sink]]
name = "out"
input = "in"
type = "stdout"
)~";
  };
  // (jsonl at the source's parallelism 2, and csv with split = "lines",
  // load and split: e2e/files-split-*.)
  CHECK(errors(source(file, "format = \"csv\"\nparallelism = 2")) ==
        R"~(p.toml:7:15: error: a csv file is read by one subtask unless split = "lines", got parallelism 2
  in [[source]] #1 (name = "in")
  hint: split = "lines" splits it at line boundaries, safe when no quoted field holds a newline (a record spanning lines then fails the job)
)~");
  CHECK(errors(source(file, "format = \"jsonl\"\nsplit = \"none\"\nparallelism = 2")) ==
        R"~(p.toml:8:15: error: parallelism must be 1 for a file read as one stream (split = "none"), got 2
  in [[source]] #1 (name = "in")
  hint: leave split out to read the file as splits, one per subtask
)~");
  CHECK(errors(source(file, "format = \"jsonl\"\nsplit = \"none\"\nsplit_size = \"1MiB\"")) ==
        R"~(p.toml:8:14: error: split_size splits the file, and split = "none" reads it as one stream
  in [[source]] #1 (name = "in")
)~");
  CHECK(errors(source(file, "format = \"jsonl\"\nsplit_size = \"1KB\"")) ==
        R"~(p.toml:7:14: error: split_size must be a size, got "1KB"
  in [[source]] #1 (name = "in")
  hint: write an integer with a unit (B, KiB, MiB, GiB, TiB): "512MiB", "64GiB"
)~");
}

TEST_CASE("expression errors point inside the expression string") {
  auto text = [](std::string_view where) {
    return source_block + R"~(
[[operator]]
name = "big"
type = "filter"
input = "readings"
where = )~" + std::string(where) + R"~(

[[sink]]
name = "out"
input = "big"
type = "stdout"
)~";
  };
  const std::string msg =
    "unknown field 'stauts' (fields: key:string, ts:timestamp, value:int64)";
  const std::string in_op = "\n  in [[operator]] #1 (name = \"big\")\n";
  SUBCASE("a basic string: value column + 1 + offset") {
    CHECK(errors(text(R"~("value > 20 and stauts = 1")~")) ==
          "p.toml:13:25: error: where: " + msg + in_op);
  }
  SUBCASE("a literal string") {
    CHECK(errors(text(R"~('value > 20 and stauts = 1')~")) ==
          "p.toml:13:25: error: where: " + msg + in_op);
  }
  SUBCASE("columns count code points, not bytes") {
    CHECK(errors(text(R"~("key = 'é' and stauts = 1")~")) ==
          "p.toml:13:24: error: where: " + msg + in_op);
  }
  SUBCASE("an escape before the offset: the value's start") {
    CHECK(errors(text(R"~("value >\u00200 and stauts = 1")~")) ==
          "p.toml:13:9: error: where: " + msg + in_op);
  }
  SUBCASE("a multi-line string: the value's start") {
    CHECK(errors(text("\"\"\"value > 20 and stauts = 1\"\"\"")) ==
          "p.toml:13:9: error: where: " + msg + in_op);
  }
}

TEST_CASE("every broken expression of a select and a window is reported") {
  CHECK(errors(source_block + R"~(
[[operator]]
name = "s"
type = "select"
input = "readings"
fields = { a = "valu + 1", b = "key", c = "value + key" }

[[operator]]
name = "w"
type = "window"
input = "readings"
key_by = ["key", "kye"]
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)" }

[[operator]]
name = "v"
type = "window"
input = "readings"
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)", total = "sum(key)", top = "mx(value)" }

[[sink]]
name = "out"
input = "readings"
type = "summary"
group_by = ["key"]
aggregate = { n = "count(*)" }
order_by = "nn"

[[sink]]
name = "top"
input = "readings"
type = "summary"
group_by = ["key"]
aggregate = { n = "count(*)", bad = "avg(ts + )" }
highlight = { where = "value" }
)~") == R"~(p.toml:13:17: error: fields.a: unknown field 'valu', did you mean 'value'?
  in [[operator]] #1 (name = "s")
p.toml:13:50: error: fields.c: operator '+' needs numbers, got int64 and string
  in [[operator]] #1 (name = "s")
p.toml:19:18: error: key_by: unknown field "kye"
  in [[operator]] #2 (name = "w")
  hint: did you mean "key"?
  hint: the input's fields are key:string, ts:timestamp, value:int64
p.toml:28:44: error: aggregate 'total': sum needs a number, got string
  in [[operator]] #3 (name = "v")
p.toml:28:58: error: aggregate 'top': unknown aggregate function 'mx' (known: count, sum, min, max, avg, first, last, count_distinct, reduce)
  in [[operator]] #3 (name = "v")
p.toml:36:12: error: order_by "nn" names no aggregate or group_by field
  in [[sink]] #1 (name = "out")
  hint: did you mean "n"?
  hint: order by one of "n", "key"
p.toml:43:47: error: aggregate 'bad': expected an expression at end of input
  in [[sink]] #2 (name = "top")
p.toml:44:24: error: highlight.where: must be a boolean condition, got int64
  in [[sink]] #2 (name = "top")
)~");
}

TEST_CASE("every problem is reported at once, without cascading into dependents") {
  CHECK(errors(source_block + R"~(
[job]
batch_size = "big"

[[operator]]
name = "ok"
type = "filter"
input = "readings"
where = "stauts = 200"
parallelism = 0

[[operator]]
name = "shown"
type = "select"
input = "ok"
fields = { s = "upper(key)" }

[[operator]]
name = "views"
type = "window"
input = "shown"
key_by = ["s"]
window = { type = "tumbling", size = "1 minute" }
aggregate = { n = "count(*)" }

[[sink]]
name = "out"
input = "view"
type = "stdout"

[[sink]]
name = "ok"
input = "shown"
type = "stdout"
)~") == R"~(p.toml:10:14: error: job.batch_size must be an integer, got string
p.toml:16:10: error: where: unknown field 'stauts' (fields: key:string, ts:timestamp, value:int64)
  in [[operator]] #1 (name = "ok")
p.toml:17:15: error: parallelism must be between 1 and 32768, got 0
  in [[operator]] #1 (name = "ok")
p.toml:30:38: error: window.size must be a duration, got "1 minute"
  in [[operator]] #3 (name = "views")
  hint: write an integer with a unit (ms, s, m, h, d): "500ms", "10s", "5m"
p.toml:35:9: error: input "view" names no stream
  in [[sink]] #1 (name = "out")
  hint: did you mean "views"?
p.toml:39:8: error: duplicate name "ok"
  in [[sink]] #2 (name = "ok")
  note: first defined at p.toml:13:8
)~");
}

TEST_CASE("errors from the API about a whole operator point at its input or header") {
  CHECK(errors(source_block + R"~(
[[source]]
name = "other"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { key = "string", ts = "timestamp" }

[[operator]]
name = "both"
type = "union"
inputs = ["readings", "other"]

[[operator]]
name = "one"
type = "union"
inputs = ["readings"]
parallelism = 129

[[operator]]
name = "number"
type = "filter"
input = "readings"
where = "value + 1"

[[sink]]
name = "out"
input = "readings"
type = "stdout"
format = "csv"
)~") == R"~(p.toml:19:10: error: inputs: union: stream 'other' has schema (key:string, ts:timestamp), but 'readings' has (key:string, ts:timestamp, value:int64)
  in [[operator]] #1 (name = "both")
p.toml:24:10: error: inputs must list at least 2 names, got 1
  in [[operator]] #2 (name = "one")
p.toml:25:15: error: parallelism must not exceed job.max_parallelism (128), got 129
  in [[operator]] #2 (name = "one")
p.toml:31:10: error: where: a filter condition must be a bool, got int64
  in [[operator]] #3 (name = "number")
p.toml:37:10: error: format must be one of "jsonl", got "csv"
  in [[sink]] #1 (name = "out")
)~");
}

TEST_CASE("nested tables reject unknown keys and need their required ones") {
  CHECK(errors(R"~([job]
dead_letter = { pth = "bad.jsonl" }

)~" + source_block + R"~(watermark = { max_out_of_ordernes = "1s" }

[[sink]]
name = "out"
input = "readings"
type = "summary"
aggregate = { n = "count(*)" }
highlight = { label = "x", were = "n > 1" }
)~") == R"~(p.toml:2:15: error: missing required key 'job.dead_letter.path'
p.toml:2:17: error: unknown key 'job.dead_letter.pth'
  hint: did you mean 'path'?
p.toml:11:15: error: unknown key 'watermark.max_out_of_ordernes'
  in [[source]] #1 (name = "readings")
  hint: did you mean 'max_out_of_orderness'?
p.toml:18:13: error: missing required key 'highlight.where'
  in [[sink]] #1 (name = "out")
p.toml:18:28: error: unknown key 'highlight.were'
  in [[sink]] #1 (name = "out")
  hint: did you mean 'where'?
)~");
}

TEST_CASE("parse_duration accepts an integer with a unit and nothing else") {
  using weir::config::parse_duration;
  using weir::config::parse_signed_duration;
  CHECK(parse_duration("0") == 0ms);
  CHECK(parse_duration("0s") == 0ms);
  CHECK(parse_duration("500ms") == 500ms);
  CHECK(parse_duration("10s") == 10s);
  CHECK(parse_duration("5m") == 5min);
  CHECK(parse_duration("1h") == 1h);
  CHECK(parse_duration("2d") == 48h);
  CHECK(parse_duration("1 s") == 1s);
  CHECK_FALSE(parse_duration("60x"));
  CHECK_FALSE(parse_duration("10"));
  CHECK_FALSE(parse_duration("-1s"));
  CHECK_FALSE(parse_duration("1.5s"));
  CHECK_FALSE(parse_duration("1S"));
  CHECK_FALSE(parse_duration("s"));
  CHECK_FALSE(parse_duration(""));
  CHECK_FALSE(parse_duration(" 1s"));
  CHECK_FALSE(parse_duration("1  s"));
  CHECK_FALSE(parse_duration("1s "));
  CHECK_FALSE(parse_duration("99999999999999999999ms")); // overflows int64
  CHECK_FALSE(parse_duration("9999999999999999d"));       // overflows once in ms
  CHECK(parse_signed_duration("-8h") == -8h);
  CHECK(parse_signed_duration("-0s") == 0ms);
  CHECK(parse_signed_duration("15m") == 15min);
  CHECK_FALSE(parse_signed_duration("--1s"));
  CHECK_FALSE(parse_signed_duration("+1s"));
  CHECK_FALSE(parse_signed_duration("-"));
}

TEST_CASE("known_keys lists every key path once") {
  const auto& keys = weir::config::known_keys();
  for (const char* k : {"job.name", "job.dead_letter.path", "source[].watermark.max_out_of_orderness",
                        "source[].csv.delimiter", "operator[].window.size",
                        "operator[].late_output", "sink[].highlight.where"})
    CHECK_MESSAGE(std::find(keys.begin(), keys.end(), k) != keys.end(), k);
  std::vector<std::string> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
}

TEST_CASE("load_pipeline_file reports an unreadable file as a file-wide diagnostic") {
  std::filesystem::current_path(weir::test::source_dir());
  auto missing = weir::config::load_pipeline_file("no/such/pipeline.toml");
  REQUIRE_FALSE(missing);
  CHECK(weir::config::to_string(missing.error()) ==
        "no/such/pipeline.toml: error: cannot read pipeline file: No such file or directory\n");
  auto dir = weir::config::load_pipeline_file("config");
  REQUIRE_FALSE(dir);
  CHECK(weir::config::to_string(dir.error()) ==
        "config: error: cannot read pipeline file: it is a directory\n");
}

TEST_CASE("a diagnostic renders compiler-style and lists sort by position") {
  diagnostic d{"p.toml", 14, 11, "window.size must be a positive duration, got \"0s\"",
               {"in [[operator]] #3 (name = \"clicks\")", "hint: write a duration"}};
  CHECK(d.to_string() == "p.toml:14:11: error: window.size must be a positive duration, "
                         "got \"0s\"\n  in [[operator]] #3 (name = \"clicks\")\n"
                         "  hint: write a duration");
  diagnostic line_only{"p.toml", 3, 0, "bad line", {}};
  CHECK(line_only.to_string() == "p.toml:3: error: bad line");
  diagnostic whole{"p.toml", 0, 0, "bad file", {}};
  CHECK(whole.to_string() == "p.toml: error: bad file");
  CHECK(weir::config::to_string({d, line_only, whole, diagnostic{"p.toml", 3, 2, "x", {}}}) ==
        "p.toml: error: bad file\np.toml:3: error: bad line\np.toml:3:2: error: x\n" +
          d.to_string() + "\n");
  CHECK(weir::config::to_string(std::vector<diagnostic>{}).empty());
}

TEST_CASE("a parallelism override beyond max_parallelism is a config error") {
  const std::string text = "[job]\nmax_parallelism = 8\n\n" + source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~";
  load_options opts;
  opts.parallelism = 9;
  auto r = load(text, opts);
  REQUIRE_FALSE(r);
  CHECK(weir::config::to_string(r.error())
        == "p.toml:1:1: error: --parallelism 9 must lie in 1..job.max_parallelism (8)\n"
           "  hint: raise job.max_parallelism (at most 32768) to run more subtasks\n");
  opts.parallelism = 8;
  CHECK(load(text, opts));
  // The override replaces a file's parallelism that is out of range.
  const std::string too_wide = "[job]\nmax_parallelism = 8\nparallelism = 9\n\n"
                               + text.substr(text.find("[[source]]"));
  CHECK_FALSE(load(too_wide));
  CHECK(load(too_wide, opts));
}

TEST_CASE("a restart strategy without checkpoints is a config error") {
  CHECK(errors("[job]\nrestart = { attempts = 2 }\n\n" + source_block + R"~(
[[sink]]
name = "out"
input = "readings"
type = "stdout"
)~") == "p.toml:2:11: error: job.restart needs a [checkpoint] section\n"
        "  hint: a restart resumes from the latest completed checkpoint; add [checkpoint] "
        "with a dir, or remove job.restart\n");
}
}
