// SPDX-License-Identifier: Apache-2.0
// Constant folding: a subtree without field references becomes one literal,
// and a null-propagating operator with a literal null operand becomes a
// typed null, so that the kernels never see operands of type null.
#include "node.hpp"

#include <algorithm>
#include <cmath>

namespace weir::expr {

node_ptr make_null_literal(type_id t, std::size_t offset) {
  auto n = std::make_unique<node>();
  n->kind = node_kind::literal;
  n->type = t;
  n->offset = offset;
  n->constant = column{t};
  n->constant.append_null();
  return n;
}

node_ptr make_literal(const column& c, std::size_t row, std::size_t offset) {
  auto n = std::make_unique<node>();
  n->kind = node_kind::literal;
  n->type = c.type;
  n->offset = offset;
  n->constant = column{c.type};
  n->constant.append_from(c, row);
  return n;
}

namespace {

node_ptr make_bool_literal(bool b, std::size_t offset) {
  auto n = std::make_unique<node>();
  n->kind = node_kind::literal;
  n->type = type_id::boolean;
  n->offset = offset;
  n->constant = column{type_id::boolean};
  n->constant.append_bool(b);
  return n;
}

bool is_bool_literal(const node& n, bool b) {
  return n.is_literal() && n.type == type_id::boolean && n.constant.is_valid(0)
         && (n.constant.bools[0] != 0) == b;
}

// A null literal of type null becomes a null of type `t`.
void retype_null(node_ptr& n, type_id t) {
  if (n->is_literal() && n->type == type_id::null_type)
    n = make_null_literal(t, n->offset);
}

bool propagates_null(const node& n) {
  switch (n.kind) {
    case node_kind::cast:
    case node_kind::negate:
    case node_kind::arith:
    case node_kind::compare:
    case node_kind::logical_not:
    case node_kind::like:
      return true;
    case node_kind::call:
      return n.fn != function_id::coalesce;
    default:
      return false;
  }
}

// and: drops true operands, false wins; or: drops false operands, true wins.
void fold_logical(node_ptr& n) {
  const bool is_and = n->kind == node_kind::logical_and;
  auto& cs = n->children;
  if (std::any_of(cs.begin(), cs.end(),
                  [&](const node_ptr& c) { return is_bool_literal(*c, !is_and); })) {
    n = make_bool_literal(!is_and, n->offset);
    return;
  }
  std::erase_if(cs, [&](const node_ptr& c) { return is_bool_literal(*c, is_and); });
  // One null operand says as much as several.
  bool seen_null = false;
  std::erase_if(cs, [&](const node_ptr& c) {
    if (!c->is_null_literal())
      return false;
    if (seen_null)
      return true;
    seen_null = true;
    return false;
  });
  for (auto& c : cs)
    retype_null(c, type_id::boolean);
  if (cs.empty()) {
    n = make_bool_literal(is_and, n->offset);
  } else if (cs.size() == 1) {
    node_ptr only = std::move(cs[0]);
    n = std::move(only);
  }
}

void fold_coalesce(node_ptr& n) {
  auto& cs = n->children;
  const std::size_t offset = n->offset;
  std::erase_if(cs, [](const node_ptr& c) { return c->is_null_literal(); });
  if (cs.empty()) {
    n = make_null_literal(n->type, offset);
    return;
  }
  // Arguments after a non-null literal are never reached.
  auto lit = std::find_if(cs.begin(), cs.end(),
                          [](const node_ptr& c) { return c->is_literal(); });
  if (lit != cs.end())
    cs.erase(lit + 1, cs.end());
  if (cs.size() == 1) {
    node_ptr only = std::move(cs[0]);
    n = std::move(only);
  }
}

// case/if: conditions that are literals decide at compile time (false and
// null drop their branch, true ends the list as the else value); with no
// branch left the else value is the result.
void fold_conditional(node_ptr& n) {
  auto& cs = n->children;
  if (n->type == type_id::null_type) {
    n = make_null_literal(type_id::null_type, n->offset);
    return;
  }
  for (std::size_t i = 0; i + 1 < cs.size(); i += 2)
    retype_null(cs[i], type_id::boolean);
  for (std::size_t i = 1; i < cs.size(); i += 2)
    retype_null(cs[i], n->type);
  retype_null(cs.back(), n->type);
  node_ptr else_value = std::move(cs.back());
  const std::size_t pairs = (cs.size() - 1) / 2;
  std::vector<node_ptr> kept;
  for (std::size_t k = 0; k < pairs; ++k) {
    node_ptr& cond = cs[2 * k];
    if (cond->is_literal()) {
      if (is_bool_literal(*cond, true)) {
        else_value = std::move(cs[2 * k + 1]); // later branches are never reached
        break;
      }
      continue; // false or null: never taken
    }
    kept.push_back(std::move(cond));
    kept.push_back(std::move(cs[2 * k + 1]));
  }
  kept.push_back(std::move(else_value));
  n->children = std::move(kept);
  if (n->children.size() == 1) {
    node_ptr only = std::move(n->children[0]);
    n = std::move(only);
  }
}

// Lists this long are searched in a sorted vector instead of compared item
// by item.
constexpr std::size_t min_set_items = 8;

void build_in_set(node& n) {
  const type_id t = n.children[0]->type;
  if (t == type_id::boolean || n.children.size() - 1 < min_set_items)
    return;
  auto set = std::make_shared<in_set>();
  for (std::size_t i = 1; i < n.children.size(); ++i) {
    const node& item = *n.children[i];
    if (!item.is_literal())
      return;
    if (item.constant.is_null(0)) {
      set->has_null = true;
      continue;
    }
    switch (t) {
      case type_id::int64:
      case type_id::timestamp:
        set->ints.push_back(item.constant.ints[0]);
        break;
      case type_id::float64:
        if (!std::isnan(item.constant.floats[0]))
          set->floats.push_back(item.constant.floats[0]);
        break;
      case type_id::string:
        set->strings.emplace_back(item.constant.str(0));
        break;
      default:
        return;
    }
  }
  std::sort(set->ints.begin(), set->ints.end());
  std::sort(set->floats.begin(), set->floats.end());
  std::sort(set->strings.begin(), set->strings.end());
  n.set = std::move(set);
}

} // namespace

void fold(node_ptr& n) {
  for (auto& c : n->children)
    fold(c);
  switch (n->kind) {
    case node_kind::literal:
    case node_kind::field:
      return;
    case node_kind::logical_and:
    case node_kind::logical_or:
      fold_logical(n);
      if (n->kind != node_kind::logical_and && n->kind != node_kind::logical_or)
        return;
      break;
    case node_kind::is_null:
      if (n->children[0]->is_literal()) {
        const bool null = n->children[0]->constant.is_null(0);
        n = make_bool_literal(null != n->negated, n->offset);
        return;
      }
      break;
    case node_kind::in_list:
      if (n->children[0]->is_null_literal()) {
        n = make_null_literal(type_id::boolean, n->offset);
        return;
      }
      for (std::size_t i = 1; i < n->children.size(); ++i)
        retype_null(n->children[i], n->children[0]->type);
      break;
    case node_kind::conditional:
      fold_conditional(n);
      if (n->kind != node_kind::conditional)
        return;
      break;
    case node_kind::call:
      if (n->fn == function_id::coalesce) {
        fold_coalesce(n);
        if (n->kind != node_kind::call || n->fn != function_id::coalesce)
          return;
      }
      break;
    default:
      break;
  }
  if (propagates_null(*n)
      && std::any_of(n->children.begin(), n->children.end(),
                     [](const node_ptr& c) { return c->is_null_literal(); })) {
    n = make_null_literal(n->type, n->offset);
    return;
  }
  if (std::all_of(n->children.begin(), n->children.end(),
                  [](const node_ptr& c) { return c->is_literal(); })) {
    record_batch none;
    none.num_rows = 1;
    column c = materialize(evaluate_node(*n, none), 1);
    n = make_literal(c, 0, n->offset);
    return;
  }
  if (n->kind == node_kind::in_list)
    build_in_set(*n);
  if (n->kind == node_kind::like && n->children[1]->is_literal())
    n->pattern = std::make_shared<const like_pattern>(
      like_pattern::make(n->children[1]->constant.str(0)));
}

} // namespace weir::expr
