// SPDX-License-Identifier: Apache-2.0
#include "kinds/sources/kafka/kafka_source_reader.hpp"

#include "weir/core/log.hpp"

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafkacpp.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace weir::kafka {

std::size_t owner_of(std::string_view topic, std::int32_t partition, std::size_t parallelism) {
  // FNV-1a, 64 bit: fixed across builds (std::hash is not).
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : topic) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return static_cast<std::size_t>((h + static_cast<std::uint64_t>(partition)) % parallelism);
}

namespace {

using steady = std::chrono::steady_clock;
using RdKafka::ErrorCode;

constexpr std::size_t max_raw_bytes = 4096;
constexpr std::size_t extra_messages_per_poll = 4096;
// Messages taken from librdkafka's consumer queue per call
// (rd_kafka_consume_batch_queue): one lock round per message inside
// librdkafka, but no per-message C++ wrapper and no call per message.
constexpr std::size_t consume_batch_size = 1024;
// How long a poll that has just read at least linger_min_messages, and found
// the queue dry with its batch less than half full, waits for the next fetch
// response (once per poll; librdkafka's timeouts are in milliseconds).
constexpr int linger_ms = 1;
constexpr std::size_t linger_min_messages = 64;
// An empty poll waits before the next: first_idle_poll_delay after a poll
// that read messages (librdkafka's fetch queue ran dry for a moment: the next
// fetch response is usually there within a millisecond), doubling with each
// empty poll up to idle_poll_delay (the job's buffer timeout order of
// magnitude): an idle source does not spin, a busy one does not stall 10 ms
// each time it catches up with the fetcher.
constexpr auto first_idle_poll_delay = std::chrono::microseconds{250};
constexpr auto idle_poll_delay = std::chrono::milliseconds{10};
// Transient errors (a broker down, librdkafka retrying) are logged at most
// this often.
constexpr auto warn_interval = std::chrono::seconds{10};

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence.
// The first `n` bytes of `s` as lowercase hex ("..." after when cut): a
// binary value in a dead letter.
std::string hex_bytes(std::string_view s, std::size_t n) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < s.size() && i < n; ++i) {
    const auto b = static_cast<unsigned char>(s[i]);
    out += hex[b >> 4];
    out += hex[b & 0xF];
  }
  if (s.size() > n)
    out += "...";
  return out;
}

std::string_view cut_utf8(std::string_view s, std::size_t n) noexcept {
  if (s.size() <= n)
    return s;
  std::size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)
    --end;
  return s.substr(0, end);
}

std::string seconds_text(std::chrono::milliseconds d) {
  auto ms = d.count();
  if (ms % 1000 == 0)
    return std::to_string(ms / 1000) + " s";
  return std::to_string(ms) + " ms";
}

// Routes librdkafka's log lines and error events to the connectors logger.
class event_logger final : public RdKafka::EventCb {
public:
  explicit event_logger(std::string who) : who_(std::move(who)) {}

  void event_cb(RdKafka::Event& e) override {
    switch (e.type()) {
      case RdKafka::Event::EVENT_ERROR:
        if (e.fatal()) {
          fatal_ = RdKafka::err2str(e.err()) + ": " + e.str();
          break;
        }
        {
          std::lock_guard lock{last_error_mutex_};
          last_error_ = e.str();
        }
        if (auto now = steady::now(); now - last_warn_ > warn_interval) {
          last_warn_ = now;
          log::connectors().warn("{}: {} (librdkafka retries)", who_, e.str());
        }
        break;
      case RdKafka::Event::EVENT_LOG:
        if (e.severity() <= RdKafka::Event::EVENT_SEVERITY_ERROR) {
          // Log lines come at once from librdkafka's threads (error events
          // only when polled): a failed SASL login is known here first.
          {
            std::lock_guard lock{last_error_mutex_};
            last_error_ = e.str();
          }
          log::connectors().warn("{}: librdkafka: {} {}", who_, e.fac(), e.str());
        } else
          log::connectors().debug("{}: librdkafka: {} {}", who_, e.fac(), e.str());
        break;
      default:
        break;
    }
  }

  const std::string& fatal() const noexcept { return fatal_; }

  /// The last error librdkafka reported and retries (e.g. "SASL authentication
  /// error: ..."), to say why brokers could not be reached; empty if none.
  std::string last_error() const {
    std::lock_guard lock{last_error_mutex_};
    return last_error_;
  }

private:
  std::string who_;
  std::string fatal_;
  mutable std::mutex last_error_mutex_;
  std::string last_error_;
  steady::time_point last_warn_{};
};

class commit_logger final : public RdKafka::OffsetCommitCb {
public:
  explicit commit_logger(std::string who) : who_(std::move(who)) {}
  void offset_commit_cb(ErrorCode err, std::vector<RdKafka::TopicPartition*>&) override {
    if (err != RdKafka::ERR_NO_ERROR && err != RdKafka::ERR__NO_OFFSET)
      log::connectors().warn("{}: committing offsets to the group failed: {}", who_,
                             RdKafka::err2str(err));
  }

private:
  std::string who_;
};

struct partition_state {
  std::string topic;
  std::int32_t partition = 0;
  std::string name;     ///< "topic/partition": the split and watermark partition
  std::int64_t next = -1; ///< the next offset to read; -1 = not resolved yet
  std::int64_t end = -1;  ///< bounded: the stop offset (exclusive)
  bool done = false;      ///< bounded: reached `end`
};

// Frees a TopicPartition list on every path.
struct tp_list {
  std::vector<RdKafka::TopicPartition*> v;
  tp_list() = default;
  tp_list(const tp_list&) = delete;
  tp_list& operator=(const tp_list&) = delete;
  ~tp_list() { RdKafka::TopicPartition::destroy(v); }
  void add(const std::string& topic, std::int32_t partition, std::int64_t offset) {
    v.push_back(RdKafka::TopicPartition::create(topic, partition, offset));
  }
};

class reader final : public source_reader {
public:
  reader(reader_options o, bad_record_handler on_bad)
    : o_(std::move(o)), on_bad_(std::move(on_bad)), builder_(o_.output),
      events_(who()), commits_(who()) {
    const auto& s = o_.spec;
    auto index = [&](const std::string& name) -> std::optional<std::size_t> {
      if (name.empty())
        return std::nullopt;
      return o_.output->index_of(name);
    };
    key_idx_ = index(s.metadata.key);
    topic_idx_ = index(s.metadata.topic);
    partition_idx_ = index(s.metadata.partition);
    offset_idx_ = index(s.metadata.offset);
    timestamp_idx_ = index(s.metadata.timestamp);
    headers_idx_ = index(s.metadata.headers);
    kafka_time_ = s.event_time_from_kafka
                  || (!s.event_time_field.empty() && s.event_time_field == s.metadata.timestamp);
    if (!s.raw) {
      auto d = s.decoder;
      d.csv_header = false; // one record per message
      d.control_lines = false;
      d.event_time_field = kafka_time_ ? "" : s.event_time_field;
      auto dec = format::make_decoder(d);
      if (!dec)
        throw std::runtime_error(who() + ": " + dec.error().message);
      decoder_ = std::move(*dec);
      binary_ = d.kind == format::format_kind::avro || d.kind == format::format_kind::protobuf;
    }
    if (!s.topic_pattern.empty())
      pattern_.emplace(s.topic_pattern, std::regex::ECMAScript);
  }

  ~reader() override {
    // librdkafka: the consumer queue's reference must go before close().
    if (queue_ != nullptr)
      rd_kafka_queue_destroy(queue_);
    if (consumer_) {
      consumer_->close();
      consumer_.reset();
    }
  }

  reader(const reader&) = delete;
  reader& operator=(const reader&) = delete;

  const schema_ptr& output_schema() const override { return o_.output; }

  void open(const operator_context&) override {
    create_consumer();
    discover(steady::now() + o_.spec.connect_timeout, true);
    next_discovery_ = steady::now() + o_.spec.partition_discovery_interval;
  }

  void seek(const std::vector<source_position>& to) override {
    for (const auto& p : to) {
      if (p.unit != position_unit::partition_offset)
        throw std::runtime_error(who() + ": the checkpoint's position of split '" + p.split
                                 + "' counts " + std::string{to_string(p.unit)}
                                 + "s, a Kafka source counts offsets");
      restored_[p.split] = static_cast<std::int64_t>(p.value);
    }
  }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (!started_)
      start();
    else if (!o_.spec.bounded && o_.spec.partition_discovery_interval.count() > 0
             && steady::now() >= next_discovery_) {
      discover(steady::now() + std::chrono::seconds{2}, false);
      next_discovery_ = steady::now() + o_.spec.partition_discovery_interval;
    }
    runs_.clear();
    if (o_.spec.bounded && active_.empty())
      return nullptr;
    if (max_rows == 0)
      max_rows = 1;
    bool idle = true;
    std::size_t consumed = 0;
    const std::size_t max_consumed = max_rows + extra_messages_per_poll;
    bool more = true;
    int timeout_ms = 0;
    bool lingered = false;
    while (more && builder_.rows() < max_rows && consumed < max_consumed) {
      // At most as many messages as rows still fit: each gives one row at
      // most, so no message is ever left over for the next poll.
      const std::size_t want = std::min({consume_batch_size, max_rows - builder_.rows(),
                                         max_consumed - consumed});
      const auto got = rd_kafka_consume_batch_queue(queue_, timeout_ms, batch_.data(), want);
      timeout_ms = 0;
      if (!events_.fatal().empty()) {
        release(0, got < 0 ? 0 : static_cast<std::size_t>(got));
        throw std::runtime_error(who() + ": fatal Kafka error: " + events_.fatal());
      }
      if (got < 0)
        throw std::runtime_error(who() + ": consuming failed: "
                                 + rd_kafka_err2str(rd_kafka_last_error()));
      const auto n = static_cast<std::size_t>(got);
      if (n == 0)
        break; // librdkafka's fetch queue ran dry
      if (n < want) {
        // The queue ran dry. While messages stream in fast (this call
        // brought a fetch response's worth) and the batch is small, wait
        // once for the next fetch response inside librdkafka (woken when it
        // arrives) rather than returning a small batch to be polled again at
        // once: fewer, fuller batches and far fewer wake-ups. An idle or
        // trickling source never waits here.
        if (!lingered && n >= linger_min_messages && builder_.rows() + n < max_rows / 2) {
          lingered = true;
          timeout_ms = linger_ms;
        } else {
          more = false; // poll again later
        }
      }
      consumed += n;
      for (std::size_t i = 0; i < n; ++i) {
        rd_kafka_message_t* m = batch_[i];
        try {
          if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            idle = false;
            on_message(*m);
          } else if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            idle = false;
            on_eof(*m);
          } else if (!on_error(*m)) {
            more = false; // transient: poll again after the idle delay
          }
        } catch (...) {
          release(i, n);
          throw;
        }
        rd_kafka_message_destroy(m);
        batch_[i] = nullptr;
      }
      if (o_.spec.bounded && active_.empty())
        break;
    }
    empty_polls_ = idle ? std::min(empty_polls_ + 1, 16U) : 0;
    return builder_.finish();
  }

  std::vector<source_position> positions() const override {
    std::vector<source_position> out;
    if (!started_) {
      // Nothing read yet: what a restore gave, if anything.
      for (const auto& [split, v] : restored_)
        out.push_back(source_position{split, position_unit::partition_offset,
                                      static_cast<std::uint64_t>(v)});
      return out;
    }
    for (const auto& p : parts_) {
      if (p.next < 0)
        continue;
      out.push_back(source_position{p.name, position_unit::partition_offset,
                                    static_cast<std::uint64_t>(p.next)});
      if (o_.spec.bounded && p.end >= 0)
        out.push_back(source_position{p.name + "@end", position_unit::partition_offset,
                                      static_cast<std::uint64_t>(p.end)});
    }
    return out;
  }

  const std::vector<std::string>* partitions() const override { return &active_; }

  std::optional<std::int64_t> lag() override {
    if (!started_ || !consumer_)
      return std::nullopt;
    std::int64_t total = 0;
    for (const auto& p : parts_) {
      if (p.next < 0 || p.done)
        continue;
      std::int64_t low = 0;
      std::int64_t high = -1;
      // Cached from fetch responses: no broker round trip.
      if (consumer_->get_watermark_offsets(p.topic, p.partition, &low, &high)
            != RdKafka::ERR_NO_ERROR
          || high < 0)
        continue;
      total += std::max<std::int64_t>(0, (o_.spec.bounded && p.end >= 0 ? std::min(high, p.end) : high) - p.next);
    }
    return total;
  }

  const std::vector<partition_run>* partition_runs() const override { return &runs_; }

  std::chrono::nanoseconds next_poll_delay() const override {
    if (empty_polls_ == 0)
      return std::chrono::nanoseconds{0};
    const auto d = std::chrono::nanoseconds{first_idle_poll_delay} * (1U << (empty_polls_ - 1));
    return std::min(d, std::chrono::nanoseconds{idle_poll_delay});
  }

  void on_checkpoint(std::uint64_t checkpoint_id) override {
    if (o_.spec.group_id.empty() || !started_)
      return;
    std::vector<std::pair<const partition_state*, std::int64_t>> offsets;
    for (const auto& p : parts_)
      if (p.next >= 0)
        offsets.emplace_back(&p, p.next);
    pending_commits_.emplace_back(checkpoint_id, std::move(offsets));
    // Checkpoints that never complete must not pile up.
    while (pending_commits_.size() > 16)
      pending_commits_.pop_front();
  }

  void notify_checkpoint_complete(std::uint64_t checkpoint_id) override {
    if (pending_commits_.empty() || !consumer_)
      return;
    std::optional<std::size_t> found;
    for (std::size_t i = 0; i < pending_commits_.size(); ++i)
      if (pending_commits_[i].first == checkpoint_id)
        found = i;
    if (!found)
      return;
    tp_list l;
    for (const auto& [p, off] : pending_commits_[*found].second)
      l.add(p->topic, p->partition, off);
    pending_commits_.erase(pending_commits_.begin(),
                           pending_commits_.begin() + static_cast<std::ptrdiff_t>(*found) + 1);
    if (l.v.empty())
      return;
    // For monitoring only (docs/concepts/checkpoints.md): a failure is logged, not fatal.
    if (auto err = consumer_->commitAsync(l.v); err != RdKafka::ERR_NO_ERROR)
      log::connectors().warn("{}: committing offsets of checkpoint {} failed: {}", who(),
                             checkpoint_id, RdKafka::err2str(err));
  }

private:
  std::string who() const {
    return "kafka source '" + o_.source_name + "' subtask " + std::to_string(o_.subtask)
           + "/" + std::to_string(o_.parallelism);
  }

  std::string topics_text() const {
    if (!o_.spec.topic_pattern.empty())
      return "topics matching '" + o_.spec.topic_pattern + "'";
    std::string out;
    for (const auto& t : o_.spec.topics)
      out += (out.empty() ? "topic '" : ", '") + t + "'";
    return out;
  }

  void set(RdKafka::Conf& conf, const std::string& k, const std::string& v) {
    std::string err;
    if (conf.set(k, v, err) != RdKafka::Conf::CONF_OK)
      throw std::runtime_error(who() + ": librdkafka property " + k + " = '" + v + "': " + err);
  }

  bool has_property(std::string_view k) const {
    for (const auto& [name, v] : o_.spec.properties)
      if (name == k)
        return true;
    return false;
  }

  std::string property(std::string_view k, std::string dflt) const {
    for (const auto& [name, v] : o_.spec.properties)
      if (name == k)
        dflt = v;
    return dflt;
  }

  void create_consumer() {
    const auto& s = o_.spec;
    std::unique_ptr<RdKafka::Conf> conf{RdKafka::Conf::create(RdKafka::Conf::CONF_GLOBAL)};
    std::string err;
    if (conf->set("event_cb", static_cast<RdKafka::EventCb*>(&events_), err)
          != RdKafka::Conf::CONF_OK
        || conf->set("offset_commit_cb", static_cast<RdKafka::OffsetCommitCb*>(&commits_), err)
             != RdKafka::Conf::CONF_OK)
      throw std::runtime_error(who() + ": " + err);
    if (!s.bootstrap_servers.empty())
      set(*conf, "bootstrap.servers", s.bootstrap_servers);
    set(*conf, "client.id", "weir-" + o_.job_name + "-" + o_.source_name + "-"
                              + std::to_string(o_.subtask));
    // Weir's defaults, which `properties` may change.
    set(*conf, "isolation.level", "read_committed");
    set(*conf, "auto.offset.reset", "earliest");
    // librdkafka 2.0.2 stops fetching a partition once the local queue holds
    // queued.min.messages (default 100,000) and looks again only when its
    // broker thread next wakes, up to 1 s later (rd_kafka_max_block_ms;
    // librdkafka 2.2 added fetch.queue.backoff.ms for this). weir drains
    // 100,000 messages in about 0.1 s, so a run stalled for most of every
    // second (Nexmark q0 over 1.84M messages at parallelism 1 took
    // 3.2-7.2 s, and 1.3-1.4 s with this). With a message count this high,
    // queued.max.messages.kbytes (64 MiB by default) bounds the queue instead.
    set(*conf, "queued.min.messages", "1000000");
    for (const auto& [k, v] : s.properties)
      set(*conf, k, v);
    // What weir manages (the kind rejects these in `properties`): offsets
    // live in checkpoints; the group only receives them for monitoring.
    set(*conf, "group.id", s.group_id.empty() ? "weir-" + o_.job_name + "-" + o_.source_name
                                              : s.group_id);
    set(*conf, "enable.auto.commit", "false");
    set(*conf, "enable.auto.offset.store", "false");
    set(*conf, "enable.partition.eof", "true");
    consumer_.reset(RdKafka::KafkaConsumer::create(conf.get(), err));
    if (!consumer_)
      throw std::runtime_error(who() + ": cannot create a Kafka consumer: " + err);
    // The queue KafkaConsumer::consume serves (fetched messages, consumer
    // errors, and the callbacks of events and offset commits), read in batches.
    queue_ = rd_kafka_queue_get_consumer(consumer_->c_ptr());
    if (queue_ == nullptr)
      throw std::runtime_error(who() + ": librdkafka gave no consumer queue");
  }

  int remaining_ms(steady::time_point deadline, int cap_ms) const {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - steady::now());
    return static_cast<int>(std::clamp<std::int64_t>(left.count(), 1, cap_ms));
  }

  [[noreturn]] void unreachable(const std::string& what, ErrorCode err) const {
    throw std::runtime_error(who() + ": cannot reach the Kafka brokers at "
                             + (o_.spec.bootstrap_servers.empty() ? std::string{"(properties)"}
                                                                  : o_.spec.bootstrap_servers)
                             + " within " + seconds_text(o_.spec.connect_timeout) + " ("
                             + what + "): " + RdKafka::err2str(err)
                             + [&] {
                                 auto last = events_.last_error();
                                 return last.empty() ? std::string{}
                                                     : " (last error: " + last + ")";
                               }());
  }

  // The (topic, partition count) pairs to read: every topic of `topics`, or
  // those matching the pattern. `strict` (at start): a missing or forbidden
  // topic, or brokers unreachable until `deadline`, throw; otherwise (periodic
  // discovery) a failure is logged and nothing changes.
  void discover(steady::time_point deadline, bool strict) {
    std::vector<std::pair<std::string, std::size_t>> found;
    auto fail = [&](const std::string& msg) {
      if (strict)
        throw std::runtime_error(msg);
      log::connectors().warn("{} (partition discovery)", msg);
    };
    if (pattern_) {
      RdKafka::Metadata* raw = nullptr;
      ErrorCode err = RdKafka::ERR__TIMED_OUT;
      while (true) {
        err = consumer_->metadata(true, nullptr, &raw, remaining_ms(deadline, 5000));
        if (err == RdKafka::ERR_NO_ERROR || steady::now() >= deadline)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds{200});
      }
      std::unique_ptr<RdKafka::Metadata> md{raw};
      if (err != RdKafka::ERR_NO_ERROR) {
        if (strict)
          unreachable("metadata of " + topics_text(), err);
        return;
      }
      for (const auto* t : *md->topics())
        if (t->err() == RdKafka::ERR_NO_ERROR && std::regex_match(t->topic(), *pattern_))
          found.emplace_back(t->topic(), t->partitions()->size());
      if (found.empty() && strict)
        log::connectors().warn("{}: no topic matches '{}' yet", who(), o_.spec.topic_pattern);
    } else {
      for (const auto& name : o_.spec.topics) {
        std::string e;
        std::unique_ptr<RdKafka::Topic> topic{
          RdKafka::Topic::create(consumer_.get(), name, nullptr, e)};
        if (!topic)
          return fail(who() + ": topic '" + name + "': " + e);
        while (true) {
          RdKafka::Metadata* raw = nullptr;
          auto err = consumer_->metadata(false, topic.get(), &raw, remaining_ms(deadline, 5000));
          std::unique_ptr<RdKafka::Metadata> md{raw};
          ErrorCode terr = err;
          std::size_t n = 0;
          if (err == RdKafka::ERR_NO_ERROR) {
            for (const auto* t : *md->topics())
              if (t->topic() == name) {
                terr = t->err();
                n = t->partitions()->size();
              }
          }
          if (terr == RdKafka::ERR_NO_ERROR && n > 0) {
            found.emplace_back(name, n);
            break;
          }
          if (terr == RdKafka::ERR_UNKNOWN_TOPIC_OR_PART)
            return fail(who() + ": topic '" + name + "' does not exist (brokers "
                        + o_.spec.bootstrap_servers + ")");
          if (terr == RdKafka::ERR_TOPIC_AUTHORIZATION_FAILED)
            return fail(who() + ": not authorized to read topic '" + name + "': "
                        + RdKafka::err2str(terr));
          if (steady::now() >= deadline) {
            if (!strict)
              return;
            if (err != RdKafka::ERR_NO_ERROR)
              unreachable("metadata of topic '" + name + "'", err);
            throw std::runtime_error(who() + ": topic '" + name + "' is not available within "
                                     + seconds_text(o_.spec.connect_timeout) + ": "
                                     + RdKafka::err2str(terr));
          }
          std::this_thread::sleep_for(std::chrono::milliseconds{200});
        }
      }
    }
    std::sort(found.begin(), found.end());
    bool added = false;
    for (const auto& [topic, n] : found) {
      for (std::size_t i = 0; i < n; ++i) {
        auto part = static_cast<std::int32_t>(i);
        if (owner_of(topic, part, o_.parallelism) != o_.subtask)
          continue;
        auto name = topic + "/" + std::to_string(part);
        if (known_.count(name) != 0)
          continue;
        known_.insert(name);
        partition_state p;
        p.topic = topic;
        p.partition = part;
        p.name = std::move(name);
        parts_.push_back(std::move(p));
        added = true;
        if (started_)
          log::connectors().info("{}: reads new partition {}", who(), parts_.back().name);
      }
    }
    if (added && started_) {
      resolve(deadline, true);
      assign();
    }
  }

  // Resolves the offsets of partitions not resolved yet: a checkpointed
  // offset, else the start position (`discovered`: a partition that appeared
  // while running starts at its earliest offset, as in Flink); bounded: the
  // stop offset too.
  void resolve(steady::time_point deadline, bool discovered) {
    const auto& s = o_.spec;
    std::vector<partition_state*> todo;
    for (auto& p : parts_) {
      if (p.next >= 0)
        continue;
      if (auto it = restored_.find(p.name); it != restored_.end())
        p.next = it->second;
      if (auto it = restored_.find(p.name + "@end"); it != restored_.end())
        p.end = it->second;
      todo.push_back(&p);
    }
    if (todo.empty())
      return;
    auto mode = discovered ? kafka_start_offset::earliest : s.start;
    if (mode == kafka_start_offset::committed) {
      tp_list l;
      for (auto* p : todo)
        if (p->next < 0)
          l.add(p->topic, p->partition, RdKafka::Topic::OFFSET_INVALID);
      if (!l.v.empty()) {
        auto err = consumer_->committed(l.v, remaining_ms(deadline, 30000));
        if (err != RdKafka::ERR_NO_ERROR)
          unreachable("committed offsets of group '" + s.group_id + "'", err);
        for (auto* tp : l.v)
          for (auto* p : todo)
            if (p->topic == tp->topic() && p->partition == tp->partition() && tp->offset() >= 0)
              p->next = tp->offset();
      }
    } else if (mode == kafka_start_offset::timestamp) {
      tp_list l;
      for (auto* p : todo)
        if (p->next < 0)
          l.add(p->topic, p->partition, s.start_timestamp_ms);
      if (!l.v.empty()) {
        auto err = consumer_->offsetsForTimes(l.v, remaining_ms(deadline, 30000));
        if (err != RdKafka::ERR_NO_ERROR)
          unreachable("offsets for timestamp " + std::to_string(s.start_timestamp_ms), err);
        for (auto* tp : l.v)
          for (auto* p : todo)
            if (p->topic == tp->topic() && p->partition == tp->partition() && tp->offset() >= 0)
              p->next = tp->offset();
        // No record at or after the timestamp: the partition's end (below).
      }
    }
    // Earliest, latest, the end of a bounded partition, and what the modes
    // above left open: the partition's low and high watermarks.
    const bool fallback_latest = mode == kafka_start_offset::latest
                                 || mode == kafka_start_offset::timestamp
                                 || property("auto.offset.reset", "earliest") == "latest";
    for (auto* p : todo) {
      if (p->next >= 0 && (!s.bounded || p->end >= 0))
        continue;
      std::int64_t low = 0;
      std::int64_t high = 0;
      ErrorCode err = RdKafka::ERR__TIMED_OUT;
      while (true) {
        err = consumer_->query_watermark_offsets(p->topic, p->partition, &low, &high,
                                                 remaining_ms(deadline, 5000));
        if (err == RdKafka::ERR_NO_ERROR || steady::now() >= deadline)
          break;
        std::this_thread::sleep_for(std::chrono::milliseconds{200});
      }
      if (err != RdKafka::ERR_NO_ERROR)
        unreachable("offsets of partition " + p->name, err);
      if (p->next < 0)
        p->next = fallback_latest && mode != kafka_start_offset::earliest ? high : low;
      if (s.bounded && p->end < 0)
        p->end = high;
    }
  }

  void start() {
    started_ = true;
    resolve(steady::now() + o_.spec.connect_timeout, false);
    assign();
  }

  // (Re)assigns every partition not done, from its next offset.
  void assign() {
    tp_list l;
    active_.clear();
    for (auto& p : parts_) {
      if (o_.spec.bounded && p.end >= 0 && p.next >= p.end)
        p.done = true;
      if (p.done)
        continue;
      l.add(p.topic, p.partition, p.next);
      active_.push_back(p.name);
    }
    auto err = consumer_->assign(l.v);
    if (err != RdKafka::ERR_NO_ERROR)
      throw std::runtime_error(who() + ": assigning partitions failed: " + RdKafka::err2str(err));
    log::connectors().debug("{}: reads {} partition(s)", who(), active_.size());
  }

  // Destroys the messages [from, to) of batch_ (on a throw mid-batch).
  void release(std::size_t from, std::size_t to) noexcept {
    for (std::size_t i = from; i < to; ++i)
      if (batch_[i] != nullptr) {
        rd_kafka_message_destroy(batch_[i]);
        batch_[i] = nullptr;
      }
  }

  // The partition of a message. Looks its topic up by librdkafka's topic
  // handle (no topic name string per message).
  partition_state* find(const rd_kafka_message_t& m) {
    const auto* rkm = &m;
    const std::int32_t partition = rkm->partition;
    if (last_ != nullptr && last_->partition == partition && last_rkt_ == rkm->rkt)
      return last_;
    if (rkm->rkt == nullptr)
      return nullptr;
    const std::string_view topic = rd_kafka_topic_name(rkm->rkt);
    for (auto& p : parts_)
      if (p.partition == partition && p.topic == topic) {
        last_rkt_ = rkm->rkt;
        return last_ = &p;
      }
    return nullptr;
  }

  void mark_done(partition_state& p) {
    p.done = true;
    active_.erase(std::remove(active_.begin(), active_.end(), p.name), active_.end());
    tp_list l;
    l.add(p.topic, p.partition, RdKafka::Topic::OFFSET_INVALID);
    consumer_->pause(l.v);
  }

  void on_eof(const rd_kafka_message_t& m) {
    auto* p = find(m);
    // read_committed: the end of what is visible (the last stable offset).
    if (p != nullptr && o_.spec.bounded && !p->done && m.offset >= p->end)
      mark_done(*p);
  }

  // A consumer error: false = stop polling for now (transient), true =
  // go on; throws for what will not heal (docs/concepts/bad-input.md).
  bool on_error(const rd_kafka_message_t& m) {
    const std::string topic = m.rkt != nullptr ? rd_kafka_topic_name(m.rkt) : "";
    const auto where = topic.empty() ? std::string{}
                                     : " topic '" + topic + "' partition "
                                         + std::to_string(m.partition) + ":";
    // As RdKafka::Message::errstr: the message's text, else the code's.
    const char* text = rd_kafka_message_errstr(&m);
    const std::string errstr = text != nullptr ? text : rd_kafka_err2str(m.err);
    switch (m.err) {
      case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
      case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
      case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
      case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      case RD_KAFKA_RESP_ERR__FATAL:
      case RD_KAFKA_RESP_ERR__AUTHENTICATION:
      case RD_KAFKA_RESP_ERR_SASL_AUTHENTICATION_FAILED:
        throw std::runtime_error(who() + ":" + where + " " + errstr);
      default:
        if (auto now = steady::now(); now - last_warn_ > warn_interval) {
          last_warn_ = now;
          log::connectors().warn("{}:{} {} (librdkafka retries)", who(), where, errstr);
        }
        return false;
    }
  }

  void set_last_int(std::optional<std::size_t> idx, std::int64_t v) {
    if (!idx)
      return;
    auto& c = builder_.col(*idx);
    c.ints.back() = v;
    c.validity.back() = 1;
  }

  void set_last_string(std::optional<std::size_t> idx, std::string_view v) {
    if (!idx)
      return;
    // The row is committed with a null here: give its (last) slot a value.
    auto& c = builder_.col(*idx);
    c.chars.append(v);
    c.offsets.back() = static_cast<std::uint32_t>(c.chars.size());
    c.validity.back() = 1;
  }

  // Decodes one message straight from librdkafka's buffer into builder_.
  void on_message(const rd_kafka_message_t& m) {
    auto* p = find(m);
    if (p == nullptr || p->done)
      return; // fetched before a pause
    const std::int64_t offset = m.offset;
    if (o_.spec.bounded && offset >= p->end) {
      mark_done(*p);
      return;
    }
    p->next = offset + 1;
    std::string_view value;
    if (m.payload != nullptr)
      value = std::string_view{static_cast<const char*>(m.payload), m.len};
    // A text record's line end is not part of it; an Avro datum's last
    // byte may be 0x0a or 0x0d.
    while (!binary_ && !value.empty() && (value.back() == '\n' || value.back() == '\r'))
      value.remove_suffix(1);
    rd_kafka_timestamp_type_t ts_type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    const std::int64_t ts = rd_kafka_message_timestamp(&m, &ts_type);
    const bool has_ts = ts_type != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
    reason_.clear();
    auto& reason = reason_;
    auto st = format::record_decoder::status::ok;
    if (kafka_time_ && !has_ts) {
      st = format::record_decoder::status::bad;
      reason = "the record has no Kafka timestamp";
    } else if (decoder_) {
      st = decoder_->decode(value, builder_, reason);
    } else {
      if (m.payload == nullptr)
        builder_.col(0).append_null();
      else
        builder_.col(0).append_string(value);
      builder_.commit_row();
    }
    if (st == format::record_decoder::status::ok) {
      if (kafka_time_)
        builder_.timestamps().push_back(ts);
      if (key_idx_ && m.key != nullptr)
        set_last_string(key_idx_, std::string_view{static_cast<const char*>(m.key), m.key_len});
      if (topic_idx_)
        set_last_string(topic_idx_, p->topic);
      set_last_int(partition_idx_, p->partition);
      set_last_int(offset_idx_, offset);
      if (has_ts)
        set_last_int(timestamp_idx_, ts);
      if (headers_idx_)
        set_last_string(headers_idx_, headers_json(m));
      if (!runs_.empty() && runs_.back().partition == &p->name)
        runs_.back().end = builder_.rows();
      else
        runs_.push_back(partition_run{builder_.rows(), &p->name});
    } else if (st != format::record_decoder::status::skipped) {
      // bad (or a control line, which a Kafka source does not read)
      if (reason.empty())
        reason = "not a record";
      bad_record b{p->name, 0, static_cast<std::uint64_t>(offset), reason,
                   binary_ ? hex_bytes(value, max_raw_bytes / 2)
                           : std::string{cut_utf8(value, max_raw_bytes)}};
      b.source = bad_record_source::kafka;
      b.topic = p->topic;
      b.partition = p->partition;
      if (m.key != nullptr)
        b.key = std::string{cut_utf8(
          std::string_view{static_cast<const char*>(m.key), m.key_len}, max_raw_bytes)};
      if (has_ts)
        b.timestamp = ts;
      on_bad_(b);
    }
    if (o_.spec.bounded && p->next >= p->end)
      mark_done(*p);
  }

  // The headers as a JSON object, in a reused buffer (valid until the next
  // call): {"name": "value" | null, ...}, in the order the record has them.
  const std::string& headers_json(const rd_kafka_message_t& m) {
    auto& out = headers_text_;
    out.assign(1, '{');
    rd_kafka_headers_t* h = nullptr;
    // The const_cast: librdkafka parses the headers lazily into the message.
    if (rd_kafka_message_headers(const_cast<rd_kafka_message_t*>(&m), &h)
          == RD_KAFKA_RESP_ERR_NO_ERROR
        && h != nullptr) {
      const char* name = nullptr;
      const void* value = nullptr;
      std::size_t size = 0;
      for (std::size_t i = 0;
           rd_kafka_header_get_all(h, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
           ++i) {
        if (i > 0)
          out += ',';
        format::append_json_string(name, out);
        out += ':';
        if (value == nullptr)
          out += "null";
        else
          format::append_json_string(std::string_view{static_cast<const char*>(value), size},
                                     out);
      }
    }
    out += '}';
    return out;
  }

  reader_options o_;
  bad_record_handler on_bad_;
  batch_builder builder_;
  std::unique_ptr<format::record_decoder> decoder_;
  std::optional<std::regex> pattern_;
  std::optional<std::size_t> key_idx_, topic_idx_, partition_idx_, offset_idx_, timestamp_idx_,
    headers_idx_;
  bool kafka_time_ = false;
  bool binary_ = false; ///< Avro and Protobuf values: kept whole, dead-lettered as hex

  event_logger events_;
  commit_logger commits_;
  std::unique_ptr<RdKafka::KafkaConsumer> consumer_;
  rd_kafka_queue_t* queue_ = nullptr; ///< the consumer queue (a reference)
  std::array<rd_kafka_message_t*, consume_batch_size> batch_{};
  std::string reason_;       ///< a bad record's reason (reused)
  std::string headers_text_; ///< headers_json's buffer

  std::deque<partition_state> parts_; ///< stable addresses: runs point at names
  std::set<std::string> known_;
  std::vector<std::string> active_;   ///< partitions(): assigned and not done
  std::vector<partition_run> runs_;
  partition_state* last_ = nullptr;
  const rd_kafka_topic_t* last_rkt_ = nullptr; ///< the topic handle of last_
  std::map<std::string, std::int64_t> restored_;
  std::deque<std::pair<std::uint64_t,
                       std::vector<std::pair<const partition_state*, std::int64_t>>>>
    pending_commits_;
  steady::time_point next_discovery_{};
  steady::time_point last_warn_{};
  bool started_ = false;
  unsigned empty_polls_ = 0; ///< polls in a row that read nothing
};

} // namespace

source_reader_ptr make_reader(reader_options opts, bad_record_handler on_bad) {
  return std::make_unique<reader>(std::move(opts), std::move(on_bad));
}

} // namespace weir::kafka
