// SPDX-License-Identifier: Apache-2.0
#pragma once
// A client of a Confluent-compatible schema registry's REST API (Confluent
// Schema Registry, Apicurio's `/apis/ccompat/v7`, Karapace): schemas by id,
// registration and lookup by subject, with caches. Independent of the schema
// language: the Avro decoder and encoder use it, a Protobuf one can too.
// Built only with libcurl (WEIR_WITH_CURL).

#include "weir/core/expected.hpp"
#include "weir/format/format.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace weir::format::schema_registry {

/// A schema as the registry keeps it.
struct registered_schema {
  std::int32_t id = 0;
  std::string type = "AVRO"; ///< `schemaType`: AVRO (when absent), PROTOBUF, JSON
  std::string text;          ///< the schema (an Avro schema's JSON)
};
using registered_schema_ptr = std::shared_ptr<const registered_schema>;

/// The Confluent wire format's header: magic byte 0 and the schema id,
/// 4 bytes big-endian.
inline constexpr std::size_t frame_header_size = 5;

/// Appends the frame header of schema `id` to `out`.
void append_frame_header(std::int32_t id, std::string& out);

/// Reads the frame header at the start of `msg`: the schema id, or
/// `errc::bad_record` ("N bytes, shorter than the 5-byte frame header",
/// "magic byte 0xNN, expected 0x00 (not framed for a schema registry?)").
[[nodiscard]] expected<std::int32_t> read_frame_header(std::string_view msg);

/// One registry, its caches and one libcurl handle: Confluent's
/// `CachedSchemaRegistryClient`. Requests are serialized by a mutex, so one
/// client may be shared by threads (each Kafka source subtask's decoder makes
/// its own; a sink's subtasks share one, `format::register_schema`). Each
/// request blocks the caller up to `options.timeout`.
///
/// Errors of every request: `errc::io_error` for a connection or TLS failure
/// ("schema registry at <url>: <curl's reason> (is the registry running
/// there, and its url and ca_file right?)") and for an answer other than
/// 2xx and the ones below ("... answered HTTP 401: <its message> (check
/// basic_auth_user_info)"). The credentials never appear in a message.
class client {
public:
  /// Errors: `errc::invalid_argument` for an empty url or a url that is not
  /// http:// or https://; `schema_registry_not_built` without libcurl.
  [[nodiscard]] static expected<std::shared_ptr<client>> make(schema_registry_options opts);

  ~client();
  client(const client&) = delete;
  client& operator=(const client&) = delete;

  /// `GET /schemas/ids/{id}`, cached per id (answers and 404s: an id never
  /// changes its schema). `errc::not_found` "unknown schema id N: the
  /// registry at <url> answered 404 (<its message>)".
  [[nodiscard]] expected<registered_schema_ptr> schema_by_id(std::int32_t id);

  /// `POST /subjects/{subject}/versions`: registers `text` (of `type`, e.g.
  /// "AVRO") under `subject`, or finds it registered; its id. Cached per
  /// subject and text. Every error starts "subject '<subject>': ".
  /// `errc::invalid_argument` with the registry's message when it refuses
  /// the schema (409: incompatible with the subject's compatibility level;
  /// 422: invalid).
  [[nodiscard]] expected<std::int32_t> register_schema(const std::string& subject,
                                                       const std::string& text,
                                                       const std::string& type = "AVRO");

  /// `POST /subjects/{subject}`: the id of `text` when it is registered
  /// under `subject`, cached as above. `errc::not_found` when the subject or
  /// the schema is not there.
  [[nodiscard]] expected<std::int32_t> lookup_schema(const std::string& subject,
                                                     const std::string& text,
                                                     const std::string& type = "AVRO");

  const std::string& url() const noexcept { return opts_.url; }

private:
  explicit client(schema_registry_options opts);
  struct response {
    long status = 0;
    std::string body;
  };
  expected<response> request(const std::string& method, const std::string& path,
                             const std::string& body);
  std::string post_body(const std::string& text, const std::string& type) const;
  expected<std::int32_t> by_subject(const std::string& subject, const std::string& text,
                                    const std::string& type, bool lookup);

  schema_registry_options opts_;
  void* curl_ = nullptr; ///< CURL*
  std::mutex mu_;
  std::unordered_map<std::int32_t, expected<registered_schema_ptr>> by_id_;
  std::map<std::pair<std::string, std::string>, std::int32_t> by_subject_;
};

} // namespace weir::format::schema_registry
