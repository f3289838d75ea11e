// SPDX-License-Identifier: Apache-2.0
// The Kafka sink's runtime: one librdkafka producer per subtask. The
// protocol of exactly_once (a transaction per checkpoint, a copy of each
// pre-committed transaction in the checkpoint, a marker per transaction in
// the progress topic) is described in README.md beside this file.
#include "weir/kafka/sink.hpp"

#include "kafka_client.hpp"

#include "weir/core/log.hpp"
#include "weir/core/test_fault.hpp"
#include "weir/expr/expression.hpp"

#include <librdkafka/rdkafka.h>
#include <spdlog/logger.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace weir {

namespace {

/// The default Avro record name of a sink: `<job>.<sink>`, each part with
/// the characters an Avro name does not allow replaced by '_' (and a '_'
/// before a leading digit).
std::string default_record_name(const std::string& job, const std::string& sink) {
  auto part = [](const std::string& s, const char* fallback) {
    std::string out = s.empty() ? fallback : s;
    for (auto& ch : out)
      if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_')
        ch = '_';
    if (std::isdigit(static_cast<unsigned char>(out[0])))
      out.insert(0, "_");
    return out;
  };
  return part(job, "weir") + "." + part(sink, "sink");
}

constexpr const char* state_magic = "weir-kafka-sink v1";

/// One message as the sink produces it; exactly_once keeps these copies of
/// every transaction that is not committed yet (and puts them in the
/// checkpoint).
struct out_header {
  std::string name;
  std::string value;
  bool is_null = false;
};

struct out_message {
  bool has_key = false;
  std::string key;
  std::string value;
  std::int64_t timestamp = -1; ///< ms; -1: none (the producer's time)
  std::vector<out_header> headers;
};

/// The rows between two barriers: a transaction's worth.
struct segment {
  std::uint64_t checkpoint_id = 0; ///< 0 while open
  std::vector<out_message> messages;
  /// Produced into the producer's open transaction (else only kept here).
  bool in_transaction = false;
  /// Offset of its marker in the progress partition; -1: none written.
  std::int64_t marker_offset = -1;
};

// -- operator state --------------------------------------------------------

void put_u64(std::string& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i)
    out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void put_str(std::string& out, std::string_view s) {
  put_u64(out, s.size());
  out.append(s);
}

class state_reader {
public:
  explicit state_reader(std::string_view bytes) : in_(bytes) {}

  std::uint64_t u64() {
    need(8);
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in_[pos_ + i])) << (8 * i);
    pos_ += 8;
    return v;
  }
  std::string str() {
    auto n = u64();
    need(n);
    std::string s{in_.substr(pos_, n)};
    pos_ += n;
    return s;
  }
  bool done() const { return pos_ == in_.size(); }

private:
  void need(std::uint64_t n) {
    if (in_.size() - pos_ < n)
      throw std::runtime_error("Kafka sink: truncated operator state");
  }
  std::string_view in_;
  std::size_t pos_ = 0;
};

/// The sink's operator state: who wrote it, where a restore starts to look
/// for its markers, and the transactions not known to be committed.
struct sink_state {
  std::string transactional_id;
  std::int32_t progress_partition = 0;
  std::int64_t scan_from = 0;
  std::vector<segment> pending;
};

std::string encode_state(const sink_state& s) {
  std::string out = state_magic;
  out.push_back('\n');
  put_str(out, s.transactional_id);
  put_u64(out, static_cast<std::uint64_t>(s.progress_partition));
  put_u64(out, static_cast<std::uint64_t>(s.scan_from));
  put_u64(out, s.pending.size());
  for (const auto& seg : s.pending) {
    put_u64(out, seg.checkpoint_id);
    put_u64(out, seg.messages.size());
    for (const auto& m : seg.messages) {
      put_u64(out, m.has_key ? 1 : 0);
      put_str(out, m.key);
      put_str(out, m.value);
      put_u64(out, static_cast<std::uint64_t>(m.timestamp));
      put_u64(out, m.headers.size());
      for (const auto& h : m.headers) {
        put_str(out, h.name);
        put_u64(out, h.is_null ? 1 : 0);
        put_str(out, h.value);
      }
    }
  }
  return out;
}

sink_state decode_state(std::string_view bytes) {
  std::string magic = std::string{state_magic} + "\n";
  if (bytes.substr(0, magic.size()) != magic)
    throw std::runtime_error("Kafka sink: unreadable operator state (not written by a "
                             "Kafka sink of this version)");
  state_reader r{bytes.substr(magic.size())};
  sink_state s;
  s.transactional_id = r.str();
  s.progress_partition = static_cast<std::int32_t>(r.u64());
  s.scan_from = static_cast<std::int64_t>(r.u64());
  auto n = r.u64();
  for (std::uint64_t i = 0; i < n; ++i) {
    segment seg;
    seg.checkpoint_id = r.u64();
    auto count = r.u64();
    seg.messages.reserve(count);
    for (std::uint64_t j = 0; j < count; ++j) {
      out_message m;
      m.has_key = r.u64() != 0;
      m.key = r.str();
      m.value = r.str();
      m.timestamp = static_cast<std::int64_t>(r.u64());
      auto h = r.u64();
      for (std::uint64_t k = 0; k < h; ++k) {
        out_header hd;
        hd.name = r.str();
        hd.is_null = r.u64() != 0;
        hd.value = r.str();
        m.headers.push_back(std::move(hd));
      }
      seg.messages.push_back(std::move(m));
    }
    s.pending.push_back(std::move(seg));
  }
  if (!r.done())
    throw std::runtime_error("Kafka sink: trailing bytes in operator state");
  return s;
}

/// `WEIR_FAULT=kill_after_checkpoint_complete[:N]` (test-only): SIGKILL the
/// process at the Nth (default 1st) checkpoint completion that has a
/// transaction to commit, after the checkpoint completed and before the
/// commit: the crash the recovery protocol exists for.
std::uint64_t fault_kill_after_complete() {
  return weir::internal::test_fault("kill_after_checkpoint_complete");
}

// -- the operator ------------------------------------------------------------

class kafka_sink final : public stream_operator {
public:
  kafka_sink(kafka::sink spec, kafka_sink_job job, schema_ptr schema,
             std::optional<expr::compiled_expression> key,
             std::vector<std::pair<std::string, expr::compiled_expression>> headers)
    : spec_(std::move(spec)),
      job_(std::move(job)),
      schema_(std::move(schema)),
      encoder_(format::make_encoder(spec_.format)),
      key_(std::move(key)),
      headers_(std::move(headers)) {
    if (spec_.progress_topic.empty())
      spec_.progress_topic = spec_.topic + ".weir-progress";
  }

  ~kafka_sink() override = default;

  kafka_sink(const kafka_sink&) = delete;
  kafka_sink& operator=(const kafka_sink&) = delete;

  void open(const operator_context& ctx) override {
    subtask_ = ctx.subtask_index;
    if (job_.sink_name.empty())
      job_.sink_name = ctx.operator_name;
    parallelism_ = std::max<std::size_t>(ctx.parallelism, 1);
    transactional_id_ = spec_.transactional_id_prefix + "-" + job_.job_name + "-"
                        + job_.sink_name + "-" + std::to_string(subtask_);
    kill_at_ = fault_kill_after_complete();
    if (spec_.format == format::format_kind::avro)
      open_avro();
    bool eo = spec_.delivery == kafka_delivery::exactly_once;
    producer_ = std::make_unique<ksink::producer>(
      spec_.bootstrap_servers, spec_.properties, eo ? transactional_id_ : std::string{},
      spec_.topic);
    producer_->check_topic(spec_.topic);
    retention_ms_ = producer_->topic_create_time_retention_ms(spec_.topic);
    if (!eo)
      return;
    check_transaction_timeout();
    progress_partition_ = static_cast<std::int32_t>(subtask_);
    producer_->ensure_progress_topic(spec_.progress_topic,
                                     static_cast<std::int32_t>(parallelism_));
    // Fences the previous producer of this transactional id and aborts the
    // transaction it left open (or completes one it had committed).
    producer_->init_transactions();
    committed_end_ = producer_->high_watermark(spec_.progress_topic, progress_partition_);
    log::connectors().info("Kafka sink '{}' subtask {}: transactional id '{}', progress "
                           "topic '{}' partition {}",
                           job_.sink_name, subtask_, transactional_id_,
                           spec_.progress_topic, progress_partition_);
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch || batch->num_rows == 0)
      return;
    rows_in_ += batch->num_rows;
    producer_->poll();
    if (drop_replay_) {
      dropped_ += batch->num_rows;
      return;
    }
    std::optional<column> keys;
    if (key_)
      keys = key_->evaluate(*batch);
    std::vector<column> header_cols;
    for (const auto& [name, e] : headers_)
      header_cols.push_back(e.evaluate(*batch));
    bool eo = spec_.delivery == kafka_delivery::exactly_once;
    // Messages the broker's next retention check deletes (their timestamp,
    // the row's event time, is older than the topic's retention.ms).
    std::int64_t expired_before = -1;
    if (retention_ms_ && batch->has_timestamps())
      expired_before = std::chrono::duration_cast<std::chrono::milliseconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count()
                       - *retention_ms_;
    for (std::size_t row = 0; row < batch->num_rows; ++row) {
      out_message m;
      if (keys && keys->is_valid(row)) {
        m.has_key = true;
        m.key = text_of(*keys, row);
      }
      if (avro_) {
        m.value = frame_;
        avro_->encode(*batch, row, m.value);
      } else {
        encoder_->encode(*batch, row, m.value);
        if (!m.value.empty() && m.value.back() == '\n')
          m.value.pop_back();
      }
      if (batch->has_timestamps() && batch->timestamps[row] >= 0)
        m.timestamp = batch->timestamps[row];
      if (m.timestamp >= 0 && m.timestamp < expired_before && expired_++ == 0)
        log::connectors().warn(
          "Kafka sink '{}' subtask {}: a row's event time ({} ms) is older than topic '{}''s "
          "retention.ms ({} ms): the broker deletes such messages at its next retention "
          "check, after they are delivered (and committed); set retention.ms = -1 or "
          "message.timestamp.type = LogAppendTime on the topic to keep them",
          job_.sink_name, subtask_, m.timestamp, spec_.topic, *retention_ms_);
      for (std::size_t h = 0; h < header_cols.size(); ++h) {
        out_header hd;
        hd.name = headers_[h].first;
        if (header_cols[h].is_valid(row))
          hd.value = text_of(header_cols[h], row);
        else
          hd.is_null = true;
        m.headers.push_back(std::move(hd));
      }
      if (!eo) {
        produce(spec_.topic, -1, m);
        continue;
      }
      if (live()) {
        begin_if_needed();
        produce(spec_.topic, -1, m);
        current_.in_transaction = true;
      }
      current_.messages.push_back(std::move(m));
    }
    producer_->check();
  }

  void process_watermark(event_time, output_collector&) override {
    // The end of the stream: nothing to forward.
  }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    switch (spec_.delivery) {
      case kafka_delivery::none:
        producer_->poll();
        producer_->check();
        return;
      case kafka_delivery::at_least_once:
        // Every row before the barrier is acknowledged by Kafka before the
        // checkpoint is: a restore replays only what may not have arrived.
        producer_->flush_all();
        return;
      case kafka_delivery::exactly_once:
        break;
    }
    if (finished_)
      final_checkpoint_ = checkpoint_id; // the final snapshot, after finish
    if (!current_.messages.empty()) {
      current_.checkpoint_id = checkpoint_id;
      if (current_.in_transaction) {
        // Pre-commit: the marker goes into the same transaction, then
        // everything is flushed; only the commit is left.
        current_.marker_offset = write_marker(std::to_string(checkpoint_id));
      }
      pending_.push_back(std::move(current_));
      current_ = segment{};
    }
    sink_state s;
    s.transactional_id = transactional_id_;
    s.progress_partition = progress_partition_;
    s.scan_from = scan_from();
    // The copies go into the checkpoint: a crash after it completes and
    // before the transaction commits can still publish them.
    s.pending = pending_;
    out.operator_state = encode_state(s);
  }

  void notify_checkpoint_complete(std::uint64_t checkpoint_id) override {
    if (spec_.delivery != kafka_delivery::exactly_once)
      return;
    std::size_t n = 0;
    while (n < pending_.size() && pending_[n].checkpoint_id <= checkpoint_id)
      ++n;
    const bool last = final_checkpoint_ != 0 && checkpoint_id >= final_checkpoint_;
    if (n > 0) {
      if (kill_at_ != 0 && ++completions_ == kill_at_) {
        log::connectors().warn("Kafka sink '{}' subtask {}: WEIR_FAULT: killing the process "
                               "after checkpoint {} completed, before its commit",
                               job_.sink_name, subtask_, checkpoint_id);
        std::raise(SIGKILL);
      }
      // The final checkpoint's commit carries the "end" marker, which tells
      // a restore that this subtask published its whole input.
      commit_pending(n, last ? "end" : "");
    }
    if (last && !drop_replay_) {
      log::connectors().info("Kafka sink '{}' subtask {}: end of input: {} rows in, {} rows "
                             "committed at the final checkpoint {}",
                             job_.sink_name, subtask_, rows_in_, rows_committed_,
                             checkpoint_id);
      check_all_committed();
    }
  }

  bool is_two_phase_commit() const override {
    return spec_.delivery == kafka_delivery::exactly_once;
  }

  void abort_transactions(std::uint64_t) override {
    // The open transaction holds rows of checkpoints that did not complete
    // (or may have: their copies are in the checkpoint, and a restore from
    // it publishes them again), so it is aborted whole.
    if (spec_.delivery != kafka_delivery::exactly_once || !in_transaction_)
      return;
    in_transaction_ = false;
    producer_->abort_transaction();
    log::connectors().info("Kafka sink '{}' subtask {}: the job stopped before its next "
                           "checkpoint completed: the open transaction was aborted",
                           job_.sink_name, subtask_);
  }

  void restore_state(const operator_restore& in) override {
    if (spec_.delivery != kafka_delivery::exactly_once)
      return;
    std::vector<segment> restored;
    std::optional<std::int64_t> scan_from;
    for (const auto& bytes : in.operator_states) {
      if (bytes.empty())
        continue;
      auto s = decode_state(bytes);
      if (s.transactional_id != transactional_id_)
        throw std::runtime_error(
          "Kafka sink on topic '" + spec_.topic + "': checkpoint "
          + std::to_string(in.checkpoint_id) + " holds transactions of '"
          + s.transactional_id + "', not of '" + transactional_id_
          + "': an exactly-once Kafka sink resumes only with the job name, sink name, "
            "transactional_id_prefix and parallelism it ran with");
      scan_from = s.scan_from;
      for (auto& seg : s.pending)
        restored.push_back(std::move(seg));
    }
    if (!scan_from)
      return;
    auto found = ksink::read_progress(spec_.bootstrap_servers, spec_.properties,
                                      spec_.progress_topic, progress_partition_, *scan_from,
                                      transactional_id_);
    if (found.ended) {
      // The previous run published everything this subtask received up to
      // the end of its input (a bounded job that finished here and crashed
      // before the whole job ended): what the replay brings is published.
      log::connectors().warn("Kafka sink '{}' subtask {}: the previous run committed its "
                             "final transaction; the rows replayed from checkpoint {} are "
                             "not published again",
                             job_.sink_name, subtask_, in.checkpoint_id);
      drop_replay_ = true;
      // Later checkpoints keep pointing at the end marker, so a restore
      // from them drops the replay too.
      committed_end_ = *scan_from;
      return;
    }
    if (found.max_checkpoint && *found.max_checkpoint > in.checkpoint_id)
      log::connectors().warn("Kafka sink '{}' subtask {}: transactions after checkpoint {} "
                             "(up to {}) were committed: restoring an older checkpoint "
                             "publishes their rows again",
                             job_.sink_name, subtask_, in.checkpoint_id,
                             *found.max_checkpoint);
    std::uint64_t committed = found.max_checkpoint.value_or(0);
    std::vector<segment> redo;
    for (auto& seg : restored)
      if (seg.checkpoint_id > committed)
        redo.push_back(std::move(seg));
    if (redo.empty())
      return;
    std::size_t rows = 0;
    for (const auto& seg : redo)
      rows += seg.messages.size();
    log::connectors().info("Kafka sink '{}' subtask {}: checkpoint {} completed but its "
                           "transaction did not commit; publishing its {} rows again in a "
                           "new transaction",
                           job_.sink_name, subtask_, redo.back().checkpoint_id, rows);
    rows_restored_ += rows;
    pending_ = std::move(redo);
    commit_pending(pending_.size());
  }

  void finish(output_collector& out) override {
    if (expired_ > 0)
      log::connectors().warn("Kafka sink '{}' subtask {}: {} rows had an event time older "
                             "than topic '{}''s retention.ms ({} ms): the broker deletes "
                             "them at its next retention check",
                             job_.sink_name, subtask_, expired_, spec_.topic,
                             *retention_ms_);
    finish_delivery(out);
  }

  void finish_delivery(output_collector&) {
    if (spec_.delivery != kafka_delivery::exactly_once) {
      producer_->flush_all();
      return;
    }
    finished_ = true;
    if (drop_replay_)
      log::connectors().info("Kafka sink '{}' subtask {}: {} replayed rows not published "
                             "again",
                             job_.sink_name, subtask_, dropped_);
    // Nothing is committed here: the final snapshot (snapshot_state after
    // finish) pre-commits the rest, and the job's final checkpoint commits
    // it, with an "end" marker (see README.md). A job that fails before
    // aborts it.
  }

private:
  static std::string text_of(const column& c, std::size_t row) {
    if (c.type == type_id::string)
      return std::string{c.str(row)};
    return to_display_string(c.get(row));
  }

  /// Rows go straight into the open transaction only while no earlier
  /// transaction waits for its commit (a producer has one at a time).
  bool live() const { return pending_.empty(); }

  std::int64_t scan_from() const {
    if (!pending_.empty() && pending_.front().marker_offset >= 0)
      return pending_.front().marker_offset;
    return committed_end_;
  }

  void begin_if_needed() {
    if (!in_transaction_) {
      producer_->begin_transaction();
      in_transaction_ = true;
    }
  }

  void produce(const std::string& topic, std::int32_t partition, const out_message& m) {
    std::vector<ksink::header_view> hs;
    hs.reserve(m.headers.size());
    for (const auto& h : m.headers)
      hs.push_back({h.name, h.value, h.is_null});
    producer_->produce(topic, partition, m.has_key ? &m.key : nullptr, m.value, m.timestamp, hs);
  }

  /// Writes the marker `value` of this subtask into the open transaction and
  /// flushes it; returns the marker's offset.
  std::int64_t write_marker(const std::string& value) {
    begin_if_needed();
    return producer_->produce_marker(spec_.progress_topic, progress_partition_,
                                     transactional_id_, value);
  }

  /// Commits the first `n` pending segments in one transaction (the first
  /// may be in the open transaction already), with one marker for the
  /// highest checkpoint id (`marker_prefix` "end" marks the final one).
  void commit_pending(std::size_t n, std::string_view marker_prefix = {}) {
    bool need_marker = !marker_prefix.empty();
    for (std::size_t i = 0; i < n; ++i) {
      auto& seg = pending_[i];
      if (!seg.in_transaction) {
        begin_if_needed();
        for (const auto& m : seg.messages)
          produce(spec_.topic, -1, m);
        seg.in_transaction = true;
        need_marker = true;
      } else if (seg.marker_offset < 0) {
        need_marker = true;
      }
    }
    auto top = pending_[n - 1].checkpoint_id;
    std::int64_t marker = pending_[n - 1].marker_offset;
    if (need_marker) {
      auto value = marker_prefix.empty() ? std::to_string(top)
                                         : std::string{marker_prefix} + " " + std::to_string(top);
      marker = write_marker(value);
    }
    std::size_t rows = 0;
    for (std::size_t i = 0; i < n; ++i)
      rows += pending_[i].messages.size();
    producer_->commit_transaction();
    // Test-only: a kill with the transaction committed and the sink not yet
    // aware of it (a restore finds its marker and publishes nothing twice).
    weir::internal::test_fault_kill("kill_in_sink_commit");
    in_transaction_ = false;
    rows_committed_ += rows;
    log::connectors().debug("Kafka sink '{}' subtask {}: committed {} rows up to checkpoint {}",
                            job_.sink_name, subtask_, rows, pending_[n - 1].checkpoint_id);
    committed_end_ = marker + 1;
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    if (pending_.empty() && !current_.messages.empty() && !current_.in_transaction) {
      // Rows that arrived while the commit waited go into the next
      // transaction now.
      begin_if_needed();
      for (const auto& m : current_.messages)
        produce(spec_.topic, -1, m);
      current_.in_transaction = true;
    }
  }

  /// The final state of a bounded input: every row received (and every row
  /// a restore published again) is in a committed transaction and none is
  /// open. Anything else would leave rows unpublished (or, with an open
  /// transaction, hide every later row of its partitions from read_committed
  /// readers) while the job exits 0: fail it instead.
  void check_all_committed() const {
    std::uint64_t waiting = current_.messages.size();
    for (const auto& seg : pending_)
      waiting += seg.messages.size();
    if (!in_transaction_ && waiting == 0 && rows_committed_ == rows_in_ + rows_restored_)
      return;
    std::string restored =
      rows_restored_ ? " (and " + std::to_string(rows_restored_) + " restored)" : "";
    throw std::runtime_error("Kafka sink on topic '" + spec_.topic + "': at the end of the input "
                             + std::to_string(rows_in_) + " rows were received" + restored
                             + " but " + std::to_string(rows_committed_) + " committed ("
                             + std::to_string(waiting) + " waiting"
                             + (in_transaction_ ? ", a transaction still open" : "")
                             + "): the output is incomplete");
  }

  void check_transaction_timeout() {
    if (!job_.checkpoints)
      throw std::runtime_error("Kafka sink on topic '" + spec_.topic
                               + "': delivery = \"exactly_once\" needs checkpoints "
                                 "(a [checkpoint] section): transactions commit when a "
                                 "checkpoint completes");
    auto timeout = producer_->transaction_timeout_ms();
    auto interval = job_.checkpoint_interval.count();
    // A transaction stays open from the first row after barrier n-1 until
    // checkpoint n completes: at least one interval, and more while a
    // checkpoint is slow.
    if (timeout < 2 * interval)
      throw std::runtime_error(
        "Kafka sink on topic '" + spec_.topic + "': transaction.timeout.ms ("
        + std::to_string(timeout) + ") must be at least twice the checkpoint interval ("
        + std::to_string(interval) + " ms), or the broker aborts transactions before their "
          "checkpoint completes; set properties.\"transaction.timeout.ms\" or a shorter "
          "checkpoint.interval");
    if (auto max = producer_->broker_transaction_max_timeout_ms(); max && timeout > *max)
      throw std::runtime_error(
        "Kafka sink on topic '" + spec_.topic + "': transaction.timeout.ms ("
        + std::to_string(timeout) + ") exceeds the broker's transaction.max.timeout.ms ("
        + std::to_string(*max) + "); lower it (at least twice the checkpoint interval, "
        + std::to_string(interval) + " ms) or raise the broker's limit");
  }

  // format avro: the encoder of the generated schema and, with a registry,
  // the frame of the id it is registered under (before the producer starts:
  // a refused schema fails the subtask before anything is written).
  void open_avro() {
    const std::string name = spec_.avro_record_name.empty()
                               ? default_record_name(job_.job_name, job_.sink_name)
                               : spec_.avro_record_name;
    auto e = format::avro_encoder::make(schema_, name);
    if (!e)
      throw std::runtime_error("Kafka sink on topic '" + spec_.topic + "': " + e.error().message);
    avro_.emplace(std::move(*e));
    if (spec_.schema_registry.url.empty())
      return;
    const auto subject = format::subject_name(spec_.schema_registry.strategy, spec_.topic, name);
    auto id = format::register_schema(spec_.schema_registry, subject, avro_->schema_json(),
                                      "AVRO", spec_.schema_registry_lookup_only);
    if (!id)
      throw std::runtime_error("Kafka sink on topic '" + spec_.topic + "': "
                               + id.error().message);
    frame_ = format::schema_registry_frame(*id);
    log::connectors().info("Kafka sink '{}' subtask {}: Avro schema id {} (subject '{}')",
                           job_.sink_name, subtask_, *id, subject);
  }

  kafka::sink spec_;
  kafka_sink_job job_;
  schema_ptr schema_;
  std::unique_ptr<format::record_encoder> encoder_;
  std::optional<format::avro_encoder> avro_;
  std::string frame_; ///< the registry frame of each value; empty: none
  std::optional<expr::compiled_expression> key_;
  std::vector<std::pair<std::string, expr::compiled_expression>> headers_;
  std::unique_ptr<ksink::producer> producer_;
  std::size_t subtask_ = 0;
  std::size_t parallelism_ = 1;
  std::string transactional_id_;
  std::int32_t progress_partition_ = 0;
  // exactly_once:
  segment current_;            ///< rows since the last barrier
  std::vector<segment> pending_; ///< pre-committed, ascending checkpoint ids
  bool in_transaction_ = false;
  std::int64_t committed_end_ = 0; ///< progress offset after our last committed marker
  bool drop_replay_ = false;
  std::uint64_t dropped_ = 0;
  std::uint64_t rows_in_ = 0;        ///< rows received
  /// The topic's retention.ms when it deletes by the message timestamp.
  std::optional<std::int64_t> retention_ms_;
  std::uint64_t expired_ = 0; ///< rows older than that retention
  std::uint64_t rows_committed_ = 0; ///< rows in committed transactions
  std::uint64_t rows_restored_ = 0;  ///< rows a restore published again
  std::uint64_t kill_at_ = 0;
  std::uint64_t completions_ = 0;
  bool finished_ = false; ///< the input ended (finish)
  /// Id of the final snapshot, taken after finish (0: not yet).
  std::uint64_t final_checkpoint_ = 0;
};

} // namespace

expected<stream_operator_ptr> make_kafka_sink(const kafka::sink& spec,
                                              const kafka_sink_job& job,
                                              schema_ptr input_schema) {
  if (spec.format == format::format_kind::avro && input_schema) {
    auto e = format::avro_encoder::make(
      input_schema, spec.avro_record_name.empty() ? "weir.row" : spec.avro_record_name);
    if (!e)
      return e.error();
  } else if (!spec.schema_registry.url.empty()) {
    return make_error(errc::invalid_argument, "schema_registry needs format avro");
  }
  if (spec.format == format::format_kind::apache_combined)
    return make_error(errc::invalid_argument,
                      "apache_combined is an input format only; write jsonl or csv");
  if (spec.topic.empty())
    return make_error(errc::invalid_argument, "a Kafka sink needs a topic");
  if (spec.bootstrap_servers.empty())
    return make_error(errc::invalid_argument, "a Kafka sink needs bootstrap_servers");
  if (!input_schema)
    return make_error(errc::invalid_argument, "a Kafka sink needs its input's schema");
  std::optional<expr::compiled_expression> key;
  if (!spec.key.empty()) {
    auto k = expr::compile(spec.key, *input_schema);
    if (!k)
      return k.error();
    key = std::move(*k);
  }
  std::vector<std::pair<std::string, expr::compiled_expression>> headers;
  for (const auto& [name, text] : spec.headers) {
    auto h = expr::compile(text, *input_schema);
    if (!h) {
      auto e = h.error();
      e.message = "header '" + name + "': " + e.message;
      return e;
    }
    headers.emplace_back(name, std::move(*h));
  }
  return stream_operator_ptr{std::make_unique<kafka_sink>(spec, job, std::move(input_schema),
                                                          std::move(key),
                                                          std::move(headers))};
}

} // namespace weir
