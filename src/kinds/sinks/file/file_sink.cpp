// SPDX-License-Identifier: Apache-2.0
#include "weir/file/sink.hpp"

#include <cerrno>
#include <chrono>
#include <optional>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <system_error>

namespace weir {

namespace {

constexpr std::size_t flush_bytes = 1 << 20;

/// Shared logic of the file and stdout sinks: encode rows into `buffer_`,
/// write the header once, hand full buffers to `write_out`.
class text_sink : public stream_operator {
public:
  text_sink(format::format_kind format, schema_ptr input_schema,
            format::timestamp_format ts = format::timestamp_format::epoch_ms)
    : encoder_(format::make_encoder(format, ts)), schema_(std::move(input_schema)) {}

  void process_batch(const record_batch_ptr& batch, output_collector&) override {
    if (!batch)
      return;
    if (!header_written_) {
      buffer_ += encoder_->header(schema_ ? *schema_ : *batch->schema);
      header_written_ = true;
    }
    for (std::size_t row = 0; row < batch->num_rows; ++row)
      encoder_->encode(*batch, row, buffer_);
    after_batch();
  }

  void process_watermark(event_time, output_collector&) override {
    // A sink is the end of the stream: nothing to forward.
  }

protected:
  // Writes the header now if the schema is known (so an empty stream still
  // gets a CSV header line).
  void write_known_header() {
    if (schema_ && !header_written_) {
      buffer_ += encoder_->header(*schema_);
      header_written_ = true;
    }
  }

  virtual void after_batch() = 0;

  std::unique_ptr<format::record_encoder> encoder_;
  schema_ptr schema_;
  std::string buffer_;
  bool header_written_ = false;
};

/// Wall-clock ms since the epoch (processing-time timers are in it).
event_time wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

class file_sink final : public text_sink {
public:
  file_sink(std::string path, format::format_kind format, schema_ptr input_schema,
            std::chrono::milliseconds flush_interval, format::timestamp_format ts)
    : text_sink(format, std::move(input_schema), ts),
      path_(std::move(path)),
      flush_interval_(flush_interval) {}

  ~file_sink() override {
    // A failed job: the output keeps its in-progress name.
    if (file_)
      std::fclose(file_);
  }

  file_sink(const file_sink&) = delete;
  file_sink& operator=(const file_sink&) = delete;

  void open(const operator_context&) override {
    namespace fs = std::filesystem;
    const auto parent = fs::path{path_}.parent_path();
    if (!parent.empty()) {
      std::error_code ec;
      fs::create_directories(parent, ec);
      if (ec)
        throw std::runtime_error("cannot write " + path_ + ": " + ec.message());
    }
    std::error_code ec;
    auto st = fs::status(path_, ec);
    if (fs::is_directory(st))
      fail(EISDIR);
    // A FIFO or a device (/dev/stdout) is written as it is.
    write_path_ = fs::exists(st) && !fs::is_regular_file(st) ? path_ : in_progress_path(path_);
    if (write_path_ != path_) {
      // The previous run's output goes now, as truncating it did: a run
      // that fails leaves only its in-progress file.
      fs::remove(path_, ec);
      if (ec)
        throw std::runtime_error("cannot write " + path_ + ": cannot remove the earlier output: "
                                 + ec.message());
    }
    file_ = std::fopen(write_path_.c_str(), "wb");
    if (!file_)
      fail(errno);
    write_known_header();
    flush_due_ = wall_ms() + flush_interval_.count();
  }

  void finish(output_collector&) override { close(); }

  void stop(output_collector&) override { close(); }

  std::optional<event_time> next_processing_timer() const override {
    if (!file_ || (buffer_.empty() && !unflushed_))
      return std::nullopt;
    return flush_due_;
  }

  void on_processing_time(event_time, output_collector&) override { flush_if_due(); }

private:
  void after_batch() override {
    if (buffer_.size() >= flush_bytes)
      write_buffer();
    flush_if_due();
  }

  /// What was written reaches the OS at least every flush_interval, so a
  /// reader (`tail -f`) sees it; fflush costs a write(2), not an fsync.
  void flush_if_due() {
    if (!file_)
      return;
    auto now = wall_ms();
    if (now < flush_due_)
      return;
    flush_due_ = now + flush_interval_.count();
    if (buffer_.empty() && !unflushed_)
      return;
    write_buffer();
    if (std::fflush(file_) != 0)
      fail(errno);
    unflushed_ = false;
  }

  void write_buffer() {
    if (!file_)
      throw std::runtime_error("cannot write " + path_ + ": the sink is not open");
    if (buffer_.empty())
      return;
    if (std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      fail(errno);
    buffer_.clear();
    unflushed_ = true;
  }

  void close() {
    if (!file_)
      return;
    write_buffer();
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0)
      fail(errno);
    if (write_path_ != path_) {
      std::error_code ec;
      std::filesystem::rename(write_path_, path_, ec);
      if (ec)
        throw std::runtime_error("cannot write " + path_ + ": rename from " + write_path_
                                 + ": " + ec.message());
    }
  }

  [[noreturn]] void fail(int err) const {
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(err));
  }

  std::string path_;
  std::string write_path_; ///< the in-progress name, or path_ for a FIFO or device
  std::chrono::milliseconds flush_interval_;
  event_time flush_due_ = 0;
  bool unflushed_ = false; ///< written to the FILE since its last fflush
  std::FILE* file_ = nullptr;
};

class stdout_sink final : public text_sink {
public:
  using text_sink::text_sink;

  void open(const operator_context&) override { write_known_header(); }

  void finish(output_collector&) override {
    after_batch();
    std::fflush(stdout);
  }

  void stop(output_collector& out) override { finish(out); }

private:
  void after_batch() override {
    if (!buffer_.empty()
        && std::fwrite(buffer_.data(), 1, buffer_.size(), stdout) != buffer_.size())
      throw std::runtime_error(std::string{"cannot write stdout: "}
                               + std::strerror(errno));
    buffer_.clear();
    std::fflush(stdout);
  }
};

} // namespace

std::string in_progress_path(const std::string& path) {
  return path + ".inprogress";
}

expected<stream_operator_ptr> make_file_sink(std::string path,
                                             format::format_kind format,
                                             schema_ptr input_schema,
                                             std::chrono::milliseconds flush_interval,
                                             format::timestamp_format ts) {
  if (format == format::format_kind::apache_combined)
    return make_error(errc::invalid_argument,
                      "apache_combined cannot be written; use jsonl or csv");
  if (path.empty())
    return make_error(errc::invalid_argument, "a file sink needs a path");
  return stream_operator_ptr{
    std::make_unique<file_sink>(std::move(path), format, std::move(input_schema),
                                flush_interval, ts)};
}

stream_operator_ptr make_stdout_sink(format::format_kind format, schema_ptr input_schema,
                                     format::timestamp_format ts) {
  if (format == format::format_kind::apache_combined)
    format = format::format_kind::jsonl;
  return std::make_unique<stdout_sink>(format, std::move(input_schema), ts);
}

} // namespace weir
