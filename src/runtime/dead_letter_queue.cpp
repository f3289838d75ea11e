// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/dead_letter_queue.hpp"

#include "weir/format/format.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <tuple>
#include <vector>

namespace weir::runtime {

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& what, const fs::path& p, int err) {
  throw std::runtime_error("cannot " + what + " dead-letter file " + p.string() + ": "
                           + std::strerror(err));
}

void sync_dir(const fs::path& d) {
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    fail("sync the directory of the", d, errno);
  int rc = ::fsync(fd);
  int err = errno;
  ::close(fd);
  if (rc != 0)
    fail("sync the directory of the", d, err);
}

std::string padded(std::uint64_t id) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%012llu", static_cast<unsigned long long>(id));
  return buf;
}

/// A pending file's name `<id>-<writer>.pending`, parsed; false otherwise.
bool parse_pending(const std::string& name, std::uint64_t& id, std::uint32_t& writer) {
  constexpr std::string_view suffix = ".pending";
  if (name.size() <= suffix.size() || name.compare(name.size() - suffix.size(), suffix.size(),
                                                   suffix) != 0)
    return false;
  auto stem = std::string_view{name}.substr(0, name.size() - suffix.size());
  auto dash = stem.find('-');
  if (dash == std::string_view::npos)
    return false;
  auto a = std::from_chars(stem.data(), stem.data() + dash, id);
  auto b = std::from_chars(stem.data() + dash + 1, stem.data() + stem.size(), writer);
  return a.ec == std::errc{} && a.ptr == stem.data() + dash && b.ec == std::errc{}
         && b.ptr == stem.data() + stem.size();
}

struct pending_file {
  std::uint64_t id;
  std::uint32_t writer;
  fs::path path;
};

std::vector<pending_file> list_pending(const fs::path& staging) {
  std::vector<pending_file> out;
  std::error_code ec;
  for (fs::directory_iterator it{staging, ec}, end; !ec && it != end; it.increment(ec)) {
    pending_file p{0, 0, it->path()};
    if (parse_pending(it->path().filename().string(), p.id, p.writer))
      out.push_back(std::move(p));
  }
  if (ec)
    throw std::runtime_error("cannot list " + staging.string() + ": " + ec.message());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.id, a.writer) < std::tie(b.id, b.writer);
  });
  return out;
}

std::string read_all(const fs::path& p) {
  std::ifstream in{p, std::ios::binary};
  if (!in)
    fail("read the staged part of the", p, errno);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_synced(const fs::path& p, const std::string& bytes) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (f == nullptr)
    fail("stage the", p, errno);
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size()
            && std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  int err = errno;
  ok = std::fclose(f) == 0 && ok;
  if (!ok)
    fail("stage the", p, err);
}

void remove_or_throw(const fs::path& p) {
  std::error_code ec;
  fs::remove(p, ec);
  if (ec)
    throw std::runtime_error("cannot remove " + p.string() + ": " + ec.message());
}

std::uint64_t count_lines(const std::string& s) {
  return static_cast<std::uint64_t>(std::count(s.begin(), s.end(), '\n'));
}

} // namespace

dead_letter_queue::dead_letter_queue(std::string path, commit_mode mode, bool append)
  : path_(std::move(path)), mode_(mode) {
  std::error_code ec;
  auto file = fs::path{path_};
  auto parent = file.parent_path();
  if (!parent.empty())
    fs::create_directories(parent, ec);
  staging_ = (parent.empty() ? fs::path{"."} : parent)
             / ("." + file.filename().string() + ".staging");
  if (mode_ == commit_mode::two_phase) {
    fs::create_directories(staging_, ec);
    if (ec)
      throw std::runtime_error("cannot create " + staging_.string() + ": " + ec.message());
  }
  file_ = std::fopen(path_.c_str(), mode_ == commit_mode::two_phase || append ? "ab" : "wb");
  if (file_ == nullptr)
    fail("create the", path_, errno);
}

dead_letter_queue::~dead_letter_queue() {
  if (file_ != nullptr)
    std::fclose(file_);
}

void dead_letter_queue::append_or_throw(const std::string& bytes) {
  if (std::fwrite(bytes.data(), 1, bytes.size(), file_) != bytes.size()
      || std::fflush(file_) != 0)
    fail("write the", path_, errno);
}

void dead_letter_queue::write(const bad_record& r, std::uint32_t writer, std::size_t attempt) {
  std::string line;
  format::append_bad_record_json(r, line);
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ == commit_mode::direct) {
    append_or_throw(line);
    return;
  }
  if (attempt < attempt_)
    return;
  auto& w = writers_[writer];
  w.buffer += line;
  ++w.count;
}

void dead_letter_queue::seal_locked(std::uint32_t writer, std::uint64_t checkpoint_id) {
  auto& w = writers_[writer];
  w.last_sealed = std::max(w.last_sealed, checkpoint_id);
  highest_ = std::max(highest_, checkpoint_id);
  if (w.buffer.empty())
    return;
  write_synced(staging_ / (padded(checkpoint_id) + "-" + std::to_string(writer) + ".pending"),
               w.buffer);
  w.buffer.clear();
  w.count = 0;
}

void dead_letter_queue::seal(std::uint32_t writer, std::size_t attempt,
                             std::uint64_t checkpoint_id) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ != commit_mode::two_phase || attempt < attempt_)
    return;
  seal_locked(writer, checkpoint_id);
}

void dead_letter_queue::seal_final(std::uint32_t writer, std::size_t attempt) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ != commit_mode::two_phase || attempt < attempt_)
    return;
  auto& w = writers_[writer];
  seal_locked(writer, std::max(w.last_sealed, restored_) + 1);
}

void dead_letter_queue::write_log_locked() {
  std::string text;
  for (const auto& e : log_)
    text += std::to_string(e.checkpoint_id) + " " + std::to_string(e.length) + " "
            + std::to_string(e.count) + "\n";
  auto tmp = staging_ / "committed.log.tmp";
  write_synced(tmp, text);
  std::error_code ec;
  fs::rename(tmp, staging_ / "committed.log", ec);
  if (ec)
    throw std::runtime_error("cannot write " + (staging_ / "committed.log").string() + ": "
                             + ec.message());
  sync_dir(staging_);
}

void dead_letter_queue::commit_locked(std::uint64_t checkpoint_id, bool recovering) {
  const std::uint64_t after = log_.empty() ? 0 : log_.back().checkpoint_id;
  std::uint64_t added = 0;
  std::vector<fs::path> done;
  for (const auto& p : list_pending(staging_)) {
    if (p.id > checkpoint_id)
      break;
    done.push_back(p.path);
    if (recovering && p.id <= after)
      continue; // committed before a crash that left the file behind
    auto bytes = read_all(p.path);
    append_or_throw(bytes);
    added += count_lines(bytes);
  }
  if (done.empty())
    return;
  if (added > 0) {
    if (::fsync(fileno(file_)) != 0)
      fail("sync the", path_, errno);
    // The file's length after this checkpoint: a crash before the log
    // records it leaves a tail that the next restore cuts off and commits
    // again.
    log_entry e;
    e.checkpoint_id = checkpoint_id;
    e.length = static_cast<std::uint64_t>(fs::file_size(path_));
    e.count = (log_.empty() ? 0 : log_.back().count) + added;
    log_.push_back(e);
    write_log_locked();
  }
  for (const auto& p : done)
    remove_or_throw(p);
}

void dead_letter_queue::commit(std::uint64_t checkpoint_id) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ != commit_mode::two_phase)
    return;
  commit_locked(checkpoint_id, false);
}

void dead_letter_queue::restore(std::uint64_t checkpoint_id, std::size_t attempt) {
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ != commit_mode::two_phase)
    return;
  attempt_ = attempt;
  writers_.clear();
  restored_ = checkpoint_id;
  highest_ = checkpoint_id;
  // What the checkpoints up to `checkpoint_id` committed.
  log_.clear();
  if (checkpoint_id > 0) {
    std::ifstream in{staging_ / "committed.log"};
    log_entry e;
    while (in >> e.checkpoint_id >> e.length >> e.count)
      if (e.checkpoint_id <= checkpoint_id)
        log_.push_back(e);
  }
  const std::uint64_t length = log_.empty() ? 0 : log_.back().length;
  std::fclose(file_);
  file_ = nullptr;
  std::error_code ec;
  if (fs::exists(path_, ec) && fs::file_size(path_, ec) != length) {
    fs::resize_file(path_, length, ec);
    if (ec)
      throw std::runtime_error("cannot truncate dead-letter file " + path_ + ": "
                               + ec.message());
  }
  file_ = std::fopen(path_.c_str(), "ab");
  if (file_ == nullptr)
    fail("open the", path_, errno);
  write_log_locked();
  // Pre-committed before `checkpoint_id` completed: commit them; staged
  // after it: the sources replay those records.
  commit_locked(checkpoint_id, true);
  for (const auto& p : list_pending(staging_))
    remove_or_throw(p.path);
  sync_dir(staging_);
}

void dead_letter_queue::finish() {
  std::lock_guard<std::mutex> guard{mutex_};
  if (mode_ != commit_mode::two_phase)
    return;
  const auto id = highest_ + 1;
  for (auto& [writer, w] : writers_)
    seal_locked(writer, id);
  commit_locked(id, false);
}

std::uint64_t dead_letter_queue::committed_count() const {
  std::lock_guard<std::mutex> guard{mutex_};
  return log_.empty() ? 0 : log_.back().count;
}

} // namespace weir::runtime
