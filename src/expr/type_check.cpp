// SPDX-License-Identifier: Apache-2.0
// Resolves field names, assigns every node its type and inserts the int64 ->
// float64 casts, so that the evaluation kernels only see operands of one type.
#include "node.hpp"

#include <algorithm>
#include <array>
#include <utility>

namespace weir::expr {

namespace {

char lower_ascii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// Optimal string alignment distance (Levenshtein plus adjacent transposition),
// ignoring ASCII case, so "stauts" is 1 from "status".
std::size_t edit_distance(std::string_view a, std::string_view b) {
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> prev2(m + 1), prev(m + 1), cur(m + 1);
  for (std::size_t j = 0; j <= m; ++j)
    prev[j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= m; ++j) {
      const bool same = lower_ascii(a[i - 1]) == lower_ascii(b[j - 1]);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (same ? 0 : 1)});
      if (i > 1 && j > 1 && lower_ascii(a[i - 1]) == lower_ascii(b[j - 2])
          && lower_ascii(a[i - 2]) == lower_ascii(b[j - 1]))
        cur[j] = std::min(cur[j], prev2[j - 2] + 1);
    }
    std::swap(prev2, prev);
    std::swap(prev, cur);
  }
  return prev[m];
}

// The closest candidate, if close enough to be a plausible typo.
template <class Range>
std::optional<std::string> closest(std::string_view name, const Range& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 0;
  const std::size_t limit = name.size() <= 3 ? 1 : name.size() <= 6 ? 2 : 3;
  for (std::string_view c : candidates) {
    const std::size_t d = edit_distance(name, c);
    if (d <= limit && d < std::max(name.size(), c.size()) && (!best || d < best_d)) {
      best = std::string{c};
      best_d = d;
    }
  }
  return best;
}

std::string quoted(std::string_view s) {
  return "'" + std::string{s} + "'";
}

std::string type_name(type_id t) {
  return std::string{to_string(t)};
}

bool is_number(type_id t) {
  return t == type_id::int64 || t == type_id::float64;
}

struct function_info {
  std::string_view name;
  function_id id;
  std::size_t min_args;
  std::size_t max_args; // SIZE_MAX = variadic
};

constexpr std::size_t variadic = static_cast<std::size_t>(-1);

constexpr std::array<function_info, 12> functions{{
  {"lower", function_id::lower, 1, 1},
  {"upper", function_id::upper, 1, 1},
  {"length", function_id::length, 1, 1},
  {"substr", function_id::substr, 2, 3},
  {"concat", function_id::concat, 1, variadic},
  {"abs", function_id::abs, 1, 1},
  {"floor", function_id::floor, 1, 1},
  {"coalesce", function_id::coalesce, 1, variadic},
  {"to_timestamp", function_id::to_timestamp, 1, 1},
  {"rand_int", function_id::rand_int, 4, 4},
  {"rand_float", function_id::rand_float, 2, 2},
  {"rand_string", function_id::rand_string, 3, 3},
}};

class checker {
public:
  explicit checker(const schema& input) : input_(input) {
  }

  std::optional<error> check(node& n) {
    for (auto& c : n.children)
      if (auto err = check(*c))
        return err;
    switch (n.kind) {
      case node_kind::literal:
      case node_kind::cast:
        return std::nullopt;
      case node_kind::field:
        return check_field(n);
      case node_kind::negate:
        return check_negate(n);
      case node_kind::arith:
        return check_arith(n);
      case node_kind::compare:
        return check_compare(n);
      case node_kind::logical_and:
      case node_kind::logical_or:
      case node_kind::logical_not:
        return check_logical(n);
      case node_kind::is_null:
        n.type = type_id::boolean;
        return std::nullopt;
      case node_kind::in_list:
        return check_in(n);
      case node_kind::like:
        return check_like(n);
      case node_kind::call:
        return check_call(n);
      case node_kind::conditional:
        return check_conditional(n);
    }
    return std::nullopt;
  }

private:
  static error type_error(std::string message, std::size_t offset) {
    return make_error(errc::type_error, std::move(message), offset);
  }

  static void cast_to_float(node_ptr& child) {
    if (child->type != type_id::int64 && child->type != type_id::timestamp)
      return;
    auto c = std::make_unique<node>();
    c->kind = node_kind::cast;
    c->type = type_id::float64;
    c->offset = child->offset;
    c->op_offset = child->offset;
    c->children.push_back(std::move(child));
    child = std::move(c);
  }

  std::optional<error> check_field(node& n) {
    if (auto i = input_.index_of(n.name)) {
      n.field_index = *i;
      n.type = input_.at(*i).type;
      return std::nullopt;
    }
    std::vector<std::string_view> names;
    for (const auto& f : input_.fields())
      names.push_back(f.name);
    if (auto near = closest(n.name, names))
      return type_error("unknown field " + quoted(n.name) + ", did you mean "
                          + quoted(*near) + "?",
                        n.offset);
    return type_error("unknown field " + quoted(n.name) + " (fields: "
                        + input_.to_string() + ")",
                      n.offset);
  }

  std::optional<error> check_negate(node& n) {
    const type_id t = n.children[0]->type;
    if (t != type_id::null_type && !is_number(t))
      return type_error("operator '-' needs a number, got " + type_name(t),
                        n.op_offset);
    n.type = t;
    return std::nullopt;
  }

  std::optional<error> check_arith(node& n) {
    const type_id a = n.children[0]->type;
    const type_id b = n.children[1]->type;
    const std::string op = quoted(n.op_text);
    const auto acceptable = [](type_id t) {
      return t == type_id::null_type || is_numeric(t);
    };
    if (!acceptable(a) || !acceptable(b))
      return type_error("operator " + op + " needs numbers, got " + type_name(a)
                          + " and " + type_name(b),
                        n.op_offset);
    const bool additive = n.arith == arith_op::add || n.arith == arith_op::sub;
    const auto bad_timestamp = [&] {
      return type_error("operator " + op + " does not apply to " + type_name(a)
                          + " and " + type_name(b)
                          + " (a timestamp takes only + or - an int64 of ms, or "
                            "- another timestamp)",
                        n.op_offset);
    };
    if (a == type_id::null_type || b == type_id::null_type) {
      // Always null; the type is the other side's when that makes sense.
      const type_id other = a == type_id::null_type ? b : a;
      if (other == type_id::timestamp && !additive)
        return bad_timestamp();
      n.type = other;
      return std::nullopt;
    }
    if (a == type_id::timestamp || b == type_id::timestamp) {
      if (!additive)
        return bad_timestamp();
      if (a == type_id::timestamp && b == type_id::int64)
        n.type = type_id::timestamp;
      else if (a == type_id::int64 && b == type_id::timestamp
               && n.arith == arith_op::add)
        n.type = type_id::timestamp;
      else if (a == type_id::timestamp && b == type_id::timestamp
               && n.arith == arith_op::sub)
        n.type = type_id::int64;
      else
        return bad_timestamp();
      return std::nullopt;
    }
    if (a == type_id::float64 || b == type_id::float64) {
      cast_to_float(n.children[0]);
      cast_to_float(n.children[1]);
      n.type = type_id::float64;
    } else {
      n.type = type_id::int64;
    }
    return std::nullopt;
  }

  // Whether values of types a and b can be compared; sets `as_float` when
  // both must become float64 first.
  static bool comparable(type_id a, type_id b, bool& as_float) {
    as_float = false;
    if (a == type_id::null_type || b == type_id::null_type)
      return true;
    if (is_numeric(a) && is_numeric(b)) {
      as_float = a != b && (a == type_id::float64 || b == type_id::float64);
      return true;
    }
    return a == b;
  }

  std::optional<error> check_compare(node& n) {
    const type_id a = n.children[0]->type;
    const type_id b = n.children[1]->type;
    bool as_float = false;
    if (!comparable(a, b, as_float))
      return type_error("operator " + quoted(n.op_text) + " cannot compare "
                          + type_name(a) + " with " + type_name(b),
                        n.op_offset);
    if (as_float) {
      cast_to_float(n.children[0]);
      cast_to_float(n.children[1]);
    }
    n.type = type_id::boolean;
    return std::nullopt;
  }

  std::optional<error> check_logical(node& n) {
    for (const auto& c : n.children)
      if (c->type != type_id::boolean && c->type != type_id::null_type) {
        if (n.kind == node_kind::logical_not)
          return type_error("operator 'not' needs a bool, got "
                              + type_name(c->type),
                            n.op_offset);
        return type_error("operator " + quoted(n.op_text)
                            + " needs bool operands, got " + type_name(c->type),
                          c->offset);
      }
    n.type = type_id::boolean;
    return std::nullopt;
  }

  std::optional<error> check_in(node& n) {
    const type_id x = n.children[0]->type;
    bool any_float = false;
    for (std::size_t i = 1; i < n.children.size(); ++i) {
      const node& item = *n.children[i];
      bool as_float = false;
      if (!comparable(x, item.type, as_float))
        return type_error("operator " + quoted(n.op_text) + " cannot compare "
                            + type_name(x) + " with " + type_name(item.type),
                          item.offset);
      any_float = any_float || as_float;
    }
    // x takes one type for all items: int64 in (1, 2.5) compares as float64.
    if (any_float)
      for (auto& c : n.children)
        cast_to_float(c);
    n.type = type_id::boolean;
    return std::nullopt;
  }

  std::optional<error> check_like(node& n) {
    const type_id a = n.children[0]->type;
    const type_id b = n.children[1]->type;
    const auto ok = [](type_id t) {
      return t == type_id::string || t == type_id::null_type;
    };
    if (!ok(a) || !ok(b))
      return type_error("operator " + quoted(n.op_text) + " needs strings, got "
                          + type_name(a) + " and " + type_name(b),
                        n.op_offset);
    n.type = type_id::boolean;
    return std::nullopt;
  }

  std::optional<error> check_call(node& n) {
    std::string lowered;
    for (char c : n.name)
      lowered.push_back(lower_ascii(c));
    const function_info* info = nullptr;
    for (const auto& f : functions)
      if (f.name == lowered)
        info = &f;
    if (!info) {
      std::vector<std::string_view> names;
      for (const auto& f : functions)
        names.push_back(f.name);
      std::string msg = "unknown function " + quoted(n.name);
      if (auto near = closest(lowered, names))
        msg += ", did you mean " + quoted(*near) + "?";
      else
        msg += " (functions: lower, upper, length, substr, concat, abs, floor, "
               "coalesce, to_timestamp, rand_int, rand_float, rand_string)";
      return type_error(std::move(msg), n.op_offset);
    }
    n.fn = info->id;
    n.name = std::string{info->name};
    const std::size_t argc = n.children.size();
    if (argc < info->min_args || argc > info->max_args) {
      std::string expect;
      if (info->max_args == variadic)
        expect = "at least " + std::to_string(info->min_args) + " argument"
                 + (info->min_args == 1 ? "" : "s");
      else if (info->min_args == info->max_args)
        expect = std::to_string(info->min_args) + " argument"
                 + (info->min_args == 1 ? "" : "s");
      else
        expect = std::to_string(info->min_args) + " or "
                 + std::to_string(info->max_args) + " arguments";
      return type_error("function " + quoted(n.name) + " takes " + expect
                          + ", got " + std::to_string(argc),
                        n.op_offset);
    }
    const auto arg_error = [&](std::size_t i, std::string_view wanted) {
      return type_error("function " + quoted(n.name) + " argument "
                          + std::to_string(i + 1) + " must be "
                          + std::string{wanted} + ", got "
                          + type_name(n.children[i]->type),
                        n.children[i]->offset);
    };
    const auto is = [&](std::size_t i, std::initializer_list<type_id> ts) {
      const type_id t = n.children[i]->type;
      return t == type_id::null_type || std::find(ts.begin(), ts.end(), t) != ts.end();
    };
    switch (n.fn) {
      case function_id::lower:
      case function_id::upper:
        if (!is(0, {type_id::string}))
          return arg_error(0, "string");
        n.type = type_id::string;
        break;
      case function_id::length:
        if (!is(0, {type_id::string}))
          return arg_error(0, "string");
        n.type = type_id::int64;
        break;
      case function_id::substr:
        if (!is(0, {type_id::string}))
          return arg_error(0, "string");
        for (std::size_t i = 1; i < argc; ++i)
          if (!is(i, {type_id::int64}))
            return arg_error(i, "int64");
        n.type = type_id::string;
        break;
      case function_id::concat:
        n.type = type_id::string;
        break;
      case function_id::abs:
      case function_id::floor:
        if (!is(0, {type_id::int64, type_id::float64}))
          return arg_error(0, "int64 or float64");
        n.type = n.children[0]->type;
        break;
      case function_id::coalesce:
        return check_coalesce(n);
      case function_id::to_timestamp:
        if (!is(0, {type_id::int64, type_id::float64, type_id::timestamp,
                    type_id::string}))
          return arg_error(0, "int64 (ms), float64 (ms), timestamp or string");
        n.type = type_id::timestamp;
        break;
      case function_id::rand_int:
      case function_id::rand_float:
      case function_id::rand_string:
        // Every argument is an int64: seq, salt, then lo and hi or length.
        for (std::size_t i = 0; i < argc; ++i)
          if (!is(i, {type_id::int64}))
            return arg_error(i, "int64");
        n.type = n.fn == function_id::rand_int     ? type_id::int64
                 : n.fn == function_id::rand_float ? type_id::float64
                                                   : type_id::string;
        break;
    }
    return std::nullopt;
  }

  // case when c1 then v1 ... else e end / if(c, a, b): every condition bool
  // (or null), the values of one type (null fits any; int64 and float64 mix
  // to float64), reported at the first value of another type.
  std::optional<error> check_conditional(node& n) {
    const bool is_if = n.op_text == "if";
    const std::size_t pairs = (n.children.size() - 1) / 2;
    for (std::size_t k = 0; k < pairs; ++k) {
      const node& c = *n.children[2 * k];
      if (c.type != type_id::boolean && c.type != type_id::null_type)
        return type_error(is_if ? "function 'if' argument 1 must be bool, got "
                                      + type_name(c.type)
                                : "'when' condition must be bool, got "
                                      + type_name(c.type),
                          c.offset);
    }
    const auto value_index = [&](std::size_t v) {
      return v < pairs ? 2 * v + 1 : n.children.size() - 1;
    };
    type_id common = type_id::null_type;
    for (std::size_t v = 0; v <= pairs; ++v) {
      const node& c = *n.children[value_index(v)];
      const type_id t = c.type;
      if (t == type_id::null_type || t == common)
        continue;
      if (common == type_id::null_type) {
        common = t;
      } else if (is_number(common) && is_number(t)) {
        common = type_id::float64;
      } else {
        if (is_if)
          return type_error("function 'if' needs values of one type, argument 2 is "
                              + type_name(common) + " but argument 3 is " + type_name(t),
                            c.offset);
        return type_error("'case' needs values of one type, an earlier value is "
                            + type_name(common) + " but this one is " + type_name(t),
                          c.offset);
      }
    }
    if (common == type_id::float64)
      for (std::size_t v = 0; v <= pairs; ++v)
        if (n.children[value_index(v)]->type == type_id::int64)
          cast_to_float(n.children[value_index(v)]);
    n.type = common;
    return std::nullopt;
  }

  std::optional<error> check_coalesce(node& n) {
    type_id common = type_id::null_type;
    std::size_t common_arg = 0;
    for (std::size_t i = 0; i < n.children.size(); ++i) {
      const type_id t = n.children[i]->type;
      if (t == type_id::null_type || t == common)
        continue;
      if (common == type_id::null_type) {
        common = t;
        common_arg = i;
      } else if (is_number(common) && is_number(t)) {
        common = type_id::float64;
      } else {
        return type_error("function 'coalesce' needs arguments of one type, "
                          "argument "
                            + std::to_string(common_arg + 1) + " is "
                            + type_name(common) + " but argument "
                            + std::to_string(i + 1) + " is " + type_name(t),
                          n.children[i]->offset);
      }
    }
    if (common == type_id::float64)
      for (auto& c : n.children)
        if (c->type == type_id::int64)
          cast_to_float(c);
    n.type = common;
    return std::nullopt;
  }

  const schema& input_;
};

} // namespace

std::optional<error> type_check(node& n, const schema& input) {
  return checker{input}.check(n);
}

} // namespace weir::expr
