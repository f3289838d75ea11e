// SPDX-License-Identifier: Apache-2.0
// The loader's generator and nexmark sources and blackhole sink.
#include "weir/config/loader.hpp"

#include "weir/runtime/job_graph.hpp"

#include <doctest/doctest.h>

#include <string>
#include <string_view>

using namespace std::chrono_literals;
using weir::config::load_pipeline;

namespace {

auto load(std::string_view text) {
  return load_pipeline(text, "g.toml", {});
}

std::string errors(std::string_view text) {
  auto r = load(text);
  REQUIRE_FALSE(r);
  return weir::config::to_string(r.error());
}

const weir::runtime::stream_node& node_named(const weir::job& j, std::string_view name) {
  for (const auto& n : j.graph()->nodes)
    if (n.name == name)
      return n;
  FAIL("no node " << name);
  throw 0;
}

const std::string blackhole = R"~(
[[sink]]
name = "out"
input = "gen"
type = "blackhole"
)~";

} // namespace

TEST_SUITE("config") {

TEST_CASE("a generator source takes its schema from its field expressions") {
  auto r = load(R"~([[source]]
name = "gen"
type = "generator"
count = 100
rate = 2500.5
seed = 9
parallelism = 2
generation_time_field = "gen_ns"
fields = { id = "seq", ts = "to_timestamp(seq * 10)", score = "rand_float(seq, 1)", tag = "rand_string(seq, 2, 3)" }
event_time = { field = "ts" }
watermark = { max_out_of_orderness = "1s" }
)~" + blackhole);
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  auto& j = **r;
  REQUIRE(j.stream("gen"));
  CHECK(j.stream("gen")->output_schema()->to_string()
        == "id:int64, ts:timestamp, score:float64, tag:string, gen_ns:int64");
  const auto& n = node_named(j, "gen");
  CHECK(n.kind == "generator_source");
  CHECK(n.parallelism == 2);
  CHECK(n.watermark.max_out_of_orderness == 1s);
  CHECK(node_named(j, "out").kind == "blackhole_sink");
}

TEST_CASE("a nexmark source emits the stream it names, bids by default") {
  auto r = load(R"~([[source]]
name = "gen"
type = "nexmark"
events = 1000
stream = "person"
event_rate = 1000
base_time = "2020-01-01T00:00:00Z"

[[source]]
name = "bids"
type = "nexmark"
base_time = 0

[[sink]]
name = "out"
input = "gen"
type = "blackhole"
rate = 1000
report = true
digest = true

[[sink]]
name = "bids_out"
input = "bids"
type = "blackhole"
)~");
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  CHECK((*r)->stream("gen")->output_schema()->to_string()
        == "id:int64, name:string, email_address:string, credit_card:string, city:string, "
           "state:string, date_time:timestamp, extra:string");
  CHECK((*r)->stream("bids")->output_schema()->to_string()
        == "auction:int64, bidder:int64, price:int64, channel:string, url:string, "
           "date_time:timestamp, extra:string");
}

TEST_CASE("a broken generator field expression is reported at its position") {
  CHECK(errors(R"~([[source]]
name = "gen"
type = "generator"
fields = { a = "seq + 1", b = "rand_int(seq, 'x', 0, 9)" }
)~" + blackhole)
        == "g.toml:4:46: error: fields.b: function 'rand_int' argument 2 must be int64, got "
           "string\n  in [[source]] #1 (name = \"gen\")\n");
}

TEST_CASE("generator keys are checked: event time, file keys, rates and counts") {
  auto text = errors(R"~([[source]]
name = "gen"
type = "generator"
path = "x.jsonl"
count = -1
rate = 0
fields = { a = "seq" }
event_time = { field = "b" }
)~" + blackhole);
  CHECK(text.find("g.toml:4:1: error: 'path' does not apply to a generator source") != std::string::npos);
  CHECK(text.find("hint: 'path' is a key of file sources") != std::string::npos);
  CHECK(text.find("g.toml:5:9: error: count must be at least 0, got -1") != std::string::npos);
  CHECK(text.find("g.toml:6:8: error: rate must be a positive number per second, got 0")
        != std::string::npos);
  CHECK(text.find("g.toml:8:24: error: event_time.field \"b\" is not a field of the generator")
        != std::string::npos);
}

TEST_CASE("an event-time field of the wrong type is an error naming the field") {
  CHECK(errors(R"~([[source]]
name = "gen"
type = "generator"
fields = { a = "concat('x', seq)" }
event_time = { field = "a" }
)~" + blackhole)
        == "g.toml:5:24: error: event_time.field 'a' must be a timestamp or int64, got "
           "string\n  in [[source]] #1 (name = \"gen\")\n");
}

TEST_CASE("generator keys on a file source and nexmark keys on a generator are rejected") {
  auto text = errors(R"~([[source]]
name = "gen"
type = "file"
path = "tests/golden/cases/22-out-of-order-within-bound-all-aggregates/input.jsonl"
format = "jsonl"
schema = { ts = "timestamp" }
count = 5

[[source]]
name = "g2"
type = "generator"
events = 5
fields = { a = "seq" }
)~" + blackhole);
  CHECK(text.find("g.toml:7:1: error: 'count' does not apply to a file source") != std::string::npos);
  CHECK(text.find("g.toml:12:1: error: 'events' does not apply to a generator source")
        != std::string::npos);
  CHECK(text.find("hint: 'events' is a key of nexmark sources") != std::string::npos);
}

TEST_CASE("nexmark keys are checked: stream, base_time, event_rate") {
  auto text = errors(R"~([[source]]
name = "gen"
type = "nexmark"
stream = "bidz"
base_time = "yesterday"
event_rate = 0
fields = { a = "seq" }
)~" + blackhole);
  CHECK(text.find("g.toml:4:10: error: stream must be one of \"bid\", \"auction\", \"person\", got \"bidz\"")
        != std::string::npos);
  CHECK(text.find("hint: did you mean \"bid\"?") != std::string::npos);
  CHECK(text.find("g.toml:5:13: error: base_time must be an ISO-8601 time, got \"yesterday\"")
        != std::string::npos);
  CHECK(text.find("g.toml:6:14: error: event_rate must be at least 1, got 0") != std::string::npos);
  CHECK(text.find("g.toml:7:1: error: 'fields' does not apply to a nexmark source")
        != std::string::npos);
}

TEST_CASE("a blackhole latency_field must be an int64 field of its input") {
  auto text = errors(R"~([[source]]
name = "gen"
type = "generator"
fields = { a = "seq", s = "'x'" }

[[sink]]
name = "out"
input = "gen"
type = "blackhole"
latency_field = "s"
rate = -5
digest = "yes"
)~");
  CHECK(text.find("g.toml:10:17: error: latency_field 's' must be an int64 field of ns, got string")
        != std::string::npos);
  CHECK(text.find("g.toml:11:8: error: rate must be a positive number per second, got -5")
        != std::string::npos);
  CHECK(text.find("g.toml:12:10: error: digest must be a boolean (true or false), got string")
        != std::string::npos);
}

TEST_CASE("blackhole keys do not apply to other sinks") {
  auto text = errors(R"~([[source]]
name = "gen"
type = "generator"
fields = { a = "seq" }

[[sink]]
name = "out"
input = "gen"
type = "stdout"
digest = true
)~");
  CHECK(text.find("g.toml:10:1: error: 'digest' does not apply to a stdout sink") != std::string::npos);
  CHECK(text.find("hint: 'digest' is a key of blackhole sinks") != std::string::npos);
}
}
