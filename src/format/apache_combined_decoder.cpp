// SPDX-License-Identifier: Apache-2.0
#include "internal/decoder_common.hpp"

#include <string>

namespace weir::format::internal {

namespace {

// Column indexes of apache_combined_schema().
enum col : std::size_t {
  c_client, c_ident, c_user, c_ts, c_method, c_path, c_protocol, c_status,
  c_bytes, c_referrer, c_agent
};

class apache_combined_decoder final : public record_decoder {
public:
  explicit apache_combined_decoder(common_options co)
    : schema_(apache_combined_schema()), rc_(std::move(co.rc)),
      invalid_utf8_(co.invalid_utf8) {}

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof,
                          std::size_t& lines) override {
    return next_line(buffer, at_eof, lines, resume_);
  }

  status decode(std::string_view text, batch_builder& out,
                std::string& reason) override {
    if (is_blank(text))
      return status::skipped;
    auto checked = check_text(text, invalid_utf8_, utf8_scratch_, reason);
    if (!checked)
      return status::bad;
    const std::string_view record = *checked;
    if (!parse(record, reason))
      return status::bad;
    auto str_or_null = [&](std::size_t c, std::string_view s) {
      if (s == "-")
        out.col(c).append_null();
      else
        out.col(c).append_string(s);
    };
    out.col(c_client).append_string(client_);
    str_or_null(c_ident, ident_);
    str_or_null(c_user, user_);
    out.col(c_ts).append_int(ts_);
    // Request line "METHOD path protocol"; anything else (see the header)
    // keeps its text in path, with null method and protocol.
    std::string_view method, path, protocol;
    split_request(request_, method, path, protocol);
    auto str_or_absent = [&](std::size_t c, std::string_view s, bool present) {
      if (present)
        out.col(c).append_string(s);
      else
        out.col(c).append_null();
    };
    str_or_absent(c_method, method, !method.empty());
    str_or_absent(c_path, path, !path.empty());
    str_or_absent(c_protocol, protocol, !protocol.empty());
    out.col(c_status).append_int(status_);
    if (bytes_null_)
      out.col(c_bytes).append_null();
    else
      out.col(c_bytes).append_int(bytes_);
    out.col(c_referrer).append_string(referrer_);
    out.col(c_agent).append_string(agent_);
    return rc_.commit(out, reason);
  }

private:
  // METHOD: one or more of A-Z, '-', '_' (RFC 9110 tokens as servers log
  // them); PROTOCOL: "HTTP/" and more.
  static bool is_method(std::string_view m) noexcept {
    if (m.empty())
      return false;
    for (char c : m)
      if (!((c >= 'A' && c <= 'Z') || c == '-' || c == '_'))
        return false;
    return true;
  }

  // `METHOD target PROTOCOL` or `METHOD target` (HTTP/0.9): the parts, the
  // target keeping inner spaces. A method alone (`GET`, as servers log a
  // request cut short) or with a protocol only (`GET HTTP/1.1`) has no
  // target: path stays empty (null). Otherwise method and protocol stay empty
  // and path is the whole request as logged ("-" and "" give all empty).
  static void split_request(std::string_view req, std::string_view& method,
                            std::string_view& path, std::string_view& protocol) {
    method = path = protocol = {};
    if (req.empty() || req == "-")
      return;
    path = req;
    const auto first = req.find(' ');
    if (first == std::string_view::npos) {
      if (is_method(req)) {
        method = req;
        path = {};
      }
      return;
    }
    if (!is_method(req.substr(0, first)))
      return;
    std::string_view rest = req.substr(first + 1);
    if (rest.find(' ') == std::string_view::npos && rest.substr(0, 5) == "HTTP/") {
      method = req.substr(0, first);
      protocol = rest;
      path = {};
      return;
    }
    const auto last = rest.rfind(' ');
    if (last != std::string_view::npos && rest.substr(last + 1).substr(0, 5) == "HTTP/") {
      protocol = rest.substr(last + 1);
      rest = rest.substr(0, last);
    }
    if (rest.empty()) {
      protocol = {};
      return;
    }
    method = req.substr(0, first);
    path = rest;
  }

  // Fills the members from one line; false with `reason` if malformed.
  bool parse(std::string_view s, std::string& reason) {
    std::size_t pos = 0;
    auto token = [&](const char* name, std::string_view& out) {
      auto end = s.find(' ', pos);
      if (end == std::string_view::npos || end == pos) {
        reason = std::string{"missing "} + name;
        return false;
      }
      out = s.substr(pos, end - pos);
      pos = end + 1;
      return true;
    };
    std::string_view client, ident, user;
    if (!token("client", client) || !token("ident", ident) || !token("user", user))
      return false;
    client_ = client;
    ident_ = ident;
    user_ = user;
    if (pos >= s.size() || s[pos] != '[') {
      reason = "missing '[' before the timestamp";
      return false;
    }
    auto close = s.find(']', pos);
    if (close == std::string_view::npos) {
      reason = "missing ']' after the timestamp";
      return false;
    }
    auto stamp = s.substr(pos + 1, close - pos - 1);
    if (!parse_stamp(stamp)) {
      reason = "bad timestamp " + quote_for_reason(stamp)
               + ", expected dd/Mon/yyyy:HH:MM:SS +zzzz";
      return false;
    }
    pos = close + 1;
    if (!space(s, pos, reason, "request") || !quoted(s, pos, request_, "request", reason))
      return false;
    std::string_view status_text, bytes_text;
    if (!space(s, pos, reason, "status"))
      return false;
    auto end = s.find(' ', pos);
    if (end == std::string_view::npos) {
      reason = "missing bytes";
      return false;
    }
    status_text = s.substr(pos, end - pos);
    pos = end + 1;
    if (!parse_int64(status_text, status_)) {
      reason = "bad status " + quote_for_reason(status_text);
      return false;
    }
    end = s.find(' ', pos);
    if (end == std::string_view::npos) {
      reason = "missing referrer";
      return false;
    }
    bytes_text = s.substr(pos, end - pos);
    pos = end;
    bytes_null_ = bytes_text == "-";
    if (!bytes_null_ && !parse_int64(bytes_text, bytes_)) {
      reason = "bad bytes " + quote_for_reason(bytes_text);
      return false;
    }
    if (!space(s, pos, reason, "referrer")
        || !quoted(s, pos, referrer_, "referrer", reason)
        || !space(s, pos, reason, "agent")
        || !quoted(s, pos, agent_, "agent", reason))
      return false;
    return true;
  }

  static bool space(std::string_view s, std::size_t& pos, std::string& reason,
                    const char* before) {
    if (pos >= s.size() || s[pos] != ' ') {
      reason = std::string{"missing "} + before;
      return false;
    }
    ++pos;
    return true;
  }

  // Reads a double-quoted field at `pos`, unescaping \" and \\ (Apache's
  // escapes for a quote and a backslash; \xhh stays as text).
  static bool quoted(std::string_view s, std::size_t& pos, std::string& out,
                     const char* name, std::string& reason) {
    if (pos >= s.size() || s[pos] != '"') {
      reason = std::string{"missing quote before "} + name;
      return false;
    }
    out.clear();
    for (std::size_t i = pos + 1; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '"') {
        pos = i + 1;
        return true;
      }
      if (c == '\\' && i + 1 < s.size()) {
        const char n = s[i + 1];
        if (n == '"' || n == '\\') {
          out += n;
          ++i;
          continue;
        }
      }
      out += c;
    }
    reason = std::string{"unterminated quote in "} + name;
    return false;
  }

  bool parse_stamp(std::string_view t) {
    // 17/May/2015:10:05:03 +0000
    if (t.size() != 26 || t[2] != '/' || t[6] != '/' || t[11] != ':' || t[14] != ':'
        || t[17] != ':' || t[20] != ' ' || (t[21] != '+' && t[21] != '-'))
      return false;
    auto num = [&](std::size_t at, std::size_t n, unsigned& v) {
      v = 0;
      for (std::size_t i = at; i < at + n; ++i) {
        if (t[i] < '0' || t[i] > '9')
          return false;
        v = v * 10 + static_cast<unsigned>(t[i] - '0');
      }
      return true;
    };
    static constexpr std::string_view months[] = {"Jan", "Feb", "Mar", "Apr",
                                                  "May", "Jun", "Jul", "Aug",
                                                  "Sep", "Oct", "Nov", "Dec"};
    unsigned month = 0;
    for (unsigned m = 0; m < 12; ++m)
      if (t.substr(3, 3) == months[m])
        month = m + 1;
    unsigned day = 0, year = 0, hh = 0, mi = 0, ss = 0, oh = 0, om = 0;
    if (month == 0 || !num(0, 2, day) || !num(7, 4, year) || !num(12, 2, hh)
        || !num(15, 2, mi) || !num(18, 2, ss) || !num(22, 2, oh) || !num(24, 2, om))
      return false;
    if (day < 1 || day > days_in_month(year, month) || hh > 23 || mi > 59 || ss > 60
        || oh > 23 || om > 59)
      return false;
    std::int64_t offset_min = oh * 60 + om;
    if (t[21] == '-')
      offset_min = -offset_min;
    ts_ = days_from_civil(year, month, day) * 86'400'000
          + ((std::int64_t{hh} * 60 + mi) * 60 + ss) * 1000 - offset_min * 60'000;
    return true;
  }

  schema_ptr schema_;
  row_committer rc_;
  invalid_utf8_policy invalid_utf8_;
  scan_resume resume_;
  std::string utf8_scratch_;
  // Parsed fields of the current line; strings reuse their capacity.
  std::string_view client_, ident_, user_; // views into the record
  std::string request_, referrer_, agent_;  // unescaped copies
  std::int64_t ts_ = 0, status_ = 0, bytes_ = 0;
  bool bytes_null_ = false;
};

} // namespace

std::unique_ptr<record_decoder> make_apache_combined_decoder(common_options co) {
  return std::make_unique<apache_combined_decoder>(std::move(co));
}

} // namespace weir::format::internal
