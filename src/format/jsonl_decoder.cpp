// SPDX-License-Identifier: Apache-2.0
#include "internal/decoder_common.hpp"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace weir::format::internal {

namespace {

std::string_view json_type_name(simdjson::dom::element_type t) noexcept {
  using et = simdjson::dom::element_type;
  switch (t) {
    case et::ARRAY:
      return "array";
    case et::OBJECT:
      return "object";
    case et::INT64:
    case et::UINT64:
      return "integer";
    case et::DOUBLE:
      return "float";
    case et::STRING:
      return "string";
    case et::BOOL:
      return "bool";
    case et::NULL_VALUE:
      return "null";
  }
  return "unknown";
}

std::string_view json_type_name(simdjson::ondemand::json_type t) noexcept {
  using jt = simdjson::ondemand::json_type;
  switch (t) {
    case jt::array:
      return "array";
    case jt::object:
      return "object";
    case jt::number:
      return "number";
    case jt::string:
      return "string";
    case jt::boolean:
      return "bool";
    case jt::null:
      return "null";
  }
  return "unknown";
}

// True if `tok` is a JSON number (RFC 8259 grammar) that simdjson's DOM
// parser refuses for its size: an integer outside [INT64_MIN, UINT64_MAX],
// or a float beyond the range of a double.
bool is_out_of_range_number(std::string_view tok) noexcept {
  std::size_t i = 0;
  const std::size_t n = tok.size();
  auto digit = [&](std::size_t k) { return k < n && tok[k] >= '0' && tok[k] <= '9'; };
  if (i < n && tok[i] == '-')
    ++i;
  if (!digit(i))
    return false;
  if (tok[i] == '0')
    ++i;
  else
    while (digit(i))
      ++i;
  bool integer = true;
  if (i < n && tok[i] == '.') {
    integer = false;
    ++i;
    if (!digit(i))
      return false;
    while (digit(i))
      ++i;
  }
  if (i < n && (tok[i] == 'e' || tok[i] == 'E')) {
    integer = false;
    ++i;
    if (i < n && (tok[i] == '+' || tok[i] == '-'))
      ++i;
    if (!digit(i))
      return false;
    while (digit(i))
      ++i;
  }
  if (i != n)
    return false;
  if (integer) {
    std::int64_t v = 0;
    std::uint64_t u = 0;
    if (std::from_chars(tok.data(), tok.data() + n, v).ec == std::errc{})
      return false;
    return tok[0] == '-' || std::from_chars(tok.data(), tok.data() + n, u).ec != std::errc{};
  }
  double d = 0;
  return std::from_chars(tok.data(), tok.data() + n, d).ec == std::errc::result_out_of_range;
}

// Length of the array or object starting at `s[0]` in valid JSON.
std::size_t container_length(std::string_view s) noexcept {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      ++depth;
    } else if (c == ']' || c == '}') {
      if (--depth == 0)
        return i + 1;
    }
  }
  return s.size();
}

struct string_hash {
  using is_transparent = void;
  std::size_t operator()(std::string_view s) const noexcept {
    return std::hash<std::string_view>{}(s);
  }
};

class jsonl_decoder final : public record_decoder {
public:
  jsonl_decoder(schema_ptr s, common_options co, bool control_lines, std::size_t window)
    : schema_(std::move(s)), rc_(std::move(co.rc)), control_lines_(control_lines),
      window_(window == 0 ? default_window : std::max<std::size_t>(window, 64)),
      invalid_utf8_(co.invalid_utf8), zone_(std::move(co.zone)), read_(std::move(co.read)),
      slots_(schema_->size()),
      present_(schema_->size(), 0) {
    read_.resize(schema_->size(), true);
    read8_.assign(read_.begin(), read_.end());
    slow_.resize(schema_->size());
    fast_.resize(schema_->size());
    // An unread field (projection push-down) is not looked up: its key is
    // skipped as an undeclared one is.
    for (std::size_t i = 0; i < schema_->size(); ++i)
      if (read_[i])
        index_.emplace(schema_->at(i).name, i);
#ifdef SIMDJSON_THREADS_ENABLED
    // Stage 1 of the next window on a thread of simdjson's own: not in an
    // engine whose subtasks are its threads (and CPU time would hide it).
    many_.threaded = false;
#endif
  }

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
    // simdjson reads up to SIMDJSON_PADDING bytes past the end: parse from a
    // reused buffer with that much slack rather than from the file buffer.
    pad(padded_, record);
    if (!control_lines_)
      if (auto st = decode_fast(record.size(), out, reason))
        return *st;
    simdjson::dom::element doc;
    if (auto err = parse_dom(padded_, record.size(), doc)) {
      if (err == simdjson::NUMBER_ERROR)
        return decode_big_numbers(record, out, reason);
      reason = std::string{"invalid JSON: "} + simdjson::error_message(err);
      return status::bad;
    }
    simdjson::dom::object obj;
    if (doc.get_object().get(obj)) {
      reason = "invalid JSON: expected an object, got "
               + std::string{json_type_name(doc.type())};
      return status::bad;
    }
    if (control_lines_) {
      simdjson::dom::element control;
      if (!obj["control"].get(control)) {
        std::string_view kind;
        std::int64_t at = 0;
        if (control.get_string().get(kind) || kind != "advance_processing_time") {
          reason = "unknown control line (known: \"advance_processing_time\")";
          return status::bad;
        }
        if (obj["proc_time"].get_int64().get(at)) {
          reason = "control line advance_processing_time needs an integer proc_time";
          return status::bad;
        }
        control_time_ = at;
        return status::control;
      }
    }
    std::fill(present_.begin(), present_.end(), 0);
    for (auto kv : obj) {
      auto it = index_.find(kv.key);
      if (it == index_.end())
        continue;
      slots_[it->second] = kv.value;
      present_[it->second] = 1;
    }
    for (std::size_t i = 0; i < schema_->size(); ++i) {
      auto& c = out.col(i);
      if (!read_[i]) {
        append_unread(c);
        continue;
      }
      if (!present_[i] || slots_[i].is_null()) {
        c.append_null();
        continue;
      }
      if (!append(i, slots_[i], c, reason)) {
        out.rollback_row();
        return status::bad;
      }
    }
    return rc_.commit(out, reason);
  }

  event_time control_time() const override { return control_time_; }

  /// Batch decoding of a chunk's complete lines with simdjson On-Demand's
  /// `iterate_many` (stage 1 indexes `window_` bytes of lines at a time,
  /// then each document is walked as `decode_fast` walks one line), straight
  /// from the caller's buffer (which carries `decode_many_padding` slack): no
  /// copy per line, no stage 1 per line, no UTF-8 pass per line (stage 1
  /// validates UTF-8 as it indexes; a NUL byte is found by one memchr).
  ///
  /// Exactness. iterate_many splits text into documents by structure, not by
  /// lines, and a malformed document can derail it (an unclosed quote flips
  /// the string state of the rest of the window, stage 1 fails a whole window
  /// for one bad byte, a line holding `{..} {..}` is two documents). So a
  /// document is taken as line L's record only if its object starts at L's
  /// first non-blank byte (a `{` that is a structural character, hence read
  /// with the correct string state) and its extent (raw_json) ends on L,
  /// followed by nothing but blanks up to L's newline; and it is decoded only
  /// if `decode_object` settles it. Every other line goes to the per-line
  /// path (`decode`: the same fast path on a padded copy, then simdjson DOM
  /// with its reasons), so rows, bad records, reasons and positions are those
  /// of next_record + decode on the same bytes. Blank lines are skipped, a
  /// final line without newline is complete at EOF.
  ///
  /// Fallback, and its cost. A line the fast walk does not settle (a value of
  /// the wrong type, text after the object, a "control" key, a NUL byte)
  /// costs only its per-line decode: the stream goes on with the next
  /// document, resynchronised by its start. A stream that fails (its error,
  /// or documents that no longer start at line starts) is dropped; line L is
  /// decoded per line, and so are the lines after it until the bytes the
  /// failed stream consumed plus those decoded per line reach `window_`, then
  /// a new stream starts. Each stream's stage 1 (at most `window_` bytes
  /// ahead) is thus paid for by at least `window_` bytes of progress: a bad
  /// line costs about two windows of stage 1 at most (the stream it ends and
  /// the restart that meets it again) and one window of per-line decoding,
  /// and a file full of bad lines runs at about the per-line rate, with at
  /// most twice the stage 1 work of the per-line path. A line longer than `window_`
  /// is one simdjson CAPACITY error: decoded per line. A call also starts a
  /// fresh stream (the reader's buffer may move between calls), wasting at
  /// most one window of stage 1 when it stops at `max_rows`.
  ///
  /// Measured (weir_decode_bench under callgrind, the first 100,000 Nexmark
  /// bids of `bench/run ingest`'s file, instructions per record, whole
  /// reader; bench/README.md): all 7 fields 4,263 per line, 3,349 batched;
  /// the 5 fields of q0/q1 3,950 and 3,036; the 3 of the windowed query
  /// 3,666 and 2,733 (the tree before it: 4,775, 4,463, 4,149). The raw
  /// simdjson iterate_many loop (bench/ingest/ingest_raw.cpp) takes 1,879 and
  /// 1,677 for 5 and 3 fields. So batching is the default; the per-line path
  /// stays the reference (`file_source_options::batch_decode = false`). The
  /// window hardly matters: 16 KiB 2,741, 64 KiB 2,708, 256 KiB (the
  /// default) 2,733, 1 MiB 2,823 instructions a record with 3 fields.
  ///
  /// With control lines on, the per-line path reads every record with the
  /// DOM parser, which validates the whole line; the stream's On-Demand walk
  /// (like the per-line fast path without control lines) does not validate
  /// the values it skips. fuzz_jsonl found the difference: a line with a bare
  /// word before an unread string value (`"referrer":h"ttp://…"`), taken by
  /// the walk and refused by the DOM (tests/fuzz/regressions/fuzz_jsonl/
  /// decode-many-control-lines-bare-word). So control-line files (a replay
  /// feature) take the per-line loop here too, and both paths stay equal.
  void decode_many(std::string_view text, bool at_eof, const batch_limits& lim,
                   batch_builder& out, batch_progress& pr,
                   const bad_record_sink& on_bad) override {
    if (control_lines_) {
      record_decoder::decode_many(text, at_eof, lim, out, pr, on_bad);
      return;
    }
    std::size_t span = text.size();
    if (!at_eof) {
      const void* last = ::memrchr(text.data(), '\n', text.size());
      if (last == nullptr)
        return; // no complete line: the caller reads more
      span = static_cast<std::size_t>(static_cast<const char*>(last) - text.data()) + 1;
    }
    if (span == 0)
      return;
    resume_.reset(); // the per-record scan state belongs to another record start now
    const char* const base = text.data();
    const std::size_t rows0 = out.rows();
    auto find_nul = [&](std::size_t from) {
      const void* z = from < span ? std::memchr(base + from, '\0', span - from) : nullptr;
      return z ? static_cast<std::size_t>(static_cast<const char*>(z) - base) : span;
    };
    std::size_t nul = find_nul(0);
    bool live = false;           // a stream over [stream_base, span) is open
    std::size_t stream_base = 0;
    std::size_t per_line_until = 0; // lines starting before this go per line
    simdjson::ondemand::document_stream::iterator it;
    // Whether the stream may be advanced past its current document. A walk
    // that meets an unrecoverable error (an unclosed string, say) makes
    // simdjson abandon the document (its iterator drops the parser), and
    // advancing past an abandoned document reads through a null pointer
    // (simdjson 3.0.1): such a stream counts as broken. Found by fuzz_jsonl.
    auto advanceable = [&] {
      simdjson::ondemand::document_reference ref;
      if ((*it).get(ref))
        return false;
      simdjson::ondemand::document& d = ref;
      return d.is_alive();
    };
    std::string reason;
    while (out.rows() - rows0 < lim.max_rows && pr.records < lim.max_records
           && pr.bytes < span && pr.bytes <= lim.max_start) {
      const std::size_t pos = pr.bytes;
      std::size_t q = pos;
      while (q < span && (base[q] == ' ' || base[q] == '\t' || base[q] == '\r'))
        ++q;
      if (q == span || base[q] == '\n') { // a blank line: skipped
        pr.bytes = q == span ? span : q + 1;
        pr.lines += q == span ? 0 : 1;
        ++pr.records;
        continue;
      }
      const void* nlp = std::memchr(base + q, '\n', span - q);
      const std::size_t line_end =
        nlp ? static_cast<std::size_t>(static_cast<const char*>(nlp) - base) : span;
      if (nul < pos)
        nul = find_nul(pos);
      bool settled = false;
      if (pos >= per_line_until && nul >= line_end) {
        bool failed = false;
        if (!live) {
          ++counters_.streams;
          if (many_.iterate_many(base + q, span - q, window_).get(stream_)) {
            failed = true;
          } else {
            live = true;
            stream_base = q;
            it = stream_.begin();
          }
        }
        // Skip documents that lie before this line (after a line the walk
        // did not settle); a stream that has no document here has failed.
        for (int skipped = 0; live && !failed; ++skipped) {
          if (!(it != stream_.end()) || it.error() || skipped == 8) {
            failed = true;
            break;
          }
          if (stream_base + it.current_index() >= q)
            break;
          if (!advanceable()) {
            failed = true;
            break;
          }
          ++it;
        }
        if (!failed) {
          // The document is this line's if its object starts at the line's
          // first non-blank byte and, walked whole, is followed by blanks
          // up to the newline: its next structural character (the next
          // document's start) lies at or past the newline. The last
          // document of a stage-1 window has no next structural character
          // to show: decoded per line (once per window).
          auto doc = *it;
          const char* b = nullptr;
          simdjson::ondemand::object obj;
          if (!doc.current_location().get(b) && b > base + q) {
            failed = true; // the stream is past this line: out of step
          } else if (b == base + q && !doc.get_object().get(obj)
                     && read_object(obj, base + line_end)) {
            const char* e = nullptr;
            if (!doc.current_location().get(e) && e >= base + line_end) {
              const char* close = e;
              while (close > b && (close[-1] == ' ' || close[-1] == '\t'
                                   || close[-1] == '\r' || close[-1] == '\n'))
                --close;
              if (close <= base + line_end) {
                reason.clear();
                const status st = append_read(out, reason);
                settled = true;
                ++counters_.batched;
                const std::size_t line = pr.lines;
                pr.bytes = nlp ? line_end + 1 : span;
                pr.lines += nlp ? 1 : 0;
                ++pr.records;
                if (advanceable())
                  ++it;
                else
                  live = false; // the next line starts a new stream
                if (st == status::bad && on_bad)
                  on_bad(pos, line, text.substr(pos, strip_cr(base, pos, line_end) - pos),
                         reason);
                continue;
              }
            }
          }
          if (!failed) {
            if (advanceable())
              ++it; // the per-line path decodes this line; the stream goes on
            else
              failed = true;
          }
        }
        if (failed) {
          ++counters_.failures;
          const std::size_t used = live ? pos - std::min(pos, stream_base) : 0;
          per_line_until = pos + (used < window_ ? window_ - used : 0);
          live = false;
        }
      }
      if (!settled) {
        ++counters_.per_line;
        const std::string_view rec = text.substr(pos, strip_cr(base, pos, line_end) - pos);
        const std::size_t line = pr.lines;
        pr.bytes = nlp ? line_end + 1 : span;
        pr.lines += nlp ? 1 : 0;
        ++pr.records;
        if (!decode_one(*this, rec, pos, line, out, reason, pr, on_bad))
          return;
      }
    }
  }

  /// How decode_many's lines went (tests and benchmarks): documents decoded
  /// from a stream, lines decoded per line, streams started, streams dropped.
  struct batch_counters {
    std::uint64_t batched = 0, per_line = 0, streams = 0, failures = 0;
  };
  const batch_counters& counters() const noexcept { return counters_; }

private:
  static constexpr std::size_t default_window = std::size_t{256} << 10;

  // The end of line [pos, line_end) without one trailing '\r' (as the file
  // reader strips it before `decode`).
  static std::size_t strip_cr(const char* base, std::size_t pos, std::size_t line_end) {
    return line_end > pos && base[line_end - 1] == '\r' ? line_end - 1 : line_end;
  }

  // The fast path (simdjson On-Demand over the padded record, one reused
  // parser): walks the object's keys once, parses only the values of read
  // fields, skips the others by structure, and appends nothing until every
  // read field has been read. Returns nullopt, having appended nothing, for
  // whatever it does not settle itself (any simdjson error, a type that does
  // not fit, an array or object in a string field, a key with an escape, text
  // after the object): the DOM path then decodes the record, with its exact
  // reasons and its handling of deep nesting and big numbers.
  struct fast_slot {
    enum kind_t : std::uint8_t { null, integer, floating, boolean, text } kind = null;
    std::int64_t i = 0;
    double f = 0;
    std::string_view s; ///< in the parser's string buffer (valid until the next record)
  };

  // True if the key text at `k` (after its opening quote, before `end`) is
  // `name` followed by its closing quote.
  // True if the key text at `k` (after its opening quote, before `end`) is
  // the key seen at position `at` last time followed by its closing quote.
  // The first 8 bytes are compared as one word against the word kept for
  // it (the text has decode_many_padding or SIMDJSON_PADDING readable bytes
  // after `end`): Nexmark's field names are 3 to 9 bytes, and this runs for
  // every key of every record, where a call to memcmp cost more than the
  // comparison (docs/internals/cost-of-a-record.md).
  bool same_key(std::size_t at, const char* k, const char* end) const noexcept {
    const std::string& name = seen_names_[at];
    const std::size_t n = name.size();
    if (static_cast<std::size_t>(end - k) <= n || k[n] != '"')
      return false;
    std::uint64_t w = 0;
    std::memcpy(&w, k, sizeof w);
    if ((w & seen_masks_[at]) != seen_words_[at])
      return false;
    for (std::size_t j = sizeof w; j < n; ++j)
      if (k[j] != name[j])
        return false;
    return true;
  }

  // The field index of `key` (npos: not read), remembered per key position,
  // as the keys of a file's records mostly come in the same order.
  std::size_t field_of(std::size_t pos, std::string_view key) {
    if (pos < seen_names_.size() && seen_names_[pos] == key)
      return seen_index_[pos];
    auto it = index_.find(key);
    const std::size_t idx = it == index_.end() ? npos : it->second;
    if (pos >= seen_names_.size()) {
      if (pos < 256) {
        seen_names_.resize(pos + 1);
        seen_index_.resize(pos + 1, npos);
        seen_words_.resize(pos + 1, 0);
        seen_masks_.resize(pos + 1, 0);
      } else {
        return idx;
      }
    }
    seen_names_[pos].assign(key);
    seen_index_[pos] = idx;
    std::uint64_t w = 0;
    const std::size_t head = std::min(key.size(), sizeof w);
    std::memcpy(&w, key.data(), head);
    seen_words_[pos] = w;
    unsigned char ones[sizeof w] = {};
    std::memset(ones, 0xff, head);
    std::memcpy(&seen_masks_[pos], ones, sizeof w); // the bytes of the key, in memory order
    return idx;
  }

  std::optional<status> decode_fast(std::size_t len, batch_builder& out, std::string& reason) {
    simdjson::ondemand::document doc;
    if (od_fast_.iterate(padded_.data(), len, padded_.size()).get(doc))
      return std::nullopt;
    simdjson::ondemand::object obj;
    if (doc.get_object().get(obj))
      return std::nullopt;
    // Text after the object ("{..} {..}") is left to the DOM path: the
    // object's extent (a walk over its structural indexes only) must end
    // where the record does.
    std::string_view whole;
    if (obj.raw_json().get(whole) || whole.data() + whole.size() < padded_.data() + len
        || obj.reset().error())
      return std::nullopt;
    return decode_object(obj, padded_.data() + len, out, reason);
  }

  // The fast path's walk over one object (positioned at its start), whose
  // text ends before `end`: see decode_fast.
  std::optional<status> decode_object(simdjson::ondemand::object& obj, const char* end,
                                      batch_builder& out, std::string& reason) {
    if (!read_object(obj, end))
      return std::nullopt;
    return append_read(out, reason);
  }

  // The walk of decode_object up to the values: every key of `obj` (at its
  // start) and the values of read fields, into fast_; false, with nothing
  // appended anywhere, for what the fast path leaves to the DOM. On true the
  // iterator has passed the object's closing brace.
  bool read_object(simdjson::ondemand::object& obj, const char* end) {
    using jt = simdjson::ondemand::json_type;
    for (auto& f : fast_)
      f.kind = fast_slot::null;
    std::size_t pos = 0;
    for (auto fr : obj) {
      simdjson::ondemand::field field;
      if (std::move(fr).get(field))
        return false;
      const char* k = field.key().raw();
      if (k >= end)
        return false;
      std::size_t i = npos;
      const std::size_t at = pos++;
      if (at < seen_names_.size() && same_key(at, k, end)) {
        // The key seen at this position last time (never one with a
        // backslash, so k[n] is the closing quote): no scan for the quote.
        i = seen_index_[at];
      } else {
        const void* q = std::memchr(k, '"', static_cast<std::size_t>(end - k));
        if (q == nullptr)
          return false;
        const std::string_view key{k, static_cast<std::size_t>(static_cast<const char*>(q) - k)};
        if (key.find('\\') != std::string_view::npos)
          return false;
        // decode_many with control lines: a "control" key is the per-line
        // path's to read (decode reads control lines with simdjson DOM).
        if (control_lines_ && key == "control")
          return false;
        i = field_of(at, key);
      }
      if (i == npos)
        continue; // skipped by structure, not validated
      auto& v = field.value();
      auto& sl = fast_[i];
      jt t{};
      if (v.type().get(t))
        return false;
      if (t == jt::null) {
        sl.kind = fast_slot::null;
        continue;
      }
      switch (schema_->at(i).type) {
        case type_id::int64:
          if (t != jt::number || v.get_int64().get(sl.i))
            return false;
          sl.kind = fast_slot::integer;
          break;
        case type_id::float64:
          if (t != jt::number || v.get_double().get(sl.f))
            return false;
          sl.kind = fast_slot::floating;
          break;
        case type_id::boolean: {
          bool b = false;
          if (t != jt::boolean || v.get_bool().get(b))
            return false;
          sl.i = b ? 1 : 0;
          sl.kind = fast_slot::boolean;
          break;
        }
        case type_id::string:
          if (t != jt::string || v.get_string().get(sl.s))
            return false;
          sl.kind = fast_slot::text;
          break;
        case type_id::timestamp:
          if (t == jt::number) {
            if (v.get_int64().get(sl.i))
              return false;
          } else {
            std::string_view str;
            if (t != jt::string || v.get_string().get(str))
              return false;
            auto ts = parse_iso8601(str, zone_);
            if (!ts)
              return false;
            sl.i = *ts;
          }
          sl.kind = fast_slot::integer;
          break;
        case type_id::null_type:
          break;
      }
    }
    return true;
  }

  // Appends the row read_object read, and commits it (row_committer).
  status append_read(batch_builder& out, std::string& reason) {
    for (std::size_t i = 0; i < schema_->size(); ++i) {
      auto& c = out.col(i);
      if (!read8_[i]) {
        append_unread(c);
        continue;
      }
      const auto& sl = fast_[i];
      // column::append_* spelled out, so that they inline here (they live
      // in another library): a call per field of every record otherwise.
      switch (sl.kind) {
        case fast_slot::null: c.append_null(); break;
        case fast_slot::integer:
          c.validity.push_back(1);
          c.ints.push_back(sl.i);
          break;
        case fast_slot::floating:
          c.validity.push_back(1);
          c.floats.push_back(sl.f);
          break;
        case fast_slot::boolean:
          c.validity.push_back(1);
          c.bools.push_back(sl.i != 0 ? 1 : 0);
          break;
        case fast_slot::text:
          c.validity.push_back(1);
          c.chars.append(sl.s);
          c.offsets.push_back(static_cast<std::uint32_t>(c.chars.size()));
          break;
      }
    }
    return rc_.commit(out, reason);
  }

  static constexpr std::size_t npos = static_cast<std::size_t>(-1);

  bool type_error(std::size_t i, simdjson::dom::element v, std::string& reason) const {
    const auto& f = schema_->at(i);
    reason = "field '" + f.name + "': expected " + std::string{to_string(f.type)}
             + ", got " + std::string{json_type_name(v.type())};
    if (v.type() == simdjson::dom::element_type::UINT64)
      reason += " out of int64 range";
    return false;
  }

  bool append(std::size_t i, simdjson::dom::element v, column& c,
              std::string& reason) const {
    using et = simdjson::dom::element_type;
    const auto t = v.type();
    switch (schema_->at(i).type) {
      case type_id::int64:
        if (t != et::INT64)
          return type_error(i, v, reason);
        c.append_int(v.get_int64().value_unsafe());
        return true;
      case type_id::float64:
        if (t != et::INT64 && t != et::UINT64 && t != et::DOUBLE)
          return type_error(i, v, reason);
        c.append_float(v.get_double().value_unsafe());
        return true;
      case type_id::boolean:
        if (t != et::BOOL)
          return type_error(i, v, reason);
        c.append_bool(v.get_bool().value_unsafe());
        return true;
      case type_id::string:
        if (t == et::ARRAY || t == et::OBJECT) {
          // Kept as minified JSON text, so that `explode` can unnest arrays.
          c.append_string(simdjson::minify(v));
          return true;
        }
        if (t != et::STRING)
          return type_error(i, v, reason);
        c.append_string(v.get_string().value_unsafe());
        return true;
      case type_id::timestamp:
        if (t == et::INT64) {
          c.append_int(v.get_int64().value_unsafe());
          return true;
        }
        if (t == et::STRING) {
          auto text = v.get_string().value_unsafe();
          if (auto ts = parse_iso8601(text, zone_)) {
            c.append_int(*ts);
            return true;
          }
          reason = "field '" + schema_->at(i).name + "': cannot parse "
                   + quote_for_reason(text) + " as an ISO-8601 timestamp";
          return false;
        }
        return type_error(i, v, reason);
      case type_id::null_type:
        c.append_null();
        return true;
    }
    return type_error(i, v, reason);
  }

  static void pad(std::vector<char>& buf, std::string_view record) {
    if (buf.size() < record.size() + simdjson::SIMDJSON_PADDING)
      buf.resize(record.size() + simdjson::SIMDJSON_PADDING);
    std::memcpy(buf.data(), record.data(), record.size());
    std::memset(buf.data() + record.size(), 0, simdjson::SIMDJSON_PADDING);
  }

  // DOM parse; a document nested deeper than simdjson's default limit (1024)
  // is parsed again by a parser whose limit is the record's length, so that
  // nesting never makes a record bad (simdjson's DOM builder is iterative:
  // depth costs memory, not stack).
  simdjson::error_code parse_dom(const std::vector<char>& buf, std::size_t n,
                                 simdjson::dom::element& doc) {
    auto err = parser_.parse(buf.data(), n, false).get(doc);
    if (err != simdjson::DEPTH_ERROR)
      return err;
    if (!deep_parser_)
      deep_parser_ = std::make_unique<simdjson::dom::parser>();
    if (deep_parser_->max_depth() < n + 2 || deep_parser_->capacity() < n)
      if (auto e = deep_parser_->allocate(n, n + 2))
        return e;
    return deep_parser_->parse(buf.data(), n, false).get(doc);
  }

  // The slow path for a record with a number simdjson's DOM refuses (an
  // integer beyond 64 bits, a float beyond a double): such numbers are
  // blanked out for a DOM pass that validates the rest of the document, then
  // simdjson On-Demand, which parses a number only when asked, reads the
  // declared fields. An undeclared field is thus never a reason to fail, and
  // a float64 field reads any integer as the nearest double.
  status decode_big_numbers(std::string_view record, batch_builder& out,
                            std::string& reason) {
    blanked_.assign(record.begin(), record.end());
    bool in_string = false;
    for (std::size_t i = 0; i < blanked_.size(); ++i) {
      const char c = blanked_[i];
      if (in_string) {
        if (c == '\\')
          ++i;
        else if (c == '"')
          in_string = false;
        continue;
      }
      if (c == '"') {
        in_string = true;
        continue;
      }
      if (c != '-' && (c < '0' || c > '9'))
        continue;
      std::size_t j = i;
      while (j < blanked_.size()
             && ((blanked_[j] >= '0' && blanked_[j] <= '9') || blanked_[j] == '-'
                 || blanked_[j] == '+' || blanked_[j] == '.' || blanked_[j] == 'e'
                 || blanked_[j] == 'E'))
        ++j;
      if (is_out_of_range_number(std::string_view{blanked_}.substr(i, j - i))) {
        blanked_[i] = '0';
        std::fill(blanked_.begin() + static_cast<std::ptrdiff_t>(i) + 1,
                  blanked_.begin() + static_cast<std::ptrdiff_t>(j), ' ');
      }
      i = j - 1;
    }
    pad(blank_padded_, blanked_);
    simdjson::dom::element check;
    if (auto err = parse_dom(blank_padded_, blanked_.size(), check)) {
      reason = std::string{"invalid JSON: "} + simdjson::error_message(err);
      return status::bad;
    }
    if (!check.is_object()) {
      reason = "invalid JSON: expected an object, got "
               + std::string{json_type_name(check.type())};
      return status::bad;
    }
    // The document is valid JSON but for the big numbers: read it.
    if (od_max_depth_ < record.size() + 2) {
      od_max_depth_ = record.size() + 2;
      if (auto e = od_parser_.allocate(record.size(), od_max_depth_)) {
        reason = std::string{"invalid JSON: "} + simdjson::error_message(e);
        return status::bad;
      }
    }
    for (auto& sl : slow_)
      sl = slow_slot{};
    auto fail = [&](simdjson::error_code e) {
      reason = std::string{"invalid JSON: "} + simdjson::error_message(e);
      return status::bad;
    };
    simdjson::ondemand::document doc;
    if (auto e = od_parser_.iterate(padded_.data(), record.size(), padded_.size()).get(doc))
      return fail(e);
    simdjson::ondemand::object obj;
    if (auto e = doc.get_object().get(obj))
      return fail(e);
    for (auto f : obj) {
      simdjson::ondemand::field field;
      if (auto e = std::move(f).get(field))
        return fail(e);
      std::string_view key;
      if (auto e = field.unescaped_key().get(key))
        return fail(e);
      if (control_lines_ && key == "control") {
        reason = "control line advance_processing_time needs an integer proc_time";
        return status::bad;
      }
      auto it = index_.find(key);
      if (it == index_.end())
        continue;
      read_slow(it->second, field.value(), slow_[it->second]);
    }
    for (std::size_t i = 0; i < schema_->size(); ++i) {
      auto& c = out.col(i);
      if (!read_[i]) {
        append_unread(c);
        continue;
      }
      const auto& sl = slow_[i];
      if (!sl.error.empty()) {
        out.rollback_row();
        reason = sl.error;
        return status::bad;
      }
      std::visit(
        [&](const auto& x) {
          using T = std::decay_t<decltype(x)>;
          if constexpr (std::is_same_v<T, std::monostate>)
            c.append_null();
          else if constexpr (std::is_same_v<T, bool>)
            c.append_bool(x);
          else if constexpr (std::is_same_v<T, std::int64_t>)
            c.append_int(x);
          else if constexpr (std::is_same_v<T, double>)
            c.append_float(x);
          else
            c.append_string(x);
        },
        sl.v);
    }
    return rc_.commit(out, reason);
  }

  struct slow_slot {
    value v;           ///< monostate: null or missing
    std::string error; ///< the bad-record reason, if the value does not fit
  };

  // One declared field's value in the slow path (the last duplicate wins).
  void read_slow(std::size_t i, simdjson::ondemand::value v, slow_slot& sl) {
    using jt = simdjson::ondemand::json_type;
    sl = slow_slot{};
    const auto& f = schema_->at(i);
    jt t{};
    if (auto e = v.type().get(t)) {
      sl.error = std::string{"invalid JSON: "} + simdjson::error_message(e);
      return;
    }
    auto mismatch = [&](std::string_view got) {
      sl.error = "field '" + f.name + "': expected " + std::string{to_string(f.type)}
                 + ", got " + std::string{got};
    };
    if (t == jt::null)
      return;
    const std::string_view tok = t == jt::number ? v.raw_json_token() : std::string_view{};
    auto number_text = [&] {
      std::string_view x = tok;
      while (!x.empty() && (x.back() == ' ' || x.back() == '\t' || x.back() == '\r'
                            || x.back() == '\n'))
        x.remove_suffix(1);
      return x;
    };
    auto read_int = [&] {
      std::int64_t x = 0;
      if (!v.get_int64().get(x)) {
        sl.v = x;
        return;
      }
      mismatch(is_integer_text(number_text()) ? "integer out of int64 range" : "float");
    };
    switch (f.type) {
      case type_id::int64:
        if (t != jt::number)
          return mismatch(json_type_name(t));
        return read_int();
      case type_id::float64: {
        if (t != jt::number)
          return mismatch(json_type_name(t));
        double d = 0;
        if (v.get_double().get(d)) {
          sl.error = "field '" + f.name + "': number " + quote_for_reason(number_text())
                     + " is out of float64 range";
          return;
        }
        sl.v = d;
        return;
      }
      case type_id::boolean: {
        bool b = false;
        if (t != jt::boolean || v.get_bool().get(b))
          return mismatch(json_type_name(t));
        sl.v = b;
        return;
      }
      case type_id::string: {
        if (t == jt::array || t == jt::object) {
          const std::string_view raw = v.raw_json_token();
          const std::string_view whole{raw.data(),
                                       static_cast<std::size_t>(
                                         padded_.data() + padded_.size() - raw.data())};
          const std::string_view text = whole.substr(0, container_length(whole));
          std::string mini(text.size(), '\0');
          std::size_t len = 0;
          if (simdjson::minify(text.data(), text.size(), mini.data(), len)) {
            sl.error = "field '" + f.name + "': cannot minify the nested value";
            return;
          }
          mini.resize(len);
          sl.v = std::move(mini);
          return;
        }
        std::string_view str;
        if (t != jt::string || v.get_string().get(str))
          return mismatch(json_type_name(t));
        sl.v = std::string{str};
        return;
      }
      case type_id::timestamp: {
        if (t == jt::number)
          return read_int();
        std::string_view str;
        if (t != jt::string || v.get_string().get(str))
          return mismatch(json_type_name(t));
        if (auto ts = parse_iso8601(str, zone_)) {
          sl.v = *ts;
          return;
        }
        sl.error = "field '" + f.name + "': cannot parse " + quote_for_reason(str)
                   + " as an ISO-8601 timestamp";
        return;
      }
      case type_id::null_type:
        return;
    }
  }

  schema_ptr schema_;
  row_committer rc_;
  bool control_lines_ = false;
  std::size_t window_;                          ///< decode_many's stage-1 window, bytes
  simdjson::ondemand::parser many_;             ///< decode_many's (not decode's) parser
  simdjson::ondemand::document_stream stream_;  ///< its current stream
  batch_counters counters_;
  invalid_utf8_policy invalid_utf8_;
  time_zone zone_;
  std::vector<bool> read_; ///< per field: decoded (else null without values)
  std::vector<std::uint8_t> read8_; ///< read_ as bytes, for the fast path's loop
  simdjson::ondemand::parser od_fast_;
  std::vector<fast_slot> fast_;
  std::vector<std::string> seen_names_; ///< per key position: the key last seen there
  std::vector<std::size_t> seen_index_; ///< ... and its field (npos: not read)
  std::vector<std::uint64_t> seen_words_; ///< ... its first 8 bytes, zero-padded
  std::vector<std::uint64_t> seen_masks_; ///< ... and the mask of those bytes
  scan_resume resume_;
  std::string utf8_scratch_;
  std::unique_ptr<simdjson::dom::parser> deep_parser_;
  simdjson::ondemand::parser od_parser_;
  std::size_t od_max_depth_ = 0;
  std::string blanked_;
  std::vector<char> blank_padded_;
  std::vector<slow_slot> slow_;
  event_time control_time_ = 0;
  std::unordered_map<std::string, std::size_t, string_hash, std::equal_to<>> index_;
  simdjson::dom::parser parser_;
  std::vector<char> padded_;
  std::vector<simdjson::dom::element> slots_;
  std::vector<std::uint8_t> present_;
};

} // namespace

std::unique_ptr<record_decoder> make_jsonl_decoder(schema_ptr s, common_options co,
                                                   bool control_lines, std::size_t window) {
  return std::make_unique<jsonl_decoder>(std::move(s), std::move(co), control_lines, window);
}

std::optional<jsonl_batch_counters> jsonl_counters(const record_decoder& d) {
  if (const auto* j = dynamic_cast<const jsonl_decoder*>(&d)) {
    const auto& c = j->counters();
    return jsonl_batch_counters{c.batched, c.per_line, c.streams, c.failures};
  }
  return std::nullopt;
}

} // namespace weir::format::internal
