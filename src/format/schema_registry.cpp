// SPDX-License-Identifier: Apache-2.0
#include "schema_registry.hpp"

#include <curl/curl.h>
#include <simdjson.h>

#include <cstdio>

namespace weir::format::schema_registry {

namespace {

std::size_t on_body(char* data, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(data, size * n);
  return size * n;
}

// The registry's error message in a Confluent error body
// (`{"error_code": 40901, "message": "..."}`), else the body itself, cut.
std::string registry_message(const std::string& body) {
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  if (!p.parse(body).get(doc)) {
    std::string_view m;
    if (!doc["message"].get(m))
      return std::string{m};
  }
  return body.size() > 300 ? body.substr(0, 300) + "..." : body;
}

std::once_flag curl_init;

} // namespace

void append_frame_header(std::int32_t id, std::string& out) {
  const auto u = static_cast<std::uint32_t>(id);
  out.push_back('\0');
  out.push_back(static_cast<char>(u >> 24));
  out.push_back(static_cast<char>(u >> 16));
  out.push_back(static_cast<char>(u >> 8));
  out.push_back(static_cast<char>(u));
}

expected<std::int32_t> read_frame_header(std::string_view msg) {
  if (msg.size() < frame_header_size)
    return make_error(errc::bad_record, std::to_string(msg.size())
                                          + " bytes, shorter than the 5-byte frame header "
                                            "(magic byte and schema id)");
  const auto* b = reinterpret_cast<const unsigned char*>(msg.data());
  if (b[0] != 0) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02x", b[0]);
    return make_error(errc::bad_record, std::string{"magic byte "} + hex
                                          + ", expected 0x00 (not framed for a schema "
                                            "registry?)");
  }
  const std::uint32_t u = (std::uint32_t{b[1]} << 24) | (std::uint32_t{b[2]} << 16)
                          | (std::uint32_t{b[3]} << 8) | std::uint32_t{b[4]};
  return static_cast<std::int32_t>(u);
}

expected<std::shared_ptr<client>> client::make(schema_registry_options opts) {
  if (opts.url.empty())
    return make_error(errc::invalid_argument, "schema_registry needs a url");
  if (opts.url.rfind("http://", 0) != 0 && opts.url.rfind("https://", 0) != 0)
    return make_error(errc::invalid_argument,
                      "schema_registry url must start with http:// or https://, got '"
                        + opts.url + "'");
  while (opts.url.size() > 1 && opts.url.back() == '/')
    opts.url.pop_back();
  std::call_once(curl_init, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  std::shared_ptr<client> c{new client{std::move(opts)}};
  if (c->curl_ == nullptr)
    return make_error(errc::io_error, "schema registry: curl_easy_init failed");
  return c;
}

client::client(schema_registry_options opts) : opts_(std::move(opts)), curl_(curl_easy_init()) {}

client::~client() {
  if (curl_ != nullptr)
    curl_easy_cleanup(static_cast<CURL*>(curl_));
}

expected<client::response> client::request(const std::string& method, const std::string& path,
                                            const std::string& body) {
  auto* h = static_cast<CURL*>(curl_);
  curl_easy_reset(h);
  const std::string url = opts_.url + path;
  response r;
  char err[CURL_ERROR_SIZE] = {0};
  curl_easy_setopt(h, CURLOPT_URL, url.c_str());
  curl_easy_setopt(h, CURLOPT_ERRORBUFFER, err);
  curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, static_cast<long>(opts_.timeout.count()));
  curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(h, CURLOPT_WRITEDATA, &r.body);
  curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
  if (!opts_.ca_file.empty())
    curl_easy_setopt(h, CURLOPT_CAINFO, opts_.ca_file.c_str());
  if (!opts_.basic_auth_user_info.empty()) {
    curl_easy_setopt(h, CURLOPT_HTTPAUTH, CURLAUTH_BASIC);
    curl_easy_setopt(h, CURLOPT_USERPWD, opts_.basic_auth_user_info.c_str());
  }
  curl_slist* headers = curl_slist_append(nullptr, "Accept: application/vnd.schemaregistry.v1+json, application/json");
  if (method == "POST") {
    headers = curl_slist_append(headers, "Content-Type: application/vnd.schemaregistry.v1+json");
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
  }
  curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
  const CURLcode rc = curl_easy_perform(h);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    std::string why = err[0] != 0 ? err : curl_easy_strerror(rc);
    return make_error(errc::io_error, "schema registry at " + opts_.url + ": " + method + " "
                                        + path + ": " + why
                                        + " (is the registry running there, and are its url "
                                          "and ca_file right?)");
  }
  curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &r.status);
  if (r.status == 401 || r.status == 403)
    return make_error(errc::io_error, "schema registry at " + opts_.url + " answered HTTP "
                                        + std::to_string(r.status) + " to " + method + " "
                                        + path + ": " + registry_message(r.body)
                                        + " (check basic_auth_user_info)");
  return r;
}

std::string client::post_body(const std::string& text, const std::string& type) const {
  std::string b = "{\"schema\":";
  append_json_string(text, b);
  if (type != "AVRO") {
    b += ",\"schemaType\":";
    append_json_string(type, b);
  }
  b += "}";
  return b;
}

expected<registered_schema_ptr> client::schema_by_id(std::int32_t id) {
  std::lock_guard lock{mu_};
  if (auto it = by_id_.find(id); it != by_id_.end())
    return it->second;
  const std::string path = "/schemas/ids/" + std::to_string(id);
  auto r = request("GET", path, {});
  if (!r)
    return r.error(); // not cached: the registry may answer later
  if (r->status == 404) {
    expected<registered_schema_ptr> e = make_error(
      errc::not_found, "unknown schema id " + std::to_string(id) + ": the registry at "
                         + opts_.url + " answered 404 (" + registry_message(r->body) + ")");
    by_id_.emplace(id, e);
    return e;
  }
  if (r->status / 100 != 2)
    return make_error(errc::io_error, "schema registry at " + opts_.url + " answered HTTP "
                                        + std::to_string(r->status) + " to GET " + path + ": "
                                        + registry_message(r->body));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  std::string_view text;
  if (p.parse(r->body).get(doc) || doc["schema"].get(text))
    return make_error(errc::io_error, "schema registry at " + opts_.url + ": GET " + path
                                        + " answered without a schema: "
                                        + registry_message(r->body));
  auto s = std::make_shared<registered_schema>();
  s->id = id;
  s->text = std::string{text};
  std::string_view type;
  if (!doc["schemaType"].get(type))
    s->type = std::string{type};
  expected<registered_schema_ptr> v{registered_schema_ptr{std::move(s)}};
  by_id_.emplace(id, v);
  return v;
}

namespace {
std::string escape_path(void* curl, const std::string& s) {
  char* e = curl_easy_escape(static_cast<CURL*>(curl), s.c_str(), static_cast<int>(s.size()));
  std::string out = e != nullptr ? e : s;
  curl_free(e);
  return out;
}
} // namespace

expected<std::int32_t> client::register_schema(const std::string& subject,
                                               const std::string& text,
                                               const std::string& type) {
  return by_subject(subject, text, type, false);
}

expected<std::int32_t> client::lookup_schema(const std::string& subject,
                                             const std::string& text,
                                             const std::string& type) {
  return by_subject(subject, text, type, true);
}

expected<std::int32_t> client::by_subject(const std::string& subject, const std::string& text,
                                          const std::string& type, bool lookup) {
  std::lock_guard lock{mu_};
  if (auto it = by_subject_.find({subject, text}); it != by_subject_.end())
    return it->second;
  const std::string at = "subject '" + subject + "': ";
  const std::string path =
    "/subjects/" + escape_path(curl_, subject) + (lookup ? "" : "/versions");
  auto r = request("POST", path, post_body(text, type));
  if (!r) {
    r.error().message = at + r.error().message;
    return r.error();
  }
  if (!lookup && (r->status == 409 || r->status == 422))
    return make_error(errc::invalid_argument,
                      at + "schema registry at " + opts_.url + " refused the schema (HTTP "
                        + std::to_string(r->status) + (r->status == 409 ? ", incompatible" : "")
                        + "): " + registry_message(r->body));
  if (lookup && r->status == 404)
    return make_error(errc::not_found, at + "schema registry at " + opts_.url
                                         + " does not have the schema under this subject: "
                                         + registry_message(r->body));
  simdjson::dom::parser p;
  simdjson::dom::element doc;
  std::int64_t id = 0;
  if (r->status / 100 != 2 || p.parse(r->body).get(doc) || doc["id"].get(id))
    return make_error(errc::io_error, at + "schema registry at " + opts_.url + " answered HTTP "
                                        + std::to_string(r->status) + " to POST " + path + ": "
                                        + registry_message(r->body));
  by_subject_.emplace(std::pair{subject, text}, static_cast<std::int32_t>(id));
  return static_cast<std::int32_t>(id);
}

} // namespace weir::format::schema_registry
