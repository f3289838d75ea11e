// SPDX-License-Identifier: Apache-2.0
// The http source's handle (the queue `POST /ingest/{source}` fills, the
// idempotency keys, the acknowledgements) and its reader, which takes whole
// requests from the queue on the source subtask's thread. Why a completed
// checkpoint with the keys in the source's state gives exactly once: the
// class comment of `http_source_handle` (weir/http/source.hpp)
// and README.md beside this file.
#include "http_source.hpp"

#include "weir/core/log.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/core/unrecoverable_error.hpp"

#include <spdlog/logger.h>

#include <algorithm>
#include <charconv>
#include <random>
#include <stdexcept>

namespace weir {

namespace {

std::string make_id_prefix() {
  std::random_device rd;
  char buf[20];
  std::snprintf(buf, sizeof buf, "r-%08x", rd());
  return buf;
}

bool valid_key(const std::string& k) {
  if (k.size() > 200)
    return false;
  return std::all_of(k.begin(), k.end(), [](char c) { return c > 0x20 && c < 0x7f; });
}

} // namespace

http_source_handle::http_source_handle(std::string name, http::source spec)
  : name_(std::move(name)), spec_(std::move(spec)), id_prefix_(make_id_prefix()) {
  if (spec_.max_queued_records == 0)
    spec_.max_queued_records = 1;
}

std::size_t http_source_handle::queued() const {
  std::lock_guard lock{mutex_};
  return queued_records_;
}

bool http_source_handle::ready() const {
  std::lock_guard lock{mutex_};
  return ready_ && !closed_;
}

bool http_source_handle::attached() const {
  std::lock_guard lock{mutex_};
  return attached_;
}

void http_source_handle::attach() {
  std::lock_guard lock{mutex_};
  attached_ = true;
}

void http_source_handle::stop_intake() {
  std::lock_guard lock{mutex_};
  intake_stopped_ = true;
}

void http_source_handle::close() {
  {
    std::lock_guard lock{mutex_};
    closed_ = true;
  }
  progress_.notify_all();
}

ingest_result http_source_handle::ingest(std::string_view body, const std::string& key) {
  ingest_result r;
  using oc = ingest_result::outcome;
  if (!valid_key(key)) {
    r.what = oc::bad_body;
    r.message = "Idempotency-Key must be 1 to 200 printable ASCII characters without spaces";
    return r;
  }
  r.request_id = key;
  if (body.size() > spec_.max_body) {
    r.what = oc::too_large;
    r.message = "the body has " + std::to_string(body.size()) + " bytes, http source '" + name_
                + "' takes at most " + std::to_string(spec_.max_body) + " (max_body)";
    return r;
  }
  bad_record_policy policy;
  {
    std::unique_lock lock{mutex_};
    if (closed_ || !ready_ || intake_stopped_) {
      r.what = oc::not_running;
      r.message = closed_           ? "the job of http source '" + name_ + "' is over"
                  : intake_stopped_ ? "the server is stopping: http source '" + name_
                                        + "' takes no more records"
                          : "the job of http source '" + name_
                              + "' is starting, restoring or restarting";
      return r;
    }
    if (r.request_id.empty())
      r.request_id = id_prefix_ + "-" + std::to_string(next_request_++);
    // A retry of a request this source has seen: answered from what it
    // knows, never queued twice.
    if (!key.empty()) {
      if (auto it = keys_.find(key); it != keys_.end()) {
        r.accepted = it->second.accepted;
        r.bad = it->second.bad;
        if (spec_.ack == http_ack::checkpoint && it->second.end > covered_) {
          await_cover(lock, it->second.end, generation_, r);
          if (r.what != oc::accepted)
            return r;
        }
        r.what = oc::duplicate;
        return r;
      }
    }
    policy = policy_;
  }

  // Decoding, outside the lock (concurrent requests decode in parallel).
  auto decoder = format::make_decoder(spec_.decoder);
  if (!decoder) {
    r.what = oc::bad_body;
    r.message = decoder.error().message;
    return r;
  }
  const std::string origin = "http source '" + name_ + "' request " + r.request_id;
  batch_builder out{spec_.decoder.schema};
  std::vector<bad_record> bad;
  std::string_view rest = body;
  std::uint64_t line = 1;
  std::string reason;
  while (!rest.empty()) {
    std::size_t lines = 0;
    auto len = (*decoder)->next_record(rest, true, lines);
    if (len == 0)
      break;
    auto rec = rest.substr(0, len);
    if (!rec.empty() && rec.back() == '\n')
      rec.remove_suffix(1);
    if (!rec.empty() && rec.back() == '\r')
      rec.remove_suffix(1);
    reason.clear();
    auto st = (*decoder)->decode(rec, out, reason);
    if (st == format::record_decoder::status::bad
        || st == format::record_decoder::status::control) {
      if (reason.empty())
        reason = "a control line is not a record here";
      if (r.bad_examples.size() < 10)
        r.bad_examples.push_back({line, reason});
      auto& b = bad.emplace_back(origin, line,
                                 static_cast<std::uint64_t>(rec.data() - body.data()), reason,
                                 std::string{rec.substr(0, 4096)});
      b.source = bad_record_source::http;
      b.source_name = name_;
      b.request_id = r.request_id;
    }
    line += std::max<std::size_t>(lines, 1);
    rest.remove_prefix(len);
  }
  r.bad = bad.size();
  auto batch = out.finish();
  const std::uint64_t n = batch->num_rows;
  if (n == 0) {
    r.what = oc::bad_body;
    r.message = bad.empty() ? "the body holds no record"
                            : "no record of the body decodes as "
                                + std::string{format::to_string(spec_.decoder.kind)}
                                + " of the source's schema";
    return r;
  }
  if (!bad.empty() && policy == bad_record_policy::fail) {
    r.what = oc::bad_body;
    r.message = std::to_string(bad.size()) + " bad record" + (bad.size() == 1 ? "" : "s")
                + " and on_bad_record = \"fail\": the request is refused whole (the job "
                  "keeps running)";
    return r;
  }

  std::unique_lock lock{mutex_};
  if (closed_ || !ready_) {
    r.what = oc::not_running;
    r.message = "the job of http source '" + name_ + "' is not running";
    return r;
  }
  if (!key.empty()) {
    if (auto it = keys_.find(key); it != keys_.end()) {
      // The same key decoded concurrently: the first one queued wins.
      if (spec_.ack == http_ack::checkpoint && it->second.end > covered_) {
        await_cover(lock, it->second.end, generation_, r);
        if (r.what != oc::accepted)
          return r;
      }
      r.what = oc::duplicate;
      return r;
    }
  }
  if (queued_records_ > 0 && queued_records_ + n > spec_.max_queued_records) {
    r.what = oc::queue_full;
    r.accepted = 0;
    r.message = "http source '" + name_ + "' has " + std::to_string(queued_records_)
                + " records queued (max_queued_records = "
                + std::to_string(spec_.max_queued_records) + "): the job is behind";
    return r;
  }
  const std::uint64_t seq = base_ + entries_.size();
  entries_.push_back(entry{seq, std::move(batch), std::move(bad), key});
  queued_records_ += n;
  r.accepted = n;
  if (!key.empty())
    keys_[key] = key_info{seq + 1, n, r.bad, false};
  if (spec_.ack == http_ack::checkpoint)
    await_cover(lock, seq + 1, generation_, r);
  else
    r.what = oc::accepted;
  return r;
}

void http_source_handle::await_cover(std::unique_lock<std::mutex>& lock, std::uint64_t end,
                                     std::uint64_t generation, ingest_result& r) {
  using oc = ingest_result::outcome;
  const auto deadline = std::chrono::steady_clock::now() + spec_.ack_timeout;
  const bool done = progress_.wait_until(lock, deadline, [&] {
    return covered_ >= end || closed_ || generation_ != generation;
  });
  if (done && covered_ >= end && generation_ == generation) {
    r.what = oc::accepted;
    r.checkpoint_id = covered_checkpoint_;
    return;
  }
  r.what = done ? oc::not_running : oc::ack_timeout;
  r.message = !done ? "no completed checkpoint covered the request within ack_timeout (it may "
                      "still be; retry with the same Idempotency-Key)"
              : closed_ ? "the job of http source '" + name_
                            + "' ended before a checkpoint covered the request"
                        : "the job restored an earlier checkpoint: the request is not in it";
}

void http_source_handle::reader_opened(bad_record_policy policy, bool retain) {
  std::lock_guard lock{mutex_};
  policy_ = policy;
  retain_ = retain;
  ready_ = false;
  ++reader_token_;
  // A restart without a checkpoint to restore replays what was kept (a
  // restore, which follows before the first take, moves on from there).
  cursor_ = base_;
  queued_records_ = 0;
  for (auto& e : entries_) {
    queued_records_ += e.batch->num_rows;
    if (!e.key.empty())
      if (auto it = keys_.find(e.key); it != keys_.end())
        it->second.taken = false;
  }
}

void http_source_handle::reader_closed(std::uint64_t token) {
  std::lock_guard lock{mutex_};
  if (token == reader_token_)
    ready_ = false;
}

std::uint64_t http_source_handle::reader_token() const {
  std::lock_guard lock{mutex_};
  return reader_token_;
}

std::vector<http_source_handle::entry> http_source_handle::take(std::size_t max_rows,
                                                                std::uint64_t& cursor) {
  std::vector<entry> out;
  std::lock_guard lock{mutex_};
  ready_ = true;
  std::size_t rows = 0;
  auto at = static_cast<std::size_t>(cursor_ - base_);
  while (at < entries_.size()) {
    const auto n = entries_[at].batch->num_rows;
    if (!out.empty() && rows + n > max_rows)
      break;
    auto& e = entries_[at];
    if (!e.key.empty())
      if (auto it = keys_.find(e.key); it != keys_.end() && !it->second.taken) {
        it->second.taken = true;
        key_order_.emplace_back(e.key, it->second.end);
      }
    out.push_back(retain_ ? e : std::move(e));
    rows += n;
    ++at;
  }
  cursor_ = base_ + at;
  queued_records_ -= std::min<std::size_t>(queued_records_, rows);
  if (!retain_) {
    // Nothing is replayed without checkpoints: drop what was taken, and keep
    // the latest keys only (nothing completes to evict them).
    while (base_ < cursor_ && !entries_.empty()) {
      entries_.pop_front();
      ++base_;
    }
    evict_keys();
  }
  cursor = cursor_;
  return out;
}

void http_source_handle::restore(std::uint64_t seq, std::string_view keys_state) {
  // Parse first: a malformed state changes nothing.
  std::vector<std::pair<std::string, key_info>> restored;
  std::string_view rest = keys_state;
  while (!rest.empty()) {
    auto nl = rest.find('\n');
    auto line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    key_info k;
    k.taken = true;
    std::uint64_t* fields[] = {&k.end, &k.accepted, &k.bad};
    for (auto* f : fields) {
      auto sp = line.find(' ');
      auto [p, ec] = std::from_chars(line.data(), line.data() + std::min(sp, line.size()), *f);
      if (ec != std::errc{} || sp == std::string_view::npos)
        throw std::runtime_error("http source '" + name_
                                 + "': cannot read the idempotency keys of the checkpoint");
      line.remove_prefix(sp + 1);
    }
    restored.emplace_back(std::string{line}, k);
  }
  {
    std::lock_guard lock{mutex_};
    if (seq >= base_ && seq <= base_ + entries_.size()) {
      cursor_ = seq; // replayed from what was kept
    } else if (seq > base_ + entries_.size()) {
      // A new run restoring its checkpoint (the queue is empty: nothing is
      // accepted before the source is ready).
      if (!entries_.empty())
        ++generation_;
      entries_.clear();
      base_ = cursor_ = seq;
    } else {
      log::runtime().warn("http source '{}': cannot replay requests {} to {}: a completed "
                          "checkpoint covered them and they were dropped; resuming at {}",
                          name_, seq, base_, base_);
      cursor_ = base_;
    }
    covered_ = std::max(covered_, seq);
    // The keys: the checkpoint's, and those of the requests still to take.
    keys_.clear();
    key_order_.clear();
    for (auto& [k, info] : restored) {
      key_order_.emplace_back(k, info.end);
      keys_[k] = info;
    }
    queued_records_ = 0;
    for (auto i = static_cast<std::size_t>(cursor_ - base_); i < entries_.size(); ++i) {
      const auto& e = entries_[i];
      queued_records_ += e.batch->num_rows;
      if (!e.key.empty())
        keys_[e.key] = key_info{e.first + 1, e.batch->num_rows, e.bad.size(), false};
    }
  }
  progress_.notify_all();
}

std::string http_source_handle::snapshot_keys() const {
  std::lock_guard lock{mutex_};
  std::string out;
  for (const auto& [k, end] : key_order_) {
    auto it = keys_.find(k);
    if (it == keys_.end() || !it->second.taken || it->second.end != end)
      continue;
    out += std::to_string(end) + ' ' + std::to_string(it->second.accepted) + ' '
           + std::to_string(it->second.bad) + ' ' + k + '\n';
  }
  return out;
}

void http_source_handle::complete(std::uint64_t id, std::uint64_t covered) {
  {
    std::lock_guard lock{mutex_};
    if (covered >= covered_) {
      covered_ = covered;
      covered_checkpoint_ = id;
    }
    while (base_ < covered_ && base_ < cursor_ && !entries_.empty()) {
      entries_.pop_front();
      ++base_;
    }
    evict_keys();
  }
  progress_.notify_all();
}

void http_source_handle::evict_keys() {
  while (key_order_.size() > spec_.idempotency_keys) {
    const auto& [k, end] = key_order_.front();
    if (retain_ && end > covered_)
      break; // not yet covered: a waiting retry still needs it
    if (auto it = keys_.find(k); it != keys_.end() && it->second.end == end)
      keys_.erase(it);
    key_order_.pop_front();
  }
}

bool http_source_handle::exhausted() const {
  std::lock_guard lock{mutex_};
  return closed_ && cursor_ == base_ + entries_.size();
}

namespace kinds::http {

namespace {

/// Reads what the requests queued: whole requests per poll (a checkpoint
/// barrier never falls inside one), their bad records reported to the job's
/// policy as they are taken (so dead letters follow the checkpoints too).
class http_source_reader final : public source_reader {
public:
  http_source_reader(http_source_handle_ptr handle, bad_record_policy policy, bool retain,
                     bad_record_handler on_bad)
    : handle_(std::move(handle)), policy_(policy), retain_(retain), on_bad_(std::move(on_bad)) {}

  ~http_source_reader() override { handle_->reader_closed(token_); }

  void open(const operator_context&) override {
    if (!handle_->attached())
      throw unrecoverable_error(
        "http source '" + handle_->name()
        + "' takes its records from HTTP requests (POST /ingest/" + handle_->name()
        + "): run the pipeline with `weir serve`, which answers them; `weir run` has no "
          "HTTP server");
    handle_->reader_opened(policy_, retain_);
    token_ = handle_->reader_token();
    cursor_ = handle_->cursor();
  }

  const schema_ptr& output_schema() const override { return handle_->spec().decoder.schema; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (handle_->exhausted())
      return nullptr;
    auto entries = handle_->take(max_rows, cursor_);
    empty_ = entries.empty();
    for (const auto& e : entries)
      for (const auto& b : e.bad)
        on_bad_(b);
    if (entries.size() == 1)
      return entries.front().batch;
    batch_builder out{output_schema()};
    for (const auto& e : entries) {
      const auto& b = *e.batch;
      for (std::size_t r = 0; r < b.num_rows; ++r) {
        for (std::size_t c = 0; c < b.columns.size(); ++c)
          out.col(c).append_from(b.columns[c], r);
        if (b.has_timestamps())
          out.timestamps().push_back(b.timestamps[r]);
        out.commit_row();
      }
    }
    return out.finish();
  }

  std::vector<source_position> positions() const override {
    return {source_position{"", position_unit::event_number, cursor_}};
  }

  std::string snapshot_state() const override { return handle_->snapshot_keys(); }

  void restore_state(std::string_view state) override { restored_keys_ = std::string{state}; }

  void seek(const std::vector<source_position>& to) override {
    cursor_ = select_position(to, "", position_unit::event_number);
    handle_->restore(cursor_, restored_keys_);
    restored_keys_.clear();
  }

  std::chrono::nanoseconds next_poll_delay() const override {
    // Nothing queued: look again shortly rather than spin (under the
    // default buffer_timeout, 10 ms, that batches wait anyway).
    return empty_ ? std::chrono::nanoseconds{std::chrono::milliseconds{2}}
                  : std::chrono::nanoseconds{0};
  }

  void on_checkpoint(std::uint64_t id) override { at_checkpoint_[id] = cursor_; }

  void notify_checkpoint_complete(std::uint64_t id) override {
    auto it = at_checkpoint_.find(id);
    if (it == at_checkpoint_.end())
      return;
    auto covered = it->second;
    at_checkpoint_.erase(at_checkpoint_.begin(), std::next(it));
    handle_->complete(id, covered);
  }

private:
  http_source_handle_ptr handle_;
  bad_record_policy policy_;
  bool retain_;
  bad_record_handler on_bad_;
  std::uint64_t token_ = 0;
  std::uint64_t cursor_ = 0;
  bool empty_ = false;
  std::string restored_keys_;
  std::map<std::uint64_t, std::uint64_t> at_checkpoint_; ///< checkpoint id -> position
};

} // namespace

source_reader_ptr make_reader(http_source_handle_ptr handle, bad_record_policy policy,
                              bool retain, bad_record_handler on_bad) {
  return std::make_unique<http_source_reader>(std::move(handle), policy, retain,
                                              std::move(on_bad));
}

} // namespace kinds::http

http_source_handle_ptr find_http_source(const job& j, std::string_view name) {
  const auto& g = j.graph();
  if (!g)
    return nullptr;
  auto it = g->http_sources.find(name);
  return it == g->http_sources.end() ? nullptr : it->second;
}

std::vector<http_source_handle_ptr> http_sources(const job& j) {
  std::vector<http_source_handle_ptr> out;
  if (const auto& g = j.graph())
    for (const auto& [name, h] : g->http_sources)
      out.push_back(h);
  return out;
}

} // namespace weir
