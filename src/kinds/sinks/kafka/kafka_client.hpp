// SPDX-License-Identifier: Apache-2.0
#pragma once
// The Kafka sink's use of librdkafka (C API): a producer that turns every
// failure into one std::runtime_error naming the topic (and partition), the
// admin calls the sink needs (progress topic, broker limits), and the
// read_committed scan of the progress topic a restore makes.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

struct rd_kafka_s;

namespace weir::ksink {

using properties = std::vector<std::pair<std::string, std::string>>;

/// How long the sink waits for a broker's answer at start (metadata, admin
/// requests) before it fails the job: a broker that cannot be reached is
/// reported within this time.
constexpr int startup_timeout_ms = 10000;

struct header_view {
  std::string_view name;
  std::string_view value;
  bool is_null = false;
};

/// One librdkafka producer. Delivery reports are checked as they are served
/// (`poll`, `flush_all`): the first failed delivery is kept and thrown by
/// the next `check`. Not thread-safe; one subtask owns it.
class producer {
public:
  /// `transactional_id` empty: a plain producer. Throws on a bad property.
  producer(const std::string& bootstrap_servers, const properties& props,
           const std::string& transactional_id, std::string topic);
  ~producer();
  producer(const producer&) = delete;
  producer& operator=(const producer&) = delete;

  /// Fails unless `topic` exists and the cluster answers within
  /// `startup_timeout_ms`.
  void check_topic(const std::string& topic);
  /// Creates `topic` (compacted, `partitions` partitions) when missing, or
  /// adds partitions up to `partitions`.
  void ensure_progress_topic(const std::string& topic, std::int32_t partitions);
  /// The producer's transaction.timeout.ms.
  std::int64_t transaction_timeout_ms() const;
  /// The broker's transaction.max.timeout.ms (DescribeConfigs); none when
  /// the broker does not say.
  std::optional<std::int64_t> broker_transaction_max_timeout_ms();
  /// `topic`'s retention.ms when the broker deletes its messages by the
  /// timestamp the producer gives them (message.timestamp.type CreateTime,
  /// retention.ms >= 0); none otherwise or when the broker does not say.
  std::optional<std::int64_t> topic_create_time_retention_ms(const std::string& topic);
  std::int64_t high_watermark(const std::string& topic, std::int32_t partition);

  void init_transactions();
  void begin_transaction();
  void commit_transaction();
  /// Aborts the open transaction: one attempt, waiting at most 10 s for
  /// the broker; throws when it fails.
  void abort_transaction();

  /// Queues one message (partition -1: librdkafka's partitioner, by key);
  /// waits while the local queue is full. `key` null: no key.
  void produce(const std::string& topic, std::int32_t partition, const std::string* key,
               std::string_view value, std::int64_t timestamp,
               const std::vector<header_view>& headers);
  /// Produces a marker, flushes everything and returns the marker's offset.
  std::int64_t produce_marker(const std::string& topic, std::int32_t partition,
                              const std::string& key, const std::string& value);

  /// Serves delivery reports without waiting.
  void poll();
  /// Throws the first failure seen (failed delivery, fatal error).
  void check();
  /// Waits until every queued message is acknowledged (or failed: throws).
  void flush_all();

  // librdkafka callbacks (C linkage helpers call these).
  void on_delivery(int err, std::int32_t partition, std::int64_t offset, const void* opaque,
                   std::string_view topic, std::size_t bytes);
  void on_error(int err, const char* reason);

private:
  /// Throws `unrecoverable_error` when another producer with this
  /// transactional id fenced this one.
  void throw_if_fenced() const;

  rd_kafka_s* rk_ = nullptr;
  std::string topic_;
  std::string bootstrap_;
  std::string transactional_id_;
  std::string failure_;
  bool failure_purged_ = false; ///< failure_ is a purged message's
  /// failure_ is a message the broker refused as outside a valid transaction
  /// (INVALID_TXN_STATE): often the first sign of being fenced.
  bool failure_txn_state_ = false;
  std::int64_t marker_offset_ = -1;
  std::string last_error_;
  int message_timeout_ms_ = 300000;
};

/// What the progress topic says of one transactional id.
struct progress {
  std::optional<std::uint64_t> max_checkpoint; ///< highest committed marker
  bool ended = false;                          ///< a committed "end" marker
};

/// Reads partition `partition` of `topic` read_committed from offset `from`
/// to its end and collects the markers keyed `transactional_id`.
progress read_progress(const std::string& bootstrap_servers, const properties& props,
                       const std::string& topic, std::int32_t partition, std::int64_t from,
                       const std::string& transactional_id);

} // namespace weir::ksink
