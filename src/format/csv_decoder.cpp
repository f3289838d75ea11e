// SPDX-License-Identifier: Apache-2.0
#include "internal/decoder_common.hpp"

#include <charconv>
#include <cstring>
#include <string>
#include <vector>

namespace weir::format::internal {

namespace {

constexpr std::size_t no_field = static_cast<std::size_t>(-1);

struct cell {
  std::string_view text;
  bool quoted = false;
};

class csv_decoder final : public record_decoder {
public:
  csv_decoder(schema_ptr s, bool header, char delimiter, common_options co)
    : schema_(std::move(s)), rc_(std::move(co.rc)), delim_(delimiter),
      expect_header_(header), invalid_utf8_(co.invalid_utf8), zone_(std::move(co.zone)),
      read_(std::move(co.read)) {
    read_.resize(schema_->size(), true);
    for (std::size_t i = 0; i < schema_->size(); ++i)
      if (!read_[i])
        unread_.push_back(i);
    if (!header)
      for (std::size_t i = 0; i < schema_->size(); ++i)
        map_.push_back(read_[i] ? i : no_field);
  }

  const schema_ptr& output_schema() const override { return schema_; }

  // A record ends at the first '\n' outside quotes. A quote only opens a
  // quoted field at the start of a field, as in RFC 4180; inside, `""` is an
  // escaped quote and the state machine naturally re-enters the field. The
  // scan resumes where the previous call stopped (scan_resume), so a long
  // quoted field is scanned once. A quote still open at end of file makes
  // only its own line the record (decode reports it bad, "unterminated
  // quote"): the lines after it are read as records again rather than
  // swallowed into one bad record.
  std::size_t next_record(std::string_view buffer, bool at_eof,
                          std::size_t& lines) override {
    enum { field_start, unquoted, quoted, quote_seen };
    int st = field_start;
    std::size_t newlines = 0;
    std::size_t i = 0;
    if (resume_.scanned > 0 && resume_.scanned <= buffer.size()) {
      i = resume_.scanned;
      st = resume_.state;
      newlines = resume_.newlines;
    }
    if (st != quoted) {
      // The usual line holds no quote: memchr to its newline, memchr for a
      // quote before it, and the byte loop below only for lines that have one.
      const char* from = buffer.data() + i;
      const std::size_t left = buffer.size() - i;
      const void* nl = std::memchr(from, '\n', left);
      const std::size_t seg =
        nl ? static_cast<std::size_t>(static_cast<const char*>(nl) - from) : left;
      if (std::memchr(from, '"', seg) == nullptr) {
        if (nl != nullptr) {
          resume_.reset();
          lines = newlines + 1;
          return i + seg + 1;
        }
        if (seg > 0)
          st = buffer.back() == delim_ ? field_start : unquoted;
        i = buffer.size(); // (and on to the end-of-buffer handling)
      }
    }
    for (; i < buffer.size(); ++i) {
      const char c = buffer[i];
      switch (st) {
        case field_start:
        case unquoted:
        case quote_seen:
          if (c == '\n') {
            resume_.reset();
            lines = newlines + 1;
            return i + 1;
          }
          if (c == delim_)
            st = field_start;
          else if (c == '"') {
            if (st == field_start) {
              quote_open_at_ = i;
              newlines_at_open_ = newlines;
            }
            st = st == field_start || st == quote_seen ? quoted : unquoted;
          } else
            st = unquoted;
          break;
        case quoted:
          if (c == '"')
            st = quote_seen;
          else if (c == '\n')
            ++newlines;
          break;
      }
    }
    if (!at_eof) {
      resume_.scanned = buffer.size();
      resume_.state = st;
      resume_.newlines = newlines;
      return 0;
    }
    resume_.reset();
    if (st == quoted) {
      // Cut after the line on which the open quote started.
      if (const void* nl = std::memchr(buffer.data() + quote_open_at_, '\n',
                                       buffer.size() - quote_open_at_)) {
        lines = newlines_at_open_ + 1;
        return static_cast<std::size_t>(static_cast<const char*>(nl) - buffer.data()) + 1;
      }
    }
    lines = newlines;
    return buffer.size();
  }

  status decode(std::string_view text, batch_builder& out,
                std::string& reason) override {
    if (text.empty())
      return status::skipped;
    if (!header_error_.empty()) {
      reason = header_error_;
      return status::bad;
    }
    // Header names that are not UTF-8 match no field anyway: read the header
    // with replacement whatever the policy.
    auto checked = check_text(text, expect_header_ ? invalid_utf8_policy::replace : invalid_utf8_,
                              utf8_scratch_, reason);
    if (checked && split(*checked, reason)) {
      // a header or a record: below
    } else if (expect_header_) {
      // Without its header no record can be mapped to fields: every one is
      // bad, loudly, rather than read by a guessed column order.
      expect_header_ = false;
      header_error_ = "the header line could not be read (" + reason + ")";
      return status::bad;
    } else {
      return status::bad;
    }
    if (expect_header_) {
      expect_header_ = false;
      map_.assign(cells_.size(), no_field);
      std::vector<bool> taken(schema_->size(), false);
      for (std::size_t i = 0; i < cells_.size(); ++i) {
        auto idx = schema_->index_of(cells_[i].text);
        if (idx && !taken[*idx]) {
          // An unread field's column is split off but not decoded.
          map_[i] = read_[*idx] ? *idx : no_field;
          taken[*idx] = true;
        }
      }
      return status::skipped;
    }
    if (cells_.size() != map_.size()) {
      reason = "expected " + std::to_string(map_.size()) + " fields, got "
               + std::to_string(cells_.size());
      return status::bad;
    }
    for (std::size_t i = 0; i < cells_.size(); ++i) {
      if (map_[i] == no_field)
        continue;
      if (!append(map_[i], cells_[i], out.col(map_[i]), reason)) {
        out.rollback_row();
        return status::bad;
      }
    }
    for (auto f : unread_)
      append_unread(out.col(f));
    return rc_.commit(out, reason);
  }

private:
  // Splits `record` into cells_; unescaped quoted text lives in scratch_,
  // reserved up front so the views into it stay valid.
  bool split(std::string_view record, std::string& reason) {
    cells_.clear();
    scratch_.clear();
    scratch_.reserve(record.size());
    std::size_t i = 0;
    const std::size_t n = record.size();
    while (true) {
      if (i < n && record[i] == '"') {
        const std::size_t begin = scratch_.size();
        ++i;
        bool closed = false;
        while (i < n) {
          const char c = record[i];
          if (c == '"') {
            if (i + 1 < n && record[i + 1] == '"') {
              scratch_ += '"';
              i += 2;
              continue;
            }
            ++i;
            closed = true;
            break;
          }
          scratch_ += c;
          ++i;
        }
        if (!closed) {
          reason = "unterminated quote in column " + std::to_string(cells_.size() + 1)
                   + " (no closing quote before the end of the file)";
          return false;
        }
        cells_.push_back({std::string_view{scratch_}.substr(begin), true});
        if (i < n && record[i] != delim_) {
          reason = "unexpected text after the closing quote in column "
                   + std::to_string(cells_.size());
          return false;
        }
      } else {
        std::size_t end = record.find(delim_, i);
        if (end == std::string_view::npos)
          end = n;
        cells_.push_back({record.substr(i, end - i), false});
        i = end;
      }
      if (i >= n)
        return true;
      ++i; // the delimiter; a trailing one leaves an empty last cell
      if (i == n) {
        cells_.push_back({std::string_view{}, false});
        return true;
      }
    }
  }

  bool bad_cell(std::size_t f, std::string_view text, std::string& reason) const {
    const auto& fd = schema_->at(f);
    reason = "field '" + fd.name + "': cannot parse " + quote_for_reason(text)
             + " as " + std::string{to_string(fd.type)};
    if (fd.type == type_id::int64 || fd.type == type_id::timestamp) {
      if (is_integer_text(text))
        reason += " (out of int64 range)";
    } else if (fd.type == type_id::float64) {
      double d = 0;
      auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
      if (ec == std::errc::result_out_of_range && p == text.data() + text.size())
        reason += " (out of float64 range)";
    }
    return false;
  }

  bool append(std::size_t f, const cell& cl, column& c, std::string& reason) const {
    const auto t = schema_->at(f).type;
    if (cl.text.empty()) {
      if (t == type_id::string && cl.quoted)
        c.append_string({});
      else
        c.append_null();
      return true;
    }
    switch (t) {
      case type_id::string:
        c.append_string(cl.text);
        return true;
      case type_id::int64: {
        std::int64_t v = 0;
        if (!parse_int64(cl.text, v))
          return bad_cell(f, cl.text, reason);
        c.append_int(v);
        return true;
      }
      case type_id::float64: {
        double v = 0;
        if (!parse_double(cl.text, v))
          return bad_cell(f, cl.text, reason);
        c.append_float(v);
        return true;
      }
      case type_id::boolean: {
        bool v = false;
        if (!parse_bool(cl.text, v))
          return bad_cell(f, cl.text, reason);
        c.append_bool(v);
        return true;
      }
      case type_id::timestamp: {
        std::int64_t v = 0;
        if (parse_int64(cl.text, v)) {
          c.append_int(v);
          return true;
        }
        if (auto ts = parse_iso8601(cl.text, zone_)) {
          c.append_int(*ts);
          return true;
        }
        return bad_cell(f, cl.text, reason);
      }
      case type_id::null_type:
        c.append_null();
        return true;
    }
    return bad_cell(f, cl.text, reason);
  }

  schema_ptr schema_;
  row_committer rc_;
  char delim_;
  bool expect_header_;
  invalid_utf8_policy invalid_utf8_;
  time_zone zone_;
  std::vector<bool> read_;            ///< per field: decoded (else null without values)
  std::vector<std::size_t> unread_;   ///< the fields not decoded
  scan_resume resume_;
  std::string header_error_;          ///< set when the header line was bad
  std::size_t quote_open_at_ = 0;    ///< where the last quoted field opened
  std::size_t newlines_at_open_ = 0; ///< line breaks of the record before it
  std::string utf8_scratch_;
  std::vector<std::size_t> map_; ///< column index -> schema field or no_field
  std::vector<cell> cells_;
  std::string scratch_;
};

} // namespace

std::unique_ptr<record_decoder> make_csv_decoder(schema_ptr s, bool header,
                                                 char delimiter, common_options co) {
  return std::make_unique<csv_decoder>(std::move(s), header, delimiter, std::move(co));
}

} // namespace weir::format::internal
