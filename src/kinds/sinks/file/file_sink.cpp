// SPDX-License-Identifier: Apache-2.0
#include "weir/connectors/file_sink.hpp"

#include <cerrno>
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

class file_sink final : public text_sink {
public:
  file_sink(std::string path, format::format_kind format, schema_ptr input_schema,
            format::timestamp_format ts)
    : text_sink(format, std::move(input_schema), ts), path_(std::move(path)) {}

  ~file_sink() override {
    if (file_)
      std::fclose(file_);
  }

  file_sink(const file_sink&) = delete;
  file_sink& operator=(const file_sink&) = delete;

  void open(const operator_context&) override {
    const auto parent = std::filesystem::path{path_}.parent_path();
    if (!parent.empty()) {
      std::error_code ec;
      std::filesystem::create_directories(parent, ec);
      if (ec)
        throw std::runtime_error("cannot write " + path_ + ": " + ec.message());
    }
    file_ = std::fopen(path_.c_str(), "wb");
    if (!file_)
      fail(errno);
    write_known_header();
  }

  void finish(output_collector&) override {
    if (!file_)
      return;
    flush();
    std::FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0)
      fail(errno);
  }

private:
  void after_batch() override {
    if (buffer_.size() >= flush_bytes)
      flush();
  }

  void flush() {
    if (!file_)
      throw std::runtime_error("cannot write " + path_ + ": the sink is not open");
    if (!buffer_.empty()
        && std::fwrite(buffer_.data(), 1, buffer_.size(), file_) != buffer_.size())
      fail(errno);
    buffer_.clear();
  }

  [[noreturn]] void fail(int err) const {
    throw std::runtime_error("cannot write " + path_ + ": " + std::strerror(err));
  }

  std::string path_;
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

expected<stream_operator_ptr> make_file_sink(std::string path,
                                             format::format_kind format,
                                             schema_ptr input_schema,
                                             format::timestamp_format ts) {
  if (format == format::format_kind::apache_combined)
    return make_error(errc::invalid_argument,
                      "apache_combined cannot be written; use jsonl or csv");
  if (path.empty())
    return make_error(errc::invalid_argument, "a file sink needs a path");
  return stream_operator_ptr{
    std::make_unique<file_sink>(std::move(path), format, std::move(input_schema), ts)};
}

stream_operator_ptr make_stdout_sink(format::format_kind format, schema_ptr input_schema,
                                     format::timestamp_format ts) {
  if (format == format::format_kind::apache_combined)
    format = format::format_kind::jsonl;
  return std::make_unique<stdout_sink>(format, std::move(input_schema), ts);
}

} // namespace weir
