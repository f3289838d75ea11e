// SPDX-License-Identifier: Apache-2.0
// The S3 client of remote checkpoints: path-style requests signed with AWS
// Signature Version 4 by libcurl (CURLOPT_AWS_SIGV4), built with
// WEIR_WITH_S3. Without it, open_s3_store refuses and says how to build it.
#include "weir/checkpoint/object_store.hpp"

#ifdef WEIR_HAVE_S3
#include <curl/curl.h>
#endif

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <thread>

namespace weir::checkpoint {

expected<s3_location> parse_s3_uri(std::string_view uri) {
  constexpr std::string_view scheme = "s3://";
  if (uri.substr(0, scheme.size()) != scheme)
    return make_error(errc::invalid_argument,
                      "'" + std::string{uri} + "' is not an s3:// URI (s3://bucket/prefix)");
  auto rest = uri.substr(scheme.size());
  auto slash = rest.find('/');
  s3_location loc;
  loc.bucket = std::string{rest.substr(0, slash)};
  if (slash != std::string_view::npos)
    loc.prefix = std::string{rest.substr(slash + 1)};
  while (!loc.prefix.empty() && loc.prefix.back() == '/')
    loc.prefix.pop_back();
  if (loc.bucket.size() < 3 || loc.bucket.size() > 63)
    return make_error(errc::invalid_argument, "'" + std::string{uri}
                        + "': the bucket name must be 3 to 63 characters");
  for (char c : loc.bucket)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'))
      return make_error(errc::invalid_argument,
                        "'" + std::string{uri} + "': the bucket name may hold only a-z, "
                          "0-9, '-' and '.'");
  for (char c : loc.prefix)
    if (static_cast<unsigned char>(c) < 0x20)
      return make_error(errc::invalid_argument,
                        "'" + std::string{uri} + "': the prefix holds a control character");
  return loc;
}

#ifndef WEIR_HAVE_S3

bool s3_built() noexcept { return false; }

expected<std::shared_ptr<object_store>> open_s3_store(const object_store_options& opts) {
  return make_error(errc::invalid_argument,
                    "checkpoint storage " + opts.uri + ": this weir was built without S3 "
                    "support; rebuild with -DWEIR_WITH_S3=ON (needs libcurl4-openssl-dev)");
}

#else

bool s3_built() noexcept { return true; }

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string{v} : std::string{};
}

std::string trim(std::string s) {
  auto b = s.find_first_not_of(" \t\r");
  auto e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? std::string{} : s.substr(b, e - b + 1);
}

struct credentials {
  std::string access_key;
  std::string secret_key;
  std::string session_token;
};

/// `~/.aws/credentials` (INI): the keys of section `[profile]`.
std::optional<credentials> read_credentials_file(const std::string& profile,
                                                 std::string& path) {
  path = env("AWS_SHARED_CREDENTIALS_FILE");
  if (path.empty()) {
    auto home = env("HOME");
    if (home.empty())
      return std::nullopt;
    path = home + "/.aws/credentials";
  }
  std::ifstream in{path};
  if (!in)
    return std::nullopt;
  credentials c;
  bool in_section = false, found = false;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';')
      continue;
    if (line.front() == '[') {
      in_section = trim(line.substr(1, line.find(']') - 1)) == profile;
      found = found || in_section;
      continue;
    }
    if (!in_section)
      continue;
    auto eq = line.find('=');
    if (eq == std::string::npos)
      continue;
    auto key = trim(line.substr(0, eq));
    auto value = trim(line.substr(eq + 1));
    if (key == "aws_access_key_id")
      c.access_key = value;
    else if (key == "aws_secret_access_key")
      c.secret_key = value;
    else if (key == "aws_session_token")
      c.session_token = value;
  }
  if (!found || c.access_key.empty() || c.secret_key.empty())
    return std::nullopt;
  return c;
}

/// RFC 3986 percent-encoding of everything but the unreserved characters
/// (and '/' when `keep_slash`), as SigV4's canonical URI and query need.
std::string uri_encode(std::string_view s, bool keep_slash) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
        || c == '_' || c == '.' || c == '~' || (keep_slash && c == '/')) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

/// The text of the first `<tag>...</tag>` in `xml` at or after `from`.
std::optional<std::string> xml_text(const std::string& xml, const std::string& tag,
                                    std::size_t& from) {
  auto open = "<" + tag + ">";
  auto b = xml.find(open, from);
  if (b == std::string::npos)
    return std::nullopt;
  b += open.size();
  auto e = xml.find("</" + tag + ">", b);
  if (e == std::string::npos)
    return std::nullopt;
  from = e;
  std::string v = xml.substr(b, e - b);
  // The five predefined entities (keys are ours: nothing else occurs).
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (v[i] != '&') {
      out += v[i];
      continue;
    }
    auto semi = v.find(';', i);
    auto ent = v.substr(i, semi == std::string::npos ? 1 : semi - i + 1);
    if (ent == "&amp;") out += '&';
    else if (ent == "&lt;") out += '<';
    else if (ent == "&gt;") out += '>';
    else if (ent == "&quot;") out += '"';
    else if (ent == "&apos;") out += '\'';
    else { out += ent; }
    i += ent.size() - 1;
  }
  return out;
}

std::size_t on_body(char* p, std::size_t size, std::size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

struct http_reply {
  long status = 0;
  std::string body;
};

class s3_object_store final : public object_store {
public:
  s3_object_store(s3_location loc, std::string endpoint, std::string region, credentials c)
    : loc_(std::move(loc)), endpoint_(std::move(endpoint)), region_(std::move(region)),
      creds_(std::move(c)) {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
  }

  expected<bool> put(const std::string& key, std::string_view bytes) override {
    auto r = request("PUT", object_path(key), {}, &bytes, key);
    if (!r)
      return r.error();
    if (r->status != 200)
      return refused("PUT", key, *r);
    return true;
  }

  expected<std::optional<std::string>> get(const std::string& key) override {
    auto r = request("GET", object_path(key), {}, nullptr, key);
    if (!r)
      return r.error();
    if (r->status == 404)
      return std::optional<std::string>{};
    if (r->status != 200)
      return refused("GET", key, *r);
    return std::optional<std::string>{std::move(r->body)};
  }

  expected<std::vector<std::string>> list(const std::string& key_prefix) override {
    std::vector<std::string> keys;
    auto full_prefix = full_key(key_prefix);
    std::string token;
    for (;;) {
      // Query parameters in SigV4's canonical order (sorted by name).
      std::string query;
      if (!token.empty())
        query += "continuation-token=" + uri_encode(token, false) + "&";
      query += "list-type=2&prefix=" + uri_encode(full_prefix, false);
      auto r = request("GET", "/" + loc_.bucket, query, nullptr, key_prefix);
      if (!r)
        return r.error();
      if (r->status != 200)
        return refused("LIST", key_prefix, *r);
      std::size_t at = 0;
      while (auto k = xml_text(r->body, "Key", at)) {
        if (k->size() >= full_prefix.size())
          keys.push_back(k->substr(loc_.prefix.empty() ? 0 : loc_.prefix.size() + 1));
      }
      std::size_t t = 0;
      auto truncated = xml_text(r->body, "IsTruncated", t);
      t = 0;
      auto next = xml_text(r->body, "NextContinuationToken", t);
      if (!truncated || *truncated != "true" || !next || next->empty())
        break;
      token = *next;
    }
    return keys;
  }

  expected<bool> remove(const std::string& key) override {
    auto r = request("DELETE", object_path(key), {}, nullptr, key);
    if (!r)
      return r.error();
    if (r->status != 204 && r->status != 200 && r->status != 404)
      return refused("DELETE", key, *r);
    return true;
  }

  std::string describe(const std::string& key) const override {
    return "s3://" + loc_.bucket + "/" + full_key(key);
  }

private:
  std::string full_key(const std::string& key) const {
    return loc_.prefix.empty() ? key : loc_.prefix + "/" + key;
  }
  std::string object_path(const std::string& key) const {
    return "/" + loc_.bucket + "/" + uri_encode(full_key(key), true);
  }
  std::string url(const std::string& path) const { return endpoint_ + path; }

  error refused(const char* method, const std::string& key, const http_reply& r) const {
    std::size_t at = 0;
    auto code = xml_text(r.body, "Code", at);
    at = 0;
    auto message = xml_text(r.body, "Message", at);
    std::string what = std::string{method} + " " + describe(key) + " (" + endpoint_
                       + "): the store answered HTTP " + std::to_string(r.status);
    if (code)
      what += " " + *code;
    if (message && !message->empty())
      what += ": " + *message;
    return make_error(errc::io_error, what);
  }

  /// One request, retried on connection errors and 5xx answers.
  expected<http_reply> request(const char* method, const std::string& path,
                               const std::string& query, const std::string_view* body,
                               const std::string& key) {
    constexpr int attempts = 5;
    std::string last;
    auto delay = std::chrono::milliseconds{200};
    for (int attempt = 1; attempt <= attempts; ++attempt) {
      http_reply reply;
      std::string curl_error;
      if (once(method, path, query, body, reply, curl_error) && reply.status < 500)
        return reply;
      last = curl_error.empty() ? "HTTP " + std::to_string(reply.status) : curl_error;
      if (attempt < attempts) {
        std::this_thread::sleep_for(delay);
        delay *= 2;
      }
    }
    return make_error(errc::io_error, std::string{method} + " " + describe(key) + " ("
                                        + endpoint_ + "): " + last + " (after "
                                        + std::to_string(attempts) + " attempts)");
  }

  bool once(const char* method, const std::string& path, const std::string& query,
            const std::string_view* body, http_reply& reply, std::string& err) {
    CURL* h = curl_easy_init();
    if (h == nullptr) {
      err = "curl_easy_init failed";
      return false;
    }
    char errbuf[CURL_ERROR_SIZE] = {0};
    std::string u = url(path) + (query.empty() ? "" : "?" + query);
    std::string sigv4 = "aws:amz:" + region_ + ":s3";
    std::string userpwd = creds_.access_key + ":" + creds_.secret_key;
    curl_slist* headers = nullptr;
    if (!creds_.session_token.empty())
      headers = curl_slist_append(headers,
                                  ("x-amz-security-token: " + creds_.session_token).c_str());
    // curl 7.88 signs every header set here, a removal ("Expect:") too,
    // so none is set but those the signature needs.
    curl_easy_setopt(h, CURLOPT_URL, u.c_str());
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sigv4.c_str());
    curl_easy_setopt(h, CURLOPT_USERPWD, userpwd.c_str());
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, 300000L);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &reply.body);
    if (std::string_view{method} == "PUT") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "PUT");
      curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data());
      curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
      headers = curl_slist_append(headers, "Content-Type: application/octet-stream");
      // S3 needs the payload's hash header on a PUT, which curl 7.88 does
      // not send: the body is not hashed into the signature (TLS protects
      // it in transit to AWS), as the AWS SDKs do over HTTPS.
      headers = curl_slist_append(headers, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
      // No "Expect: 100-continue" round trip (and its 1 s wait) before the
      // body: set after signing, so it is not signed.
      curl_easy_setopt(h, CURLOPT_EXPECT_100_TIMEOUT_MS, 0L);
    } else if (std::string_view{method} == "DELETE") {
      curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "DELETE");
    }
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
    CURLcode rc = curl_easy_perform(h);
    if (rc == CURLE_OK)
      curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &reply.status);
    else
      err = errbuf[0] != '\0' ? std::string{errbuf} : std::string{curl_easy_strerror(rc)};
    curl_slist_free_all(headers);
    curl_easy_cleanup(h);
    return rc == CURLE_OK;
  }

  s3_location loc_;
  std::string endpoint_;
  std::string region_;
  credentials creds_;
};

} // namespace

expected<std::shared_ptr<object_store>> open_s3_store(const object_store_options& opts) {
  auto loc = parse_s3_uri(opts.uri);
  if (!loc)
    return loc.error();
  std::string region = opts.region;
  if (region.empty())
    region = env("AWS_REGION");
  if (region.empty())
    region = env("AWS_DEFAULT_REGION");
  if (region.empty())
    region = "us-east-1";
  std::string endpoint = opts.endpoint;
  if (endpoint.empty())
    endpoint = env("AWS_ENDPOINT_URL");
  if (endpoint.empty())
    endpoint = "https://s3." + region + ".amazonaws.com";
  while (!endpoint.empty() && endpoint.back() == '/')
    endpoint.pop_back();
  if (endpoint.rfind("http://", 0) != 0 && endpoint.rfind("https://", 0) != 0)
    return make_error(errc::invalid_argument,
                      "checkpoint storage " + opts.uri + ": the endpoint '" + endpoint
                        + "' must start with http:// or https://");
  if (endpoint.find('@') != std::string::npos)
    return make_error(errc::invalid_argument,
                      "checkpoint storage " + opts.uri + ": the endpoint must not hold "
                      "credentials (use AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)");
  credentials c;
  c.access_key = env("AWS_ACCESS_KEY_ID");
  c.secret_key = env("AWS_SECRET_ACCESS_KEY");
  c.session_token = env("AWS_SESSION_TOKEN");
  if (c.access_key.empty() || c.secret_key.empty()) {
    auto profile = env("AWS_PROFILE");
    if (profile.empty())
      profile = "default";
    std::string path;
    auto f = read_credentials_file(profile, path);
    if (!f)
      return make_error(errc::invalid_argument,
                        "checkpoint storage " + opts.uri + ": no credentials: set "
                        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or give profile '"
                          + profile + "' aws_access_key_id and aws_secret_access_key in "
                          + (path.empty() ? std::string{"~/.aws/credentials"} : path));
    c = *f;
  }
  return std::shared_ptr<object_store>{
    std::make_shared<s3_object_store>(std::move(*loc), std::move(endpoint),
                                      std::move(region), std::move(c))};
}

#endif

} // namespace weir::checkpoint
