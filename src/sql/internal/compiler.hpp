// SPDX-License-Identifier: Apache-2.0
#pragma once
// The SQL compiler's shared parts (src/sql/README.md): the parse tree's
// helpers, positions, the TOML being written, relations, and the compiler
// class whose statements (compile.cpp), expressions (expressions.cpp) and
// queries (queries.cpp) are split over three files.

#include "weir/sql/sql.hpp"

#include "weir/core/schema.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::sql::internal {

using element = simdjson::dom::element;
using diagnostics = std::vector<config::diagnostic>;

// --- text helpers -----------------------------------------------------------

inline std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1,
                         prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

// The candidate closest to `word` within edit distance 2.
inline std::optional<std::string> closest(std::string_view word,
                                   const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    auto d = edit_distance(lower(word), lower(c));
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

inline std::string joined(const std::vector<std::string>& xs, std::string_view sep = ", ") {
  std::string out;
  for (const auto& x : xs) {
    if (!out.empty())
      out += sep;
    out += x;
  }
  return out;
}

// A TOML basic string.
inline std::string toml_str(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// A TOML key: bare when it can be.
inline std::string toml_key(std::string_view k) {
  bool bare = !k.empty();
  for (char c : k)
    bare = bare && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return bare ? std::string{k} : toml_str(k);
}

// An identifier in weir's expression language: bare when it can be.
inline std::string expr_name(std::string_view n) {
  bool bare = !n.empty() && (std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_');
  for (char c : n)
    bare = bare && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  static const std::set<std::string> reserved{"and", "or", "not", "in", "is", "null",
                                              "like", "true", "false", "case", "when",
                                              "then", "else", "end", "if"};
  if (bare && !reserved.count(lower(n)))
    return std::string{n};
  std::string out = "\"";
  for (char c : n) {
    if (c == '"')
      out += '"';
    out += c;
  }
  return out + "\"";
}

// --- the parse tree ---------------------------------------------------------

inline std::optional<element> get(element e, std::string_view key) {
  if (!e.is_object())
    return std::nullopt;
  auto r = e.get_object().at_key(key);
  if (r.error())
    return std::nullopt;
  return r.value();
}

inline std::string str(element e, std::string_view key) {
  auto v = get(e, key);
  if (!v || !v->is_string())
    return {};
  return std::string{v->get_string().value()};
}

inline std::int64_t num(element e, std::string_view key, std::int64_t otherwise = 0) {
  auto v = get(e, key);
  if (!v)
    return otherwise;
  if (v->is_int64())
    return v->get_int64().value();
  return otherwise;
}

inline bool flag(element e, std::string_view key) {
  auto v = get(e, key);
  return v && v->is_bool() && v->get_bool().value();
}

inline std::vector<element> items(std::optional<element> e) {
  std::vector<element> out;
  if (e && e->is_array())
    for (simdjson::dom::array a = e->get_array().value(); auto x : a)
      out.push_back(x);
  return out;
}

// The node's type ("ColumnRef") and its fields.
inline std::pair<std::string, element> node_of(element e) {
  if (e.is_object())
    for (simdjson::dom::object o = e.get_object().value(); auto [k, v] : o)
      return {std::string{k}, v};
  return {"", e};
}

// The location of a node (its fields' "location"), or `otherwise`.
inline std::size_t location(element e, std::size_t otherwise) {
  auto [type, body] = node_of(e);
  auto loc = num(body, "location", -1);
  if (loc >= 0)
    return static_cast<std::size_t>(loc);
  if (type == "TypeCast")
    if (auto arg = get(body, "arg"))
      return location(*arg, otherwise);
  return otherwise;
}

// The strings of a list of String nodes ("names", "funcname", "fields").
inline std::vector<std::string> names(std::optional<element> list) {
  std::vector<std::string> out;
  for (auto x : items(list)) {
    auto [type, body] = node_of(x);
    if (type == "String")
      out.push_back(str(body, "sval"));
    else if (type == "A_Star")
      out.push_back("*");
  }
  return out;
}

// The offset of the first character at or after `j` that is neither
// white space nor inside a comment (-- to the end of the line, /* */).
inline std::size_t skip_blanks(std::string_view text, std::size_t j) {
  while (j < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[j]))) {
      ++j;
    } else if (text.substr(j, 2) == "--") {
      while (j < text.size() && text[j] != '\n')
        ++j;
    } else if (text.substr(j, 2) == "/*") {
      auto end = text.find("*/", j + 2);
      j = end == std::string_view::npos ? text.size() : end + 2;
    } else {
      break;
    }
  }
  return j;
}

// --- positions --------------------------------------------------------------

class positions {
public:
  explicit positions(std::string_view text) : text_(text) {
    starts_.push_back(0);
    for (std::size_t i = 0; i < text.size(); ++i)
      if (text[i] == '\n')
        starts_.push_back(i + 1);
  }
  // 1-based line and column (code points) of byte `offset`.
  std::pair<std::size_t, std::size_t> at(std::size_t offset) const {
    offset = std::min(offset, text_.size());
    auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
    std::size_t line = static_cast<std::size_t>(it - starts_.begin());
    std::size_t col = 1;
    for (std::size_t i = starts_[line - 1]; i < offset; ++i)
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80)
        ++col;
    return {line, col};
  }
  // Byte offset of the 0-based code point index `chars`.
  std::size_t byte_of_char(std::size_t chars) const {
    std::size_t i = 0;
    for (; i < text_.size() && chars > 0; ++i)
      if ((static_cast<unsigned char>(text_[i]) & 0xC0) != 0x80)
        if (--chars == 0) {
          ++i;
          while (i < text_.size() && (static_cast<unsigned char>(text_[i]) & 0xC0) == 0x80)
            ++i;
          return i;
        }
    return i;
  }

private:
  std::string_view text_;
  std::vector<std::size_t> starts_;
};

// Thrown to stop compiling one statement after its first error.
struct statement_error {};

// --- the TOML being written -------------------------------------------------

struct toml_line {
  std::string text;
  std::size_t origin = 0;
  compiled_script::expression_map expression;
};

using toml_section = std::vector<toml_line>;

// An expression's text with its pieces' SQL offsets.
struct expr_text {
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> pieces;
  std::size_t origin = 0;

  void mark(std::size_t sql_offset) { pieces.emplace_back(text.size(), sql_offset); }
  void append(const expr_text& other) {
    for (auto [at, sql] : other.pieces)
      pieces.emplace_back(text.size() + at, sql);
    text += other.text;
  }
};

// `key = "expression"` with its map.
inline toml_line expression_line(std::string_view key, const expr_text& e) {
  toml_line l;
  l.text = toml_key(key) + " = ";
  l.expression.column = l.text.size() + 2; // 1-based, after the quote
  bool plain = e.text.find_first_of("\"\\\n\t") == std::string::npos;
  l.text += toml_str(e.text);
  if (plain)
    l.expression.pieces = e.pieces;
  else
    l.expression.column = 0;
  l.origin = e.origin;
  return l;
}

// --- relations --------------------------------------------------------------

// A stream a query can read: a source table, a view or a subquery.
struct relation {
  std::string stream;              // the TOML stream name
  std::vector<field> columns;
  std::optional<std::string> event_time; // the column holding the event time
};

struct option {
  std::string key;   // "path", "watermark.idle_timeout"
  std::string value; // as TOML: a quoted string, an integer, true/false
  std::string raw;   // the value as written
  std::size_t at = 0;
};

struct table_def {
  std::string name;
  std::size_t at = 0;
  std::vector<field> columns;
  std::vector<std::size_t> column_at;
  std::vector<option> options;
  bool sink = false;
  bool declared_source = false; // CREATE SOURCE, not CREATE TABLE
  bool emitted = false;
};

inline schema make(const std::vector<field>& cols) { return schema{cols}; }

inline std::vector<std::string> column_names(const std::vector<field>& cols) {
  std::vector<std::string> out;
  for (const auto& f : cols)
    out.push_back(f.name);
  return out;
}

// weir durations from SQL intervals: "10s", "5m", "500ms".
struct interval_unit {
  std::string_view name;
  std::string_view weir;
};
constexpr interval_unit units[] = {
  {"millisecond", "ms"}, {"milliseconds", "ms"}, {"ms", "ms"},
  {"second", "s"}, {"seconds", "s"}, {"sec", "s"}, {"secs", "s"}, {"s", "s"},
  {"minute", "m"}, {"minutes", "m"}, {"min", "m"}, {"mins", "m"}, {"m", "m"},
  {"hour", "h"}, {"hours", "h"}, {"h", "h"},
  {"day", "d"}, {"days", "d"}, {"d", "d"},
};

inline std::int64_t unit_ms(std::string_view weir_unit) {
  if (weir_unit == "ms")
    return 1;
  if (weir_unit == "s")
    return 1000;
  if (weir_unit == "m")
    return 60'000;
  if (weir_unit == "h")
    return 3'600'000;
  return 86'400'000;
}

// Column types: PostgreSQL's names (the parser turns BIGINT into int8) and
// Flink's (STRING); nullopt for any other.
std::optional<type_id> column_type(const std::vector<std::string>& names);

inline const std::set<std::string> aggregate_names{"count", "sum", "min", "max", "avg"};
inline const std::vector<std::string> scalar_functions{
  "lower", "upper", "length", "char_length", "substr", "substring", "concat", "abs",
  "floor", "coalesce", "to_timestamp", "count", "sum", "min", "max", "avg"};

// --- the compiler -----------------------------------------------------------

class compiler {
public:
  compiler(std::string_view text, std::string path) : text_(text), path_(std::move(path)),
                                                      pos_(text) {}

  expected<compiled_script, diagnostics> run();

private:
  // Diagnostics.
  [[noreturn]] void fail(std::size_t at, std::string message,
                         std::vector<std::string> notes = {}) {
    report(at, std::move(message), std::move(notes));
    throw statement_error{};
  }
  // The offset in the script of offset `at` of the text the parser read.
  std::size_t original(std::size_t at) const {
    std::size_t shift = 0;
    for (auto w : inserted_)
      if (w < at)
        shift += std::min<std::size_t>(2, at - w);
    return at - shift;
  }
  void report(std::size_t at, std::string message, std::vector<std::string> notes = {}) {
    auto [line, col] = pos_.at(original(at));
    diags_.push_back({path_, line, col, std::move(message), std::move(notes)});
  }
  [[noreturn]] void unsupported(std::size_t at, std::string_view what, std::string instead) {
    fail(at, std::string{what} + " is not supported yet", {"hint: " + std::move(instead)});
  }

  /// The value of an integer constant (`ival`, an A_Const's or an option's
  /// Integer node). libpg_query 15's JSON leaves a zero or negative value
  /// out ("ival": {}), so then the first integer at or after offset `at` of
  /// the text the parser read (the constant's location, or the option key's)
  /// is read back: an optional '-', blanks, digits.
  std::int64_t integer(element ival, std::size_t at) const;
  /// An integer literal beyond int32, which the parser gives as a numeric
  /// ("fval"): its int64 value, or nothing when it is out of range or not
  /// an integer.
  static std::optional<std::int64_t> wide_integer(std::string_view fval);

  std::string rewrite_keywords(std::string text);
  void statement(element stmt, std::size_t stmt_at);
  void define(const std::string& type, element body, std::size_t at);
  void create_table(element body, std::size_t at);
  void create_view(element body, std::size_t at, bool sink);
  void insert(element body, std::size_t at);
  void set(element body, std::size_t at);

  std::vector<option> options(std::optional<element> list);
  void emit_source(table_def& t, std::size_t used_at);
  void emit_sink(const std::string& name, std::size_t at, const std::vector<option>& opts,
                 const relation& in);

  relation lower_query(element select, std::size_t at, const std::string& prefix,
                       const std::string& final_name,
                       const std::vector<std::string>& rename, std::size_t rename_at);
  relation from_item(element item, std::string& alias, std::size_t at,
                     const std::string& prefix, std::optional<element>& window_call);
  relation resolve_table(const std::string& name, std::size_t at);

  // Expressions.
  struct scope {
    const relation* rel = nullptr;
    std::set<std::string> qualifiers; // accepted table names / aliases
    // Aggregated context (after a window): aggregates become columns.
    bool aggregated = false;
    const std::set<std::string>* group_columns = nullptr;
    std::vector<std::pair<std::string, std::string>>* aggregates = nullptr; // name, call
    std::vector<std::size_t>* aggregate_at = nullptr;
    std::string* hidden_prefix = nullptr;
    bool in_aggregate = false;
  };
  expr_text expression(element e, scope& s, std::size_t at);
  void child(expr_text& out, element e, scope& s, std::size_t at);
  std::string interval(element e, std::size_t at, std::string_view what);
  std::string aggregate(element body, scope& s, std::size_t at, const std::string& fname);
  type_id check(const expr_text& e, const std::vector<field>& cols, bool condition);
  std::string column_ref(element body, scope& s, std::size_t at);

  std::string fresh_name(const std::string& base);
  void add_operator(const std::string& name, const std::string& type, const std::string& input,
                    std::size_t at, std::vector<toml_line> keys,
                    std::vector<std::pair<std::string, std::vector<toml_line>>> tables);

  std::string_view text_;
  std::string sql_; // the text the parser reads (CREATE SOURCE/SINK rewritten)
  std::string path_;
  positions pos_;
  diagnostics diags_;
  std::set<std::size_t> sink_statements; // offsets of CREATE SINK statements
  std::set<std::size_t> source_statements; // offsets of CREATE SOURCE statements
  std::vector<std::size_t> inserted_;     // where "()" was inserted
  std::set<std::string> insert_targets;
  std::set<std::string> declared_; // every table and view the script declares
  std::set<std::string> failed_; // tables and views whose definition failed

  std::map<std::string, table_def> tables_;
  std::vector<std::string> table_order_;
  std::map<std::string, relation> views_;
  std::set<std::string> names_;      // names of the plan's elements
  std::set<std::string> sinks_done_; // sinks written
  std::vector<std::pair<std::string, toml_line>> job_keys_, checkpoint_keys_;
  toml_section sources_, operators_, sinks_;
};

} // namespace weir::sql::internal
