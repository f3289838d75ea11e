// SPDX-License-Identifier: Apache-2.0
#include "weir/format/file_split.hpp"

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <utility>

namespace weir::format {

std::string file_split::name(const std::string& path) const {
  return path + "@" + std::to_string(begin) + "-" + std::to_string(end);
}

std::vector<file_split> plan_file_splits(std::uint64_t size, std::size_t count,
                                         std::uint64_t split_size) {
  if (split_size > 0)
    count = static_cast<std::size_t>(std::max<std::uint64_t>(1, (size + split_size - 1) / split_size));
  count = std::max<std::size_t>(count, 1);
  std::vector<file_split> out;
  out.reserve(count);
  std::uint64_t begin = 0;
  for (std::size_t i = 0; i < count; ++i) {
    // size * (i + 1) / count, without overflow: size = q * count + r.
    const std::uint64_t q = size / count;
    const std::uint64_t r = size % count;
    const std::uint64_t end = split_size > 0 ? std::min(size, begin + split_size)
                                             : q * (i + 1) + r * (i + 1) / count;
    out.push_back({begin, i + 1 == count ? size : end});
    begin = out.back().end;
  }
  return out;
}

namespace {

class file_split_reader final : public source_reader {
public:
  file_split_reader(file_split_options opts,
                    std::vector<std::pair<std::size_t, file_split>> splits, schema_ptr schema,
                    bad_record_handler on_bad)
    : opts_(std::move(opts)), schema_(std::move(schema)), on_bad_(std::move(on_bad)) {
    for (const auto& [index, s] : splits) {
      split sp;
      sp.range = s;
      sp.first = index == 0;
      sp.name = s.name(opts_.file.path);
      splits_.push_back(std::move(sp));
    }
  }

  void open(const operator_context& ctx) override { ctx_ = ctx; }

  const schema_ptr& output_schema() const override { return schema_; }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    batch_split_.reset();
    if (!started_)
      start();
    while (!reading_.empty()) {
      const std::size_t k = next_ % reading_.size();
      auto& s = splits_[reading_[k]];
      auto b = s.reader->poll_next(max_rows);
      if (!b) {
        s.end = s.reader->position();
        lines_done_ += s.reader->lines_read().value_or(0);
        s.reader.reset();
        s.finished = true;
        reading_.erase(reading_.begin() + static_cast<std::ptrdiff_t>(k));
        changes_.finished.push_back(s.name);
        continue;
      }
      next_ = k + 1;
      batch_split_ = s.name;
      return b;
    }
    return nullptr;
  }

  std::vector<source_position> positions() const override {
    std::vector<source_position> out;
    for (const auto& s : splits_) {
      if (s.finished)
        out.push_back({s.name, position_unit::byte_offset, s.end, true});
      else if (s.reader)
        out.push_back({s.name, position_unit::byte_offset, s.reader->position(), false});
      else
        out.push_back({s.name, position_unit::byte_offset, s.start, false});
    }
    return out;
  }

  void seek(const std::vector<source_position>& to) override {
    std::map<std::string, const source_position*> by_name;
    for (const auto& p : to)
      by_name[p.split] = &p;
    for (auto& s : splits_) {
      auto it = by_name.find(s.name);
      if (it == by_name.end() || it->second->unit != position_unit::byte_offset) {
        std::string had;
        for (const auto& p : to)
          had += (had.empty() ? "" : ", ") + describe(p);
        throw std::runtime_error(
          "the checkpoint holds no position for split " + s.name + " (it has " + had
          + "): a split file resumes only with the same size, split_size and parallelism");
      }
      if (it->second->finished) {
        s.finished = true;
        s.end = it->second->value;
      } else {
        s.start = it->second->value;
      }
    }
  }

  std::optional<std::uint64_t> lines_read() const override {
    std::uint64_t n = lines_done_;
    for (const auto& s : splits_)
      if (s.reader)
        n += s.reader->lines_read().value_or(0);
    return n;
  }

  bool has_split_partitions() const override { return started_; }

  std::optional<std::string> batch_split() const override { return batch_split_; }

  split_changes take_split_changes() override {
    split_changes out;
    std::swap(out, changes_);
    return out;
  }

private:
  struct split {
    file_split range;
    bool first = false; ///< the file's first split: its lines start in [0, end]
    std::string name;
    std::uint64_t start = 0; ///< resume offset (restored); 0: its first line
    std::uint64_t end = 0;   ///< where it ended (finished)
    bool finished = false;
    source_reader_ptr reader;
  };

  // Begins every split at once, so that each holds the watermark back from
  // the start (a split begun later would find its records late).
  void start() {
    started_ = true;
    for (std::size_t i = 0; i < splits_.size(); ++i) {
      auto& s = splits_[i];
      if (s.finished)
        continue;
      file_source_options fo = opts_.file;
      fo.start_offset = s.start;
      auto r = make_file_split_source_reader(fo, {s.range, s.first, s.name}, on_bad_);
      if (!r)
        throw std::runtime_error(r.error().message);
      s.reader = std::move(*r);
      s.reader->open(ctx_);
      reading_.push_back(i);
      changes_.begun.push_back(s.name);
    }
  }

  file_split_options opts_;
  schema_ptr schema_;
  bad_record_handler on_bad_;
  operator_context ctx_;
  std::vector<split> splits_; ///< this subtask's, in file order
  std::vector<std::size_t> reading_;
  std::size_t next_ = 0;
  bool started_ = false;
  std::uint64_t lines_done_ = 0;
  std::optional<std::string> batch_split_;
  split_changes changes_;
};

} // namespace

expected<source_reader_ptr> make_file_split_reader(file_split_options opts,
                                                   bad_record_handler on_bad) {
  auto dec = make_file_decoder(opts.file);
  if (!dec)
    return dec.error();
  std::error_code ec;
  const auto status = std::filesystem::status(opts.file.path, ec);
  if (ec || !std::filesystem::is_regular_file(status))
    return make_error(errc::io_error, "cannot split " + opts.file.path + ": "
                                        + (ec ? ec.message() : "not a regular file"));
  const auto size = std::filesystem::file_size(opts.file.path, ec);
  if (ec)
    return make_error(errc::io_error, "cannot split " + opts.file.path + ": " + ec.message());
  const auto all = plan_file_splits(size, opts.count, opts.split_size);
  std::vector<std::pair<std::size_t, file_split>> mine;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (split_subtask(i, opts.parallelism) == opts.subtask)
      mine.emplace_back(i, all[i]);
  auto schema = (*dec)->output_schema();
  return source_reader_ptr{std::make_unique<file_split_reader>(
    std::move(opts), std::move(mine), std::move(schema), std::move(on_bad))};
}

} // namespace weir::format
