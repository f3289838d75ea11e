// SPDX-License-Identifier: Apache-2.0
#include "kafka_client.hpp"

#include "weir/core/log.hpp"
#include "weir/core/unrecoverable_error.hpp"

#include <librdkafka/rdkafka.h>
#include <spdlog/logger.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weir::ksink {

namespace {

using clock = std::chrono::steady_clock;

std::string err_name(rd_kafka_resp_err_t err) {
  return rd_kafka_err2str(err);
}

/// What a user can do about an error, when we know.
std::string hint_for(rd_kafka_resp_err_t err) {
  switch (err) {
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
      return " (hint: the broker's or topic's max.message.bytes, or the producer's "
             "message.max.bytes, is smaller than the message)";
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
      return " (hint: grant the principal Write on the topic, and for exactly_once "
             "Write on the transactional id and IdempotentWrite on the cluster)";
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      return " (hint: create the topic first)";
    default:
      return "";
  }
}

/// The producer's transactional id is in use by a newer producer.
bool is_fenced(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR__FENCED || err == RD_KAFKA_RESP_ERR_PRODUCER_FENCED
         || err == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
}

void dr_cb(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* self = static_cast<producer*>(opaque);
  std::string_view topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "";
  self->on_delivery(m->err, m->partition, m->offset, m->_private, topic, m->len);
}

void error_cb(rd_kafka_t*, int err, const char* reason, void* opaque) {
  static_cast<producer*>(opaque)->on_error(err, reason);
}

void log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  log::connectors().debug("librdkafka [{}] {}: {}", level, fac, buf);
}

/// Marks the one message whose delivery report carries the marker's offset.
const char marker_tag = 0;

void set_or_throw(rd_kafka_conf_t* conf, const std::string& k, const std::string& v,
                  const std::string& topic) {
  char err[512];
  if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error("Kafka sink on topic '" + topic + "': property '" + k + "' = '"
                             + v + "': " + err);
  }
}

bool has_property(const properties& props, std::string_view name) {
  for (const auto& [k, v] : props)
    if (k == name)
      return true;
  return false;
}

/// Properties that also apply to the consumer and admin calls a restore
/// makes: connection and security settings.
bool shared_with_consumer(std::string_view k) {
  for (std::string_view p : {"security.", "sasl.", "ssl.", "socket.", "broker.", "client.",
                             "api.version", "reconnect.", "metadata.", "enable.ssl"})
    if (k.substr(0, p.size()) == p)
      return true;
  return false;
}

struct rk_deleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};

struct queue_deleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};

struct event_deleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};

using event_ptr = std::unique_ptr<rd_kafka_event_t, event_deleter>;

/// Waits for the result of an admin request on `q`.
event_ptr admin_result(rd_kafka_queue_t* q, int timeout_ms) {
  return event_ptr{rd_kafka_queue_poll(q, timeout_ms + 1000)};
}

} // namespace

producer::producer(const std::string& bootstrap_servers, const properties& props,
                   const std::string& transactional_id, std::string topic)
  : topic_(std::move(topic)), bootstrap_(bootstrap_servers), transactional_id_(transactional_id) {
  auto* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : props)
    set_or_throw(conf, k, v, topic_);
  set_or_throw(conf, "bootstrap.servers", bootstrap_servers, topic_);
  // A missing topic is an error to report, not one to create by accident.
  if (!has_property(props, "allow.auto.create.topics"))
    set_or_throw(conf, "allow.auto.create.topics", "false", topic_);
  if (!transactional_id.empty())
    set_or_throw(conf, "transactional.id", transactional_id, topic_);
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_opaque(conf, this);
  char buf[64];
  size_t size = sizeof buf;
  if (rd_kafka_conf_get(conf, "message.timeout.ms", buf, &size) == RD_KAFKA_CONF_OK)
    message_timeout_ms_ = std::atoi(buf);
  char err[512];
  rk_ = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
  if (!rk_) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error("Kafka sink on topic '" + topic_
                             + "': cannot create a producer: " + err);
  }
}

producer::~producer() {
  if (!rk_)
    return;
  // Whatever is still queued belongs to a transaction or a checkpoint that
  // a restart replays: drop it rather than wait for an unreachable broker.
  rd_kafka_purge(rk_, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
  rd_kafka_poll(rk_, 0);
  rd_kafka_destroy(rk_);
}

void producer::on_delivery(int err, std::int32_t partition, std::int64_t offset,
                           const void* opaque, std::string_view topic, std::size_t bytes) {
  if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (opaque == &marker_tag)
      marker_offset_ = offset;
    return;
  }
  auto e = static_cast<rd_kafka_resp_err_t>(err);
  // Messages purged (a transaction that turned abortable purges what is
  // still queued; they are in the checkpoint's copy) say nothing of why: a
  // real failure reported after them replaces them.
  bool purged = e == RD_KAFKA_RESP_ERR__PURGE_QUEUE || e == RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
  if (!failure_.empty() && (purged || !failure_purged_))
    return;
  failure_purged_ = purged;
  failure_txn_state_ = e == RD_KAFKA_RESP_ERR_INVALID_TXN_STATE;
  failure_ = "cannot deliver a message of " + std::to_string(bytes) + " bytes to Kafka topic '"
             + std::string{topic} + "'"
             + (partition >= 0 ? " partition " + std::to_string(partition) : std::string{})
             + ": " + err_name(e) + hint_for(e);
}

void producer::on_error(int err, const char* reason) {
  auto e = static_cast<rd_kafka_resp_err_t>(err);
  if (e == RD_KAFKA_RESP_ERR__FATAL) {
    char buf[512];
    auto orig = rd_kafka_fatal_error(rk_, buf, sizeof buf);
    if (failure_.empty())
      failure_ = "fatal Kafka producer error on topic '" + topic_ + "': " + err_name(orig) + ": "
                 + buf + hint_for(orig);
    return;
  }
  // librdkafka retries these (a broker down, a connection refused): say so
  // once per distinct message, and let the timeouts decide.
  std::string text = reason ? reason : err_name(e);
  if (text != last_error_) {
    last_error_ = text;
    log::connectors().warn("Kafka sink on topic '{}': {} (retrying)", topic_, text);
  }
}

void producer::poll() {
  rd_kafka_poll(rk_, 0);
}

void producer::throw_if_fenced() const {
  if (transactional_id_.empty())
    return;
  char buf[512];
  auto err = rd_kafka_fatal_error(rk_, buf, sizeof buf);
  if (!is_fenced(err))
    return;
  // Not restarted: the restart's init_transactions would fence the other
  // producer in turn, and the two would take the id from each other.
  throw unrecoverable_error(
    "Kafka sink on topic '" + topic_ + "': transactional id '" + transactional_id_
    + "' was fenced by another producer with the same id (" + buf
    + "): another weir job, or another run of this one, with the same job name, sink name "
      "and transactional_id_prefix is writing. This job stops and does not restart (a "
      "restart would fence the other in turn). Stop the other job, or give one of them "
      "another job name or transactional_id_prefix; then rerun this job on its checkpoint "
      "directory: it resumes from its last completed checkpoint, nothing lost or published "
      "twice");
}

void producer::check() {
  if (!failure_.empty()) {
    throw_if_fenced();
    // A newer producer with our transactional id aborts our transaction: the
    // broker refuses our in-flight messages (INVALID_TXN_STATE) a moment
    // before librdkafka raises its fatal "fenced" error. Give it that moment
    // (up to 2 s) so a fenced job stops instead of restarting and fencing
    // the other in turn; any other cause of the refusal restarts as before.
    for (int i = 0; failure_txn_state_ && !transactional_id_.empty() && i < 20; ++i) {
      rd_kafka_poll(rk_, 100);
      throw_if_fenced();
    }
    throw std::runtime_error(failure_);
  }
}

void producer::flush_all() {
  // Every queued message gets its delivery report within
  // message.timeout.ms; the margin covers the report's own way back.
  auto deadline = clock::now() + std::chrono::milliseconds{message_timeout_ms_ + 30000};
  while (rd_kafka_outq_len(rk_) > 0) {
    rd_kafka_flush(rk_, 500);
    check();
    if (clock::now() > deadline)
      throw std::runtime_error("Kafka sink on topic '" + topic_ + "': "
                               + std::to_string(rd_kafka_outq_len(rk_))
                               + " messages not acknowledged within message.timeout.ms ("
                               + std::to_string(message_timeout_ms_) + " ms)");
  }
  rd_kafka_poll(rk_, 0);
  check();
}

void producer::produce(const std::string& topic, std::int32_t partition,
                       const std::string* key, std::string_view value,
                       std::int64_t timestamp, const std::vector<header_view>& headers) {
  for (;;) {
    rd_kafka_headers_t* hdrs = nullptr;
    if (!headers.empty()) {
      hdrs = rd_kafka_headers_new(headers.size());
      for (const auto& h : headers)
        rd_kafka_header_add(hdrs, h.name.data(), static_cast<ssize_t>(h.name.size()),
                            h.is_null ? nullptr : h.value.data(),
                            h.is_null ? 0 : static_cast<ssize_t>(h.value.size()));
    }
    auto err = rd_kafka_producev(
      rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
      RD_KAFKA_V_KEY(key ? key->data() : nullptr, key ? key->size() : 0),
      RD_KAFKA_V_TIMESTAMP(timestamp >= 0 ? timestamp : 0), RD_KAFKA_V_HEADERS(hdrs),
      RD_KAFKA_V_END);
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
      return;
    if (hdrs)
      rd_kafka_headers_destroy(hdrs);
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      // Backpressure: the local queue drains as the broker acknowledges.
      rd_kafka_poll(rk_, 50);
      check();
      continue;
    }
    check();
    throw_if_fenced();
    if (err == RD_KAFKA_RESP_ERR__STATE)
      flush_all(); // the transaction turned abortable: throws the delivery failure why
    throw std::runtime_error(
      "cannot produce a message of " + std::to_string(value.size()) + " bytes to Kafka topic '"
      + topic + "'"
      + (partition >= 0 ? " partition " + std::to_string(partition) : std::string{}) + ": "
      + err_name(err) + hint_for(err));
  }
}

std::int64_t producer::produce_marker(const std::string& topic, std::int32_t partition,
                                      const std::string& key, const std::string& value) {
  marker_offset_ = -1;
  auto err = rd_kafka_producev(
    rk_, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(partition),
    RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
    RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
    RD_KAFKA_V_KEY(key.data(), key.size()),
    RD_KAFKA_V_OPAQUE(const_cast<char*>(&marker_tag)), RD_KAFKA_V_END);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    throw_if_fenced();
    if (err == RD_KAFKA_RESP_ERR__STATE)
      flush_all(); // the transaction turned abortable: throws the delivery failure why
    throw std::runtime_error("cannot produce to Kafka progress topic '" + topic + "' partition "
                             + std::to_string(partition) + ": " + err_name(err)
                             + hint_for(err));
  }
  flush_all();
  if (marker_offset_ < 0)
    throw std::runtime_error("Kafka progress topic '" + topic + "' partition "
                             + std::to_string(partition)
                             + ": the marker's delivery report carried no offset");
  return marker_offset_;
}

void producer::check_topic(const std::string& topic) {
  auto* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  auto err = rd_kafka_metadata(rk_, 0, rkt, &md, startup_timeout_ms);
  rd_kafka_topic_destroy(rkt);
  // Serves the error events queued meanwhile (a failed SASL login, say), so
  // last_error_ can tell why the brokers did not answer.
  rd_kafka_poll(rk_, 0);
  check();
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("cannot reach Kafka at '" + bootstrap_ + "' for topic '" + topic
                             + "' within " + std::to_string(startup_timeout_ms / 1000)
                             + " s: " + err_name(err)
                             + (last_error_.empty() ? "" : " (" + last_error_ + ")"));
  rd_kafka_resp_err_t terr = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
  int partitions = 0;
  for (int i = 0; i < md->topic_cnt; ++i)
    if (topic == md->topics[i].topic) {
      terr = md->topics[i].err;
      partitions = md->topics[i].partition_cnt;
    }
  rd_kafka_metadata_destroy(md);
  if (terr == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || terr == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
    throw std::runtime_error("Kafka topic '" + topic + "' does not exist on '" + bootstrap_
                             + "'" + hint_for(terr));
  if (terr != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("Kafka topic '" + topic + "': " + err_name(terr) + hint_for(terr));
  if (partitions <= 0)
    throw std::runtime_error("Kafka topic '" + topic + "' has no partitions");
}

void producer::ensure_progress_topic(const std::string& topic, std::int32_t partitions) {
  auto count = [&]() -> int {
    auto* rkt = rd_kafka_topic_new(rk_, topic.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    auto err = rd_kafka_metadata(rk_, 0, rkt, &md, startup_timeout_ms);
    rd_kafka_topic_destroy(rkt);
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
      throw std::runtime_error("cannot reach Kafka at '" + bootstrap_ + "' for progress topic '"
                               + topic + "': " + err_name(err));
    // Partitions count once they have a leader (a new topic's have none at
    // first).
    int n = -1;
    for (int i = 0; i < md->topic_cnt; ++i)
      if (topic == md->topics[i].topic && md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        n = 0;
        for (int j = 0; j < md->topics[i].partition_cnt; ++j)
          if (md->topics[i].partitions[j].err == RD_KAFKA_RESP_ERR_NO_ERROR
              && md->topics[i].partitions[j].leader >= 0)
            ++n;
      }
    rd_kafka_metadata_destroy(md);
    return n;
  };
  auto have = count();
  if (have >= partitions)
    return;
  std::unique_ptr<rd_kafka_queue_t, queue_deleter> q{rd_kafka_queue_new(rk_)};
  char errstr[512];
  auto* opts = rd_kafka_AdminOptions_new(rk_, RD_KAFKA_ADMIN_OP_ANY);
  rd_kafka_AdminOptions_set_request_timeout(opts, startup_timeout_ms, errstr, sizeof errstr);
  rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
  std::string msg;
  if (have < 0) {
    auto* nt = rd_kafka_NewTopic_new(topic.c_str(), partitions, -1, errstr, sizeof errstr);
    if (!nt)
      throw std::runtime_error("Kafka progress topic '" + topic + "': " + errstr);
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_CreateTopics(rk_, &nt, 1, opts, q.get());
    auto ev = admin_result(q.get(), startup_timeout_ms);
    rd_kafka_NewTopic_destroy(nt);
    if (!ev) {
      err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev.get())) {
      err = rd_kafka_event_error(ev.get());
      msg = rd_kafka_event_error_string(ev.get());
    } else {
      size_t n = 0;
      const auto* res = rd_kafka_event_CreateTopics_result(ev.get());
      const auto** topics = rd_kafka_CreateTopics_result_topics(res, &n);
      for (size_t i = 0; i < n; ++i) {
        err = rd_kafka_topic_result_error(topics[i]);
        if (auto* s = rd_kafka_topic_result_error_string(topics[i]))
          msg = s;
      }
    }
    if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
      log::connectors().info("Kafka sink: created progress topic '{}' ({} partitions, "
                             "compacted)",
                             topic, partitions);
  } else {
    auto* np = rd_kafka_NewPartitions_new(topic.c_str(), static_cast<size_t>(partitions),
                                          errstr, sizeof errstr);
    rd_kafka_CreatePartitions(rk_, &np, 1, opts, q.get());
    auto ev = admin_result(q.get(), startup_timeout_ms);
    rd_kafka_NewPartitions_destroy(np);
    if (!ev) {
      err = RD_KAFKA_RESP_ERR__TIMED_OUT;
    } else if (rd_kafka_event_error(ev.get())) {
      err = rd_kafka_event_error(ev.get());
      msg = rd_kafka_event_error_string(ev.get());
    } else {
      size_t n = 0;
      const auto* res = rd_kafka_event_CreatePartitions_result(ev.get());
      const auto** topics = rd_kafka_CreatePartitions_result_topics(res, &n);
      for (size_t i = 0; i < n; ++i) {
        err = rd_kafka_topic_result_error(topics[i]);
        if (auto* s = rd_kafka_topic_result_error_string(topics[i]))
          msg = s;
      }
    }
  }
  rd_kafka_AdminOptions_destroy(opts);
  // Another subtask may have created it (or added partitions) first.
  auto deadline = clock::now() + std::chrono::milliseconds{startup_timeout_ms};
  for (;;) {
    if (count() >= partitions)
      return;
    if (err != RD_KAFKA_RESP_ERR_NO_ERROR && err != RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS
        && err != RD_KAFKA_RESP_ERR_INVALID_PARTITIONS)
      throw std::runtime_error("cannot create Kafka progress topic '" + topic + "' with "
                               + std::to_string(partitions) + " partitions: " + err_name(err)
                               + (msg.empty() ? "" : ": " + msg)
                               + " (hint: create it, compacted, with one partition per sink "
                                 "subtask, or set progress_topic)");
    if (clock::now() > deadline)
      throw std::runtime_error("Kafka progress topic '" + topic + "' does not show "
                               + std::to_string(partitions) + " partitions after "
                               + std::to_string(startup_timeout_ms / 1000) + " s");
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  }
}

std::int64_t producer::transaction_timeout_ms() const {
  char buf[64];
  size_t size = sizeof buf;
  if (rd_kafka_conf_get(rd_kafka_conf(rk_), "transaction.timeout.ms", buf, &size)
      != RD_KAFKA_CONF_OK)
    return 60000;
  return std::atoll(buf);
}

namespace {

/// The values of `names` in the configuration of one resource
/// (DescribeConfigs); empty when the broker does not answer.
std::vector<std::pair<std::string, std::string>>
describe_configs(rd_kafka_t* rk, rd_kafka_ResourceType_t type, const std::string& name,
                 std::initializer_list<const char*> names, const std::string& topic,
                 int timeout_ms = startup_timeout_ms) {
  std::vector<std::pair<std::string, std::string>> out;
  std::unique_ptr<rd_kafka_queue_t, queue_deleter> q{rd_kafka_queue_new(rk)};
  char errstr[512];
  auto* opts = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_AdminOptions_set_request_timeout(opts, timeout_ms, errstr, sizeof errstr);
  auto* res = rd_kafka_ConfigResource_new(type, name.c_str());
  rd_kafka_DescribeConfigs(rk, &res, 1, opts, q.get());
  auto ev = admin_result(q.get(), timeout_ms);
  rd_kafka_ConfigResource_destroy(res);
  rd_kafka_AdminOptions_destroy(opts);
  if (!ev || rd_kafka_event_error(ev.get())) {
    log::connectors().debug("Kafka sink on topic '{}': cannot read the configuration of '{}': "
                            "{}",
                            topic, name,
                            ev ? rd_kafka_event_error_string(ev.get()) : "timed out");
    return out;
  }
  size_t n = 0;
  const auto* result = rd_kafka_event_DescribeConfigs_result(ev.get());
  const auto** resources = rd_kafka_DescribeConfigs_result_resources(result, &n);
  for (size_t i = 0; i < n; ++i) {
    if (rd_kafka_ConfigResource_error(resources[i]))
      continue;
    size_t m = 0;
    const auto** entries = rd_kafka_ConfigResource_configs(resources[i], &m);
    for (size_t j = 0; j < m; ++j)
      for (const char* wanted : names)
        if (std::strcmp(rd_kafka_ConfigEntry_name(entries[j]), wanted) == 0)
          if (const char* v = rd_kafka_ConfigEntry_value(entries[j]))
            out.emplace_back(wanted, v);
  }
  return out;
}

} // namespace

std::optional<std::int64_t> producer::broker_transaction_max_timeout_ms() {
  const rd_kafka_metadata_t* md = nullptr;
  if (rd_kafka_metadata(rk_, 0, nullptr, &md, startup_timeout_ms) != RD_KAFKA_RESP_ERR_NO_ERROR)
    return std::nullopt;
  std::string broker = std::to_string(md->broker_cnt > 0 ? md->brokers[0].id
                                                          : md->orig_broker_id);
  rd_kafka_metadata_destroy(md);
  std::optional<std::int64_t> out;
  for (const auto& [k, v] : describe_configs(rk_, RD_KAFKA_RESOURCE_BROKER, broker,
                                             {"transaction.max.timeout.ms"}, topic_))
    out = std::atoll(v.c_str());
  return out;
}

std::optional<std::int64_t> producer::topic_create_time_retention_ms(const std::string& topic) {
  std::optional<std::int64_t> retention;
  bool log_append_time = false;
  for (const auto& [k, v] :
       describe_configs(rk_, RD_KAFKA_RESOURCE_TOPIC, topic,
                        {"retention.ms", "message.timestamp.type"}, topic_,
                        // Only for a warning: a broker that does not answer
                        // soon is not waited for.
                        1000)) {
    if (k == "retention.ms")
      retention = std::atoll(v.c_str());
    else
      log_append_time = v == "LogAppendTime";
  }
  if (log_append_time || !retention || *retention < 0)
    return std::nullopt;
  return retention;
}

std::int64_t producer::high_watermark(const std::string& topic, std::int32_t partition) {
  int64_t lo = 0, hi = 0;
  auto deadline = clock::now() + std::chrono::milliseconds{startup_timeout_ms};
  rd_kafka_resp_err_t err;
  // A partition whose leader moves (or a topic just created) answers
  // "not leader" for a moment.
  while ((err = rd_kafka_query_watermark_offsets(rk_, topic.c_str(), partition, &lo, &hi,
                                                 startup_timeout_ms))
           != RD_KAFKA_RESP_ERR_NO_ERROR
         && clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds{100});
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
    throw std::runtime_error("cannot read the end offset of Kafka topic '" + topic
                             + "' partition " + std::to_string(partition) + ": "
                             + err_name(err));
  return hi;
}

namespace {

/// Runs one transactional call until it succeeds, retrying what librdkafka
/// calls retriable; anything else throws (after aborting when the error
/// requires it).
template <class Call>
void run_txn(rd_kafka_t* rk, const std::string& topic, const char* what, Call call) {
  auto deadline = clock::now() + std::chrono::milliseconds{60000};
  for (;;) {
    rd_kafka_error_t* e = call();
    if (!e)
      return;
    std::string text = rd_kafka_error_string(e);
    bool retriable = rd_kafka_error_is_retriable(e);
    bool abort = rd_kafka_error_txn_requires_abort(e);
    bool fatal = rd_kafka_error_is_fatal(e);
    auto code = rd_kafka_error_code(e);
    rd_kafka_error_destroy(e);
    if (retriable && !fatal && clock::now() < deadline)
      continue;
    if (abort)
      if (auto* a = rd_kafka_abort_transaction(rk, 30000))
        rd_kafka_error_destroy(a);
    throw std::runtime_error(std::string{"Kafka sink on topic '"} + topic + "': " + what
                             + " failed: " + text + (fatal ? " (fatal)" : "")
                             + hint_for(code));
  }
}

} // namespace

void producer::init_transactions() {
  try {
    run_txn(rk_, topic_, "init_transactions",
            [&] { return rd_kafka_init_transactions(rk_, 60000); });
  } catch (const std::runtime_error&) {
    throw_if_fenced();
    throw;
  }
  check();
}

void producer::begin_transaction() {
  check();
  try {
    run_txn(rk_, topic_, "begin_transaction", [&] { return rd_kafka_begin_transaction(rk_); });
  } catch (const std::runtime_error&) {
    throw_if_fenced();
    throw;
  }
}

void producer::commit_transaction() {
  check();
  try {
    run_txn(rk_, topic_, "commit_transaction",
            [&] { return rd_kafka_commit_transaction(rk_, 60000); });
  } catch (const std::runtime_error&) {
    throw_if_fenced();
    throw;
  }
  rd_kafka_poll(rk_, 0);
  check();
}

void producer::abort_transaction() {
  // One attempt: the job is failing already, and a transaction left open
  // is aborted by the next init_transactions of this id (or the broker's
  // transaction timeout).
  if (rd_kafka_error_t* e = rd_kafka_abort_transaction(rk_, 10000)) {
    std::string text = rd_kafka_error_string(e);
    rd_kafka_error_destroy(e);
    throw std::runtime_error("Kafka sink on topic '" + topic_
                             + "': abort_transaction failed: " + text);
  }
  rd_kafka_poll(rk_, 0);
}

progress read_progress(const std::string& bootstrap_servers, const properties& props,
                       const std::string& topic, std::int32_t partition, std::int64_t from,
                       const std::string& transactional_id) {
  auto* conf = rd_kafka_conf_new();
  for (const auto& [k, v] : props)
    if (shared_with_consumer(k))
      set_or_throw(conf, k, v, topic);
  set_or_throw(conf, "bootstrap.servers", bootstrap_servers, topic);
  // Only committed markers count; the end of a read_committed partition is
  // its last stable offset, which no open transaction of ours holds back
  // (init_transactions resolved it) and no other producer writes.
  set_or_throw(conf, "isolation.level", "read_committed", topic);
  set_or_throw(conf, "enable.partition.eof", "true", topic);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  char err[512];
  std::unique_ptr<rd_kafka_t, rk_deleter> rk{
    rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err)};
  if (!rk) {
    rd_kafka_conf_destroy(conf);
    throw std::runtime_error("cannot create a consumer of Kafka progress topic '" + topic
                             + "': " + err);
  }
  auto* tconf = rd_kafka_topic_conf_new();
  rd_kafka_topic_conf_set(tconf, "auto.offset.reset", "earliest", err, sizeof err);
  auto* rkt = rd_kafka_topic_new(rk.get(), topic.c_str(), tconf);
  if (rd_kafka_consume_start(rkt, partition, from) != 0) {
    auto e = rd_kafka_last_error();
    rd_kafka_topic_destroy(rkt);
    throw std::runtime_error("cannot read Kafka progress topic '" + topic + "' partition "
                             + std::to_string(partition) + ": " + err_name(e));
  }
  progress out;
  std::string failure;
  auto deadline = clock::now() + std::chrono::milliseconds{60000};
  for (;;) {
    if (clock::now() > deadline) {
      failure = "timed out reading to its end";
      break;
    }
    rd_kafka_message_t* m = rd_kafka_consume(rkt, partition, 500);
    if (!m)
      continue;
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      rd_kafka_message_destroy(m);
      break;
    }
    if (m->err) {
      auto code = m->err;
      rd_kafka_message_destroy(m);
      // A broker connection that drops is retried by librdkafka.
      if (code == RD_KAFKA_RESP_ERR__TRANSPORT)
        continue;
      failure = err_name(code);
      break;
    }
    std::string_view key{static_cast<const char*>(m->key), m->key_len};
    std::string_view value{static_cast<const char*>(m->payload), m->len};
    if (key == transactional_id) {
      bool end = value.substr(0, 4) == "end ";
      if (end) {
        out.ended = true;
        value.remove_prefix(4);
      }
      auto id = std::strtoull(std::string{value}.c_str(), nullptr, 10);
      if (!out.max_checkpoint || id > *out.max_checkpoint)
        out.max_checkpoint = id;
    }
    rd_kafka_message_destroy(m);
  }
  rd_kafka_consume_stop(rkt, partition);
  rd_kafka_topic_destroy(rkt);
  if (!failure.empty())
    throw std::runtime_error("cannot read Kafka progress topic '" + topic + "' partition "
                             + std::to_string(partition) + " from offset "
                             + std::to_string(from) + ": " + failure);
  return out;
}

} // namespace weir::ksink
