// SPDX-License-Identifier: Apache-2.0
// SQL to TOML (docs/sql.md, src/sql/README.md): the statements. libpg_query
// parses the script into PostgreSQL's parse tree as JSON; each statement is
// lowered onto the kinds the TOML loader plans (sources, sinks, views, SET;
// queries in queries.cpp, expressions in expressions.cpp) and the loader's
// diagnostics on the result are moved back to the SQL text.

#include "weir/sql/sql.hpp"

#include "internal/compiler.hpp"

#include "weir/expr/expression.hpp"

#include <pg_query.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

namespace weir::sql {

bool built() noexcept { return true; }

namespace internal {

// CREATE SOURCE and CREATE SINK are not PostgreSQL: they are read as CREATE
// TABLE and CREATE VIEW (same lengths, so offsets stay), and remembered.
std::int64_t compiler::integer(element ival, std::size_t at) const {
  if (auto v = get(ival, "ival"); v && v->is_int64())
    return v->get_int64().value();
  std::string_view t{sql_};
  std::size_t i = std::min(at, t.size());
  auto blank = [&](std::size_t j) {
    return j < t.size() && std::isspace(static_cast<unsigned char>(t[j]));
  };
  if (i < t.size() && t[i] != '-' && !std::isdigit(static_cast<unsigned char>(t[i]))) {
    // An option: its key is at `at`, the value after the '='.
    i = t.find('=', i);
    if (i == std::string_view::npos)
      return 0;
    ++i;
    while (blank(i))
      ++i;
  }
  bool negative = i < t.size() && t[i] == '-';
  if (negative) {
    ++i;
    while (blank(i))
      ++i;
  }
  std::size_t end = i;
  while (end < t.size() && std::isdigit(static_cast<unsigned char>(t[end])))
    ++end;
  // The parser took it for an int32, so it fits.
  std::int64_t value = 0;
  std::from_chars(t.data() + i, t.data() + end, value);
  return negative ? -value : value;
}

std::optional<std::int64_t> compiler::wide_integer(std::string_view fval) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(fval.data(), fval.data() + fval.size(), value);
  if (ec != std::errc{} || end != fval.data() + fval.size())
    return std::nullopt;
  return value;
}

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
          source_statements.insert(j);
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

namespace {

/// The offset of the first byte of `text` that is not part of well-formed
/// UTF-8 (RFC 3629: no overlong forms, no surrogates, at most U+10FFFF), or
/// of its first NUL byte; npos when there is none.
std::size_t first_bad_byte(std::string_view text) {
  std::size_t i = 0;
  while (i < text.size()) {
    auto b = static_cast<unsigned char>(text[i]);
    if (b == 0)
      return i;
    if (b < 0x80) {
      ++i;
      continue;
    }
    std::size_t n = b >= 0xC2 && b <= 0xDF ? 1 : b >= 0xE0 && b <= 0xEF ? 2
                  : b >= 0xF0 && b <= 0xF4 ? 3 : 0;
    if (n == 0 || i + n >= text.size())
      return i;
    auto c1 = static_cast<unsigned char>(text[i + 1]);
    // The second byte's range excludes overlong forms, surrogates and
    // code points past U+10FFFF.
    unsigned lo = b == 0xE0 ? 0xA0 : b == 0xF0 ? 0x90 : 0x80;
    unsigned hi = b == 0xED ? 0x9F : b == 0xF4 ? 0x8F : 0xBF;
    if (c1 < lo || c1 > hi)
      return i;
    for (std::size_t k = 2; k <= n; ++k) {
      auto c = static_cast<unsigned char>(text[i + k]);
      if (c < 0x80 || c > 0xBF)
        return i;
    }
    i += n + 1;
  }
  return std::string_view::npos;
}

} // namespace

expected<compiled_script, diagnostics> compiler::run() {
  // The parser reads a C string (a NUL would end the script early) of
  // UTF-8; a byte-order mark is read as blanks.
  if (auto bad = first_bad_byte(text_); bad != std::string_view::npos) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "0x%02X", static_cast<unsigned char>(text_[bad]));
    report(bad, text_[bad] == '\0' ? std::string{"the script holds a NUL byte"}
                                    : "the script is not UTF-8 here (byte " + std::string{hex}
                                        + ")");
    return std::move(diags_);
  }
  std::string script{text_};
  if (script.rfind("\xEF\xBB\xBF", 0) == 0)
    script.replace(0, 3, "   ");
  sql_ = rewrite_keywords(std::move(script));
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
  if (doc.error() == simdjson::DEPTH_ERROR) {
    // simdjson's bound (1024 levels) also keeps the compiler's recursion
    // off the end of the stack.
    report(0, "the script nests too deeply (its parse tree is more than 1024 levels deep)",
           {"hint: split the expression or the subqueries into views"});
    return std::move(diags_);
  }
  if (doc.error()) {
    report(0, std::string{"internal error: the SQL parse tree is not JSON: "}
                + simdjson::error_message(doc.error()));
    return std::move(diags_);
  }
  auto stmts = items(get(doc.value(), "stmts"));
  // INSERT targets first: a table written by INSERT is a sink. And every
  // name the script declares, so that no operator the compiler names takes
  // one declared further down.
  for (auto s : stmts) {
    if (auto st = get(s, "stmt")) {
      auto [type, body] = node_of(*st);
      if (type == "InsertStmt")
        if (auto rel = get(body, "relation"))
          insert_targets.insert(str(*rel, "relname"));
      if (type == "CreateStmt")
        if (auto rel = get(body, "relation"))
          declared_.insert(str(*rel, "relname"));
      if (type == "ViewStmt")
        if (auto rel = get(body, "view"))
          declared_.insert(str(*rel, "relname"));
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
  // A table or view whose definition fails is remembered: the statements
  // that read it are skipped silently, so one error does not cascade.
  std::string defines;
  if (auto rel = get(body, type == "ViewStmt" ? "view" : "relation"); rel && type != "InsertStmt")
    defines = str(*rel, "relname");
  try {
    define(type, body, at);
  } catch (...) {
    if (!defines.empty())
      failed_.insert(defines);
    throw;
  }
}

void compiler::define(const std::string& type, element body, std::size_t at) {
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
      o.raw = std::to_string(integer(v, o.at));
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
  t.declared_source = source_statements.count(at) > 0;
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
  if (failed_.count(name))
    throw statement_error{}; // reported where it was defined
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
  if (t->second.declared_source)
    fail(name_at, "'" + name + "' is a source (CREATE SOURCE): INSERT INTO writes to a sink table",
         {"hint: declare the sink with CREATE TABLE " + name
          + "_out (...) WITH (connector = ..., ...) and INSERT INTO it"});
  // A sink writing over a file the script reads would destroy its input.
  auto path_of = [](const std::vector<option>& opts) -> std::string {
    for (const auto& o : opts)
      if (o.key == "path")
        return o.raw;
    return {};
  };
  if (auto out = path_of(t->second.options); !out.empty())
    for (const auto& [other, d] : tables_)
      if (other != name && !d.sink && path_of(d.options) == out)
        fail(name_at, "'" + name + "' would write to " + out + ", the path source '" + other
                        + "' reads",
             {"hint: give the sink table another path"});
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
    value = std::to_string(integer(*v, location(args.front(), at)));
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
  for (int i = 2; names_.count(name) || tables_.count(name) || views_.count(name)
                  || declared_.count(name);
       ++i)
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

} // namespace internal

using internal::compiler;
using internal::positions;
using diagnostics = std::vector<config::diagnostic>;


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
