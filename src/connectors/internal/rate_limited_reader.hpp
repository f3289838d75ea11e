// SPDX-License-Identifier: Apache-2.0
// Private to the sources: a source reader that emits at most a given number
// of rows per second (a file replayed at a steady pace).
#pragma once

#include "connectors/internal/pacer.hpp"

#include "weir/connectors/source_reader.hpp"

#include <memory>

namespace weir::internal {

/// Wraps `inner` so that it returns at most `rows_per_second` rows per second
/// (this reader's share: the source's rate over its subtasks), in batches
/// formed as the generator's are (emission_pacer: a batch goes out when
/// `max_rows` rows are due or its oldest row has waited `buffer_timeout`).
/// Between batches `poll_next` returns a batch of 0 rows and
/// `next_poll_delay` says how long to wait, so the subtask sleeps instead of
/// spinning. Everything else (positions, seek, splits, partitions, lag) is
/// the inner reader's: a checkpoint records where the inner reader is, which
/// is exactly the rows returned so far. Flink's `RateLimiterStrategy`
/// (FLIP-238) on a source reader.
class rate_limited_reader final : public source_reader {
public:
  rate_limited_reader(source_reader_ptr inner, double rows_per_second,
                      std::chrono::nanoseconds buffer_timeout)
    : inner_(std::move(inner)), pacer_(rows_per_second, buffer_timeout) {
    auto empty = std::make_shared<record_batch>();
    empty->schema = inner_->output_schema();
    for (const auto& f : inner_->output_schema()->fields())
      empty->columns.emplace_back(f.type);
    empty_ = std::move(empty);
  }

  void open(const operator_context& ctx) override { inner_->open(ctx); }
  const schema_ptr& output_schema() const override { return inner_->output_schema(); }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    const auto now = steady_now_ns();
    if (!started_) {
      pacer_.start(now);
      started_ = true;
    }
    const std::uint64_t limit = max_rows == 0 ? 1 : max_rows;
    const auto n = static_cast<std::size_t>(pacer_.allowance(now, limit));
    if (n == 0) {
      delay_ = pacer_.delay(now, limit);
      return empty_;
    }
    auto batch = inner_->poll_next(n);
    inner_polled_ = true;
    // The inner reader's own wait (a directory between scans) wins.
    delay_ = std::chrono::nanoseconds{0};
    if (batch)
      pacer_.emitted(batch->num_rows);
    return batch;
  }

  std::chrono::nanoseconds next_poll_delay() const override {
    return delay_.count() > 0 ? delay_ : inner_->next_poll_delay();
  }

  std::vector<source_position> positions() const override { return inner_->positions(); }
  void seek(const std::vector<source_position>& to) override { inner_->seek(to); }
  std::optional<event_time> take_processing_time_advance() override {
    return inner_->take_processing_time_advance();
  }
  std::optional<std::uint64_t> lines_read() const override { return inner_->lines_read(); }
  std::optional<std::int64_t> lag() override { return inner_->lag(); }
  bool has_split_partitions() const override { return inner_->has_split_partitions(); }
  std::optional<std::string> batch_split() const override { return inner_->batch_split(); }
  split_changes take_split_changes() override { return inner_->take_split_changes(); }
  // Before its first poll a reader that assigns partitions when it starts
  // (Kafka) owns none yet: reporting that empty list would make the subtask
  // an idle source, whose watermark holds nothing back downstream, and the
  // rows it then reads would be late. Until then it declares nothing.
  const std::vector<std::string>* partitions() const override {
    return inner_polled_ ? inner_->partitions() : nullptr;
  }
  const std::vector<partition_run>* partition_runs() const override {
    return inner_->partition_runs();
  }
  std::string snapshot_state() const override { return inner_->snapshot_state(); }
  void restore_state(std::string_view state) override { inner_->restore_state(state); }
  void on_checkpoint(std::uint64_t id) override { inner_->on_checkpoint(id); }
  void notify_checkpoint_complete(std::uint64_t id) override {
    inner_->notify_checkpoint_complete(id);
  }

private:
  source_reader_ptr inner_;
  emission_pacer pacer_;
  record_batch_ptr empty_;
  bool started_ = false;
  bool inner_polled_ = false; ///< the inner reader was polled (and so started)
  std::chrono::nanoseconds delay_{0};
};

} // namespace weir::internal
