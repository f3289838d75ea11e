// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/core/expected.hpp"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::checkpoint {

/// Where remote checkpoints go (`[checkpoint] remote`, `endpoint`, `region`).
struct object_store_options {
  /// `s3://bucket/prefix` (the prefix may be empty or nested, without a
  /// trailing `/`); Flink's `state.checkpoints.dir = s3://...`.
  std::string uri;
  /// Base URL of an S3-compatible store, `http(s)://host:port`, addressed
  /// path-style (`endpoint/bucket/key`). Empty: `AWS_ENDPOINT_URL`, else
  /// `https://s3.<region>.amazonaws.com`.
  std::string endpoint;
  /// Signing region. Empty: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else
  /// `us-east-1`.
  std::string region;
};

/// `s3://bucket/prefix` split; errors name what is wrong with `uri`.
struct s3_location {
  std::string bucket;
  std::string prefix; ///< no leading or trailing '/'; may be empty
};
[[nodiscard]] expected<s3_location> parse_s3_uri(std::string_view uri);

/// Whether this build has the S3 client (CMake option WEIR_WITH_S3, libcurl).
bool s3_built() noexcept;

/// A flat namespace of byte objects (S3's model). Keys are relative to the
/// store's prefix. Every call is one or a few blocking HTTP requests; a
/// connection error or a 5xx answer is retried with exponential backoff
/// (0.2 s doubling, 5 attempts, about 6 s) before it becomes an error.
/// Errors are `errc::io_error` naming the method and the object's URL (never
/// credentials) and the store's answer (status and S3 error code). Safe to
/// call from one thread at a time per object.
class object_store {
public:
  virtual ~object_store() = default;
  /// Writes `bytes` as object `key`, replacing it (S3 PUT is atomic: a reader
  /// sees the old object or the whole new one).
  [[nodiscard]] virtual expected<bool> put(const std::string& key, std::string_view bytes) = 0;
  /// The object's bytes; nullopt when there is no such object (404).
  [[nodiscard]] virtual expected<std::optional<std::string>> get(const std::string& key) = 0;
  /// Every key under `key_prefix`, in S3's order (ascending bytes).
  [[nodiscard]] virtual expected<std::vector<std::string>> list(const std::string& key_prefix) = 0;
  /// Deletes object `key` (no error when it is missing).
  [[nodiscard]] virtual expected<bool> remove(const std::string& key) = 0;
  /// `s3://bucket/prefix/key`, for messages.
  virtual std::string describe(const std::string& key) const = 0;
};

/// Opens the S3 client: parses `opts.uri`, resolves endpoint and region, and
/// reads credentials from `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` /
/// `AWS_SESSION_TOKEN`, else from `~/.aws/credentials` (profile
/// `AWS_PROFILE`, default `default`; `AWS_SHARED_CREDENTIALS_FILE` moves the
/// file). Requests are signed with AWS Signature Version 4 by libcurl.
/// Sends no request.
///
/// Errors: `errc::invalid_argument` for a bad URI or endpoint, no
/// credentials, or a build without S3 support (WEIR_WITH_S3=OFF).
[[nodiscard]] expected<std::shared_ptr<object_store>>
open_s3_store(const object_store_options& opts);

} // namespace weir::checkpoint
