// SPDX-License-Identifier: Apache-2.0
#include "weir/format/format.hpp"

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

class file_source_reader final : public source_reader {
public:
  file_source_reader(file_source_options opts, int fd,
                     std::unique_ptr<record_decoder> dec, bad_record_handler on_bad)
    : opts_(std::move(opts)), fd_(fd), dec_(std::move(dec)),
      on_bad_(std::move(on_bad)), builder_(dec_->output_schema()) {
    if (opts_.chunk_bytes == 0)
      opts_.chunk_bytes = 1;
    skip_header_pending_ = opts_.decoder.kind == format_kind::csv && opts_.decoder.csv_header;
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
    if (!bom_checked_)
      skip_bom();
    std::size_t consumed = 0;
    const std::size_t max_consumed = max_rows + extra_records_per_poll;
    while (builder_.rows() < max_rows && consumed < max_consumed) {
      std::string_view avail{buf_.data() + start_, buf_.size() - start_};
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
      start_ += n;
      line_ += lines;
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
        r.origin = opts_.path;
        r.line = rec_line;
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
    return {{opts_.path, position_unit::byte_offset,
             std::max<std::uint64_t>(buf_offset_ + start_, opts_.start_offset)}};
  }

  std::optional<std::uint64_t> lines_read() const override { return lines_read_; }

  void seek(const std::vector<source_position>& to) override {
    // Records before the position are split (for line numbers) but not decoded.
    opts_.start_offset = select_position(to, opts_.path, position_unit::byte_offset);
  }

  std::optional<event_time> take_processing_time_advance() override {
    auto out = pending_control_;
    pending_control_.reset();
    return out;
  }

private:
  // Drops the consumed prefix and appends up to chunk_bytes from the file.
  void fill() {
    if (start_ > 0) {
      buf_.erase(0, start_);
      buf_offset_ += start_;
      start_ = 0;
    }
    const std::size_t old = buf_.size();
    buf_.resize(old + opts_.chunk_bytes);
    ssize_t got = 0;
    do {
      got = ::read(fd_, buf_.data() + old, opts_.chunk_bytes);
    } while (got < 0 && errno == EINTR);
    if (got < 0) {
      const int err = errno;
      buf_.resize(old);
      throw std::runtime_error("cannot read " + opts_.path + ": " + std::strerror(err));
    }
    buf_.resize(old + static_cast<std::size_t>(got));
    if (got == 0) {
      eof_ = true;
      close_file();
    }
  }

  void skip_bom() {
    bom_checked_ = true;
    while (buf_.size() - start_ < 3 && !eof_)
      fill();
    if (std::string_view{buf_}.substr(start_, 3) == "\xEF\xBB\xBF")
      start_ += 3;
  }

  void close_file() noexcept {
    if (fd_ >= 0) {
      ::close(fd_);
      fd_ = -1;
    }
  }

  file_source_options opts_;
  int fd_;
  std::unique_ptr<record_decoder> dec_;
  bad_record_handler on_bad_;
  batch_builder builder_;
  std::string buf_;            ///< unconsumed tail + the latest chunk
  std::size_t start_ = 0;      ///< first unconsumed byte of buf_
  std::uint64_t buf_offset_ = 0; ///< file offset of buf_[0]
  std::uint64_t line_ = 1;     ///< 1-based line of buf_[start_]
  std::uint64_t lines_read_ = 0; ///< lines at or after the start offset
  bool eof_ = false;
  bool done_ = false;
  bool bom_checked_ = false;
  bool skip_header_pending_ = false;
  std::string reason_;
  std::optional<event_time> pending_control_;
};

} // namespace

expected<source_reader_ptr> make_file_source_reader(const file_source_options& opts,
                                                    bad_record_handler on_bad) {
  decoder_options dopts = opts.decoder;
  if (!opts.event_time_field.empty())
    dopts.event_time_field = opts.event_time_field;
  auto dec = make_decoder(dopts);
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
  return source_reader_ptr{std::make_unique<file_source_reader>(
    opts, fd, std::move(*dec), std::move(on_bad))};
}

} // namespace weir::format
