// SPDX-License-Identifier: Apache-2.0
#include "weir/format/format.hpp"
#include "weir/format/file_split.hpp"

#include "internal/decoder_common.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace weir::format {

namespace {

constexpr std::size_t max_raw_bytes = 4096;
constexpr std::size_t extra_records_per_poll = 4096;

// Cuts `s` to at most `n` bytes without splitting a UTF-8 sequence.
std::string_view cut_utf8(std::string_view s, std::size_t n) noexcept {
  if (s.size() <= n)
    return s;
  std::size_t end = n;
  while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80)
    --end;
  return s.substr(0, end);
}

// pread(2) of up to `n` bytes at `offset`, retried on EINTR; throws naming
// `path` on an error.
std::size_t read_at(int fd, char* out, std::size_t n, std::uint64_t offset,
                    const std::string& path) {
  ssize_t got = 0;
  do {
    got = ::pread(fd, out, n, static_cast<off_t>(offset));
  } while (got < 0 && errno == EINTR);
  if (got < 0)
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
  return static_cast<std::size_t>(got);
}

// The offset just after the first newline at or after `from`; the file's
// size when there is none.
std::uint64_t next_line_start(int fd, std::uint64_t from, const std::string& path) {
  char buf[4096];
  for (std::uint64_t at = from;;) {
    const std::size_t got = read_at(fd, buf, sizeof buf, at, path);
    if (got == 0)
      return at;
    if (const void* nl = std::memchr(buf, '\n', got))
      return at + static_cast<std::uint64_t>(static_cast<const char*>(nl) - buf) + 1;
    at += got;
  }
}

class file_source_reader final : public source_reader {
public:
  file_source_reader(file_source_options opts, std::optional<file_split_range> split, int fd,
                     std::unique_ptr<record_decoder> dec, bad_record_handler on_bad)
    : opts_(std::move(opts)), split_(std::move(split)), fd_(fd), dec_(std::move(dec)),
      on_bad_(std::move(on_bad)), builder_(dec_->output_schema()) {
    if (opts_.chunk_bytes == 0)
      opts_.chunk_bytes = 1;
    skip_header_pending_ = opts_.decoder.kind == format_kind::csv && opts_.decoder.csv_header;
    if (split_)
      first_ = split_->first ? 0 : next_line_start(fd_, split_->range.begin, opts_.path);
  }

  ~file_source_reader() override { close_file(); }

  file_source_reader(const file_source_reader&) = delete;
  file_source_reader& operator=(const file_source_reader&) = delete;

  const schema_ptr& output_schema() const override { return dec_->output_schema(); }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (done_)
      return nullptr;
    if (max_rows == 0)
      max_rows = 1;
    if (!begun_)
      begin();
    std::size_t consumed = 0;
    const std::size_t max_consumed = max_rows + extra_records_per_poll;
    while (builder_.rows() < max_rows && consumed < max_consumed) {
      if (split_ && buf_offset_ + start_ > split_->range.end) {
        // The next line starts after the split's end: the next split's.
        done_ = true;
        close_file();
        break;
      }
      std::string_view avail{buf_.data() + start_, len_ - start_};
      if (opts_.batch_decode && !batch_stalled_ && !avail.empty()
          && buf_offset_ + start_ >= opts_.start_offset) {
        // The chunk's complete records in one call (jsonl: simdjson
        // iterate_many straight from buf_, whose slack is its padding).
        record_decoder::batch_limits lim;
        lim.max_rows = max_rows - builder_.rows();
        lim.max_records = max_consumed - consumed;
        if (split_)
          lim.max_start = static_cast<std::size_t>(split_->range.end - (buf_offset_ + start_));
        lim.single_line = split_.has_value();
        record_decoder::batch_progress pr;
        const std::uint64_t base_offset = buf_offset_ + start_;
        const std::uint64_t base_line = line_;
        {
          // Applied also when on_bad throws, as the per-record path would.
          struct apply_progress {
            file_source_reader& r;
            record_decoder::batch_progress& p;
            std::size_t& consumed;
            ~apply_progress() {
              r.start_ += p.bytes;
              r.line_ += p.lines;
              r.lines_read_ += p.lines;
              consumed += p.records;
              if (p.records > 0)
                r.skip_header_pending_ = false;
            }
          } apply{*this, pr, consumed};
          dec_->decode_many(avail, eof_, lim, builder_, pr,
                            [&](std::size_t offset, std::size_t line, std::string_view rec,
                                const std::string& reason) {
                              if (!on_bad_)
                                return;
                              bad_record r;
                              r.source = bad_record_source::file;
                              r.origin = opts_.path;
                              r.line = line_base() + base_line + line - 1;
                              r.offset = base_offset + offset;
                              r.reason = reason;
                              r.raw = std::string{cut_utf8(rec, max_raw_bytes)};
                              on_bad_(r); // may throw (on_bad_record = "fail")
                            });
        }
        if (pr.control) {
          pending_control_ = dec_->control_time();
          break;
        }
        if (pr.records > 0)
          continue;
        // Nothing complete (or a record the per-record path must see): that
        // record is read by the per-record path, whose scan resumes where it
        // stopped as more chunks come (a line of many MiB stays O(length)).
        batch_stalled_ = true;
      }
      std::size_t lines = 0;
      const std::size_t n = avail.empty() ? 0 : dec_->next_record(avail, eof_, lines);
      if (n == 0) {
        if (eof_) {
          done_ = true;
          close_file();
          break;
        }
        fill();
        continue;
      }
      std::string_view rec = avail.substr(0, n);
      const std::uint64_t rec_offset = buf_offset_ + start_;
      const std::uint64_t rec_line = line_;
      if (split_ && lines > (rec.back() == '\n' ? 1u : 0u))
        throw std::runtime_error(
          opts_.path + ":" + std::to_string(line_base() + rec_line - 1) + ": a record spans "
          + std::to_string(lines) + " lines (a quoted field holds a newline), and a file "
          "split at line boundaries cannot hold one: set split = \"none\" to read it as "
          "one stream");
      start_ += n;
      line_ += lines;
      batch_stalled_ = false;
      if (!rec.empty() && rec.back() == '\n')
        rec.remove_suffix(1);
      if (!rec.empty() && rec.back() == '\r')
        rec.remove_suffix(1);
      if (rec_offset < opts_.start_offset) {
        // Resuming: only a CSV header before the resume point is decoded.
        if (skip_header_pending_ && !rec.empty()) {
          skip_header_pending_ = false;
          (void) dec_->decode(rec, builder_, reason_);
        }
        continue;
      }
      skip_header_pending_ = false;
      lines_read_ += lines;
      ++consumed;
      reason_.clear();
      auto st = dec_->decode(rec, builder_, reason_);
      if (st == record_decoder::status::control) {
        // A control line ends the batch so that the clock advance travels
        // after exactly the rows before it.
        pending_control_ = dec_->control_time();
        break;
      }
      if (st == record_decoder::status::bad && on_bad_) {
        bad_record r;
        r.source = bad_record_source::file;
        r.origin = opts_.path;
        r.line = line_base() + rec_line - 1;
        r.offset = rec_offset;
        r.reason = reason_;
        r.raw = std::string{cut_utf8(rec, max_raw_bytes)};
        on_bad_(r); // may throw (on_bad_record = "fail"): let it propagate
      }
    }
    if (done_ && builder_.rows() == 0)
      return nullptr;
    return builder_.finish();
  }

  /// While a resumed reader is still splitting the records before its start
  /// offset, it has consumed nothing yet: the position stays the start
  /// offset, so a checkpoint taken then resumes where this run did.
  std::vector<source_position> positions() const override {
    const auto from = std::max<std::uint64_t>(opts_.start_offset, first_);
    return {{split_ ? split_->name : opts_.path, position_unit::byte_offset,
             std::max<std::uint64_t>(buf_offset_ + start_, from)}};
  }

  std::optional<std::uint64_t> lines_read() const override { return lines_read_; }

  void seek(const std::vector<source_position>& to) override {
    // Records before the position are split (for line numbers) but not decoded.
    opts_.start_offset = select_position(to, split_ ? split_->name : opts_.path,
                                         position_unit::byte_offset);
  }

  std::optional<event_time> take_processing_time_advance() override {
    auto out = pending_control_;
    pending_control_.reset();
    return out;
  }

private:
  // Drops the consumed prefix and appends up to chunk_bytes from the file,
  // keeping decode_many_padding zeroed bytes after the data.
  void fill() {
    if (start_ > 0) {
      std::memmove(buf_.data(), buf_.data() + start_, len_ - start_);
      len_ -= start_;
      buf_offset_ += start_;
      start_ = 0;
    }
    const std::size_t old = len_;
    if (buf_.size() < old + opts_.chunk_bytes + decode_many_padding)
      buf_.resize(old + opts_.chunk_bytes + decode_many_padding);
    ssize_t got = 0;
    do {
      got = ::read(fd_, buf_.data() + old, opts_.chunk_bytes);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      const int err = errno;
      throw std::runtime_error("cannot read " + opts_.path + ": " + std::strerror(err));
    }
    len_ = old + static_cast<std::size_t>(got);
    std::memset(buf_.data() + len_, 0, decode_many_padding);
    if (got == 0) {
      eof_ = true;
      close_file();
    }
  }

  // Before the first record: a whole file (or a split at the file's start)
  // is read from byte 0, splitting the records before a resume point; a
  // split elsewhere seeks to its first record or resume point and reads a
  // CSV header from the file's start.
  void begin() {
    begun_ = true;
    if (!split_) {
      skip_bom();
      return;
    }
    const std::uint64_t from = std::max<std::uint64_t>(opts_.start_offset, first_);
    if (from == 0) {
      skip_bom();
      return;
    }
    bom_checked_ = true;
    if (::lseek(fd_, static_cast<off_t>(from), SEEK_SET) < 0)
      throw std::runtime_error("cannot seek in " + opts_.path + ": " + std::strerror(errno));
    buf_offset_ = from;
    opts_.start_offset = from;
    if (skip_header_pending_) {
      skip_header_pending_ = false;
      read_header();
    }
  }

  // Decodes the file's first record (after a BOM) as the CSV header.
  void read_header() {
    std::string head;
    std::uint64_t at = 0;
    bool eof = false;
    std::size_t skip = 0;
    for (;;) {
      std::size_t lines = 0;
      std::string_view avail{head};
      avail.remove_prefix(std::min(skip, avail.size()));
      const std::size_t n = avail.empty() ? 0 : dec_->next_record(avail, eof, lines);
      if (n > 0) {
        auto rec = avail.substr(0, n);
        if (!rec.empty() && rec.back() == '\n')
          rec.remove_suffix(1);
        if (!rec.empty() && rec.back() == '\r')
          rec.remove_suffix(1);
        (void) dec_->decode(rec, builder_, reason_);
        return;
      }
      if (eof)
        return;
      const std::size_t old = head.size();
      head.resize(old + 65536);
      const std::size_t got = read_at(fd_, head.data() + old, 65536, at, opts_.path);
      head.resize(old + got);
      at += got;
      eof = got == 0;
      if (at >= 3 && old == 0 && std::string_view{head}.substr(0, 3) == "\xEF\xBB\xBF")
        skip = 3;
    }
  }

  // 1-based line of this reader's first byte: the newlines before it are
  // counted once, when a line number is first needed.
  std::uint64_t line_base() {
    if (!split_ || opts_.start_offset == 0)
      return 1;
    if (!line_base_) {
      std::uint64_t lines = 1;
      std::string chunk(1 << 20, '\0');
      for (std::uint64_t at = 0; at < opts_.start_offset;) {
        const auto want = static_cast<std::size_t>(
          std::min<std::uint64_t>(chunk.size(), opts_.start_offset - at));
        const std::size_t got = read_at(fd_ >= 0 ? fd_ : reopen(), chunk.data(), want, at,
                                        opts_.path);
        if (got == 0)
          break;
        lines += static_cast<std::uint64_t>(std::count(chunk.data(), chunk.data() + got, '\n'));
        at += got;
      }
      line_base_ = lines;
    }
    return *line_base_;
  }

  // The file again, for counting lines after the split's reading closed it.
  int reopen() {
    fd_ = ::open(opts_.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0)
      throw std::runtime_error("cannot open " + opts_.path + ": " + std::strerror(errno));
    return fd_;
  }

  void skip_bom() {
    bom_checked_ = true;
    while (len_ - start_ < 3 && !eof_)
      fill();
    if (std::string_view{buf_.data(), len_}.substr(start_, 3) == "\xEF\xBB\xBF")
      start_ += 3;
  }

  void close_file() noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  file_source_options opts_;
  std::optional<file_split_range> split_;
  int fd_;
  std::unique_ptr<record_decoder> dec_;
  bad_record_handler on_bad_;
  batch_builder builder_;
  /// Unconsumed tail + the latest chunk (len_ bytes), then at least
  /// decode_many_padding zeroed bytes: simdjson reads past the data.
  std::vector<char> buf_;
  std::size_t len_ = 0;
  std::size_t start_ = 0;      ///< first unconsumed byte of buf_
  std::uint64_t buf_offset_ = 0; ///< file offset of buf_[0]
  std::uint64_t line_ = 1;     ///< 1-based line of buf_[start_]
  std::uint64_t lines_read_ = 0; ///< lines at or after the start offset
  bool eof_ = false;
  bool done_ = false;
  bool bom_checked_ = false;
  bool begun_ = false;
  bool batch_stalled_ = false; ///< decode_many found no complete record: one by one until one is

  std::uint64_t first_ = 0; ///< split: the offset of its first line
  std::optional<std::uint64_t> line_base_; ///< split: line of start_offset, once counted
  bool skip_header_pending_ = false;
  std::string reason_;
  std::optional<event_time> pending_control_;
};

} // namespace

expected<std::unique_ptr<record_decoder>> make_file_decoder(const file_source_options& opts) {
  decoder_options dopts = opts.decoder;
  if (!opts.event_time_field.empty())
    dopts.event_time_field = opts.event_time_field;
  return make_decoder(dopts);
}

namespace {

expected<source_reader_ptr> make_reader(const file_source_options& opts,
                                        std::optional<file_split_range> split,
                                        bad_record_handler on_bad) {
  auto dec = make_file_decoder(opts);
  if (!dec)
    return dec.error();
  const int fd = ::open(opts.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errc::io_error,
                      "cannot open " + opts.path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    ::close(fd);
    return make_error(errc::io_error,
                      "cannot open " + opts.path + ": " + std::strerror(EISDIR));
  }
  if (split && (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
    ::close(fd);
    return make_error(errc::io_error, "cannot split " + opts.path + ": not a regular file");
  }
  try {
    return source_reader_ptr{std::make_unique<file_source_reader>(
      opts, std::move(split), fd, std::move(*dec), std::move(on_bad))};
  } catch (const std::runtime_error& e) {
    ::close(fd); // (the reader was not made: nothing else owns it)
    return make_error(errc::io_error, e.what());
  }
}

} // namespace

expected<source_reader_ptr> make_file_source_reader(const file_source_options& opts,
                                                    bad_record_handler on_bad) {
  return make_reader(opts, std::nullopt, std::move(on_bad));
}

expected<source_reader_ptr> make_file_split_source_reader(const file_source_options& opts,
                                                          const file_split_range& split,
                                                          bad_record_handler on_bad) {
  return make_reader(opts, split, std::move(on_bad));
}

} // namespace weir::format
