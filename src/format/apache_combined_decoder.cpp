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
  explicit apache_combined_decoder(row_committer rc)
    : schema_(apache_combined_schema()), rc_(std::move(rc)) {}

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof,
                          std::size_t& lines) override {
    return next_line(buffer, at_eof, lines);
  }

  status decode(std::string_view record, batch_builder& out,
                std::string& reason) override {
    if (is_blank(record))
      return status::skipped;
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
    // Request line "METHOD path protocol"; see the header for odd ones.
    std::string_view req = request_;
    if (req == "-") {
      out.col(c_method).append_null();
      out.col(c_path).append_null();
      out.col(c_protocol).append_null();
    } else {
      auto first = req.find(' ');
      if (first == std::string_view::npos) {
        out.col(c_method).append_null();
        out.col(c_path).append_string(req);
        out.col(c_protocol).append_null();
      } else {
        auto last = req.rfind(' ');
        out.col(c_method).append_string(req.substr(0, first));
        if (last == first) {
          out.col(c_path).append_string(req.substr(first + 1));
          out.col(c_protocol).append_null();
        } else {
          out.col(c_path).append_string(req.substr(first + 1, last - first - 1));
          out.col(c_protocol).append_string(req.substr(last + 1));
        }
      }
    }
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
  // Parsed fields of the current line; strings reuse their capacity.
  std::string_view client_, ident_, user_; // views into the record
  std::string request_, referrer_, agent_;  // unescaped copies
  std::int64_t ts_ = 0, status_ = 0, bytes_ = 0;
  bool bytes_null_ = false;
};

} // namespace

std::unique_ptr<record_decoder> make_apache_combined_decoder(row_committer rc) {
  return std::make_unique<apache_combined_decoder>(std::move(rc));
}

} // namespace weir::format::internal
