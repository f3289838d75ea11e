// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/dead_letter_queue.hpp"

#include "weir/format/format.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace weir::runtime {

dead_letter_queue::dead_letter_queue(std::string path, bool append)
  : path_(std::move(path)) {
  std::error_code ec;
  auto parent = std::filesystem::path{path_}.parent_path();
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  file_ = std::fopen(path_.c_str(), append ? "ab" : "wb");
  if (file_ == nullptr)
    throw std::runtime_error("cannot create dead-letter file " + path_ + ": "
                             + std::strerror(errno));
}

dead_letter_queue::~dead_letter_queue() {
  if (file_ != nullptr)
    std::fclose(file_);
}

void dead_letter_queue::write(const bad_record& r) {
  std::string line = "{\"origin\":";
  format::append_json(r.origin + ":" + std::to_string(r.line), type_id::string, line);
  line += ",\"file\":";
  format::append_json(r.origin, type_id::string, line);
  line += ",\"line\":" + std::to_string(r.line);
  line += ",\"offset\":" + std::to_string(r.offset);
  line += ",\"reason\":";
  format::append_json(r.reason, type_id::string, line);
  line += ",\"raw\":";
  format::append_json(r.raw, type_id::string, line);
  line += "}\n";
  std::lock_guard<std::mutex> guard{mutex_};
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size()
      || std::fflush(file_) != 0)
    throw std::runtime_error("cannot write dead-letter file " + path_ + ": "
                             + std::strerror(errno));
}

} // namespace weir::runtime
