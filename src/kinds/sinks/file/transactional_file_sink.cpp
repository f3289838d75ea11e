// SPDX-License-Identifier: Apache-2.0
#include "weir/file/transactional_sink.hpp"

#include "weir/core/test_fault.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace weir {

namespace {

namespace fs = std::filesystem;

constexpr std::size_t flush_bytes = 1 << 20;
constexpr const char* state_magic = "weir-2pc-file-sink v1";

/// A file name of the sink's layout, parsed.
struct part_name {
  enum kind_t { committed, pending, in_progress } kind = committed;
  std::uint32_t subtask = 0;
  std::uint64_t checkpoint_id = 0; // not for in_progress
};

template <class T>
bool parse_number(std::string_view s, T& out) {
  if (s.empty())
    return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size();
}

/// Parses `part-<s>-<n>.<ext>`, `part-<s>-<n>.pending` or
/// `part-<s>.inprogress`; nullopt for anything else (left alone).
std::optional<part_name> parse_part(std::string_view name, std::string_view ext) {
  if (name.substr(0, 5) != "part-")
    return std::nullopt;
  name.remove_prefix(5);
  auto dot = name.rfind('.');
  if (dot == std::string_view::npos)
    return std::nullopt;
  auto suffix = name.substr(dot + 1);
  auto stem = name.substr(0, dot);
  part_name p;
  if (suffix == "inprogress") {
    p.kind = part_name::in_progress;
    if (!parse_number(stem, p.subtask))
      return std::nullopt;
    return p;
  }
  if (suffix == "pending")
    p.kind = part_name::pending;
  else if (suffix == ext)
    p.kind = part_name::committed;
  else
    return std::nullopt;
  auto dash = stem.find('-');
  if (dash == std::string_view::npos || !parse_number(stem.substr(0, dash), p.subtask)
      || !parse_number(stem.substr(dash + 1), p.checkpoint_id))
    return std::nullopt;
  return p;
}

std::string padded(std::uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%012llu", static_cast<unsigned long long>(id));
  return buf;
}

/// The sink's operator state: which subtask wrote it and which of its
/// checkpoints are pre-committed but not yet committed.
struct sink_state {
  std::uint32_t subtask = 0;
  std::vector<std::uint64_t> pending;
};

std::string encode_state(const sink_state& s) {
  std::string out = state_magic;
  out += "\nsubtask " + std::to_string(s.subtask) + "\npending";
  for (auto id : s.pending)
    out += " " + std::to_string(id);
  out += "\n";
  return out;
}

sink_state decode_state(const std::string& bytes) {
  std::istringstream in{bytes};
  std::string line, word;
  sink_state s;
  auto bad = [&] {
    return std::runtime_error("exactly-once file sink: unreadable operator state '"
                              + bytes.substr(0, 80) + "'");
  };
  if (!std::getline(in, line) || line != state_magic)
    throw bad();
  if (!(in >> word) || word != "subtask" || !(in >> s.subtask))
    throw bad();
  if (!(in >> word) || word != "pending")
    throw bad();
  std::uint64_t id = 0;
  while (in >> id)
    s.pending.push_back(id);
  if (!in.eof())
    throw bad();
  return s;
}

class transactional_file_sink final : public stream_operator {
public:
  transactional_file_sink(std::string path, format::format_kind format,
                          schema_ptr input_schema, format::timestamp_format ts)
    : dir_(std::move(path)),
      staging_(dir_ / ".staging"),
      ext_(format == format::format_kind::csv ? "csv" : "jsonl"),
      encoder_(format::make_encoder(format, ts)),
      schema_(std::move(input_schema)) {}

  ~transactional_file_sink() override {
    // The open part stays in staging; the next start deletes it.
    if (file_)
      std::fclose(file_);
  }

  transactional_file_sink(const transactional_file_sink&) = delete;
  transactional_file_sink& operator=(const transactional_file_sink&) = delete;

  void open(const operator_context& ctx) override {
    subtask_ = static_cast<std::uint32_t>(ctx.subtask_index);
    parallelism_ = static_cast<std::uint32_t>(std::max<std::size_t>(ctx.parallelism, 1));
    std::error_code ec;
    fs::create_directories(staging_, ec);
    if (ec)
      throw std::runtime_error("cannot write " + staging_.string() + ": " + ec.message());
  }

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch || batch->num_rows == 0)
      return;
    start();
    if (!file_)
      open_part(*batch->schema);
    for (std::size_t row = 0; row < batch->num_rows; ++row)
      encoder_->encode(*batch, row, buffer_);
    if (buffer_.size() >= flush_bytes)
      flush();
  }

  void process_watermark(event_time, output_collector&) override {
    // A sink is the end of the stream: nothing to forward.
  }

  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    start();
    if (file_) {
      close_part();
      rename_or_throw(in_progress_path(), pending_path(subtask_, checkpoint_id));
      pending_.push_back(checkpoint_id);
    }
    last_id_ = std::max(last_id_, checkpoint_id);
    out.operator_state = encode_state(sink_state{subtask_, pending_});
  }

  void notify_checkpoint_complete(std::uint64_t checkpoint_id) override {
    bool any = false;
    while (!pending_.empty() && pending_.front() <= checkpoint_id) {
      commit(subtask_, pending_.front());
      // Test-only: a kill with this part committed, and the parts of the
      // other subtasks (or of its later checkpoints) not yet.
      weir::internal::test_fault_kill("kill_in_sink_commit");
      pending_.erase(pending_.begin());
      any = true;
    }
    if (any)
      sync_dir(dir_);
  }

  void restore_state(const operator_restore& in) override {
    const auto n = in.checkpoint_id;
    std::set<std::uint32_t> owned{subtask_};
    for (const auto& bytes : in.operator_states) {
      auto s = decode_state(bytes);
      owned.insert(s.subtask);
      for (auto id : s.pending)
        if (id <= n)
          complete_restored_commit(s.subtask, id);
    }
    // Everything newer than n of the subtasks taken over is replayed.
    remove_parts([&](const part_name& p) {
      bool mine = owned.count(p.subtask) != 0 || (subtask_ == 0 && p.subtask >= parallelism_);
      return mine && (p.kind != part_name::committed || p.checkpoint_id > n);
    });
    sync_dir(dir_);
    last_id_ = std::max(last_id_, n);
    started_ = true;
  }

  void finish(output_collector&) override {
    // Nothing is committed at the end of the input: the final snapshot
    // (snapshot_state after finish) makes the open part pending, and the
    // final checkpoint's completion commits it.
    start();
  }

  bool is_two_phase_commit() const override { return true; }

  void abort_transactions(std::uint64_t keep_up_to) override {
    // The open part and the pending parts of checkpoints that will not
    // complete are discarded; those up to keep_up_to stay for the restore.
    if (file_) {
      std::fclose(file_);
      file_ = nullptr;
    }
    std::error_code ec;
    fs::remove(in_progress_path(), ec);
    while (!pending_.empty() && pending_.back() > keep_up_to) {
      fs::remove(pending_path(subtask_, pending_.back()), ec);
      pending_.pop_back();
    }
  }

  void stop(output_collector&) override {
    // A graceful stop: the final checkpoint's parts were committed on its
    // notification. Rows after it stay uncommitted in staging (the next
    // start deletes them): a rerun resumes from that checkpoint and writes
    // them again.
    if (file_)
      close_part();
  }

private:
  /// First row or snapshot without a restore: a fresh start.
  void start() {
    if (started_)
      return;
    started_ = true;
    remove_parts([&](const part_name& p) {
      return p.subtask == subtask_ || (subtask_ == 0 && p.subtask >= parallelism_);
    });
    sync_dir(dir_);
  }

  template <class Pred>
  void remove_parts(Pred&& doomed) {
    for (const auto* d : {&dir_, &staging_}) {
      std::error_code ec;
      for (fs::directory_iterator it{*d, ec}, end; !ec && it != end; it.increment(ec)) {
        auto p = parse_part(it->path().filename().string(), ext_);
        if (!p || !doomed(*p))
          continue;
        // Committed parts only live in dir_, staging files only in staging_.
        bool in_staging = d == &staging_;
        if (in_staging == (p->kind == part_name::committed))
          continue;
        std::error_code rm;
        fs::remove(it->path(), rm);
        if (rm)
          throw std::runtime_error("cannot remove " + it->path().string() + ": "
                                   + rm.message());
      }
      if (ec)
        throw std::runtime_error("cannot list " + d->string() + ": " + ec.message());
    }
  }

  void open_part(const schema& batch_schema) {
    auto path = in_progress_path();
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_)
      fail(path, errno);
    buffer_ += encoder_->header(schema_ ? *schema_ : batch_schema);
  }

  void flush() {
    if (!buffer_.empty()
        && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      fail(in_progress_path(), errno);
    buffer_.clear();
  }

  void close_part() {
    flush();
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fflush(f) != 0 || ::fsync(fileno(f)) != 0) {
      int err = errno;
      std::fclose(f);
      fail(in_progress_path(), err);
    }
    if (std::fclose(f) != 0)
      fail(in_progress_path(), errno);
  }

  void commit(std::uint32_t subtask, std::uint64_t id) {
    rename_or_throw(pending_path(subtask, id), committed_path(subtask, id));
  }

  /// A commit of the restored checkpoint: done already if the part is in
  /// place (the crash came after the rename), else renamed now.
  void complete_restored_commit(std::uint32_t subtask, std::uint64_t id) {
    auto from = pending_path(subtask, id);
    auto to = committed_path(subtask, id);
    std::error_code ec;
    if (fs::exists(from, ec)) {
      rename_or_throw(from, to);
      return;
    }
    if (!fs::exists(to, ec))
      throw std::runtime_error("cannot complete the commit of checkpoint "
                               + std::to_string(id) + ": neither " + from.string()
                               + " nor " + to.string() + " exists");
  }

  void rename_or_throw(const fs::path& from, const fs::path& to) {
    std::error_code ec;
    fs::rename(from, to, ec);
    if (ec)
      throw std::runtime_error("cannot write " + to.string() + ": rename from "
                               + from.string() + ": " + ec.message());
  }

  void sync_dir(const fs::path& d) {
    int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd < 0)
      fail(d, errno);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0)
      fail(d, err);
  }

  fs::path in_progress_path() const {
    return staging_ / ("part-" + std::to_string(subtask_) + ".inprogress");
  }
  fs::path pending_path(std::uint32_t subtask, std::uint64_t id) const {
    return staging_ / ("part-" + std::to_string(subtask) + "-" + padded(id) + ".pending");
  }
  fs::path committed_path(std::uint32_t subtask, std::uint64_t id) const {
    return dir_ / ("part-" + std::to_string(subtask) + "-" + padded(id) + "." + ext_);
  }

  [[noreturn]] static void fail(const fs::path& p, int err) {
    throw std::runtime_error("cannot write " + p.string() + ": " + std::strerror(err));
  }

  fs::path dir_;
  fs::path staging_;
  std::string ext_;
  std::unique_ptr<format::record_encoder> encoder_;
  schema_ptr schema_;
  std::string buffer_;
  std::FILE* file_ = nullptr;
  std::uint32_t subtask_ = 0;
  std::uint32_t parallelism_ = 1;
  std::vector<std::uint64_t> pending_; // ascending
  std::uint64_t last_id_ = 0;
  bool started_ = false;
};

} // namespace

expected<stream_operator_ptr> make_transactional_file_sink(std::string path,
                                                           format::format_kind format,
                                                           schema_ptr input_schema,
                                                           format::timestamp_format ts) {
  if (format == format::format_kind::apache_combined)
    return make_error(errc::invalid_argument,
                      "apache_combined cannot be written; use jsonl or csv");
  if (path.empty())
    return make_error(errc::invalid_argument, "a file sink needs a path");
  return stream_operator_ptr{std::make_unique<transactional_file_sink>(
    std::move(path), format, std::move(input_schema), ts)};
}

} // namespace weir
