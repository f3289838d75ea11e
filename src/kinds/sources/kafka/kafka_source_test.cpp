// SPDX-License-Identifier: Apache-2.0
// The Kafka source reader against librdkafka's mock cluster (in-process
// brokers): the API and its error paths, fast. Exactly-once is tested on a
// real broker (tests/integration/kafka_source_tests.py), never here.
#include "kinds/sources/kafka/kafka_source_reader.hpp"

#include "weir/api/job.hpp"
#include "weir/config/loader.hpp"

#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using namespace std::chrono_literals;
using weir::type_id;

namespace {

// A mock cluster of one broker, and a producer connected to it.
class mock_kafka {
public:
  mock_kafka() {
    char err[512];
    auto* conf = rd_kafka_conf_new();
    REQUIRE(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err, sizeof err)
            == RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    REQUIRE(rk_ != nullptr);
    mc_ = rd_kafka_handle_mock_cluster(rk_);
    REQUIRE(mc_ != nullptr);
    bootstrap = rd_kafka_mock_cluster_bootstraps(mc_);
  }
  ~mock_kafka() { rd_kafka_destroy(rk_); }
  mock_kafka(const mock_kafka&) = delete;
  mock_kafka& operator=(const mock_kafka&) = delete;

  void create_topic(const std::string& name, int partitions) {
    REQUIRE(rd_kafka_mock_topic_create(mc_, name.c_str(), partitions, 1)
            == RD_KAFKA_RESP_ERR_NO_ERROR);
  }

  void set_topic_error(const std::string& name, rd_kafka_resp_err_t e) {
    rd_kafka_mock_topic_set_error(mc_, name.c_str(), e);
  }

  void produce(const std::string& topic, int partition, const std::string& value,
               const std::string& key = "", std::int64_t ts = 0) {
    auto e = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_KEY(key.empty() ? nullptr : const_cast<char*>(key.data()), key.size()),
      RD_KAFKA_V_TIMESTAMP(ts), RD_KAFKA_V_HEADER("h", "v1", -1),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    REQUIRE(e == RD_KAFKA_RESP_ERR_NO_ERROR);
  }

  void flush() { REQUIRE(rd_kafka_flush(rk_, 10000) == RD_KAFKA_RESP_ERR_NO_ERROR); }

  std::string bootstrap;

private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
};

weir::kafka::source jsonl_spec(const mock_kafka& k, std::vector<std::string> topics) {
  weir::kafka::source s;
  s.topics = std::move(topics);
  s.bootstrap_servers = k.bootstrap;
  s.decoder.kind = weir::format::format_kind::jsonl;
  s.decoder.schema = weir::make_schema({{"n", type_id::int64}});
  s.bounded = true;
  s.connect_timeout = 5s;
  return s;
}

struct bad_list {
  std::vector<weir::bad_record> records;
  weir::bad_record_handler handler() {
    return [this](const weir::bad_record& r) { records.push_back(r); };
  }
};

weir::source_reader_ptr make(const weir::kafka::source& s, std::size_t subtask,
                             std::size_t parallelism, bad_list* bad = nullptr) {
  weir::kafka::reader_options o;
  o.spec = s;
  o.output = weir::kafka_source_schema(s).value();
  o.source_name = "src";
  o.job_name = "test";
  o.subtask = subtask;
  o.parallelism = parallelism;
  weir::bad_record_handler on_bad = [](const weir::bad_record& b) {
    FAIL("unexpected bad record: " << b.reason);
  };
  if (bad)
    on_bad = bad->handler();
  auto r = weir::kafka::make_reader(std::move(o), std::move(on_bad));
  r->open(weir::operator_context{});
  return r;
}

// Every batch until the (bounded) reader ends; a guard against a hang.
std::vector<weir::record_batch_ptr> drain(weir::source_reader& r) {
  std::vector<weir::record_batch_ptr> out;
  auto deadline = std::chrono::steady_clock::now() + 20s;
  while (auto b = r.poll_next(64)) {
    if (b->num_rows > 0)
      out.push_back(b);
    else
      std::this_thread::sleep_for(5ms);
    REQUIRE(std::chrono::steady_clock::now() < deadline);
  }
  return out;
}

} // namespace

TEST_SUITE("kafka source") {

TEST_CASE("partitions go round-robin to subtasks, the same way every time") {
  std::map<std::size_t, int> per_subtask;
  for (std::int32_t p = 0; p < 8; ++p)
    ++per_subtask[weir::kafka::owner_of("logs", p, 4)];
  CHECK(per_subtask.size() == 4);
  for (const auto& [s, n] : per_subtask)
    CHECK(n == 2);
  CHECK(weir::kafka::owner_of("logs", 3, 4) == weir::kafka::owner_of("logs", 3, 4));
  CHECK(weir::kafka::owner_of("logs", 0, 1) == 0);
}

TEST_CASE("bounded subtasks together read every record once, up to the end offsets") {
  mock_kafka k;
  k.create_topic("t", 3);
  std::multiset<std::int64_t> want;
  for (int i = 0; i < 30; ++i) {
    k.produce("t", i % 3, "{\"n\":" + std::to_string(i) + "}");
    want.insert(i);
  }
  k.flush();
  auto spec = jsonl_spec(k, {"t"});
  spec.metadata.partition = "partition";
  spec.metadata.offset = "offset";
  std::multiset<std::int64_t> got;
  std::set<std::string> splits;
  for (std::size_t s = 0; s < 2; ++s) {
    auto r = make(spec, s, 2);
    for (const auto& b : drain(*r)) {
      REQUIRE(b->schema->size() == 3);
      for (std::size_t row = 0; row < b->num_rows; ++row) {
        auto n = b->columns[0].ints[row];
        got.insert(n);
        CHECK(b->columns[1].ints[row] == n % 3);   // partition
        CHECK(b->columns[2].ints[row] == n / 3);   // offset
      }
    }
    CHECK(r->partitions()->empty()); // every owned partition reached its end
    for (const auto& p : r->positions()) {
      CHECK(p.unit == weir::position_unit::partition_offset);
      CHECK(p.value == 10);
      splits.insert(p.split);
    }
  }
  CHECK(got == want);
  CHECK(splits == std::set<std::string>{"t/0", "t/0@end", "t/1", "t/1@end", "t/2", "t/2@end"});
}

TEST_CASE("a restored reader resumes at its checkpointed offsets and stops at its end") {
  mock_kafka k;
  k.create_topic("t", 1);
  for (int i = 0; i < 10; ++i)
    k.produce("t", 0, "{\"n\":" + std::to_string(i) + "}");
  k.flush();
  auto r = make(jsonl_spec(k, {"t"}), 0, 1);
  r->seek({{"t/0", weir::position_unit::partition_offset, 4},
           {"t/0@end", weir::position_unit::partition_offset, 7}});
  std::vector<std::int64_t> got;
  for (const auto& b : drain(*r))
    for (std::size_t row = 0; row < b->num_rows; ++row)
      got.push_back(b->columns[0].ints[row]);
  CHECK(got == std::vector<std::int64_t>{4, 5, 6});
  CHECK(r->position() == 7);
}

TEST_CASE("a position counting bytes is refused") {
  mock_kafka k;
  k.create_topic("t", 1);
  auto r = make(jsonl_spec(k, {"t"}), 0, 1);
  CHECK_THROWS_WITH_AS(r->seek({{"t/0", weir::position_unit::byte_offset, 4}}),
                       doctest::Contains("counts bytes, a Kafka source counts offsets"),
                       std::runtime_error);
}

TEST_CASE("an unknown topic fails the source at start, naming the topic") {
  mock_kafka k;
  k.create_topic("t", 1);
  // The mock cluster creates topics it is asked about; a real broker without
  // auto-creation answers this (tests/integration/kafka_source_tests.py).
  k.set_topic_error("nope", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(make(jsonl_spec(k, {"nope"}), 0, 1),
                       doctest::Contains("topic 'nope' does not exist"), std::runtime_error);
  CHECK(std::chrono::steady_clock::now() - t0 < 5s);
}

TEST_CASE("a topic the client may not read fails the source, naming the topic") {
  mock_kafka k;
  k.create_topic("secret", 1);
  k.set_topic_error("secret", RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  CHECK_THROWS_WITH_AS(make(jsonl_spec(k, {"secret"}), 0, 1),
                       doctest::Contains("not authorized to read topic 'secret'"),
                       std::runtime_error);
}

TEST_CASE("unreachable brokers fail the source within connect_timeout") {
  mock_kafka k;
  auto spec = jsonl_spec(k, {"t"});
  spec.bootstrap_servers = "127.0.0.1:1";
  spec.connect_timeout = 1s;
  auto t0 = std::chrono::steady_clock::now();
  CHECK_THROWS_WITH_AS(make(spec, 0, 1),
                       doctest::Contains("cannot reach the Kafka brokers at 127.0.0.1:1 within 1 s"),
                       std::runtime_error);
  CHECK(std::chrono::steady_clock::now() - t0 < 6s);
}

TEST_CASE("a bad record is reported with its topic, partition and offset") {
  mock_kafka k;
  k.create_topic("t", 1);
  k.produce("t", 0, "{\"n\":1}");
  k.produce("t", 0, "{\"n\":\"two\"}");
  k.produce("t", 0, "not json");
  k.produce("t", 0, "{\"n\":4}");
  k.flush();
  bad_list bad;
  auto r = make(jsonl_spec(k, {"t"}), 0, 1, &bad);
  std::size_t rows = 0;
  for (const auto& b : drain(*r))
    rows += b->num_rows;
  CHECK(rows == 2);
  REQUIRE(bad.records.size() == 2);
  CHECK(bad.records[0].origin == "t/0");
  CHECK(bad.records[0].offset == 1);
  CHECK(bad.records[0].raw == "{\"n\":\"two\"}");
  CHECK(bad.records[1].offset == 2);
  CHECK_FALSE(bad.records[1].reason.empty());
}

TEST_CASE("batched consumption: positions, bounded ends and bad records mid-batch") {
  // Messages come from librdkafka in batches of up to a thousand, across
  // partitions, with partition EOFs among them. Whatever the batch cuts,
  // after every poll each partition's position is the offset after the last
  // row it returned (what a checkpoint taken then stores), a restored end
  // mid-partition stops that partition exactly there, and a bad record in the
  // middle of a batch is dead-lettered with its own offset.
  mock_kafka k;
  k.create_topic("t", 3);
  constexpr int per_partition = 700;
  for (int i = 0; i < per_partition; ++i)
    for (int part = 0; part < 3; ++part)
      k.produce("t", part,
                part == 1 && i % 250 == 7 ? std::string{"{\"n\":\"bad\"}"}
                                          : "{\"n\":" + std::to_string(part * 10000 + i) + "}");
  k.flush();
  auto spec = jsonl_spec(k, {"t"});
  spec.metadata.partition = "partition";
  spec.metadata.offset = "offset";
  for (std::size_t max_rows : {std::size_t{5000}, std::size_t{37}}) {
    CAPTURE(max_rows);
    bad_list bad;
    auto r = make(spec, 0, 1, &bad);
    // Partition 0 was checkpointed at 100 with its end at 333 (mid-partition);
    // the others start at 0 and end at their high watermark.
    r->seek({{"t/0", weir::position_unit::partition_offset, 100},
             {"t/0@end", weir::position_unit::partition_offset, 333}});
    std::map<std::int64_t, std::int64_t> next{{0, 100}, {1, 0}, {2, 0}};
    std::vector<std::int64_t> got;
    auto deadline = std::chrono::steady_clock::now() + 20s;
    while (auto b = r->poll_next(max_rows)) {
      CHECK(b->num_rows <= max_rows);
      for (std::size_t row = 0; row < b->num_rows; ++row) {
        const auto part = b->columns[1].ints[row];
        const auto offset = b->columns[2].ints[row];
        CHECK(offset >= next[part]); // in order, each once
        next[part] = offset + 1;
        CHECK(b->columns[0].ints[row] == part * 10000 + offset);
        got.push_back(b->columns[0].ints[row]);
      }
      // The runs of rows by partition (for per-partition watermarks) cover
      // the batch in order.
      std::size_t begin = 0;
      for (const auto& run : *r->partition_runs()) {
        REQUIRE(run.end > begin);
        for (auto row = begin; row < run.end; ++row)
          CHECK(*run.partition == "t/" + std::to_string(b->columns[1].ints[row]));
        begin = run.end;
      }
      CHECK(begin == b->num_rows);
      for (const auto& p : r->positions()) {
        if (p.split.find('@') != std::string::npos)
          continue;
        const auto part = std::stoll(p.split.substr(2));
        // A bad record is consumed too: the position may be past the last
        // row, by the bad records in between, never by a good one.
        CHECK(static_cast<std::int64_t>(p.value) >= next[part]);
        for (auto o = next[part]; o < static_cast<std::int64_t>(p.value); ++o)
          CHECK((part == 1 && o % 250 == 7));
      }
      if (b->num_rows == 0)
        std::this_thread::sleep_for(5ms);
      REQUIRE(std::chrono::steady_clock::now() < deadline);
    }
    std::map<std::string, std::uint64_t> pos;
    for (const auto& p : r->positions())
      pos[p.split] = p.value;
    CHECK(pos == std::map<std::string, std::uint64_t>{
                   {"t/0", 333}, {"t/0@end", 333}, {"t/1", per_partition},
                   {"t/1@end", per_partition}, {"t/2", per_partition},
                   {"t/2@end", per_partition}});
    CHECK(got.size() == (333 - 100) + (per_partition - 3) + per_partition);
    REQUIRE(bad.records.size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK(bad.records[i].origin == "t/1");
      CHECK(bad.records[i].offset == 7 + 250 * i);
      CHECK(bad.records[i].raw == "{\"n\":\"bad\"}");
    }
  }
}

TEST_CASE("raw messages with key, headers and the Kafka timestamp as event time") {
  mock_kafka k;
  k.create_topic("t", 2);
  k.produce("t", 0, "hello", "k1", 1000);
  k.produce("t", 1, "world", "", 2000);
  k.flush();
  weir::kafka::source s;
  s.topics = {"t"};
  s.bootstrap_servers = k.bootstrap;
  s.raw = true;
  s.bounded = true;
  s.event_time_from_kafka = true;
  s.metadata.key = "key";
  s.metadata.topic = "topic";
  s.metadata.timestamp = "kafka_ts";
  s.metadata.headers = "headers";
  auto r = make(s, 0, 1);
  CHECK(r->output_schema()->to_string().find("value") != std::string::npos);
  std::map<std::string, std::vector<weir::value>> rows;
  for (const auto& b : drain(*r)) {
    REQUIRE(b->has_timestamps());
    for (std::size_t row = 0; row < b->num_rows; ++row) {
      std::vector<weir::value> vs;
      for (std::size_t c = 1; c < b->columns.size(); ++c)
        vs.push_back(b->columns[c].get(row));
      vs.emplace_back(b->timestamps[row]);
      rows[std::string{b->columns[0].str(row)}] = vs;
    }
  }
  REQUIRE(rows.size() == 2);
  CHECK(rows["hello"] == std::vector<weir::value>{std::string{"k1"}, std::string{"t"},
                                                  std::int64_t{1000},
                                                  std::string{"{\"h\":\"v1\"}"},
                                                  std::int64_t{1000}});
  CHECK(std::holds_alternative<std::monostate>(rows["world"][0])); // no key: null
  CHECK(rows["world"][4] == weir::value{std::int64_t{2000}});
}

TEST_CASE("a subtask that owns no partition declares none (its output is idle)") {
  mock_kafka k;
  k.create_topic("t", 1);
  auto spec = jsonl_spec(k, {"t"});
  spec.bounded = false;
  auto owner = weir::kafka::owner_of("t", 0, 2);
  auto r = make(spec, 1 - owner, 2);
  auto b = r->poll_next(16);
  REQUIRE(b);
  CHECK(b->num_rows == 0);
  REQUIRE(r->partitions() != nullptr);
  CHECK(r->partitions()->empty());
}

TEST_CASE("a completed checkpoint's offsets are committed to the group") {
  mock_kafka k;
  k.create_topic("t", 1);
  for (int i = 0; i < 5; ++i)
    k.produce("t", 0, "{\"n\":" + std::to_string(i) + "}");
  k.flush();
  auto spec = jsonl_spec(k, {"t"});
  spec.group_id = "monitor";
  auto r = make(spec, 0, 1);
  drain(*r);
  r->on_checkpoint(1);
  r->notify_checkpoint_complete(1);
  // Another member of the group sees offset 5 (the commit is asynchronous).
  std::string err;
  std::unique_ptr<RdKafka::Conf> conf{RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL)};
  conf->set("bootstrap.servers", k.bootstrap, err);
  conf->set("group.id", "monitor", err);
  std::unique_ptr<RdKafka::KafkaConsumer> c{RdKafka::KafkaConsumer::create(conf.get(), err)};
  REQUIRE(c);
  std::int64_t committed = -1;
  auto deadline = std::chrono::steady_clock::now() + 10s;
  while (committed != 5 && std::chrono::steady_clock::now() < deadline) {
    r->poll_next(1); // serves the commit's callback
    std::vector<RdKafka::TopicPartition*> tps{RdKafka::TopicPartition::create("t", 0)};
    if (c->committed(tps, 2000) == RdKafka::ERR_NO_ERROR)
      committed = tps[0]->offset();
    RdKafka::TopicPartition::destroy(tps);
    if (committed != 5)
      std::this_thread::sleep_for(100ms);
  }
  CHECK(committed == 5);
  c->close();
}

TEST_CASE("start = latest reads nothing that was there") {
  // (start = timestamp needs ListOffsets by time, which the mock does not
  // answer: the real-broker tests cover it.)
  mock_kafka k;
  k.create_topic("t", 1);
  for (int i = 0; i < 6; ++i)
    k.produce("t", 0, "{\"n\":" + std::to_string(i) + "}");
  k.flush();
  auto spec = jsonl_spec(k, {"t"});
  spec.start = weir::kafka_start_offset::latest;
  auto r = make(spec, 0, 1);
  CHECK(drain(*r).empty());
  CHECK(r->position() == 6);
}

TEST_CASE("the pipeline file's kafka keys are checked at load time") {
  auto errors = [](const std::string& text) {
    auto r = weir::config::load_pipeline(text, "p.toml");
    REQUIRE_FALSE(r);
    return weir::config::to_string(r.error());
  };
  auto text = errors(R"~([[source]]
name = "k"
type = "kafka"
topics = ["a"]
topic_pattern = "a.*"
bootstrap_servers = "localhost:9092"
format = "raw"
schema = { x = "int64" }
properties = { "group.id" = "g", "fetch.min.bytes" = 1 }
start = "committed"

[[sink]]
name = "out"
input = "k"
type = "stdout"
)~");
  CHECK(text.find("topics and topic_pattern exclude each other") != std::string::npos);
  CHECK(text.find("schema must not be set for format \"raw\"") != std::string::npos);
  CHECK(text.find("properties.group.id is set by weir") != std::string::npos);
  CHECK(text.find("start = \"committed\" needs group_id") != std::string::npos);
  CHECK(text.find("fetch.min.bytes") == std::string::npos); // a number is fine
}

TEST_CASE("a kafka source plans through the API with metadata after the value's fields") {
  weir::job j;
  weir::kafka::source s;
  s.topics = {"t"};
  s.bootstrap_servers = "127.0.0.1:9092";
  s.decoder.kind = weir::format::format_kind::csv;
  s.decoder.schema = weir::make_schema({{"a", type_id::string}, {"ts", type_id::timestamp}});
  s.metadata.offset = "off";
  s.event_time_field = "ts";
  auto st = j.from(s, {"k", 3});
  REQUIRE(st);
  CHECK(st->output_schema()->to_string() == "a:string, ts:timestamp, off:int64");
  s.metadata.offset = "a";
  auto dup = j.from(s, {"k2", 1});
  REQUIRE_FALSE(dup);
  CHECK(dup.error().message.find("'a' is defined twice") != std::string::npos);
}
}
