// SPDX-License-Identifier: Apache-2.0
#include "weir/format/file_set.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <unordered_map>

#include <glob.h>

namespace weir::format {

namespace {

constexpr std::size_t max_open_files = 256;

bool hidden(std::string_view name) noexcept {
  return !name.empty() && (name.front() == '.' || name.front() == '_');
}

} // namespace

bool is_glob(std::string_view path) noexcept {
  return path.find_first_of("*?[") != std::string_view::npos;
}

expected<std::vector<std::string>> list_files(const std::string& path) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  if (!is_glob(path)) {
    fs::directory_iterator it{path, ec};
    if (ec)
      return make_error(errc::io_error, "cannot list " + path + ": " + ec.message());
    for (; it != fs::directory_iterator{}; it.increment(ec)) {
      if (ec)
        return make_error(errc::io_error, "cannot list " + path + ": " + ec.message());
      const auto name = it->path().filename().string();
      std::error_code fec;
      if (hidden(name) || !it->is_regular_file(fec))
        continue;
      out.push_back((fs::path{path} / name).string());
    }
  } else {
    glob_t g{};
    const int rc = ::glob(path.c_str(), GLOB_ERR, nullptr, &g);
    if (rc != 0 && rc != GLOB_NOMATCH) {
      globfree(&g);
      return make_error(errc::io_error, "cannot expand " + path + ": "
                                          + (rc == GLOB_ABORTED ? std::string{"read error"}
                                                                : std::string{"out of memory"}));
    }
    // Hidden and temporary names are left out unless the pattern asks for
    // them ("_*", ".*").
    const auto last = fs::path{path}.filename().string();
    for (std::size_t i = 0; i < g.gl_pathc; ++i) {
      std::string p = g.gl_pathv[i];
      const auto name = fs::path{p}.filename().string();
      std::error_code fec;
      if ((!hidden(name) || (!last.empty() && last.front() == name.front()))
          && fs::is_regular_file(p, fec))
        out.push_back(std::move(p));
    }
    globfree(&g);
  }
  std::erase_if(out, [](const std::string& p) { return p.find('\n') != std::string::npos; });
  std::sort(out.begin(), out.end());
  return out;
}

std::size_t file_subtask(std::string_view file, std::size_t parallelism) noexcept {
  if (parallelism <= 1)
    return 0;
  std::uint64_t h = 14695981039346656037ull; // FNV-1a
  for (unsigned char c : file) {
    h ^= c;
    h *= 1099511628211ull;
  }
  // MurmurHash3's finalizer: FNV's low bits alone mix poorly (h % 2 would be
  // the parity of the bytes).
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return static_cast<std::size_t>(h % parallelism);
}

namespace {

class file_set_reader final : public source_reader {
public:
  file_set_reader(file_set_options opts, schema_ptr schema, bad_record_handler on_bad)
    : opts_(std::move(opts)), schema_(std::move(schema)), on_bad_(std::move(on_bad)) {
    // Files are assigned by their path below the directory (or the glob's
    // directory part), so the assignment does not depend on where it lies.
    const auto& p = opts_.path;
    if (is_glob(p)) {
      const auto slash = p.rfind('/', p.find_first_of("*?["));
      base_ = slash == std::string::npos ? 0 : slash + 1;
    } else {
      base_ = p.size() + (p.ends_with('/') ? 0 : 1);
    }
  }

  void open(const operator_context& ctx) override { ctx_ = ctx; }

  const schema_ptr& output_schema() const override { return schema_; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    batch_split_.reset();
    delay_ = std::chrono::nanoseconds{0};
    const bool monitor = opts_.monitor_interval.count() > 0;
    if (!scanned_) {
      scan(true);
      scanned_ = true;
    }
    for (;;) {
      auto now = std::chrono::steady_clock::now();
      if (monitor && now - last_scan_ >= opts_.monitor_interval)
        scan(false);
      start_files();
      if (reading_.empty()) {
        if (!monitor)
          return nullptr;
        // Nothing to read until the next look at the directory.
        delay_ = std::max<std::chrono::nanoseconds>(
          std::chrono::milliseconds{1}, opts_.monitor_interval - (now - last_scan_));
        return batch_builder{schema_}.finish();
      }
      const std::size_t k = next_ % reading_.size();
      auto& f = files_[reading_[k]];
      auto b = f.reader->poll_next(max_rows);
      if (!b) {
        f.end = f.reader->position();
        f.reader.reset();
        f.st = state::finished;
        reading_.erase(reading_.begin() + static_cast<std::ptrdiff_t>(k));
        if (partitioned())
          changes_.finished.push_back(f.path);
        continue;
      }
      next_ = k + 1;
      advance_ = f.reader->take_processing_time_advance();
      if (partitioned())
        batch_split_ = f.path;
      return b;
    }
  }

  std::vector<source_position> positions() const override {
    std::vector<source_position> out;
    if (!scanned_) {
      // Restored, not polled yet: where the checkpoint said (a checkpoint
      // taken now must not forget the files read before).
      for (const auto& [path, p] : restored_)
        out.push_back(p);
      return out;
    }
    for (const auto& f : files_) {
      if (f.st == state::reading)
        out.push_back({f.path, position_unit::byte_offset, f.reader->position(), false});
      else if (f.st == state::finished)
        out.push_back({f.path, position_unit::byte_offset, f.end, true});
      else if (f.start > 0) // restored, not reopened yet
        out.push_back({f.path, position_unit::byte_offset, f.start, false});
    }
    return out;
  }

  void seek(const std::vector<source_position>& to) override {
    for (const auto& p : to) {
      if (p.split.empty() || p.unit != position_unit::byte_offset)
        throw std::runtime_error("the checkpoint's position (" + describe(p)
                                 + ") is not a file's: it cannot resume a source over "
                                 + opts_.path);
      restored_[p.split] = p;
    }
  }

  std::optional<event_time> take_processing_time_advance() override {
    auto out = advance_;
    advance_.reset();
    return out;
  }

  std::chrono::nanoseconds next_poll_delay() const override { return delay_; }

  // (Not before the first look at the files: a subtask is not idle because
  // it has not begun yet.)
  bool has_split_partitions() const override { return partitioned() && scanned_; }

  std::optional<std::string> batch_split() const override { return batch_split_; }

  split_changes take_split_changes() override {
    split_changes out;
    std::swap(out, changes_);
    return out;
  }

private:
  enum class state : std::uint8_t { pending, reading, finished };
  struct file {
    std::string path;
    state st = state::pending;
    std::uint64_t start = 0; ///< resume offset (restored)
    std::uint64_t end = 0;   ///< where it ended (finished)
    source_reader_ptr reader;
  };

  bool partitioned() const noexcept { return opts_.mode == file_set_mode::partitioned; }

  // Adds the files not known yet (of this subtask, when partitioned).
  void scan(bool first) {
    last_scan_ = std::chrono::steady_clock::now();
    auto listed = list_files(opts_.path);
    if (!listed)
      throw std::runtime_error(listed.error().message);
    for (auto& path : *listed) {
      if (index_.contains(path))
        continue;
      if (partitioned()
          && file_subtask(std::string_view{path}.substr(std::min(base_, path.size())),
                          opts_.parallelism)
               != opts_.subtask)
        continue;
      add(path);
    }
    if (!first)
      return;
    // Files of the checkpoint that are gone: finished ones stay known (they
    // are not read again if they come back); one begun cannot resume.
    for (const auto& [path, p] : restored_)
      if (!index_.contains(path)) {
        if (!p.finished)
          throw std::runtime_error("cannot resume " + path + " at byte "
                                   + std::to_string(p.value) + ": it is no longer there");
        add(path);
      }
  }

  void add(const std::string& path) {
    file f;
    f.path = path;
    if (auto it = restored_.find(path); it != restored_.end()) {
      if (it->second.finished) {
        f.st = state::finished;
        f.end = it->second.value;
      } else {
        f.start = it->second.value;
      }
    }
    index_.emplace(path, files_.size());
    files_.push_back(std::move(f));
  }

  // Opens the next files: sequential one at a time, partitioned up to
  // max_open_files. A file being resumed goes first, then name order.
  void start_files() {
    const std::size_t limit = partitioned() ? max_open_files : 1;
    while (reading_.size() < limit) {
      std::size_t best = files_.size();
      for (std::size_t i = 0; i < files_.size(); ++i) {
        const auto& f = files_[i];
        if (f.st != state::pending)
          continue;
        if (best == files_.size() || (f.start > 0) > (files_[best].start > 0)
            || ((f.start > 0) == (files_[best].start > 0) && f.path < files_[best].path))
          best = i;
      }
      if (best == files_.size())
        return;
      auto& f = files_[best];
      file_source_options fo = opts_.file;
      fo.path = f.path;
      fo.start_offset = f.start;
      auto r = make_file_source_reader(fo, on_bad_);
      if (!r)
        throw std::runtime_error(r.error().message);
      f.reader = std::move(*r);
      f.reader->open(ctx_);
      f.st = state::reading;
      reading_.push_back(best);
      if (partitioned())
        changes_.begun.push_back(f.path);
    }
  }

  file_set_options opts_;
  std::size_t base_ = 0; ///< length of the directory part of listed paths
  schema_ptr schema_;
  bad_record_handler on_bad_;
  operator_context ctx_;
  std::vector<file> files_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, source_position> restored_;
  std::vector<std::size_t> reading_; ///< indices into files_, read in turn
  std::size_t next_ = 0;
  bool scanned_ = false;
  std::chrono::steady_clock::time_point last_scan_{};
  std::chrono::nanoseconds delay_{0};
  std::optional<std::string> batch_split_;
  split_changes changes_;
  std::optional<event_time> advance_;
};

} // namespace

expected<source_reader_ptr> make_file_set_reader(file_set_options opts,
                                                 bad_record_handler on_bad) {
  auto dec = make_file_decoder(opts.file);
  if (!dec)
    return dec.error();
  auto schema = (*dec)->output_schema();
  return source_reader_ptr{
    std::make_unique<file_set_reader>(std::move(opts), std::move(schema), std::move(on_bad))};
}

} // namespace weir::format
