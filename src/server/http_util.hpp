// SPDX-License-Identifier: Apache-2.0
#pragma once

#include <httplib.h>

#include <cstdint>
#include <string>

namespace weir::server::internal {

/// Wall clock, ms since the Unix epoch.
std::int64_t wall_ms();

/// A fresh random id of 32 lowercase hex digits (Flink's job and trigger
/// ids). Thread-safe.
std::string new_id();

/// Answers `status` with Flink's error shape, `{"errors": [message]}`.
void json_error(httplib::Response& res, int status, const std::string& message);

/// Answers `status` with the JSON text `body`.
void json_reply(httplib::Response& res, int status, std::string body);

/// Whether `a` equals the non-empty secret `b`, in time independent of
/// where they differ (a wrong token's timing says nothing of the right one).
bool same_secret(const std::string& a, const std::string& b);

/// A path segment ".." (or a backslash, or a NUL) anywhere in `path`.
bool is_traversal(const std::string& path);

} // namespace weir::server::internal
