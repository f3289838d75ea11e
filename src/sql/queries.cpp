// SPDX-License-Identifier: Apache-2.0
// SELECT lowered onto the kinds: FROM (tables, views, subqueries, the window
// functions tumble, hop and session), WHERE as a filter, GROUP BY over a
// window as a window operator, HAVING as a filter after it, the select list
// as a select when it changes the columns.

#include "internal/compiler.hpp"

#include "weir/expr/expression.hpp"

#include <functional>

namespace weir::sql::internal {

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

} // namespace weir::sql::internal
