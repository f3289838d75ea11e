// SPDX-License-Identifier: Apache-2.0
#include "internal/decoder_common.hpp"

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
  csv_decoder(schema_ptr s, bool header, char delimiter, row_committer rc)
    : schema_(std::move(s)), rc_(std::move(rc)), delim_(delimiter),
      expect_header_(header) {
    if (!header)
      for (std::size_t i = 0; i < schema_->size(); ++i)
        map_.push_back(i);
  }

  const schema_ptr& output_schema() const override { return schema_; }

  // A record ends at the first '\n' outside quotes. A quote only opens a
  // quoted field at the start of a field, as in RFC 4180; inside, `""` is an
  // escaped quote and the state machine naturally re-enters the field.
  std::size_t next_record(std::string_view buffer, bool at_eof,
                          std::size_t& lines) override {
    enum { field_start, unquoted, quoted, quote_seen } st = field_start;
    std::size_t newlines = 0;
    for (std::size_t i = 0; i < buffer.size(); ++i) {
      const char c = buffer[i];
      switch (st) {
        case field_start:
        case unquoted:
        case quote_seen:
          if (c == '\n') {
            lines = newlines + 1;
            return i + 1;
          }
          if (c == delim_)
            st = field_start;
          else if (c == '"')
            st = st == field_start || st == quote_seen ? quoted : unquoted;
          else
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
    lines = newlines;
    // At EOF an unterminated quote runs to the end; decode reports it.
    return at_eof ? buffer.size() : 0;
  }

  status decode(std::string_view record, batch_builder& out,
                std::string& reason) override {
    if (record.empty())
      return status::skipped;
    if (!split(record, reason))
      return status::bad;
    if (expect_header_) {
      expect_header_ = false;
      map_.assign(cells_.size(), no_field);
      std::vector<bool> taken(schema_->size(), false);
      for (std::size_t i = 0; i < cells_.size(); ++i) {
        auto idx = schema_->index_of(cells_[i].text);
        if (idx && !taken[*idx]) {
          map_[i] = *idx;
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
          reason = "unterminated quote in column " + std::to_string(cells_.size() + 1);
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
        if (auto ts = parse_iso8601(cl.text)) {
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
  std::vector<std::size_t> map_; ///< column index -> schema field or no_field
  std::vector<cell> cells_;
  std::string scratch_;
};

} // namespace

std::unique_ptr<record_decoder> make_csv_decoder(schema_ptr s, bool header,
                                                 char delimiter, row_committer rc) {
  return std::make_unique<csv_decoder>(std::move(s), header, delimiter, std::move(rc));
}

} // namespace weir::format::internal
