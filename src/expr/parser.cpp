// SPDX-License-Identifier: Apache-2.0
// Recursive descent with precedence climbing for the binary operators.
#include "lexer.hpp"
#include "node.hpp"

#include <algorithm>

namespace weir::expr {

namespace {

// Binding powers, lowest first (docs/concepts/records.md / expression.hpp).
constexpr int prec_or = 1;
constexpr int prec_and = 2;
constexpr int prec_not = 3;
constexpr int prec_compare = 4;
constexpr int prec_additive = 5;
constexpr int prec_multiplicative = 6;
constexpr int prec_unary = 7;

// Deeper trees would risk the stack in the recursive passes.
constexpr std::size_t max_depth = 500;

class parser {
public:
  parser(std::string_view text, std::vector<token> tokens)
    : text_(text), tokens_(std::move(tokens)) {
  }

  expected<node_ptr> run() {
    node_ptr root = parse_expr(prec_or);
    if (!err_ && peek().kind != token_kind::end)
      fail_unexpected(peek());
    if (err_)
      return std::move(*err_);
    return root;
  }

private:
  const token& peek(std::size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }

  const token& next() {
    const token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size())
      ++pos_;
    return t;
  }

  std::nullptr_t fail(std::string message, std::size_t offset) {
    if (!err_)
      err_ = make_error(errc::parse_error, std::move(message), offset);
    return nullptr;
  }

  std::nullptr_t fail_unexpected(const token& t) {
    if (t.kind == token_kind::end)
      return fail("unexpected end of input", t.offset);
    return fail("unexpected token " + describe(t), t.offset);
  }

  std::nullptr_t fail_expected(std::string_view what, const token& t) {
    if (t.kind == token_kind::end)
      return fail("expected " + std::string{what} + " at end of input",
                  t.offset);
    return fail("expected " + std::string{what} + " but got " + describe(t),
                t.offset);
  }

  // Every node goes through here so that no tree grows deeper than max_depth
  // (the passes over the tree recurse).
  node_ptr finish(node_ptr n) {
    std::size_t d = 0;
    for (const auto& c : n->children)
      d = std::max(d, c->depth);
    return check_depth(std::move(n), d + 1);
  }

  node_ptr check_depth(node_ptr n, std::size_t depth) {
    n->depth = depth;
    if (depth > max_depth)
      return fail("expression is nested too deeply (more than "
                    + std::to_string(max_depth) + " levels)",
                  n->offset);
    return n;
  }

  static node_ptr make(node_kind k, std::size_t offset) {
    auto n = std::make_unique<node>();
    n->kind = k;
    n->offset = offset;
    return n;
  }

  // Binding power of the token at the cursor as an infix operator, or 0.
  int infix_precedence() const {
    const token& t = peek();
    if (t.is_keyword("or"))
      return prec_or;
    if (t.is_keyword("and"))
      return prec_and;
    if (t.is_keyword("in") || t.is_keyword("is") || t.is_keyword("like"))
      return prec_compare;
    if (t.is_keyword("not")
        && (peek(1).is_keyword("in") || peek(1).is_keyword("like")))
      return prec_compare;
    if (t.kind != token_kind::symbol)
      return 0;
    if (t.text == "=" || t.text == "==" || t.text == "<>" || t.text == "!="
        || t.text == "<" || t.text == "<=" || t.text == ">" || t.text == ">=")
      return prec_compare;
    if (t.text == "+" || t.text == "-")
      return prec_additive;
    if (t.text == "*" || t.text == "/" || t.text == "%")
      return prec_multiplicative;
    return 0;
  }

  node_ptr parse_expr(int min_prec) {
    if (++nesting_ > max_depth) {
      --nesting_;
      return fail("expression is nested too deeply (more than "
                    + std::to_string(max_depth) + " levels)",
                  peek().offset);
    }
    node_ptr lhs = parse_prefix();
    bool compared = false; // comparisons do not associate: a < b < c is an error
    while (lhs) {
      const int prec = infix_precedence();
      if (prec == 0 || prec < min_prec)
        break;
      if (prec == prec_compare) {
        if (compared) {
          fail_unexpected(peek());
          lhs = nullptr;
          break;
        }
        compared = true;
        lhs = parse_comparison(std::move(lhs));
      } else if (prec == prec_or || prec == prec_and) {
        lhs = parse_logical(std::move(lhs), prec);
      } else {
        lhs = parse_arith(std::move(lhs), prec);
      }
    }
    --nesting_;
    return lhs;
  }

  node_ptr parse_prefix() {
    const token& t = peek();
    if (t.is_keyword("not")) {
      next();
      node_ptr operand = parse_expr(prec_not);
      if (!operand)
        return nullptr;
      auto n = make(node_kind::logical_not, t.offset);
      n->op_offset = t.offset;
      n->op_text = "not";
      n->children.push_back(std::move(operand));
      return finish(std::move(n));
    }
    if (t.is_symbol("-")) {
      next();
      // -9223372036854775808 is the one literal whose magnitude overflows.
      if (peek().kind == token_kind::int_literal && peek().int_overflow) {
        const token& lit = next();
        auto n = make(node_kind::literal, t.offset);
        n->type = type_id::int64;
        n->constant = column{type_id::int64};
        n->constant.append_int(lit.int_value);
        return finish(std::move(n));
      }
      node_ptr operand = parse_expr(prec_unary);
      if (!operand)
        return nullptr;
      auto n = make(node_kind::negate, t.offset);
      n->op_offset = t.offset;
      n->op_text = "-";
      n->children.push_back(std::move(operand));
      return finish(std::move(n));
    }
    return parse_primary();
  }

  node_ptr parse_primary() {
    const token& t = next();
    switch (t.kind) {
      case token_kind::end:
        return fail_expected("an expression", t);
      case token_kind::int_literal: {
        if (t.int_overflow)
          return fail("integer literal " + std::string{t.text}
                        + " is out of range for int64",
                      t.offset);
        auto n = make(node_kind::literal, t.offset);
        n->type = type_id::int64;
        n->constant = column{type_id::int64};
        n->constant.append_int(t.int_value);
        return finish(std::move(n));
      }
      case token_kind::float_literal: {
        auto n = make(node_kind::literal, t.offset);
        n->type = type_id::float64;
        n->constant = column{type_id::float64};
        n->constant.append_float(t.float_value);
        return finish(std::move(n));
      }
      case token_kind::string_literal: {
        auto n = make(node_kind::literal, t.offset);
        n->type = type_id::string;
        n->constant = column{type_id::string};
        n->constant.append_string(t.str);
        return finish(std::move(n));
      }
      case token_kind::quoted_identifier: {
        auto n = make(node_kind::field, t.offset);
        n->name = t.str;
        return finish(std::move(n));
      }
      case token_kind::identifier:
        return parse_word(t);
      case token_kind::symbol:
        if (t.text == "(") {
          node_ptr inner = parse_expr(prec_or);
          if (!inner)
            return nullptr;
          if (!peek().is_symbol(")"))
            return fail_expected("')'", peek());
          next();
          return inner;
        }
        return fail_unexpected(t);
    }
    return fail_unexpected(t);
  }

  node_ptr parse_word(const token& t) {
    if (t.is_keyword("true") || t.is_keyword("false")) {
      auto n = make(node_kind::literal, t.offset);
      n->type = type_id::boolean;
      n->constant = column{type_id::boolean};
      n->constant.append_bool(t.is_keyword("true"));
      return finish(std::move(n));
    }
    if (t.is_keyword("null"))
      return finish(make_null_literal(type_id::null_type, t.offset));
    if (t.is_keyword("case") && peek().is_keyword("when"))
      return parse_case(t);
    if (t.is_keyword("if") && peek().is_symbol("("))
      return parse_if(t);
    for (std::string_view kw : {"and", "or", "not", "in", "is", "like"})
      if (t.is_keyword(kw))
        return fail_unexpected(t);
    if (peek().is_symbol("(")) {
      next();
      auto n = make(node_kind::call, t.offset);
      n->op_offset = t.offset;
      n->name = std::string{t.text};
      if (!peek().is_symbol(")")) {
        while (true) {
          node_ptr arg = parse_expr(prec_or);
          if (!arg)
            return nullptr;
          n->children.push_back(std::move(arg));
          if (peek().is_symbol(","))
            next();
          else if (peek().is_symbol(")"))
            break;
          else
            return fail_expected("',' or ')'", peek());
        }
      }
      next(); // ')'
      return finish(std::move(n));
    }
    auto n = make(node_kind::field, t.offset);
    n->name = std::string{t.text};
    return finish(std::move(n));
  }

  // The words that end a `case` part: an expression must not start with one.
  node_ptr parse_case_part(std::string_view what) {
    for (std::string_view kw : {"when", "then", "else", "end"})
      if (peek().is_keyword(kw))
        return fail_expected(what, peek());
    return parse_expr(prec_or);
  }

  // case when c1 then v1 [when c2 then v2 ...] [else e] end  ('case' read)
  node_ptr parse_case(const token& kw) {
    auto n = make(node_kind::conditional, kw.offset);
    n->op_offset = kw.offset;
    n->op_text = "case";
    while (peek().is_keyword("when")) {
      next();
      node_ptr cond = parse_case_part("a condition after 'when'");
      if (!cond)
        return nullptr;
      if (!peek().is_keyword("then"))
        return fail_expected("'then'", peek());
      next();
      node_ptr value = parse_case_part("a value after 'then'");
      if (!value)
        return nullptr;
      n->children.push_back(std::move(cond));
      n->children.push_back(std::move(value));
    }
    bool has_else = false;
    if (peek().is_keyword("else")) {
      next();
      has_else = true;
      node_ptr value = parse_case_part("a value after 'else'");
      if (!value)
        return nullptr;
      n->children.push_back(std::move(value));
    } else {
      n->children.push_back(make_null_literal(type_id::null_type, peek().offset));
    }
    if (!peek().is_keyword("end"))
      return fail_expected(has_else ? "'end'" : "'when', 'else' or 'end'", peek());
    next();
    return finish(std::move(n));
  }

  // if(cond, a, b)  ('if' read, '(' next): a two-way case.
  node_ptr parse_if(const token& kw) {
    next(); // '('
    auto n = make(node_kind::conditional, kw.offset);
    n->op_offset = kw.offset;
    n->op_text = "if";
    while (true) {
      node_ptr arg = parse_expr(prec_or);
      if (!arg)
        return nullptr;
      n->children.push_back(std::move(arg));
      if (peek().is_symbol(",")) {
        next();
        continue;
      }
      if (peek().is_symbol(")"))
        break;
      return fail_expected("',' or ')'", peek());
    }
    if (n->children.size() != 3)
      return fail("function 'if' takes 3 arguments (condition, then, else), got "
                    + std::to_string(n->children.size()),
                  kw.offset);
    next(); // ')'
    return finish(std::move(n));
  }

  node_ptr parse_logical(node_ptr lhs, int prec) {
    const token& op = next();
    node_ptr rhs = parse_expr(prec + 1);
    if (!rhs)
      return nullptr;
    const node_kind k = prec == prec_or ? node_kind::logical_or
                                        : node_kind::logical_and;
    // a and b and c is one n-ary node: long conditions stay shallow.
    if (lhs->kind == k) {
      const std::size_t depth = std::max(lhs->depth, rhs->depth + 1);
      lhs->children.push_back(std::move(rhs));
      return check_depth(std::move(lhs), depth);
    }
    auto n = make(k, lhs->offset);
    n->op_offset = op.offset;
    n->op_text = prec == prec_or ? "or" : "and";
    n->children.push_back(std::move(lhs));
    n->children.push_back(std::move(rhs));
    return finish(std::move(n));
  }

  node_ptr parse_arith(node_ptr lhs, int prec) {
    const token& op = next();
    node_ptr rhs = parse_expr(prec + 1);
    if (!rhs)
      return nullptr;
    auto n = make(node_kind::arith, lhs->offset);
    n->op_offset = op.offset;
    n->op_text = std::string{op.text};
    switch (op.text[0]) {
      case '+':
        n->arith = arith_op::add;
        break;
      case '-':
        n->arith = arith_op::sub;
        break;
      case '*':
        n->arith = arith_op::mul;
        break;
      case '/':
        n->arith = arith_op::div;
        break;
      default:
        n->arith = arith_op::mod;
        break;
    }
    n->children.push_back(std::move(lhs));
    n->children.push_back(std::move(rhs));
    return finish(std::move(n));
  }

  node_ptr parse_comparison(node_ptr lhs) {
    const token& op = next();
    const std::size_t lhs_offset = lhs->offset;
    if (op.is_keyword("is")) {
      auto n = make(node_kind::is_null, lhs_offset);
      n->op_offset = op.offset;
      n->op_text = "is null";
      if (peek().is_keyword("not")) {
        next();
        n->negated = true;
        n->op_text = "is not null";
      }
      if (!peek().is_keyword("null"))
        return fail_expected("'null'", peek());
      next();
      n->children.push_back(std::move(lhs));
      return finish(std::move(n));
    }
    bool negated = false;
    const token* kw = &op;
    if (op.is_keyword("not")) {
      negated = true;
      kw = &next();
    }
    if (kw->is_keyword("in")) {
      auto n = make(node_kind::in_list, lhs_offset);
      n->op_offset = op.offset;
      n->op_text = negated ? "not in" : "in";
      n->negated = negated;
      n->children.push_back(std::move(lhs));
      if (!peek().is_symbol("("))
        return fail_expected("'('", peek());
      next();
      while (true) {
        node_ptr item = parse_expr(prec_or);
        if (!item)
          return nullptr;
        n->children.push_back(std::move(item));
        if (peek().is_symbol(","))
          next();
        else if (peek().is_symbol(")"))
          break;
        else
          return fail_expected("',' or ')'", peek());
      }
      next(); // ')'
      return finish(std::move(n));
    }
    if (kw->is_keyword("like")) {
      node_ptr rhs = parse_expr(prec_additive);
      if (!rhs)
        return nullptr;
      auto n = make(node_kind::like, lhs_offset);
      n->op_offset = op.offset;
      n->op_text = negated ? "not like" : "like";
      n->negated = negated;
      n->children.push_back(std::move(lhs));
      n->children.push_back(std::move(rhs));
      return finish(std::move(n));
    }
    node_ptr rhs = parse_expr(prec_additive);
    if (!rhs)
      return nullptr;
    auto n = make(node_kind::compare, lhs_offset);
    n->op_offset = op.offset;
    n->op_text = std::string{op.text};
    const std::string_view s = op.text;
    if (s == "=" || s == "==")
      n->cmp = compare_op::eq;
    else if (s == "<>" || s == "!=")
      n->cmp = compare_op::ne;
    else if (s == "<")
      n->cmp = compare_op::lt;
    else if (s == "<=")
      n->cmp = compare_op::le;
    else if (s == ">")
      n->cmp = compare_op::gt;
    else
      n->cmp = compare_op::ge;
    n->children.push_back(std::move(lhs));
    n->children.push_back(std::move(rhs));
    return finish(std::move(n));
  }

  std::string_view text_;
  std::vector<token> tokens_;
  std::size_t pos_ = 0;
  std::size_t nesting_ = 0;
  std::optional<error> err_;
};

} // namespace

expected<node_ptr> parse(std::string_view text) {
  auto tokens = tokenize(text);
  if (!tokens)
    return tokens.error();
  return parser{text, std::move(*tokens)}.run();
}

} // namespace weir::expr
