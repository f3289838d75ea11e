// SPDX-License-Identifier: Apache-2.0
// The Kafka sink against librdkafka's mock cluster: the API, the message
// shape and the error paths. The mock accepts transactions without
// honouring them, so no exactly-once property is asserted here
// (tests/kafka/sink_tests.py does that on a real broker).
#include "weir/kafka/sink.hpp"

#include <doctest/doctest.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using weir::type_id;

namespace {

struct null_collector final : weir::output_collector {
  void collect(weir::record_batch_ptr) override {}
  void collect_side(std::size_t, weir::record_batch_ptr) override {}
  void emit_watermark(weir::event_time) override {}
};

/// A mock cluster of one broker, owned by a handle that keeps it alive.
class mock_cluster {
public:
  mock_cluster() {
    auto* conf = rd_kafka_conf_new();
    char err[256];
    REQUIRE(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", err, sizeof err)
            == RD_KAFKA_CONF_OK);
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    REQUIRE(rk_);
    mc_ = rd_kafka_handle_mock_cluster(rk_);
    REQUIRE(mc_);
    bootstraps_ = rd_kafka_mock_cluster_bootstraps(mc_);
  }
  ~mock_cluster() { rd_kafka_destroy(rk_); }
  mock_cluster(const mock_cluster&) = delete;
  mock_cluster& operator=(const mock_cluster&) = delete;

  void create_topic(const std::string& name, int partitions) {
    REQUIRE(rd_kafka_mock_topic_create(mc_, name.c_str(), partitions, 1)
            == RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  const std::string& bootstraps() const { return bootstraps_; }
  void set_topic_error(const std::string& topic, rd_kafka_resp_err_t err) {
    rd_kafka_mock_topic_set_error(mc_, topic.c_str(), err);
  }
  /// The next `n` produce requests fail with `err`.
  void push_produce_errors(rd_kafka_resp_err_t err, int n) {
    for (int i = 0; i < n; ++i)
      rd_kafka_mock_push_request_errors(mc_, 0 /* Produce */, 1, err);
  }

  struct message {
    std::string key;
    bool has_key = false;
    std::string value;
    std::map<std::string, std::string> headers;
  };

  /// Every message of `topic` partition `p` from the beginning.
  std::vector<message> read(const std::string& topic, int p) {
    auto* conf = rd_kafka_conf_new();
    char err[256];
    rd_kafka_conf_set(conf, "bootstrap.servers", bootstraps_.c_str(), err, sizeof err);
    rd_kafka_conf_set(conf, "enable.partition.eof", "true", err, sizeof err);
    auto* c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    REQUIRE(c);
    auto* rkt = rd_kafka_topic_new(c, topic.c_str(), nullptr);
    REQUIRE(rd_kafka_consume_start(rkt, p, RD_KAFKA_OFFSET_BEGINNING) == 0);
    std::vector<message> out;
    for (int i = 0; i < 100; ++i) {
      auto* m = rd_kafka_consume(rkt, p, 200);
      if (!m)
        continue;
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        rd_kafka_message_destroy(m);
        break;
      }
      REQUIRE(m->err == RD_KAFKA_RESP_ERR_NO_ERROR);
      message msg;
      if (m->key) {
        msg.has_key = true;
        msg.key.assign(static_cast<const char*>(m->key), m->key_len);
      }
      msg.value.assign(static_cast<const char*>(m->payload), m->len);
      rd_kafka_headers_t* hdrs = nullptr;
      if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const char* name = nullptr;
        const void* val = nullptr;
        size_t size = 0;
        for (size_t h = 0; rd_kafka_header_get_all(hdrs, h, &name, &val, &size)
                           == RD_KAFKA_RESP_ERR_NO_ERROR;
             ++h)
          msg.headers[name] = val ? std::string(static_cast<const char*>(val), size) : "<null>";
      }
      out.push_back(std::move(msg));
      rd_kafka_message_destroy(m);
    }
    rd_kafka_consume_stop(rkt, p);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(c);
    return out;
  }

private:
  rd_kafka_t* rk_ = nullptr;
  rd_kafka_mock_cluster_t* mc_ = nullptr;
  std::string bootstraps_;
};

weir::schema_ptr test_schema() {
  return weir::make_schema(
    {{"user", type_id::string}, {"n", type_id::int64}, {"note", type_id::string}});
}

weir::record_batch_ptr rows(std::initializer_list<std::pair<const char*, std::int64_t>> rs,
                            std::size_t note_bytes = 0) {
  weir::batch_builder b{test_schema()};
  for (const auto& [u, n] : rs) {
    b.col(0).append_string(u);
    b.col(1).append_int(n);
    if (note_bytes)
      b.col(2).append_string(std::string(note_bytes, 'x'));
    else
      b.col(2).append_null();
    b.commit_row();
  }
  return b.finish();
}

weir::kafka::sink spec_for(const std::string& bootstraps, const std::string& topic) {
  weir::kafka::sink s;
  s.topic = topic;
  s.bootstrap_servers = bootstraps;
  s.key = "user";
  s.headers = {{"n2", "n * 2"}, {"note", "note"}};
  s.properties = {{"log_level", "0"}};
  return s;
}

weir::stream_operator_ptr make(const weir::kafka::sink& s, bool checkpoints = false) {
  weir::kafka_sink_job job{"job", "out", checkpoints, std::chrono::milliseconds{1000}};
  auto op = weir::make_kafka_sink(s, job, test_schema());
  REQUIRE(op);
  return std::move(*op);
}

std::string failure_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST_SUITE("kafka_sink") {

TEST_CASE("an at-least-once Kafka sink writes one JSON message per row with key and headers") {
  mock_cluster mc;
  mc.create_topic("out", 1);
  auto op = make(spec_for(mc.bootstraps(), "out"));
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  op->process_batch(rows({{"ann", 1}, {"bob", 2}}), out);
  weir::operator_snapshot snap;
  op->snapshot_state(1, snap); // flushes
  CHECK(snap.operator_state.empty());
  auto got = mc.read("out", 0);
  REQUIRE(got.size() == 2);
  CHECK(got[0].key == "ann");
  CHECK(got[0].value == R"({"user":"ann","n":1,"note":null})");
  CHECK(got[0].headers["n2"] == "2");
  CHECK(got[0].headers["note"] == "<null>");
  CHECK(got[1].key == "bob");
  op->process_batch(rows({{"cy", 3}}), out);
  op->finish(out);
  CHECK(mc.read("out", 0).size() == 3);
}

TEST_CASE("a Kafka sink writes CSV values without a header and without a key when none is set") {
  mock_cluster mc;
  mc.create_topic("csv", 1);
  auto s = spec_for(mc.bootstraps(), "csv");
  s.format = weir::format::format_kind::csv;
  s.key.clear();
  s.headers.clear();
  s.delivery = weir::kafka_delivery::none;
  auto op = make(s);
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  op->process_batch(rows({{"ann, jr", 1}}), out);
  op->finish(out);
  auto got = mc.read("csv", 0);
  REQUIRE(got.size() == 1);
  CHECK_FALSE(got[0].has_key);
  CHECK(got[0].value == "\"ann, jr\",1,");
}

TEST_CASE("a Kafka sink writes Avro datums of the generated schema, nullable fields as unions") {
  mock_cluster mc;
  mc.create_topic("avro", 1);
  auto s = spec_for(mc.bootstraps(), "avro");
  s.format = weir::format::format_kind::avro;
  s.headers.clear();
  s.delivery = weir::kafka_delivery::none;
  auto op = make(s);
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  op->process_batch(rows({{"ann", 1}, {"bob", -65}}), out);
  op->finish(out);
  auto got = mc.read("avro", 0);
  REQUIRE(got.size() == 2);
  // user: branch 1, length 3, "ann"; n: branch 1, zigzag 1 = 2; note: null.
  CHECK(got[0].value == std::string("\x02\x06" "ann" "\x02\x02\x00", 8));
  // n = -65: zigzag 129 = 0x81 0x01.
  CHECK(got[1].value == std::string("\x02\x06" "bob" "\x02\x81\x01\x00", 9));
}

TEST_CASE("a Kafka sink with an unreachable schema registry fails at start naming subject and URL") {
  mock_cluster mc;
  mc.create_topic("avro", 1);
  auto s = spec_for(mc.bootstraps(), "avro");
  s.format = weir::format::format_kind::avro;
  s.schema_registry.url = "http://127.0.0.1:1";
  s.schema_registry.basic_auth_user_info = "user:secret-pw";
  s.schema_registry.timeout = std::chrono::milliseconds{2000};
  if (!weir::format::schema_registry_built())
    s.schema_registry.url.clear();
  auto op = make(s);
  const auto why = failure_of([&] { op->open(weir::operator_context{"out", 0, 1, 128}); });
  if (weir::format::schema_registry_built()) {
    CHECK(why.find("subject 'avro-value'") != std::string::npos);
    CHECK(why.find("schema registry at http://127.0.0.1:1") != std::string::npos);
    CHECK(why.find("secret-pw") == std::string::npos);
  } else {
    CHECK(why.empty());
  }
  CHECK(mc.read("avro", 0).empty());
}

TEST_CASE("make_kafka_sink refuses Avro for a field whose name is not an Avro name") {
  weir::kafka::sink s;
  s.topic = "t";
  s.bootstrap_servers = "127.0.0.1:9092";
  s.format = weir::format::format_kind::avro;
  auto op = weir::make_kafka_sink(s, weir::kafka_sink_job{},
                                  weir::make_schema({{"window-start", type_id::int64}}));
  REQUIRE_FALSE(op);
  CHECK(op.error().message.find("field 'window-start' is not an Avro name") == 0);
  s.format = weir::format::format_kind::jsonl;
  s.schema_registry.url = "http://127.0.0.1:8081";
  auto json = weir::make_kafka_sink(s, weir::kafka_sink_job{}, test_schema());
  REQUIRE_FALSE(json);
  CHECK(json.error().message == "schema_registry needs format avro");
}

TEST_CASE("an exactly-once Kafka sink keeps pre-committed rows in its state and commits on completion") {
  // The mock accepts transactions without honouring isolation: this checks
  // the API's course (state, markers, commits), not exactly-once.
  mock_cluster mc;
  mc.create_topic("eo", 2);
  auto s = spec_for(mc.bootstraps(), "eo");
  s.delivery = weir::kafka_delivery::exactly_once;
  s.properties.emplace_back("transaction.timeout.ms", "10000");
  auto op = make(s, true);
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  op->process_batch(rows({{"ann", 1}, {"bob", 2}}), out);
  weir::operator_snapshot snap;
  op->snapshot_state(1, snap);
  CHECK(snap.operator_state.find("ann") != std::string::npos); // the copy of checkpoint 1
  op->process_batch(rows({{"cy", 3}}), out);                  // waits for 1's commit
  op->notify_checkpoint_complete(1);
  weir::operator_snapshot snap2;
  op->snapshot_state(2, snap2);
  CHECK(snap2.operator_state.find("ann") == std::string::npos); // 1 committed
  CHECK(snap2.operator_state.find("cy") != std::string::npos);
  op->notify_checkpoint_complete(2);
  CHECK(op->is_two_phase_commit());
  op->process_batch(rows({{"dee", 4}}), out);
  op->finish(out); // commits nothing: the final checkpoint does
  CHECK(mc.read("eo.weir-progress", 0).size() == 2);
  weir::operator_snapshot fin;
  op->snapshot_state(3, fin); // the final snapshot, after finish
  CHECK(fin.operator_state.find("dee") != std::string::npos);
  op->notify_checkpoint_complete(3);
  auto markers = mc.read("eo.weir-progress", 0);
  REQUIRE(markers.size() == 4);
  CHECK(markers[0].key == "weir-job-out-0");
  CHECK(markers[0].value == "1");
  CHECK(markers[1].value == "2");
  CHECK(markers[2].value == "3");
  CHECK(markers[3].value == "end 3"); // the final checkpoint's commit
  CHECK(mc.read("eo", 0).size() + mc.read("eo", 1).size() == 4);
}

TEST_CASE("exactly_once refuses a transaction timeout shorter than two checkpoint intervals") {
  mock_cluster mc;
  mc.create_topic("eo", 1);
  auto s = spec_for(mc.bootstraps(), "eo");
  s.delivery = weir::kafka_delivery::exactly_once;
  s.properties.emplace_back("transaction.timeout.ms", "1500");
  auto op = make(s, true);
  auto what = failure_of([&] { op->open(weir::operator_context{"out", 0, 1, 128}); });
  CHECK(what.find("transaction.timeout.ms (1500) must be at least twice the checkpoint "
                  "interval (1000 ms)")
        != std::string::npos);
  CHECK(what.find("'eo'") != std::string::npos);
}

TEST_CASE("a Kafka sink fails at start on a topic that does not exist") {
  mock_cluster mc;
  // The mock cluster creates topics on demand; this one answers "unknown"
  // as a broker without it (and without auto-creation) does.
  mc.set_topic_error("missing", RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
  auto op = make(spec_for(mc.bootstraps(), "missing"));
  auto what = failure_of([&] { op->open(weir::operator_context{"out", 0, 1, 128}); });
  CHECK(what == "Kafka topic 'missing' does not exist on '" + mc.bootstraps()
                  + "' (hint: create the topic first)");
}

TEST_CASE("a Kafka sink fails within its startup timeout when no broker answers") {
  auto s = spec_for("127.0.0.1:1", "out");
  auto op = make(s);
  auto start = std::chrono::steady_clock::now();
  auto what = failure_of([&] { op->open(weir::operator_context{"out", 0, 1, 128}); });
  auto took = std::chrono::steady_clock::now() - start;
  CHECK(what.find("cannot reach Kafka at '127.0.0.1:1' for topic 'out' within 10 s")
        != std::string::npos);
  CHECK(took < std::chrono::seconds{15});
}

TEST_CASE("a message larger than message.max.bytes fails naming the topic") {
  mock_cluster mc;
  mc.create_topic("small", 1);
  auto s = spec_for(mc.bootstraps(), "small");
  s.properties.emplace_back("message.max.bytes", "2000");
  auto op = make(s);
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  auto what = failure_of([&] { op->process_batch(rows({{"ann", 1}}, 5000), out); });
  CHECK(what.find("to Kafka topic 'small'") != std::string::npos);
  CHECK(what.find("max.message.bytes") != std::string::npos);
}

TEST_CASE("an authorization failure on delivery fails the sink at the barrier naming topic and partition") {
  mock_cluster mc;
  mc.create_topic("guarded", 1);
  auto op = make(spec_for(mc.bootstraps(), "guarded"));
  null_collector out;
  op->open(weir::operator_context{"out", 0, 1, 128});
  // The broker answers the produce requests: not authorized (not retriable).
  mc.push_produce_errors(RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 10);
  op->process_batch(rows({{"ann", 1}}), out);
  weir::operator_snapshot snap;
  auto start = std::chrono::steady_clock::now();
  auto what = failure_of([&] { op->snapshot_state(1, snap); });
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds{30});
  CHECK(what.find("to Kafka topic 'guarded' partition 0") != std::string::npos);
  CHECK(what.find("uthoriz") != std::string::npos);
}

TEST_CASE("make_kafka_sink refuses a key expression that does not compile, keeping its offset") {
  weir::kafka::sink s;
  s.topic = "t";
  s.bootstrap_servers = "x:1";
  s.key = "usr";
  auto op = weir::make_kafka_sink(s, {}, test_schema());
  REQUIRE_FALSE(op);
  CHECK(op.error().message.find("unknown field 'usr'") != std::string::npos);
  CHECK(op.error().offset == 0);
}
}
