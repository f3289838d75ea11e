// SPDX-License-Identifier: Apache-2.0
// The push source: `push::add_source` (`job::from`), its handle's queue and its reader. The
// queue is bounded, so a job that falls behind blocks `push` (or makes
// `try_push` refuse) instead of buffering without bound; the reader takes at
// most a batch per poll, and is not polled while its subtask's output has no
// credit (src/runtime/subtask.cpp), so backpressure from any operator
// downstream reaches the host's threads.
#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/connectors/push_source.hpp"
#include "weir/core/log.hpp"

#include <spdlog/logger.h>

#include <map>
#include <stdexcept>

namespace weir {

// -- push_source_handle ----------------------------------------------------------

std::optional<std::uint64_t> push_source_handle::push_item(item it, bool wait) {
  std::unique_lock lock{mutex_};
  auto full = [this] { return base_ + items_.size() - cursor_ >= capacity_; };
  if (wait)
    not_full_.wait(lock, [&] { return closed_ || !full(); });
  if (closed_ || full())
    return std::nullopt;
  items_.push_back(std::move(it));
  return base_ + items_.size() - 1;
}

std::uint64_t push_source_handle::take(std::size_t max, bool retain, std::vector<item>& out) {
  std::lock_guard lock{mutex_};
  const auto first = cursor_;
  auto at = static_cast<std::size_t>(cursor_ - base_);
  while (out.size() < max && at < items_.size()) {
    out.push_back(retain ? items_[at] : std::move(items_[at]));
    ++at;
  }
  cursor_ = base_ + at;
  if (!retain) {
    // Nothing is replayed without checkpoints: drop what was taken.
    while (base_ < cursor_) {
      items_.pop_front();
      ++base_;
    }
  }
  if (!out.empty())
    not_full_.notify_all();
  return first;
}

bool push_source_handle::exhausted() const {
  std::lock_guard lock{mutex_};
  return closed_ && cursor_ == base_ + items_.size();
}

void push_source_handle::rewind(std::uint64_t seq, bool announce) {
  std::function<void(std::uint64_t)> hook;
  {
    std::lock_guard lock{mutex_};
    if (seq >= base_ && seq <= base_ + items_.size()) {
      cursor_ = seq; // replayed from what was kept
    } else if (seq > base_ + items_.size()) {
      // A new handle (a new process) restoring a checkpoint of an earlier
      // one: what it holds is numbered from `seq` on.
      const auto delta = seq - cursor_;
      base_ += delta;
      cursor_ = seq;
    } else if (!announce) {
      // A reader opening after a restart: the restore (seek) follows.
      cursor_ = base_;
    } else {
      // Before what was kept: only a restore from an older checkpoint than
      // one already completed (the newer one damaged) gets here.
      log::runtime().warn("push source: cannot replay records {} to {}: they were covered by "
                          "a completed checkpoint and dropped; resuming at {}",
                          seq, base_, base_);
      cursor_ = base_;
    }
    if (announce)
      hook = on_restore_;
  }
  not_full_.notify_all();
  if (hook)
    hook(seq);
}

void push_source_handle::complete(std::uint64_t id, std::uint64_t covered) {
  std::function<void(std::uint64_t, std::uint64_t)> hook;
  {
    std::lock_guard lock{mutex_};
    while (base_ < covered && base_ < cursor_ && !items_.empty()) {
      items_.pop_front();
      ++base_;
    }
    hook = on_complete_;
  }
  if (hook)
    hook(id, covered);
}

namespace {

/// Reads what the host pushes: up to a batch of queued records per poll,
/// decoded with the source's format; an empty queue gives an empty batch and
/// a short wait before the next poll. Its position is the sequence number
/// of the next record to take.
class push_source_reader final : public source_reader {
public:
  push_source_reader(std::string name, push_source_handle_ptr handle,
                     std::unique_ptr<format::record_decoder> decoder, schema_ptr schema,
                     std::optional<std::size_t> event_time_index, bool retain,
                     bad_record_handler on_bad)
    : name_(std::move(name)),
      handle_(std::move(handle)),
      decoder_(std::move(decoder)),
      schema_(std::move(schema)),
      event_time_index_(event_time_index),
      retain_(retain),
      on_bad_(std::move(on_bad)) {
  }

  void open(const operator_context&) override {
    // A restart without a checkpoint to restore replays from the start
    // (seek moves on from there when one is restored).
    handle_->rewind(0, false);
    taken_ = handle_->cursor();
  }

  const schema_ptr& output_schema() const override { return schema_; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (handle_->exhausted())
      return nullptr;
    items_.clear();
    auto seq = handle_->take(max_rows, retain_, items_);
    taken_ = seq + items_.size();
    empty_ = items_.empty();
    batch_builder out{schema_};
    for (auto& it : items_) {
      std::string reason;
      if (it.is_row)
        append_row(it.row, out, reason);
      else if (decoder_->decode(it.text, out, reason) != format::record_decoder::status::bad)
        reason.clear();
      if (!reason.empty())
        on_bad_(bad_record{"push source '" + name_ + "'", 0, seq, reason,
                           it.is_row ? std::string{"(values)"} : it.text.substr(0, 4096)});
      ++seq;
    }
    return out.finish();
  }

  std::vector<source_position> positions() const override {
    return {source_position{"", position_unit::event_number, taken_}};
  }

  void seek(const std::vector<source_position>& to) override {
    auto seq = select_position(to, "", position_unit::event_number);
    handle_->rewind(seq);
    taken_ = seq;
  }

  std::chrono::nanoseconds next_poll_delay() const override {
    // Nothing queued: look again shortly rather than spin. 2 ms is well
    // under the default buffer_timeout (10 ms) that batches wait anyway.
    return empty_ ? std::chrono::nanoseconds{std::chrono::milliseconds{2}}
                  : std::chrono::nanoseconds{0};
  }

  void on_checkpoint(std::uint64_t checkpoint_id) override { at_checkpoint_[checkpoint_id] = taken_; }

  void notify_checkpoint_complete(std::uint64_t checkpoint_id) override {
    auto it = at_checkpoint_.find(checkpoint_id);
    if (it == at_checkpoint_.end())
      return;
    auto covered = it->second;
    at_checkpoint_.erase(at_checkpoint_.begin(), std::next(it));
    handle_->complete(checkpoint_id, covered);
  }

private:
  /// Appends `row` as one record, or leaves `reason` set (nothing appended).
  void append_row(const std::vector<value>& row, batch_builder& out, std::string& reason) {
    if (row.size() > schema_->size()) {
      reason = "expected at most " + std::to_string(schema_->size()) + " values, got "
               + std::to_string(row.size());
      return;
    }
    for (std::size_t i = 0; i < row.size(); ++i) {
      const auto& f = schema_->at(i);
      const auto& v = row[i];
      bool fits = std::holds_alternative<std::monostate>(v);
      switch (f.type) {
        case type_id::boolean: fits = fits || std::holds_alternative<bool>(v); break;
        case type_id::int64:
        case type_id::timestamp: fits = fits || std::holds_alternative<std::int64_t>(v); break;
        case type_id::float64:
          fits = fits || std::holds_alternative<double>(v) || std::holds_alternative<std::int64_t>(v);
          break;
        case type_id::string: fits = fits || std::holds_alternative<std::string>(v); break;
        case type_id::null_type: break;
      }
      if (!fits) {
        reason = "field '" + f.name + "' expects " + std::string{to_string(f.type)} + ", got "
                 + to_display_string(v);
        out.rollback_row();
        return;
      }
      if (f.type == type_id::float64 && std::holds_alternative<std::int64_t>(v))
        out.col(i).append_float(static_cast<double>(std::get<std::int64_t>(v)));
      else
        out.col(i).append_value(v);
    }
    if (event_time_index_) {
      const auto i = *event_time_index_;
      if (i >= row.size() || std::holds_alternative<std::monostate>(row[i])) {
        reason = "event time field '" + schema_->at(i).name + "' is null";
        out.rollback_row();
        return;
      }
      out.timestamps().push_back(std::get<std::int64_t>(row[i]));
    }
    out.commit_row();
  }

  std::string name_;
  push_source_handle_ptr handle_;
  std::unique_ptr<format::record_decoder> decoder_;
  schema_ptr schema_;
  std::optional<std::size_t> event_time_index_;
  bool retain_;
  bad_record_handler on_bad_;
  std::vector<push_source_handle::item> items_;
  std::uint64_t taken_ = 0;
  bool empty_ = false;
  std::map<std::uint64_t, std::uint64_t> at_checkpoint_; ///< checkpoint id -> position
};

error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}

} // namespace

expected<push_stream> push::add_source(job& j, source spec, operator_options opts) {
  if (!spec.schema || spec.schema->size() == 0)
    return invalid("a push source needs a schema");
  if (spec.format != format::format_kind::jsonl && spec.format != format::format_kind::csv)
    return invalid("a push source reads jsonl or csv records");
  std::optional<std::size_t> et;
  if (!spec.event_time_field.empty()) {
    et = spec.schema->index_of(spec.event_time_field);
    if (!et)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' is not in the schema (fields: " + spec.schema->to_string() + ")");
    auto t = spec.schema->at(*et).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a timestamp or int64, got " + std::string{to_string(t)});
  }
  format::decoder_options d;
  d.kind = spec.format;
  d.schema = spec.schema;
  d.csv_header = false;
  d.event_time_field = spec.event_time_field;
  if (auto check = format::make_decoder(d); !check)
    return check.error();
  auto handle = std::make_shared<push_source_handle>(spec.capacity);
  // The graph owns the factory, so it outlives every call of it.
  const runtime::job_graph* g = j.graph().get();
  auto name = std::make_shared<std::string>();
  auto node = internal::add_source_node(
    *j.graph(), opts, "push_source", spec.schema, 1, spec.watermark,
    [handle, d, et, g, name](std::size_t, std::size_t, bad_record_handler on_bad)
      -> source_reader_ptr {
      auto decoder = format::make_decoder(d);
      if (!decoder)
        throw std::runtime_error(decoder.error().message);
      return std::make_unique<push_source_reader>(*name, handle, std::move(*decoder), d.schema,
                                                  et, g->options.checkpoint.enabled,
                                                  std::move(on_bad));
    });
  if (!node)
    return node.error();
  *name = (*node)->name;
  auto stream = j.stream((*node)->name);
  return push_stream{*stream, handle};
}

} // namespace weir
