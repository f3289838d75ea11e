// SPDX-License-Identifier: Apache-2.0
// SQL to TOML (docs/sql.md). libpg_query parses the script into PostgreSQL's
// parse tree as JSON; the walk below lowers each statement onto the kinds the
// TOML loader plans (file/kafka sources, filter, select, window, sinks) and
// writes the equivalent pipeline, remembering for every line it writes where
// in the SQL it came from. Expressions are checked here with weir's
// expression compiler against the relation's schema, so unknown columns and
// functions and type errors point into the SQL text.

#include "weir/sql/sql.hpp"

#include "weir/expr/expression.hpp"

#include <pg_query.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace weir::sql {

bool built() noexcept { return true; }

namespace {

using element = simdjson::dom::element;
using diagnostics = std::vector<config::diagnostic>;

// --- text helpers -----------------------------------------------------------

std::string lower(std::string_view s) {
  std::string out{s};
  for (auto& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
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
std::optional<std::string> closest(std::string_view word,
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

std::string joined(const std::vector<std::string>& xs, std::string_view sep = ", ") {
  std::string out;
  for (const auto& x : xs) {
    if (!out.empty())
      out += sep;
    out += x;
  }
  return out;
}

// A TOML basic string.
std::string toml_str(std::string_view s) {
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
std::string toml_key(std::string_view k) {
  bool bare = !k.empty();
  for (char c : k)
    bare = bare && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-');
  return bare ? std::string{k} : toml_str(k);
}

// An identifier in weir's expression language: bare when it can be.
std::string expr_name(std::string_view n) {
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

std::optional<element> get(element e, std::string_view key) {
  if (!e.is_object())
    return std::nullopt;
  auto r = e.get_object().at_key(key);
  if (r.error())
    return std::nullopt;
  return r.value();
}

std::string str(element e, std::string_view key) {
  auto v = get(e, key);
  if (!v || !v->is_string())
    return {};
  return std::string{v->get_string().value()};
}

std::int64_t num(element e, std::string_view key, std::int64_t otherwise = 0) {
  auto v = get(e, key);
  if (!v)
    return otherwise;
  if (v->is_int64())
    return v->get_int64().value();
  return otherwise;
}

bool flag(element e, std::string_view key) {
  auto v = get(e, key);
  return v && v->is_bool() && v->get_bool().value();
}

std::vector<element> items(std::optional<element> e) {
  std::vector<element> out;
  if (e && e->is_array())
    for (simdjson::dom::array a = e->get_array().value(); auto x : a)
      out.push_back(x);
  return out;
}

// The node's type ("ColumnRef") and its fields.
std::pair<std::string, element> node_of(element e) {
  if (e.is_object())
    for (simdjson::dom::object o = e.get_object().value(); auto [k, v] : o)
      return {std::string{k}, v};
  return {"", e};
}

// The location of a node (its fields' "location"), or `otherwise`.
std::size_t location(element e, std::size_t otherwise) {
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
std::vector<std::string> names(std::optional<element> list) {
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
std::size_t skip_blanks(std::string_view text, std::size_t j) {
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
toml_line expression_line(std::string_view key, const expr_text& e) {
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
  bool emitted = false;
};

schema make(const std::vector<field>& cols) { return schema{cols}; }

std::vector<std::string> column_names(const std::vector<field>& cols) {
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

std::int64_t unit_ms(std::string_view weir_unit) {
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

  std::string rewrite_keywords(std::string text);
  void statement(element stmt, std::size_t stmt_at);
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
  std::vector<std::size_t> inserted_;     // where "()" was inserted
  std::set<std::string> insert_targets;

  std::map<std::string, table_def> tables_;
  std::vector<std::string> table_order_;
  std::map<std::string, relation> views_;
  std::set<std::string> names_;      // names of the plan's elements
  std::set<std::string> sinks_done_; // sinks written
  std::vector<std::pair<std::string, toml_line>> job_keys_, checkpoint_keys_;
  toml_section sources_, operators_, sinks_;
};

// CREATE SOURCE and CREATE SINK are not PostgreSQL: they are read as CREATE
// TABLE and CREATE VIEW (same lengths, so offsets stay), and remembered.
std::string compiler::rewrite_keywords(std::string text) {
  std::size_t i = 0;
  bool statement_start = true;
  auto skip_space = [&](std::size_t j) { return skip_blanks(text, j); };
  auto word_at = [&](std::size_t j, std::string_view w) {
    if (j + w.size() > text.size() || lower(text.substr(j, w.size())) != w)
      return false;
    return j + w.size() == text.size()
        || !(std::isalnum(static_cast<unsigned char>(text[j + w.size()]))
             || text[j + w.size()] == '_');
  };
  while (i < text.size()) {
    if (statement_start) {
      std::size_t j = skip_space(i);
      if (word_at(j, "create")) {
        std::size_t k = skip_space(j + 6);
        bool table = word_at(k, "table");
        if (word_at(k, "source")) {
          text.replace(k, 6, "TABLE ");
          table = true;
        }
        if (table) {
          // CREATE SOURCE name WITH (...), no column list (a format with a
          // schema of its own): PostgreSQL needs "()", inserted and
          // remembered so that offsets after it map back.
          std::size_t n = skip_space(k + 6);
          while (n < text.size()
                 && (std::isalnum(static_cast<unsigned char>(text[n])) || text[n] == '_'
                     || text[n] == '.' || text[n] == '"'))
            ++n;
          std::size_t w = skip_space(n);
          if (w > n && word_at(w, "with")) {
            text.insert(w, "()");
            inserted_.push_back(w);
          }
        } else if (word_at(k, "sink")) {
          text.replace(k, 4, "VIEW");
          sink_statements.insert(j);
        }
      }
      statement_start = false;
      i = j;
      continue;
    }
    char c = text[i];
    if (c == ';') {
      statement_start = true;
      ++i;
    } else if (c == '\'' || c == '"') {
      ++i;
      while (i < text.size() && text[i] != c)
        ++i;
      ++i;
    } else if (text.compare(i, 2, "--") == 0 || text.compare(i, 2, "/*") == 0) {
      i = skip_space(i);
    } else {
      ++i;
    }
  }
  return text;
}

expected<compiled_script, diagnostics> compiler::run() {
  sql_ = rewrite_keywords(std::string{text_});
  PgQueryParseResult parsed = pg_query_parse(sql_.c_str());
  if (parsed.error) {
    std::size_t at = parsed.error->cursorpos > 0
                       ? positions{sql_}.byte_of_char(
                           static_cast<std::size_t>(parsed.error->cursorpos - 1))
                       : 0;
    std::string message = parsed.error->message;
    pg_query_free_parse_result(parsed);
    // Flink SQL's spellings the PostgreSQL grammar does not have.
    std::vector<std::string> notes;
    std::size_t stmt = at;
    while (stmt > 0 && sql_[stmt - 1] != ';')
      --stmt;
    std::string before = lower(std::string_view{sql_}.substr(stmt, at - stmt));
    auto word = [&](std::string_view w) {
      auto b = before.find_last_not_of(" \t\r\n");
      return b != std::string::npos && b + 1 >= w.size()
             && before.compare(b + 1 - w.size(), w.size(), w) == 0;
    };
    if (word("watermark"))
      notes.push_back("hint: event time and watermarks are WITH options: WITH (..., "
                      "event_time = 'ts', watermark = '5s')");
    else if (word("set") && at < sql_.size() && sql_[at] == '\'')
      notes.push_back("hint: write the key without quotes: SET job.parallelism = 2");
    else if (word("(") && at < sql_.size() && lower(sql_.substr(at, 6)) == "table ")
      notes.push_back("hint: a window function takes the table's name alone: tumble(bids, "
                      "date_time, INTERVAL '10' SECOND)");
    report(at, message, notes);
    return std::move(diags_);
  }
  simdjson::dom::parser json;
  std::string tree = parsed.parse_tree;
  pg_query_free_parse_result(parsed);
  auto doc = json.parse(tree);
  if (doc.error()) {
    report(0, "internal error: the SQL parse tree is not JSON");
    return std::move(diags_);
  }
  auto stmts = items(get(doc.value(), "stmts"));
  // INSERT targets first: a table written by INSERT is a sink.
  for (auto s : stmts) {
    if (auto st = get(s, "stmt")) {
      auto [type, body] = node_of(*st);
      if (type == "InsertStmt")
        if (auto rel = get(body, "relation"))
          insert_targets.insert(str(*rel, "relname"));
    }
  }
  for (auto s : stmts) {
    auto st = get(s, "stmt");
    std::size_t at = static_cast<std::size_t>(num(s, "stmt_location", 0));
    // Skip the blanks and comments before the statement.
    at = skip_blanks(sql_, at);
    if (!st)
      continue;
    try {
      statement(*st, at);
    } catch (const statement_error&) {
    } catch (const std::exception& e) {
      // A parse tree of a shape this walk does not expect: refused, never a
      // crash or a guess.
      report(at, std::string{"this statement is not supported (its parse tree: "} + e.what()
                   + ")");
    }
  }
  if (diags_.empty()) {
    bool any_sink = !sinks_.empty();
    if (!any_sink)
      report(0, "the script has no sink: nothing would be written",
             {"hint: add INSERT INTO <table> SELECT ... or CREATE SINK <name> WITH "
              "(connector = 'file', path = '...') AS SELECT ..."});
  }
  // Source tables no query read are still sources of the job (checked and
  // read, as a TOML [[source]] nothing reads).
  if (diags_.empty())
    for (const auto& name : table_order_)
      if (auto& t = tables_.at(name); !t.sink && !t.emitted) {
        try {
          emit_source(t, t.at);
        } catch (const statement_error&) {
        }
      }
  if (!diags_.empty()) {
    config::sort_diagnostics(diags_);
    return std::move(diags_);
  }

  compiled_script out;
  auto put = [&](const toml_line& l) {
    out.toml += l.text;
    out.toml += '\n';
    out.line_origin.push_back(original(l.origin));
    out.line_expressions.push_back(l.expression);
    for (auto& [piece, sql] : out.line_expressions.back().pieces)
      sql = original(sql);
  };
  auto header = [&](std::string text, std::size_t origin) {
    toml_line l;
    l.text = std::move(text);
    l.origin = origin;
    put(l);
  };
  header("# Compiled from " + path_ + " by weir's SQL front end.", 0);
  if (!job_keys_.empty()) {
    header("[job]", job_keys_.front().second.origin);
    for (auto& [k, l] : job_keys_)
      put(l);
  }
  if (!checkpoint_keys_.empty()) {
    header("", 0);
    header("[checkpoint]", checkpoint_keys_.front().second.origin);
    for (auto& [k, l] : checkpoint_keys_)
      put(l);
  }
  for (const auto* section : {&sources_, &operators_, &sinks_})
    for (const auto& l : *section)
      put(l);
  return out;
}

void compiler::statement(element stmt, std::size_t at) {
  auto [type, body] = node_of(stmt);
  if (type == "CreateStmt")
    return create_table(body, at);
  if (type == "ViewStmt")
    return create_view(body, at, sink_statements.count(at) > 0);
  if (type == "InsertStmt")
    return insert(body, at);
  if (type == "VariableSetStmt")
    return set(body, at);
  if (type == "SelectStmt")
    fail(at, "a SELECT on its own has no sink",
         {"hint: write INSERT INTO <sink table> SELECT ..., or CREATE SINK <name> WITH "
          "(connector = 'stdout') AS SELECT ..."});
  if (type == "CreateTableAsStmt")
    unsupported(at, "CREATE TABLE ... AS SELECT",
                "write CREATE SINK <name> WITH (connector = ...) AS SELECT ..., or CREATE "
                "VIEW <name> AS SELECT ...");
  std::string name = type;
  if (name.size() > 4 && name.substr(name.size() - 4) == "Stmt")
    name.resize(name.size() - 4);
  fail(at, "statement " + name + " is not supported",
       {"hint: weir's SQL has CREATE SOURCE / CREATE TABLE, CREATE VIEW, CREATE SINK ... AS "
        "SELECT, INSERT INTO ... SELECT and SET"});
}

std::vector<option> compiler::options(std::optional<element> list) {
  std::vector<option> out;
  for (auto x : items(list)) {
    auto [type, d] = node_of(x);
    if (type != "DefElem")
      continue;
    option o;
    o.at = location(x, 0);
    auto ns = str(d, "defnamespace");
    o.key = (ns.empty() ? "" : ns + ".") + str(d, "defname");
    auto arg = get(d, "arg");
    if (!arg) {
      fail(o.at, "option '" + o.key + "' needs a value", {"hint: write " + o.key + " = '...'"});
    }
    auto [at, v] = node_of(*arg);
    if (at == "String") {
      o.raw = str(v, "sval");
      o.value = o.raw == "true" || o.raw == "false" ? o.raw : toml_str(o.raw);
    } else if (at == "Integer") {
      o.raw = std::to_string(num(v, "ival"));
      o.value = o.raw;
    } else if (at == "Float") {
      o.raw = str(v, "fval");
      o.value = o.raw;
    } else if (at == "Boolean") {
      o.raw = flag(v, "boolval") ? "true" : "false";
      o.value = o.raw;
    } else {
      fail(o.at, "option '" + o.key + "': write its value as a string, a number or a boolean");
    }
    for (const auto& prev : out)
      if (prev.key == o.key)
        fail(o.at, "option '" + o.key + "' is given twice");
    out.push_back(std::move(o));
  }
  return out;
}

// Column types: PostgreSQL's names (the parser turns BIGINT into int8) and
// Flink's (STRING).
std::optional<type_id> column_type(const std::vector<std::string>& names) {
  if (names.empty())
    return std::nullopt;
  auto n = lower(names.back());
  if (n == "int8" || n == "int4" || n == "int2" || n == "bigint" || n == "int"
      || n == "integer" || n == "smallint" || n == "tinyint")
    return type_id::int64;
  if (n == "float8" || n == "float4" || n == "numeric" || n == "double" || n == "float"
      || n == "real" || n == "decimal")
    return type_id::float64;
  if (n == "bool" || n == "boolean")
    return type_id::boolean;
  if (n == "varchar" || n == "text" || n == "string" || n == "bpchar" || n == "char")
    return type_id::string;
  if (n == "timestamp" || n == "timestamptz" || n == "timestamp_ltz")
    return type_id::timestamp;
  return std::nullopt;
}

void compiler::create_table(element body, std::size_t at) {
  auto rel = get(body, "relation");
  table_def t;
  t.name = rel ? str(*rel, "relname") : "";
  t.at = rel ? location(*rel, at) - 0 : at;
  if (rel) {
    auto [type, b] = node_of(*rel);
    (void)type;
    auto l = num(*rel, "location", -1);
    if (l >= 0)
      t.at = static_cast<std::size_t>(l);
  }
  if (tables_.count(t.name) || views_.count(t.name))
    fail(t.at, "'" + t.name + "' is already defined");
  for (auto e : items(get(body, "tableElts"))) {
    auto [type, col] = node_of(e);
    std::size_t cat = location(e, at);
    if (type != "ColumnDef")
      unsupported(cat, "a table constraint", "declare the columns only: name TYPE, ...");
    auto tn = get(col, "typeName");
    auto tnames = tn ? names(get(*tn, "names")) : std::vector<std::string>{};
    auto ty = column_type(tnames);
    if (!ty)
      fail(tn ? location(*tn, cat) : cat,
           "unsupported column type '" + (tnames.empty() ? "" : tnames.back()) + "'",
           {"hint: column types: BIGINT (INT, SMALLINT), DOUBLE PRECISION (FLOAT, REAL, "
            "NUMERIC), VARCHAR (TEXT, STRING), BOOLEAN, TIMESTAMP"});
    if (tn && !items(get(*tn, "arrayBounds")).empty())
      unsupported(location(*tn, cat), "an array column", "declare it as VARCHAR (JSON text)");
    std::string cname = str(col, "colname");
    for (const auto& f : t.columns)
      if (f.name == cname)
        fail(cat, "column '" + cname + "' is declared twice");
    t.columns.push_back({cname, *ty});
    t.column_at.push_back(cat);
  }
  t.options = options(get(body, "options"));
  t.sink = insert_targets.count(t.name) > 0;
  bool has_connector = false;
  for (const auto& o : t.options)
    has_connector = has_connector || o.key == "connector";
  if (!has_connector)
    fail(t.at, "CREATE TABLE " + t.name + " needs WITH (connector = ...)",
         {t.sink ? "hint: a sink: WITH (connector = 'file', path = 'out.jsonl') or "
                   "'stdout', 'kafka', ..."
                 : "hint: a source: WITH (connector = 'file', path = 'in.jsonl', format = "
                   "'json') or 'kafka'"});
  if (!t.sink && t.columns.empty()) {
    bool fixed = false; // apache_combined has its own schema
    for (const auto& o : t.options)
      fixed = fixed || (o.key == "format" && o.raw == "apache_combined");
    if (!fixed)
      fail(t.at, "source table " + t.name + " declares no columns",
           {"hint: CREATE TABLE " + t.name + " (name TYPE, ...) WITH (...)"});
  }
  table_order_.push_back(t.name);
  tables_.emplace(t.name, std::move(t));
}

void compiler::emit_source(table_def& t, std::size_t) {
  if (t.emitted)
    return;
  t.emitted = true;
  names_.insert(t.name);
  auto line = [&](std::string text, std::size_t origin) {
    toml_line l;
    l.text = std::move(text);
    l.origin = origin;
    sources_.push_back(std::move(l));
  };
  line("", t.at);
  line("[[source]]", t.at);
  line("name = " + toml_str(t.name), t.at);
  std::map<std::string, std::vector<const option*>> tables;
  std::vector<std::string> table_order;
  // event_time = 'ts' is event_time.field, watermark = '5s' is
  // watermark.max_out_of_orderness (merged with other watermark.* options).
  std::vector<option> opts = t.options;
  for (auto& o : opts) {
    if (o.key == "event_time")
      o.key = "event_time.field";
    else if (o.key == "watermark")
      o.key = "watermark.max_out_of_orderness";
  }
  for (std::size_t i = 0; i < opts.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (opts[i].key == opts[j].key)
        fail(opts[i].at, "option '" + opts[i].key + "' is given twice");
  for (const auto& o : opts) {
    if (o.key == "connector") {
      line("type = " + toml_str(o.raw), o.at);
    } else if (o.key == "format") {
      line("format = " + toml_str(o.raw == "json" ? "jsonl" : o.raw), o.at);
    } else if (auto dot = o.key.find('.'); dot != std::string::npos) {
      auto table = o.key.substr(0, dot);
      if (!tables.count(table))
        table_order.push_back(table);
      tables[table].push_back(&o);
    } else {
      line(toml_key(o.key) + " = " + o.value, o.at);
    }
  }
  for (const auto& table : table_order) {
    for (const auto& o : opts)
      if (o.key == table)
        fail(o.at, "option '" + table + "' is given both as a value and as " + table
                     + ".<key> options");
    std::string text = toml_key(table) + " = {";
    bool first = true;
    for (const auto* o : tables[table]) {
      text += first ? " " : ", ";
      first = false;
      text += toml_key(o->key.substr(table.size() + 1)) + " = " + o->value;
    }
    line(text + " }", tables[table].front()->at);
  }
  if (!t.columns.empty()) {
    line("[source.schema]", t.at);
    for (std::size_t i = 0; i < t.columns.size(); ++i)
      line(toml_key(t.columns[i].name) + " = " + toml_str(to_string(t.columns[i].type)),
           t.column_at[i]);
  }
}

relation compiler::resolve_table(const std::string& name, std::size_t at) {
  if (auto v = views_.find(name); v != views_.end())
    return v->second;
  auto t = tables_.find(name);
  if (t == tables_.end()) {
    std::vector<std::string> known;
    for (const auto& [n, _] : tables_)
      if (!_.sink)
        known.push_back(n);
    for (const auto& [n, _] : views_)
      known.push_back(n);
    std::vector<std::string> notes;
    if (auto c = closest(name, known))
      return fail(at, "unknown table '" + name + "', did you mean '" + *c + "'?"),
             relation{};
    notes.push_back(known.empty() ? "hint: define it first with CREATE SOURCE " + name
                                      + " (...) WITH (connector = ...)"
                                  : "hint: tables and views: " + joined(known));
    fail(at, "unknown table '" + name + "'", notes);
  }
  if (t->second.sink)
    fail(at, "'" + name + "' is a sink (the target of INSERT INTO); a query cannot read it",
         {"hint: read the query that feeds it through a CREATE VIEW instead"});
  emit_source(t->second, at);
  relation r;
  r.stream = name;
  r.columns = t->second.columns;
  if (r.columns.empty()) // apache_combined: the decoder's fixed schema
    r.columns = {{"ip", type_id::string},       {"ident", type_id::string},
                 {"user", type_id::string},     {"ts", type_id::timestamp},
                 {"method", type_id::string},   {"path", type_id::string},
                 {"protocol", type_id::string}, {"status", type_id::int64},
                 {"bytes", type_id::int64},     {"referrer", type_id::string},
                 {"user_agent", type_id::string}};
  for (const auto& o : t->second.options)
    if (o.key == "event_time" || o.key == "event_time.field")
      r.event_time = o.raw;
  return r;
}

void compiler::create_view(element body, std::size_t at, bool sink) {
  auto view = get(body, "view");
  std::string name = view ? str(*view, "relname") : "";
  std::size_t name_at = view && num(*view, "location", -1) >= 0
                          ? static_cast<std::size_t>(num(*view, "location")) : at;
  if (tables_.count(name) || views_.count(name) || sinks_done_.count(name))
    fail(name_at, "'" + name + "' is already defined");
  auto query = get(body, "query");
  if (!query)
    fail(at, "CREATE " + std::string{sink ? "SINK" : "VIEW"} + " needs AS SELECT ...");
  auto rename = names(get(body, "aliases"));
  if (rename.empty())
    for (auto a : items(get(body, "aliases")))
      (void)a;
  auto opts = options(get(body, "options"));
  if (!sink) {
    if (!opts.empty())
      fail(opts.front().at, "a view takes no WITH options",
           {"hint: a view is a named query; to write its rows, CREATE SINK <name> WITH "
            "(connector = ...) AS SELECT ... FROM " + name});
    auto [qt, qb] = node_of(*query);
    (void)qt;
    auto r = lower_query(qb, at, name, name, rename, name_at);
    views_[name] = r;
    return;
  }
  bool has_connector = false;
  for (const auto& o : opts)
    has_connector = has_connector || o.key == "connector";
  if (!has_connector)
    fail(name_at, "CREATE SINK " + name + " needs WITH (connector = ...)",
         {"hint: CREATE SINK " + name + " WITH (connector = 'file', path = 'out.jsonl') AS "
          "SELECT ..."});
  auto [qt, qb] = node_of(*query);
  (void)qt;
  auto r = lower_query(qb, at, name, "", rename, name_at);
  emit_sink(name, name_at, opts, r);
}

void compiler::insert(element body, std::size_t at) {
  auto rel = get(body, "relation");
  std::string name = rel ? str(*rel, "relname") : "";
  std::size_t name_at = rel && num(*rel, "location", -1) >= 0
                          ? static_cast<std::size_t>(num(*rel, "location")) : at;
  auto t = tables_.find(name);
  if (t == tables_.end()) {
    std::vector<std::string> known;
    for (const auto& [n, d] : tables_)
      known.push_back(n);
    if (auto c = closest(name, known))
      fail(name_at, "unknown table '" + name + "', did you mean '" + *c + "'?");
    fail(name_at, "unknown table '" + name + "'",
         {"hint: declare the sink first: CREATE TABLE " + name
          + " (...) WITH (connector = 'file', path = '...')"});
  }
  if (sinks_done_.count(name))
    unsupported(at, "a second INSERT INTO " + name,
                "write one INSERT per sink table (UNION ALL is not supported yet either); "
                "declare another sink table");
  if (!items(get(body, "cols")).empty())
    unsupported(location(items(get(body, "cols")).front(), at), "an INSERT column list",
                "the query's columns go to the table's columns by position");
  if (get(body, "onConflictClause") || get(body, "returningList"))
    unsupported(at, "ON CONFLICT / RETURNING", "INSERT INTO " + name + " SELECT ...");
  auto query = get(body, "selectStmt");
  if (!query)
    fail(at, "INSERT INTO " + name + " needs a SELECT");
  auto [qt, qb] = node_of(*query);
  (void)qt;
  auto rename = column_names(t->second.columns);
  auto r = lower_query(qb, at, name, "", rename, name_at);
  emit_sink(name, name_at, t->second.options, r);
}

void compiler::emit_sink(const std::string& name, std::size_t at,
                         const std::vector<option>& opts, const relation& in) {
  sinks_done_.insert(name);
  names_.insert(name);
  auto line = [&](std::string text, std::size_t origin) {
    toml_line l;
    l.text = std::move(text);
    l.origin = origin;
    sinks_.push_back(std::move(l));
  };
  line("", at);
  line("[[sink]]", at);
  line("name = " + toml_str(name), at);
  line("input = " + toml_str(in.stream), at);
  std::map<std::string, std::vector<const option*>> tables;
  std::vector<std::string> table_order;
  for (const auto& o : opts) {
    if (o.key == "connector") {
      line("type = " + toml_str(o.raw == "print" ? "stdout" : o.raw), o.at);
    } else if (o.key == "format") {
      line("format = " + toml_str(o.raw == "json" ? "jsonl" : o.raw), o.at);
    } else if (auto dot = o.key.find('.'); dot != std::string::npos) {
      auto table = o.key.substr(0, dot);
      if (!tables.count(table))
        table_order.push_back(table);
      tables[table].push_back(&o);
    } else {
      line(toml_key(o.key) + " = " + o.value, o.at);
    }
  }
  for (const auto& table : table_order) {
    std::string text = toml_key(table) + " = {";
    bool first = true;
    for (const auto* o : tables[table]) {
      text += first ? " " : ", ";
      first = false;
      text += toml_key(o->key.substr(table.size() + 1)) + " = " + o->value;
    }
    line(text + " }", tables[table].front()->at);
  }
}

void compiler::set(element body, std::size_t at) {
  if (str(body, "kind") != "VAR_SET_VALUE")
    unsupported(at, "this form of SET", "SET job.parallelism = 2; SET checkpoint.interval = '1s'");
  std::string name = str(body, "name");
  auto args = items(get(body, "args"));
  if (args.size() != 1)
    fail(at, "SET " + name + " takes one value");
  auto [type, c] = node_of(args.front());
  std::string value;
  if (type != "A_Const")
    fail(location(args.front(), at), "SET " + name + ": write a constant");
  if (auto v = get(c, "ival"))
    value = std::to_string(num(*v, "ival"));
  else if (auto f = get(c, "fval"))
    value = str(*f, "fval");
  else if (auto s = get(c, "sval")) {
    auto raw = str(*s, "sval");
    value = raw == "true" || raw == "false" ? raw : toml_str(raw);
  } else if (auto b = get(c, "boolval"))
    value = flag(*b, "boolval") ? "true" : "false";
  else
    fail(location(args.front(), at), "SET " + name + ": write a constant");
  auto* keys = &job_keys_;
  std::string key = name;
  if (name.rfind("checkpoint.", 0) == 0) {
    keys = &checkpoint_keys_;
    key = name.substr(11);
  } else if (name.rfind("job.", 0) == 0) {
    key = name.substr(4);
  }
  for (const auto& [k, _] : *keys)
    if (k == key)
      fail(at, "SET " + name + " is given twice");
  toml_line l;
  std::string k2 = key;
  if (auto dot = key.find('.'); dot != std::string::npos)
    l.text = toml_key(key.substr(0, dot)) + " = { " + toml_key(key.substr(dot + 1)) + " = "
             + value + " }";
  else
    l.text = toml_key(key) + " = " + value;
  l.origin = location(args.front(), at);
  keys->emplace_back(key, std::move(l));
}

std::string compiler::fresh_name(const std::string& base) {
  std::string name = base;
  for (int i = 2; names_.count(name) || tables_.count(name) || views_.count(name); ++i)
    name = base + "_" + std::to_string(i);
  names_.insert(name);
  return name;
}

void compiler::add_operator(const std::string& name, const std::string& type,
                            const std::string& input, std::size_t at,
                            std::vector<toml_line> keys,
                            std::vector<std::pair<std::string, std::vector<toml_line>>> tables) {
  auto line = [&](std::string text) {
    toml_line l;
    l.text = std::move(text);
    l.origin = at;
    operators_.push_back(std::move(l));
  };
  line("");
  line("[[operator]]");
  line("name = " + toml_str(name));
  line("type = " + toml_str(type));
  line("input = " + toml_str(input));
  for (auto& k : keys)
    operators_.push_back(std::move(k));
  for (auto& [table, ks] : tables) {
    toml_line h;
    h.text = "[operator." + table + "]";
    h.origin = ks.empty() ? at : ks.front().origin;
    operators_.push_back(std::move(h));
    for (auto& k : ks)
      operators_.push_back(std::move(k));
  }
}

// --- expressions ------------------------------------------------------------

type_id compiler::check(const expr_text& e, const std::vector<field>& cols, bool condition) {
  schema s = make(cols);
  auto c = condition ? expr::compile_condition(e.text, s) : expr::compile(e.text, s);
  if (c)
    return c->result_type();
  std::size_t at = e.origin;
  const auto& err = c.error();
  if (err.offset != error::npos) {
    for (auto [piece, sql] : e.pieces)
      if (piece <= err.offset)
        at = sql;
  }
  // SQL says column where weir's expressions say field.
  std::string message = err.message;
  if (message.rfind("unknown field '", 0) == 0)
    message = "unknown column '" + message.substr(15);
  fail(at, message);
}

std::string compiler::column_ref(element body, scope& s, std::size_t at) {
  auto fields = names(get(body, "fields"));
  std::string name;
  if (fields.size() == 2) {
    if (!s.qualifiers.count(fields[0])) {
      std::vector<std::string> q{s.qualifiers.begin(), s.qualifiers.end()};
      auto c = closest(fields[0], q);
      fail(at, "unknown table '" + fields[0] + "' in " + fields[0] + "." + fields[1]
                 + (c ? ", did you mean '" + *c + "'?" : ""),
           {"hint: the query reads " + joined(q)});
    }
    name = fields[1];
  } else if (fields.size() == 1) {
    name = fields[0];
  } else {
    fail(at, "a column name has at most one qualifier (table.column)");
  }
  if (name == "*")
    fail(at, "'*' is only allowed alone in the select list (SELECT * or SELECT t.*)");
  if (s.aggregated && !s.in_aggregate && !s.group_columns->count(name)) {
    bool exists = false;
    for (const auto& f : s.rel->columns)
      exists = exists || f.name == name;
    if (exists)
      fail(at, "column '" + name + "' must appear in GROUP BY or be used in an aggregate "
                                    "function",
           {"hint: GROUP BY window_start, window_end, " + name + ", or max(" + name + ")"});
  }
  return name;
}

std::string compiler::interval(element e, std::size_t at, std::string_view what) {
  auto [type, body] = node_of(e);
  std::size_t where = location(e, at);
  std::string value;
  std::int64_t mask = 0;
  if (type == "TypeCast") {
    auto tn = get(body, "typeName");
    auto tnames = tn ? names(get(*tn, "names")) : std::vector<std::string>{};
    auto arg = get(body, "arg");
    if (!tnames.empty() && tnames.back() == "interval" && arg) {
      auto [at2, c] = node_of(*arg);
      if (at2 == "A_Const")
        if (auto s = get(c, "sval"))
          value = str(*s, "sval");
      for (auto m : items(get(*tn, "typmods"))) {
        auto [mt, mc] = node_of(m);
        if (mt == "A_Const")
          if (auto iv = get(mc, "ival"))
            mask = num(*iv, "ival");
      }
    }
  }
  if (value.empty())
    fail(where, std::string{what} + " must be an interval such as INTERVAL '10' SECOND");
  std::string unit;
  std::string digits = value;
  // Trim.
  while (!digits.empty() && std::isspace(static_cast<unsigned char>(digits.back())))
    digits.pop_back();
  std::size_t i = 0;
  while (i < digits.size() && std::isspace(static_cast<unsigned char>(digits[i])))
    ++i;
  std::size_t j = i;
  while (j < digits.size() && std::isdigit(static_cast<unsigned char>(digits[j])))
    ++j;
  std::string number = digits.substr(i, j - i);
  std::string rest = digits.substr(j);
  while (!rest.empty() && std::isspace(static_cast<unsigned char>(rest.front())))
    rest.erase(0, 1);
  if (mask != 0) {
    if (!rest.empty())
      number.clear();
    switch (mask) {
      case 1 << 12: unit = "s"; break;
      case 1 << 11: unit = "m"; break;
      case 1 << 10: unit = "h"; break;
      case 1 << 3: unit = "d"; break;
      default: number.clear();
    }
  } else {
    for (const auto& u : units)
      if (lower(rest) == u.name)
        unit = u.weir;
  }
  if (number.empty() || unit.empty())
    fail(where, "cannot read the interval '" + value + "' in " + std::string{what},
         {"hint: write INTERVAL '10' SECOND (or MINUTE, HOUR, DAY) or INTERVAL '500 "
          "milliseconds'"});
  if (number.size() > 15)
    fail(where, "the interval '" + value + "' is too long");
  return number + unit;
}

void compiler::child(expr_text& out, element e, scope& s, std::size_t at) {
  auto [type, body] = node_of(e);
  auto sub = expression(e, s, at);
  bool wrap = type == "A_Expr" || type == "BoolExpr" || type == "NullTest";
  if (wrap)
    out.text += "(";
  out.append(sub);
  if (wrap)
    out.text += ")";
}

std::string compiler::aggregate(element body, scope& s, std::size_t at,
                                const std::string& fname) {
  if (s.in_aggregate)
    fail(at, "aggregate function calls cannot be nested");
  if (get(body, "agg_filter"))
    unsupported(at, "FILTER (WHERE ...) on an aggregate",
                "sum(CASE WHEN condition THEN x ELSE 0 END), or count(CASE WHEN condition "
                "THEN 1 END)");
  if (!items(get(body, "agg_order")).empty())
    unsupported(at, "ORDER BY inside an aggregate", "leave it out");
  bool distinct = flag(body, "agg_distinct");
  std::string call;
  if (flag(body, "agg_star")) {
    if (fname != "count")
      fail(at, "'*' is only allowed in count(*)");
    call = "count(*)";
  } else {
    auto args = items(get(body, "args"));
    if (args.size() != 1)
      fail(at, fname + " takes one argument");
    s.in_aggregate = true;
    auto arg = expression(args.front(), s, at);
    s.in_aggregate = false;
    // The argument is over the window's input.
    check(arg, s.rel->columns, false);
    if (distinct) {
      if (fname != "count")
        unsupported(at, fname + "(DISTINCT ...)", "count(DISTINCT x) is the one distinct "
                                                   "aggregate");
      call = "count_distinct(" + arg.text + ")";
    } else {
      call = fname + "(" + arg.text + ")";
    }
  }
  for (const auto& [n, c] : *s.aggregates)
    if (c == call)
      return n;
  std::string name = *s.hidden_prefix + std::to_string(s.aggregates->size());
  s.aggregates->emplace_back(name, call);
  s.aggregate_at->push_back(at);
  return name;
}

const std::set<std::string> aggregate_names{"count", "sum", "min", "max", "avg"};
const std::vector<std::string> scalar_functions{
  "lower", "upper", "length", "char_length", "substr", "substring", "concat", "abs",
  "floor", "coalesce", "to_timestamp", "count", "sum", "min", "max", "avg"};

expr_text compiler::expression(element e, scope& s, std::size_t at) {
  auto [type, body] = node_of(e);
  expr_text out;
  std::size_t where = location(e, at);
  out.origin = where;
  out.mark(where);
  if (type == "ColumnRef") {
    auto n = column_ref(body, s, where);
    out.text = expr_name(n);
    return out;
  }
  if (type == "A_Const") {
    if (flag(body, "isnull")) {
      out.text = "null";
    } else if (auto iv = get(body, "ival")) {
      out.text = std::to_string(num(*iv, "ival"));
    } else if (auto fv = get(body, "fval")) {
      out.text = str(*fv, "fval");
      if (out.text.find_first_of(".eE") == std::string::npos)
        unsupported(where, "the integer " + out.text + " (beyond BIGINT)",
                    "a number within -2^63..2^63-1");
    } else if (auto sv = get(body, "sval")) {
      std::string v = str(*sv, "sval");
      out.text = "'";
      for (char c : v) {
        if (c == '\'')
          out.text += '\'';
        out.text += c;
      }
      out.text += "'";
    } else if (auto bv = get(body, "boolval")) {
      out.text = flag(*bv, "boolval") ? "true" : "false";
    } else {
      unsupported(where, "this constant", "a number, a string, TRUE, FALSE or NULL");
    }
    return out;
  }
  if (type == "A_Expr") {
    auto kind = str(body, "kind");
    auto op = names(get(body, "name"));
    std::string o = op.empty() ? "" : op.back();
    auto l = get(body, "lexpr");
    auto r = get(body, "rexpr");
    out.pieces.clear();
    if (kind == "AEXPR_OP") {
      static const std::set<std::string> ops{"+", "-", "*", "/", "%", "=", "<>", "!=",
                                             "<", "<=", ">", ">="};
      if (o == "||") {
        out.text = "concat(";
        out.mark(where);
        child(out, *l, s, at);
        out.text += ", ";
        child(out, *r, s, at);
        out.text += ")";
        return out;
      }
      if (!ops.count(o))
        unsupported(where, "the operator " + o,
                    "weir's operators: + - * / % = <> < <= > >= AND OR NOT || LIKE IN "
                    "BETWEEN IS NULL");
      if (!l) {
        out.text = "-";
        out.mark(where);
        child(out, *r, s, at);
        return out;
      }
      // INTERVAL operands of timestamp arithmetic are milliseconds.
      auto operand = [&](element x) {
        auto [xt, xb] = node_of(x);
        if (xt == "TypeCast") {
          auto tn = get(xb, "typeName");
          auto tnames = tn ? names(get(*tn, "names")) : std::vector<std::string>{};
          if (!tnames.empty() && tnames.back() == "interval") {
            auto d = interval(x, at, "an interval operand");
            std::size_t k = 0;
            while (k < d.size() && std::isdigit(static_cast<unsigned char>(d[k])))
              ++k;
            out.mark(location(x, at));
            out.text += std::to_string(std::stoll(d.substr(0, k)) * unit_ms(d.substr(k)));
            return;
          }
        }
        child(out, x, s, at);
      };
      operand(*l);
      out.text += " ";
      out.mark(where);
      out.text += o == "!=" ? "<>" : o;
      out.text += " ";
      operand(*r);
      return out;
    }
    if (kind == "AEXPR_IN") {
      child(out, *l, s, at);
      out.mark(where);
      out.text += o == "<>" ? " not in (" : " in (";
      bool first = true;
      for (auto x : items(get(node_of(*r).second, "items"))) {
        if (!first)
          out.text += ", ";
        first = false;
        child(out, x, s, at);
      }
      out.text += ")";
      return out;
    }
    if (kind == "AEXPR_LIKE") {
      child(out, *l, s, at);
      out.mark(where);
      out.text += o == "!~~" ? " not like " : " like ";
      child(out, *r, s, at);
      return out;
    }
    if (kind == "AEXPR_BETWEEN" || kind == "AEXPR_NOT_BETWEEN") {
      auto bounds = items(get(node_of(*r).second, "items"));
      if (bounds.size() != 2)
        unsupported(where, "BETWEEN SYMMETRIC", "x BETWEEN low AND high");
      bool neg = kind == "AEXPR_NOT_BETWEEN";
      out.text += neg ? "not (" : "(";
      child(out, *l, s, at);
      out.mark(where);
      out.text += " >= ";
      child(out, bounds.at(0), s, at);
      out.text += " and ";
      child(out, *l, s, at);
      out.mark(where);
      out.text += " <= ";
      child(out, bounds.at(1), s, at);
      out.text += ")";
      return out;
    }
    if (kind == "AEXPR_NULLIF")
      unsupported(where, "NULLIF", "CASE WHEN a = b THEN NULL ELSE a END");
    if (kind == "AEXPR_DISTINCT" || kind == "AEXPR_NOT_DISTINCT")
      unsupported(where, "IS [NOT] DISTINCT FROM",
                  "(a = b) or (a IS NULL and b IS NULL)");
    if (kind == "AEXPR_ILIKE")
      unsupported(where, "ILIKE", "lower(x) LIKE 'pattern'");
    if (kind == "AEXPR_SIMILAR")
      unsupported(where, "SIMILAR TO", "LIKE");
    unsupported(where, "this operator (" + kind + ")", "+ - * / % comparisons, AND, OR, NOT");
  }
  if (type == "BoolExpr") {
    auto op = str(body, "boolop");
    auto args = items(get(body, "args"));
    if (op == "NOT_EXPR") {
      out.text = "not ";
      child(out, args.at(0), s, at);
      return out;
    }
    std::string sep = op == "AND_EXPR" ? " and " : " or ";
    for (std::size_t i = 0; i < args.size(); ++i) {
      if (i > 0)
        out.text += sep;
      child(out, args[i], s, at);
    }
    return out;
  }
  if (type == "NullTest") {
    auto arg = get(body, "arg");
    child(out, *arg, s, at);
    out.mark(where);
    out.text += str(body, "nulltesttype") == "IS_NULL" ? " is null" : " is not null";
    return out;
  }
  if (type == "BooleanTest")
    unsupported(where, "IS TRUE / IS FALSE", "x = true, or coalesce(x, false)");
  if (type == "CaseExpr") {
    auto subject = get(body, "arg");
    out.text = "case";
    for (auto w : items(get(body, "args"))) {
      auto [wt, wb] = node_of(w);
      (void)wt;
      out.text += " when ";
      if (subject) {
        child(out, *subject, s, at);
        out.text += " = ";
      }
      child(out, *get(wb, "expr"), s, at);
      out.text += " then ";
      child(out, *get(wb, "result"), s, at);
    }
    if (auto d = get(body, "defresult")) {
      out.text += " else ";
      child(out, *d, s, at);
    }
    out.text += " end";
    return out;
  }
  if (type == "TypeCast") {
    auto tn = get(body, "typeName");
    auto tnames = tn ? names(get(*tn, "names")) : std::vector<std::string>{};
    auto target = column_type(tnames);
    auto arg = get(body, "arg");
    if (!tnames.empty() && tnames.back() == "interval")
      fail(where, "an interval is only allowed in a window function or added to or "
                  "subtracted from a timestamp");
    if (!target || !arg)
      fail(tn ? location(*tn, where) : where,
           "CAST to " + (tnames.empty() ? std::string{"?"} : tnames.back())
             + " is not supported",
           {"hint: CAST to BIGINT, DOUBLE, VARCHAR, BOOLEAN or TIMESTAMP"});
    expr_text inner;
    inner.origin = where;
    child(inner, *arg, s, at);
    // The operand's type: compiled against the scope's columns (an
    // aggregated scope's columns are only known later: taken as is).
    std::optional<type_id> from;
    {
      schema sc = make(s.rel->columns);
      if (auto c = expr::compile(inner.text, sc))
        from = c->result_type();
    }
    if (from == target) {
      out = inner;
      return out;
    }
    switch (*target) {
      case type_id::timestamp:
        out.text = "to_timestamp(";
        out.append(inner);
        out.text += ")";
        return out;
      case type_id::string:
        out.text = "concat(";
        out.append(inner);
        out.text += ")";
        return out;
      case type_id::float64:
        if (from == type_id::int64) {
          out.text = "(";
          out.append(inner);
          out.text += " + 0.0)";
          return out;
        }
        break;
      default:
        break;
    }
    fail(where, "CAST from " + std::string{from ? to_string(*from) : "this type"} + " to "
                  + std::string{to_string(*target)} + " is not supported",
         {"hint: weir converts BIGINT to DOUBLE by itself where needed; CAST(x AS "
          "TIMESTAMP) and CAST(x AS VARCHAR) convert any value"});
  }
  if (type == "FuncCall") {
    auto fnames = names(get(body, "funcname"));
    std::string fname = lower(fnames.empty() ? "" : fnames.back());
    if (get(body, "over"))
      unsupported(where, "the window function " + fname + "() OVER (...)",
                  "aggregate over tumble(...), hop(...) or session(...) with GROUP BY "
                  "window_start, window_end; window Top-N (ROW_NUMBER() OVER) comes later");
    if (aggregate_names.count(fname)) {
      if (!s.aggregated)
        fail(where, "aggregate " + fname + "() needs a window",
             {"hint: SELECT ..., " + fname + "(...) FROM tumble(t, ts, INTERVAL '1' MINUTE) "
              "GROUP BY window_start, window_end, ... (GROUP BY without a window is not "
              "supported yet)"});
      out.text = expr_name(aggregate(body, s, where, fname));
      return out;
    }
    static const std::map<std::string, std::string> renamed{
      {"char_length", "length"}, {"substring", "substr"}};
    auto weir_name = renamed.count(fname) ? renamed.at(fname) : fname;
    if (std::find(scalar_functions.begin(), scalar_functions.end(), fname)
        == scalar_functions.end()) {
      auto c = closest(fname, scalar_functions);
      fail(where, "unknown function '" + fname + "'" + (c ? ", did you mean '" + *c + "'?" : ""),
           {"hint: functions: " + joined(scalar_functions)});
    }
    out.text = weir_name + "(";
    bool first = true;
    for (auto a : items(get(body, "args"))) {
      if (!first)
        out.text += ", ";
      first = false;
      child(out, a, s, at);
    }
    out.text += ")";
    return out;
  }
  if (type == "SubLink")
    unsupported(where, "a subquery in an expression", "a view, or a window join later");
  if (type == "RowExpr" || type == "A_ArrayExpr" || type == "A_Indirection")
    unsupported(where, "rows, arrays and subscripts", "scalar columns");
  if (type == "SQLValueFunction")
    unsupported(where, "CURRENT_TIMESTAMP and friends",
                "event time: the window's window_start and window_end");
  if (type == "CoalesceExpr") {
    out.text = "coalesce(";
    bool first = true;
    for (auto a : items(get(body, "args"))) {
      if (!first)
        out.text += ", ";
      first = false;
      child(out, a, s, at);
    }
    out.text += ")";
    return out;
  }
  if (type == "ParamRef")
    unsupported(where, "a parameter ($1)", "a constant");
  unsupported(where, "the expression " + type, "columns, constants, operators, CASE, CAST "
                                                "and weir's functions");
}

// --- queries ----------------------------------------------------------------

relation compiler::from_item(element item, std::string& alias, std::size_t at,
                             const std::string& prefix, std::optional<element>& window_call) {
  auto [type, body] = node_of(item);
  std::size_t where = location(item, at);
  if (auto a = get(body, "alias"))
    alias = str(*a, "aliasname");
  if (type == "RangeVar") {
    std::string name = str(body, "relname");
    if (alias.empty())
      alias = name;
    return resolve_table(name, where);
  }
  if (type == "JoinExpr")
    unsupported(get(body, "rarg") ? location(*get(body, "rarg"), where) : where, "a join", "regular joins need changelog streams; window joins and "
                                 "interval joins come with the next SQL slice (the TOML "
                                 "kinds window_join and interval_join have them now)");
  if (type == "RangeSubselect") {
    if (flag(body, "lateral"))
      unsupported(where, "LATERAL", "a plain subquery");
    auto sub = get(body, "subquery");
    auto [st, sb] = node_of(*sub);
    (void)st;
    return lower_query(sb, where, prefix + "_" + (alias.empty() ? "subquery" : alias), "", {},
                       where);
  }
  if (type == "RangeFunction") {
    auto fns = items(get(body, "functions"));
    if (fns.size() != 1)
      unsupported(where, "ROWS FROM (...)", "one window function: tumble, hop or session");
    auto pair = items(get(fns.front(), "List") ? get(*get(fns.front(), "List"), "items")
                                               : std::nullopt);
    if (pair.empty())
      fail(where, "expected a window function: tumble, hop or session");
    auto [ft, fb] = node_of(pair.front());
    if (ft != "FuncCall")
      fail(where, "expected a window function: tumble, hop or session");
    auto fnames = names(get(fb, "funcname"));
    std::string fname = lower(fnames.empty() ? "" : fnames.back());
    std::size_t fat = location(pair.front(), where);
    static const std::vector<std::string> windows{"tumble", "hop", "session"};
    if (std::find(windows.begin(), windows.end(), fname) == windows.end()) {
      auto c = closest(fname, windows);
      if (fname == "cumulate")
        unsupported(fat, "cumulate()", "hop(...) or tumble(...)");
      fail(fat, "unknown table function '" + fname + "'"
                  + (c ? ", did you mean '" + *c + "'?" : ""),
           {"hint: window functions: tumble(t, ts, size), hop(t, ts, slide, size), "
            "session(t, ts, gap)"});
    }
    auto args = items(get(fb, "args"));
    std::size_t want = fname == "hop" ? 4 : 3;
    if (args.size() != want && !(fname != "session" && args.size() == want + 1))
      fail(fat, fname + "() takes " + std::to_string(want) + " arguments",
           {fname == "tumble" ? "hint: tumble(t, ts, INTERVAL '10' SECOND)"
            : fname == "hop"  ? "hint: hop(t, ts, INTERVAL '2' SECOND, INTERVAL '10' SECOND) "
                                "(slide, then size)"
                              : "hint: session(t, ts, INTERVAL '30' SECOND) (the gap)"});
    auto [tt, tb] = node_of(args[0]);
    std::size_t tat = location(args[0], fat);
    relation r;
    std::string tname;
    if (tt == "ColumnRef") {
      auto n = names(get(tb, "fields"));
      if (n.size() != 1)
        fail(tat, "the first argument of " + fname + "() is a table name");
      tname = n[0];
      r = resolve_table(tname, tat);
    } else {
      fail(tat, "the first argument of " + fname + "() is a table name",
           {"hint: " + fname + "(bids, date_time, ...)"});
    }
    if (alias.empty())
      alias = tname;
    // The time column: `ts` or descriptor(ts).
    auto [ct, cb] = node_of(args[1]);
    std::size_t cat = location(args[1], fat);
    std::string col;
    if (ct == "ColumnRef") {
      auto n = names(get(cb, "fields"));
      col = n.empty() ? "" : n.back();
    } else if (ct == "FuncCall" && lower(names(get(cb, "funcname")).back()) == "descriptor") {
      auto da = items(get(cb, "args"));
      if (da.size() == 1 && node_of(da[0]).first == "ColumnRef")
        col = names(get(node_of(da[0]).second, "fields")).back();
    }
    if (col.empty())
      fail(cat, "the second argument of " + fname + "() is the time column",
           {"hint: " + fname + "(" + tname + ", ts, ...) or DESCRIPTOR(ts)"});
    bool exists = false;
    for (const auto& f : r.columns)
      exists = exists || f.name == col;
    if (!exists) {
      auto c = closest(col, column_names(r.columns));
      fail(cat, "unknown column '" + col + "' in " + tname
                  + (c ? ", did you mean '" + *c + "'?" : ""));
    }
    if (!r.event_time)
      fail(cat, fname + "() windows on event time, and " + tname + " has none",
           {"hint: add event_time = '" + col + "' (and watermark = '5s') to the WITH options "
            "of the source table"});
    if (*r.event_time != col)
      fail(cat, fname + "() windows on " + tname + "'s event time '" + *r.event_time
                  + "', not '" + col + "'",
           {"hint: write " + fname + "(" + tname + ", " + *r.event_time + ", ...), or make '"
            + col + "' the source's event_time"});
    window_call = pair.front();
    return r;
  }
  unsupported(where, "this FROM item (" + type + ")", "a table, a view, a subquery or a window "
                                                      "function");
}

relation compiler::lower_query(element q, std::size_t at, const std::string& prefix,
                               const std::string& final_name,
                               const std::vector<std::string>& rename,
                               std::size_t rename_at) {
  if (str(q, "op") != "" && str(q, "op") != "SETOP_NONE")
    unsupported(at, "UNION / INTERSECT / EXCEPT", "one SELECT per sink (the TOML union "
                                                  "operator merges streams)");
  if (get(q, "valuesLists"))
    unsupported(at, "VALUES", "a source table");
  if (get(q, "withClause"))
    unsupported(location(*get(q, "withClause"), at), "WITH (common table expressions)",
                "CREATE VIEW name AS SELECT ..., then read the view");
  if (!items(get(q, "distinctClause")).empty() || get(q, "distinctClause"))
    unsupported(at, "SELECT DISTINCT", "GROUP BY window_start, window_end, the columns, over "
                                       "a window function");
  if (auto sort = items(get(q, "sortClause")); !sort.empty())
    unsupported(get(node_of(sort.front()).second, "node")
                  ? location(*get(node_of(sort.front()).second, "node"), at)
                  : at,
                "ORDER BY",
                "a stream has no end to sort at; window Top-N (ROW_NUMBER() OVER (PARTITION "
                "BY window_start ... ORDER BY ...) <= N) comes with the next SQL slice");
  if (get(q, "limitCount") || get(q, "limitOffset"))
    unsupported(location(get(q, "limitCount") ? *get(q, "limitCount") : *get(q, "limitOffset"),
                         at),
                "LIMIT / OFFSET", "leave it out (window Top-N comes later)");
  if (get(q, "intoClause"))
    unsupported(at, "SELECT INTO", "INSERT INTO sink SELECT ...");
  if (!items(get(q, "windowClause")).empty())
    unsupported(at, "WINDOW clauses", "tumble(...), hop(...) or session(...) in FROM");
  if (!items(get(q, "lockingClause")).empty())
    unsupported(at, "FOR UPDATE", "leave it out");

  auto from = items(get(q, "fromClause"));
  if (from.empty())
    fail(at, "a SELECT needs FROM", {"hint: SELECT ... FROM <source table or view>"});
  if (from.size() > 1)
    unsupported(location(from[1], at), "a join (FROM a, b)",
                "regular joins need changelog streams; window joins and interval joins come "
                "with the next SQL slice");
  std::string alias;
  std::optional<element> window_call;
  relation current = from_item(from[0], alias, at, prefix, window_call);

  scope base;
  base.rel = &current;
  base.qualifiers = {alias};

  struct stage {
    std::string type;
    std::vector<toml_line> keys;
    std::vector<std::pair<std::string, std::vector<toml_line>>> tables;
    std::size_t at;
  };
  std::vector<stage> stages;
  auto stream_after = [&](relation r) { return r; };
  (void)stream_after;

  // WHERE: a filter before any window.
  if (auto w = get(q, "whereClause")) {
    auto e = expression(*w, base, at);
    check(e, current.columns, true);
    stages.push_back({"filter", {expression_line("where", e)}, {}, location(*w, at)});
  }

  auto group = items(get(q, "groupClause"));
  auto targets = items(get(q, "targetList"));
  auto having = get(q, "havingClause");
  // Whether the query aggregates: GROUP BY, HAVING or an aggregate call.
  bool has_aggregate = false;
  std::function<void(element)> find_agg = [&](element e) {
    if (e.is_object()) {
      for (simdjson::dom::object o = e.get_object().value(); auto [k, v] : o) {
        if (k == "FuncCall") {
          auto fn = names(get(v, "funcname"));
          if (!fn.empty() && aggregate_names.count(lower(fn.back())) && !get(v, "over"))
            has_aggregate = true;
        }
        if (k == "SelectStmt" || k == "subquery")
          continue;
        find_agg(v);
      }
    } else if (e.is_array()) {
      for (simdjson::dom::array a = e.get_array().value(); auto x : a)
        find_agg(x);
    }
  };
  for (auto t : targets)
    find_agg(t);
  if (having)
    find_agg(*having);

  std::vector<std::pair<std::string, expr_text>> outputs; // name, expression
  std::vector<std::size_t> output_at;
  std::optional<std::string> event_time_out;
  std::vector<field> stage_columns = current.columns; // columns after the window

  auto target_name = [&](element rt, element val, std::size_t i) -> std::string {
    auto n = str(rt, "name");
    if (!n.empty())
      return n;
    auto [vt, vb] = node_of(val);
    if (vt == "ColumnRef") {
      auto f = names(get(vb, "fields"));
      return f.empty() ? "" : f.back();
    }
    if (vt == "FuncCall") {
      auto f = names(get(vb, "funcname"));
      return f.empty() ? "" : lower(f.back());
    }
    if (vt == "TypeCast")
      if (auto a = get(vb, "arg"); a && node_of(*a).first == "ColumnRef")
        return names(get(node_of(*a).second, "fields")).back();
    return "EXPR$" + std::to_string(i);
  };

  if (window_call || !group.empty() || has_aggregate) {
    if (!window_call) {
      std::size_t gat = !group.empty() ? location(group.front(), at) : at;
      unsupported(gat, "GROUP BY without a window (a changelog aggregation)",
                  "aggregate over a window function: FROM tumble(t, ts, INTERVAL '1' MINUTE) "
                  "... GROUP BY window_start, window_end, keys");
    }
    auto [ft, fb] = node_of(*window_call);
    (void)ft;
    std::string fname = lower(names(get(fb, "funcname")).back());
    std::size_t fat = location(*window_call, at);
    if (group.empty())
      unsupported(fat, "a window function without GROUP BY (window assignment)",
                  "GROUP BY window_start, window_end, keys... with aggregates");
    auto args = items(get(fb, "args"));
    std::vector<toml_line> window_keys;
    auto wline = [&](std::string text, std::size_t origin) {
      toml_line l;
      l.text = std::move(text);
      l.origin = origin;
      window_keys.push_back(std::move(l));
    };
    wline("type = " + toml_str(fname == "tumble" ? "tumbling" : fname == "hop" ? "sliding"
                                                                              : "session"),
          fat);
    if (fname == "tumble") {
      wline("size = " + toml_str(interval(args[2], fat, "tumble's size")), location(args[2], fat));
      if (args.size() == 4)
        wline("offset = " + toml_str(interval(args[3], fat, "tumble's offset")),
              location(args[3], fat));
    } else if (fname == "hop") {
      wline("size = " + toml_str(interval(args[3], fat, "hop's size")), location(args[3], fat));
      wline("slide = " + toml_str(interval(args[2], fat, "hop's slide")), location(args[2], fat));
      if (args.size() == 5)
        wline("offset = " + toml_str(interval(args[4], fat, "hop's offset")),
              location(args[4], fat));
    } else {
      wline("gap = " + toml_str(interval(args[2], fat, "session's gap")), location(args[2], fat));
    }
    // GROUP BY: window_start, window_end and key columns.
    bool has_start = false, has_end = false;
    std::vector<std::string> keys;
    std::vector<std::size_t> key_at;
    for (auto g : group) {
      auto [gt, gb] = node_of(g);
      std::size_t gat = location(g, at);
      if (gt != "ColumnRef")
        unsupported(gat, "GROUP BY an expression",
                    "compute it as a column in a view (CREATE VIEW v AS SELECT ..., expr AS k "
                    "FROM t) and group by that column; or GROUPING SETS are not supported");
      auto f = names(get(gb, "fields"));
      std::string n = f.back();
      if (f.size() == 2 && !base.qualifiers.count(f[0]))
        fail(gat, "unknown table '" + f[0] + "' in GROUP BY");
      if (n == "window_start") {
        has_start = true;
        continue;
      }
      if (n == "window_end") {
        has_end = true;
        continue;
      }
      if (n == "window_time")
        unsupported(gat, "window_time", "window_end (exclusive end of the window)");
      bool exists = false;
      type_id t = type_id::string;
      for (const auto& c : current.columns)
        if (c.name == n) {
          exists = true;
          t = c.type;
        }
      if (!exists) {
        auto c = closest(n, column_names(current.columns));
        fail(gat, "unknown column '" + n + "'" + (c ? ", did you mean '" + *c + "'?" : ""),
             {"hint: columns: " + joined(column_names(current.columns))});
      }
      if (std::find(keys.begin(), keys.end(), n) != keys.end())
        continue;
      keys.push_back(n);
      key_at.push_back(gat);
      (void)t;
    }
    if (!has_start || !has_end)
      fail(location(group.front(), at),
           "GROUP BY over a window function must name both window_start and window_end",
           {"hint: GROUP BY window_start, window_end" + (keys.empty() ? std::string{}
                                                                      : ", " + joined(keys))});
    std::set<std::string> group_columns{keys.begin(), keys.end()};
    group_columns.insert("window_start");
    group_columns.insert("window_end");
    std::vector<std::pair<std::string, std::string>> aggs;
    std::vector<std::size_t> agg_at;
    std::string hidden = "_agg";
    scope ag = base;
    ag.aggregated = true;
    ag.group_columns = &group_columns;
    ag.aggregates = &aggs;
    ag.aggregate_at = &agg_at;
    ag.hidden_prefix = &hidden;
    // The window's input plus the window columns, for the check of column
    // references (group columns only; aggregates are named later).
    relation with_window = current;
    with_window.columns.push_back({"window_start", type_id::timestamp});
    with_window.columns.push_back({"window_end", type_id::timestamp});
    ag.rel = &with_window;
    // Select list.
    std::vector<std::pair<std::string, expr_text>> exprs;
    std::vector<bool> is_plain_agg;
    for (std::size_t i = 0; i < targets.size(); ++i) {
      auto [rt, rb] = node_of(targets[i]);
      (void)rt;
      auto val = get(rb, "val");
      std::size_t tat = location(targets[i], at);
      auto [vt, vb] = node_of(*val);
      if (vt == "ColumnRef" && names(get(vb, "fields")).back() == "*")
        unsupported(tat, "SELECT * with GROUP BY", "name the group columns and aggregates");
      auto name = target_name(rb, *val, i);
      std::size_t before = aggs.size();
      auto e = expression(*val, ag, tat);
      // A top-level aggregate takes the output's name.
      bool plain = vt == "FuncCall" && aggs.size() == before + 1
                   && e.text == expr_name(aggs.back().first);
      if (plain) {
        bool taken = false;
        for (const auto& a : aggs)
          taken = taken || a.first == name;
        for (const auto& k : keys)
          taken = taken || k == name;
        if (!taken && name != "window_start" && name != "window_end") {
          aggs.back().first = name;
          e.text = expr_name(name);
        }
      }
      exprs.emplace_back(name, e);
      output_at.push_back(tat);
    }
    std::optional<expr_text> having_expr;
    if (having)
      having_expr = expression(*having, ag, at);
    if (aggs.empty())
      fail(fat, "GROUP BY over a window function needs at least one aggregate",
           {"hint: count(*), sum(x), min(x), max(x), avg(x), count(DISTINCT x)"});
    // The window's output columns and types.
    std::vector<field> out_cols;
    for (const auto& k : keys)
      for (const auto& c : current.columns)
        if (c.name == k)
          out_cols.push_back(c);
    out_cols.push_back({"window_start", type_id::timestamp});
    out_cols.push_back({"window_end", type_id::timestamp});
    std::vector<toml_line> agg_lines;
    schema in_schema = make(current.columns);
    for (std::size_t i = 0; i < aggs.size(); ++i) {
      const auto& [n, call] = aggs[i];
      type_id t = type_id::int64;
      auto open = call.find('(');
      std::string fn = call.substr(0, open);
      std::string arg = call.substr(open + 1, call.size() - open - 2);
      if (fn != "count" && fn != "count_distinct") {
        auto c = expr::compile(arg, in_schema);
        type_id at_ = c ? c->result_type() : type_id::float64;
        if (fn == "avg")
          t = type_id::float64;
        else if (fn == "sum" && at_ == type_id::float64)
          t = type_id::float64;
        else if (fn == "sum" && (at_ == type_id::string || at_ == type_id::boolean || at_ == type_id::timestamp))
          fail(agg_at[i], "sum() needs numbers, got " + std::string{to_string(at_)});
        else if (fn == "avg" || fn == "sum")
          t = type_id::int64;
        else
          t = at_;
      }
      out_cols.push_back({n, t});
      toml_line l;
      l.text = toml_key(n) + " = " + toml_str(call);
      l.origin = agg_at[i];
      agg_lines.push_back(std::move(l));
    }
    std::string key_list = "key_by = [";
    for (std::size_t i = 0; i < keys.size(); ++i)
      key_list += (i ? ", " : "") + toml_str(keys[i]);
    key_list += "]";
    toml_line kl;
    kl.text = key_list;
    kl.origin = key_at.empty() ? fat : key_at.front();
    stages.push_back({"window",
                      {kl},
                      {{"window", std::move(window_keys)}, {"aggregate", std::move(agg_lines)}},
                      fat});
    stage_columns = out_cols;
    if (having_expr) {
      check(*having_expr, stage_columns, true);
      stages.push_back({"filter", {expression_line("where", *having_expr)}, {},
                        location(*having, at)});
    }
    for (auto& [n, e] : exprs) {
      check(e, stage_columns, false);
      outputs.emplace_back(n, e);
    }
  } else {
    if (having)
      fail(location(*having, at), "HAVING needs GROUP BY over a window function");
    for (std::size_t i = 0; i < targets.size(); ++i) {
      auto [rt, rb] = node_of(targets[i]);
      (void)rt;
      auto val = get(rb, "val");
      std::size_t tat = location(targets[i], at);
      auto [vt, vb] = node_of(*val);
      if (vt == "ColumnRef") {
        auto f = names(get(vb, "fields"));
        if (f.back() == "*") {
          if (f.size() == 2 && !base.qualifiers.count(f[0]))
            fail(tat, "unknown table '" + f[0] + "' in " + f[0] + ".*");
          for (const auto& c : current.columns) {
            expr_text e;
            e.origin = tat;
            e.mark(tat);
            e.text = expr_name(c.name);
            outputs.emplace_back(c.name, e);
            output_at.push_back(tat);
            if (current.event_time == c.name)
              event_time_out = c.name;
          }
          continue;
        }
      }
      auto name = target_name(rb, *val, i);
      auto e = expression(*val, base, tat);
      check(e, current.columns, false);
      if (vt == "ColumnRef" && current.event_time && e.text == expr_name(*current.event_time)
          && !event_time_out)
        event_time_out = name;
      outputs.emplace_back(name, e);
      output_at.push_back(tat);
    }
  }

  // Names given by the sink's columns or the view's column list.
  if (!rename.empty()) {
    if (rename.size() != outputs.size())
      fail(rename_at, "the query gives " + std::to_string(outputs.size()) + " column"
                        + (outputs.size() == 1 ? "" : "s") + " but " + std::to_string(rename.size())
                        + (rename.size() == 1 ? " is" : " are") + " declared",
           {"hint: declared: " + joined(rename)});
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      if (event_time_out && *event_time_out == outputs[i].first)
        event_time_out = rename[i];
      outputs[i].first = rename[i];
    }
  }
  for (std::size_t i = 0; i < outputs.size(); ++i)
    for (std::size_t j = 0; j < i; ++j)
      if (outputs[i].first == outputs[j].first)
        fail(output_at[i], "the output column '" + outputs[i].first + "' is named twice",
             {"hint: give one of them another name with AS"});

  // The final projection, unless it keeps the stage's columns as they are.
  bool identity = outputs.size() == stage_columns.size();
  for (std::size_t i = 0; identity && i < outputs.size(); ++i)
    identity = outputs[i].first == stage_columns[i].name
               && outputs[i].second.text == expr_name(stage_columns[i].name);
  if (!identity) {
    std::vector<toml_line> fields;
    for (const auto& [n, e] : outputs)
      fields.push_back(expression_line(n, e));
    stages.push_back({"select", {}, {{"fields", std::move(fields)}}, at});
  }

  // The stages as operators, named <prefix>_<type> (a view's last one: the
  // view's name).
  relation result;
  std::string input = current.stream;
  for (std::size_t i = 0; i < stages.size(); ++i) {
    auto& st = stages[i];
    bool last = i + 1 == stages.size();
    std::string suffix = st.type == "filter" ? (i > 0 && stages[i - 1].type == "window"
                                                  ? "having" : "where")
                                             : st.type;
    std::string name = last && !final_name.empty() ? final_name
                                                   : fresh_name(prefix + "_" + suffix);
    if (last && !final_name.empty())
      names_.insert(name);
    add_operator(name, st.type, input, st.at, std::move(st.keys), std::move(st.tables));
    input = name;
  }
  result.stream = input;
  if (stages.empty() && !final_name.empty()) {
    // A view that changes nothing reads as its input.
  }
  for (const auto& [n, e] : outputs) {
    type_id t = type_id::string;
    schema sc = make(stage_columns);
    if (auto c = expr::compile(e.text, sc))
      t = c->result_type();
    result.columns.push_back({n, t});
  }
  if (!window_call)
    result.event_time = event_time_out;
  return result;
}

} // namespace

expected<compiled_script, diagnostics> compile(std::string_view text, const std::string& path) {
  compiler c{text, path};
  return c.run();
}

expected<std::unique_ptr<job>, diagnostics>
load_sql(std::string_view text, const std::string& path, const config::load_options& opts,
         std::string* toml_out) {
  auto compiled = compile(text, path);
  if (!compiled)
    return std::move(compiled.error());
  if (toml_out)
    *toml_out = compiled->toml;
  auto loaded = config::load_pipeline(compiled->toml, path, opts);
  if (loaded)
    return loaded;
  // The loader's positions are in the compiled TOML: move them to the SQL.
  positions pos{text};
  auto ds = std::move(loaded.error());
  for (auto& d : ds) {
    if (d.line == 0 || d.line > compiled->line_origin.size())
      continue;
    std::size_t offset = compiled->line_origin[d.line - 1];
    const auto& e = compiled->line_expressions[d.line - 1];
    if (e.column > 0 && d.column >= e.column) {
      std::size_t inner = d.column - e.column;
      for (auto [piece, sql] : e.pieces)
        if (piece <= inner)
          offset = sql;
    }
    auto [line, col] = pos.at(offset);
    d.line = line;
    d.column = col;
    std::vector<std::string> notes;
    for (auto& n : d.notes)
      if (n.rfind("in [", 0) != 0)
        notes.push_back(std::move(n));
    d.notes = std::move(notes);
    // The loader's keys are the script's WITH options and SET names.
    if (d.message.rfind("unknown key '", 0) == 0)
      d.message = "unknown option '" + d.message.substr(13);
    if (d.message.rfind("missing required key '", 0) == 0)
      d.message = "missing required option '" + d.message.substr(22);
  }
  config::sort_diagnostics(ds);
  return std::move(ds);
}

expected<std::unique_ptr<job>, diagnostics>
load_sql_file(const std::string& path, const config::load_options& opts, std::string* toml_out) {
  std::ifstream in{path, std::ios::binary};
  if (!in)
    return diagnostics{{path, 0, 0, "cannot read the file", {}}};
  std::string text{std::istreambuf_iterator<char>{in}, {}};
  return load_sql(text, path, opts, toml_out);
}

} // namespace weir::sql
