// SPDX-License-Identifier: Apache-2.0
#include "http_util.hpp"

#include "json_writer.hpp"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <random>

namespace weir::server::internal {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

std::string new_id() {
  static std::mutex m;
  static std::mt19937_64 rng{std::random_device{}()};
  std::lock_guard lock{m};
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(rng()),
                static_cast<unsigned long long>(rng()));
  return buf;
}

void json_error(httplib::Response& res, int status, const std::string& message) {
  json_writer w;
  w.begin_object().key("errors").begin_array().value(message).end_array().end_object();
  res.status = status;
  res.set_content(w.take(), "application/json");
}

void json_reply(httplib::Response& res, int status, std::string body) {
  res.status = status;
  res.set_content(std::move(body), "application/json");
}

bool same_secret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i % (b.empty() ? 1 : b.size())]);
  return diff == 0 && !b.empty();
}

bool is_traversal(const std::string& path) {
  if (path.find('\\') != std::string::npos || path.find('\0') != std::string::npos)
    return true;
  std::size_t start = 0;
  while (start <= path.size()) {
    auto end = path.find('/', start);
    if (end == std::string::npos)
      end = path.size();
    if (path.compare(start, end - start, "..") == 0)
      return true;
    start = end + 1;
  }
  return false;
}

} // namespace weir::server::internal
