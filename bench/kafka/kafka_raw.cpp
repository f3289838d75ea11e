// SPDX-License-Identifier: Apache-2.0
// weir_kafka_raw: the plain librdkafka side of the Kafka benchmark
// (bench/README.md, `bench/run kafka`), no framework.
//
//   weir_kafka_raw create  --brokers B --topic T --partitions P [-X k=v]...
//       creates the topic (replication 1) with topic configs k=v; an
//       existing topic is an error
//   weir_kafka_raw delete  --brokers B --topic T
//       deletes the topic (the benchmark's output topics, once counted)
//   weir_kafka_raw produce --brokers B --topic T --partitions P --file F [-X k=v]...
//       one message per line of F (newline left out), line i into
//       partition i % P, idempotent producer; prints {"messages":N,"bytes":B}
//   weir_kafka_raw consume --brokers B --topic T [-X k=v]...
//       the raw consume loop the weir source is measured against: every
//       partition assign()ed from the beginning, consume() until each has
//       reached the end offset it had at the start (what weir's
//       `bounded = "latest"` and Flink's setBounded(latest) stop at);
//       prints {"messages":N,"bytes":B,"seconds":S} (S from before the
//       consumer is made to the last message). A partition also ends at
//       its end of partition (a transactional topic's last offset is a
//       commit marker, never delivered).
//
// -X passes a librdkafka property through, as the weir source's
// `properties` table and Flink's KafkaSource properties do.
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

struct options {
  std::string command;
  std::string brokers;
  std::string topic;
  std::string file;
  int partitions = 0;
  std::vector<std::pair<std::string, std::string>> properties;
};

[[noreturn]] void fail(const std::string& what) {
  std::fprintf(stderr, "weir_kafka_raw: %s\n", what.c_str());
  std::exit(1);
}

int usage() {
  std::fprintf(stderr,
               "usage: weir_kafka_raw create  --brokers B --topic T --partitions P [-X k=v]...\n"
               "       weir_kafka_raw delete  --brokers B --topic T\n"
               "       weir_kafka_raw produce --brokers B --topic T --partitions P --file F "
               "[-X k=v]...\n"
               "       weir_kafka_raw consume --brokers B --topic T [-X k=v]...\n");
  return 2;
}

bool parse(int argc, char** argv, options& o) {
  if (argc < 2)
    return false;
  o.command = argv[1];
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc)
      return false;
    const std::string v = argv[++i];
    if (a == "--brokers") {
      o.brokers = v;
    } else if (a == "--topic") {
      o.topic = v;
    } else if (a == "--file") {
      o.file = v;
    } else if (a == "--partitions") {
      o.partitions = std::atoi(v.c_str());
    } else if (a == "-X") {
      const auto eq = v.find('=');
      if (eq == std::string::npos)
        return false;
      o.properties.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else {
      return false;
    }
  }
  return !o.brokers.empty() && !o.topic.empty();
}

std::unique_ptr<RdKafka::Conf> make_conf(const options& o,
                                         std::vector<std::pair<std::string, std::string>> base) {
  std::unique_ptr<RdKafka::Conf> conf{RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL)};
  std::string err;
  base.emplace_back("bootstrap.servers", o.brokers);
  for (const auto& p : o.properties)
    base.push_back(p);
  for (const auto& [k, v] : base)
    if (conf->set(k, v, err) != RdKafka::Conf::CONF_OK)
      fail("property " + k + "=" + v + ": " + err);
  return conf;
}

// -- create -------------------------------------------------------------------------------

// Runs one admin call (CreateTopics or DeleteTopics) and fails with its error.
template <typename Call, typename Results>
void admin(const options& o, rd_kafka_admin_op_t op, Call call, Results results) {
  char err[512];
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  if (rd_kafka_conf_set(conf, "bootstrap.servers", o.brokers.c_str(), err, sizeof err)
      != RD_KAFKA_CONF_OK)
    fail(err);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (rk == nullptr)
    fail(err);
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_AdminOptions_t* opts = rd_kafka_AdminOptions_new(rk, op);
  rd_kafka_AdminOptions_set_operation_timeout(opts, 30000, err, sizeof err);
  call(rk, opts, queue);
  rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 60000);
  std::string error;
  if (ev == nullptr) {
    error = "no answer within 60 s";
  } else if (rd_kafka_event_error(ev) != RD_KAFKA_RESP_ERR_NO_ERROR) {
    error = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_topic_result_t** r = results(ev, &n);
    for (size_t i = 0; i < n; ++i)
      if (rd_kafka_topic_result_error(r[i]) != RD_KAFKA_RESP_ERR_NO_ERROR)
        error = std::string(rd_kafka_topic_result_name(r[i])) + ": "
                + rd_kafka_topic_result_error_string(r[i]);
  }
  if (ev != nullptr)
    rd_kafka_event_destroy(ev);
  rd_kafka_AdminOptions_destroy(opts);
  rd_kafka_queue_destroy(queue);
  rd_kafka_destroy(rk);
  if (!error.empty())
    fail(error);
}

int create_topic(const options& o) {
  if (o.partitions <= 0)
    fail("create needs --partitions > 0");
  char err[512];
  rd_kafka_NewTopic_t* topic =
    rd_kafka_NewTopic_new(o.topic.c_str(), o.partitions, 1, err, sizeof err);
  if (topic == nullptr)
    fail(err);
  for (const auto& [k, v] : o.properties)
    if (rd_kafka_NewTopic_set_config(topic, k.c_str(), v.c_str()) != RD_KAFKA_RESP_ERR_NO_ERROR)
      fail("topic config " + k + "=" + v);
  admin(
    o, RD_KAFKA_ADMIN_OP_CREATETOPICS,
    [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* q) {
      rd_kafka_CreateTopics(rk, &topic, 1, opts, q);
    },
    [](rd_kafka_event_t* ev, size_t* n) {
      return rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), n);
    });
  rd_kafka_NewTopic_destroy(topic);
  std::printf("{\"topic\":\"%s\",\"partitions\":%d}\n", o.topic.c_str(), o.partitions);
  return 0;
}

int delete_topic(const options& o) {
  rd_kafka_DeleteTopic_t* topic = rd_kafka_DeleteTopic_new(o.topic.c_str());
  admin(
    o, RD_KAFKA_ADMIN_OP_DELETETOPICS,
    [&](rd_kafka_t* rk, rd_kafka_AdminOptions_t* opts, rd_kafka_queue_t* q) {
      rd_kafka_DeleteTopics(rk, &topic, 1, opts, q);
    },
    [](rd_kafka_event_t* ev, size_t* n) {
      return rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), n);
    });
  rd_kafka_DeleteTopic_destroy(topic);
  return 0;
}

// -- produce ------------------------------------------------------------------------------

class delivery_check final : public RdKafka::DeliveryReportCb {
public:
  void dr_cb(RdKafka::Message& m) override {
    if (m.err() != RdKafka::ERR_NO_ERROR && failed_++ == 0)
      first_error_ = m.errstr();
  }
  std::uint64_t failed_ = 0;
  std::string first_error_;
};

int produce(const options& o) {
  if (o.partitions <= 0 || o.file.empty())
    fail("produce needs --partitions and --file");
  std::ifstream in(o.file, std::ios::binary);
  if (!in)
    fail("cannot read " + o.file);
  delivery_check check;
  auto conf = make_conf(o, {{"enable.idempotence", "true"},
                            {"linger.ms", "20"},
                            {"batch.size", "1000000"},
                            {"queue.buffering.max.kbytes", "1048576"},
                            {"queue.buffering.max.messages", "1000000"}});
  std::string err;
  if (conf->set("dr_cb", &check, err) != RdKafka::Conf::CONF_OK)
    fail(err);
  std::unique_ptr<RdKafka::Producer> producer{RdKafka::Producer::create(conf.get(), err)};
  if (!producer)
    fail(err);
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty())
      continue;
    const auto partition = static_cast<std::int32_t>(messages % static_cast<unsigned>(o.partitions));
    for (;;) {
      const auto rc = producer->produce(o.topic, partition, RdKafka::Producer::RK_MSG_COPY,
                                        line.data(), line.size(), nullptr, 0, 0, nullptr);
      if (rc == RdKafka::ERR_NO_ERROR)
        break;
      if (rc != RdKafka::ERR__QUEUE_FULL)
        fail("produce to " + o.topic + ": " + RdKafka::err2str(rc));
      producer->poll(50);
    }
    ++messages;
    bytes += line.size();
    if (messages % 10000 == 0)
      producer->poll(0);
  }
  if (producer->flush(300000) != RdKafka::ERR_NO_ERROR)
    fail("flush timed out with " + std::to_string(producer->outq_len()) + " messages queued");
  if (check.failed_ != 0)
    fail(std::to_string(check.failed_) + " messages not delivered: " + check.first_error_);
  std::printf("{\"messages\":%llu,\"bytes\":%llu}\n", static_cast<unsigned long long>(messages),
              static_cast<unsigned long long>(bytes));
  return 0;
}

// -- consume ------------------------------------------------------------------------------

int consume(const options& o) {
  const auto start = std::chrono::steady_clock::now();
  // No group rebalancing: partitions are assign()ed, as weir's source does. The group id is
  // required by the consumer and never committed to.
  auto conf = make_conf(o, {{"group.id", "weir-bench-raw"},
                            {"enable.auto.commit", "false"},
                            {"enable.auto.offset.store", "false"},
                            {"enable.partition.eof", "true"}});
  std::string err;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer{
    RdKafka::KafkaConsumer::create(conf.get(), err)};
  if (!consumer)
    fail(err);
  RdKafka::Metadata* raw_md = nullptr;
  std::unique_ptr<RdKafka::Topic> topic{RdKafka::Topic::create(consumer.get(), o.topic, nullptr,
                                                               err)};
  if (consumer->metadata(false, topic.get(), &raw_md, 30000) != RdKafka::ERR_NO_ERROR)
    fail("no metadata for " + o.topic);
  std::unique_ptr<RdKafka::Metadata> md{raw_md};
  std::vector<std::int32_t> ids;
  for (const auto* t : *md->topics())
    if (t->topic() == o.topic) {
      if (t->err() != RdKafka::ERR_NO_ERROR)
        fail("topic " + o.topic + ": " + RdKafka::err2str(t->err()));
      for (const auto* p : *t->partitions())
        ids.push_back(p->id());
    }
  if (ids.empty())
    fail("topic " + o.topic + " has no partitions");
  // The end of each partition as of now.
  std::vector<std::int64_t> end(ids.size());
  std::vector<RdKafka::TopicPartition*> assignment;
  std::size_t open = 0;
  for (std::size_t i = 0; i < ids.size(); ++i) {
    std::int64_t low = 0;
    std::int64_t high = 0;
    const auto rc = consumer->query_watermark_offsets(o.topic, ids[i], &low, &high, 30000);
    if (rc != RdKafka::ERR_NO_ERROR)
      fail("end offset of " + o.topic + "/" + std::to_string(ids[i]) + ": "
           + RdKafka::err2str(rc));
    end[i] = high;
    if (high > low) {
      assignment.push_back(
        RdKafka::TopicPartition::create(o.topic, ids[i], RdKafka::Topic::OFFSET_BEGINNING));
      ++open;
    }
  }
  std::vector<std::int64_t> end_of(static_cast<std::size_t>(ids.back()) + 1, 0);
  for (std::size_t i = 0; i < ids.size(); ++i)
    end_of[static_cast<std::size_t>(ids[i])] = end[i];
  std::vector<bool> done(end_of.size(), false);
  if (!assignment.empty() && consumer->assign(assignment) != RdKafka::ERR_NO_ERROR)
    fail("assign failed");
  RdKafka::TopicPartition::destroy(assignment);
  std::uint64_t messages = 0;
  std::uint64_t bytes = 0;
  auto last = std::chrono::steady_clock::now();
  while (open > 0) {
    std::unique_ptr<RdKafka::Message> m{consumer->consume(100)};
    if (m->err() == RdKafka::ERR__TIMED_OUT)
      continue;
    if (m->err() == RdKafka::ERR__PARTITION_EOF) {
      const auto p = static_cast<std::size_t>(m->partition());
      if (!done[p] && m->offset() >= end_of[p]) {
        done[p] = true;
        --open;
        last = std::chrono::steady_clock::now();
      }
      continue;
    }
    if (m->err() != RdKafka::ERR_NO_ERROR)
      fail("consume " + o.topic + ": " + m->errstr());
    const auto p = static_cast<std::size_t>(m->partition());
    if (done[p])
      continue;
    ++messages;
    bytes += m->len();
    if (m->offset() + 1 >= end_of[p]) {
      done[p] = true;
      --open;
      last = std::chrono::steady_clock::now();
    }
  }
  const double seconds = std::chrono::duration<double>(last - start).count();
  consumer->close();
  std::printf("{\"messages\":%llu,\"bytes\":%llu,\"seconds\":%.6f}\n",
              static_cast<unsigned long long>(messages), static_cast<unsigned long long>(bytes),
              seconds);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o))
    return usage();
  if (o.command == "create")
    return create_topic(o);
  if (o.command == "delete")
    return delete_topic(o);
  if (o.command == "produce")
    return produce(o);
  if (o.command == "consume")
    return consume(o);
  return usage();
}
