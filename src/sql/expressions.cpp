// SPDX-License-Identifier: Apache-2.0
// SQL expressions lowered onto weir's expression language (src/expr): the
// deparse with each piece's SQL offset, CAST and INTERVAL, aggregate calls
// in a window's select list, and the check against the relation's schema.

#include "internal/compiler.hpp"

#include "weir/expr/expression.hpp"

#include <functional>

namespace weir::sql::internal {

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
      out.text = std::to_string(integer(*iv, where));
    } else if (auto fv = get(body, "fval")) {
      out.text = str(*fv, "fval");
      if (out.text.find_first_of(".eE") == std::string::npos && !wide_integer(out.text))
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

} // namespace weir::sql::internal
