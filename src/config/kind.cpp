// SPDX-License-Identifier: Apache-2.0
#include "kind.hpp"

#include <algorithm>

namespace weir::config {

std::string_view category_name(kind_category c) noexcept {
  switch (c) {
    case kind_category::source: return "source";
    case kind_category::operator_: return "operator";
    case kind_category::sink: return "sink";
  }
  return "";
}

void plan_context::report_api(const toml::node* at, std::string_view key, const error& err) {
  pos p = at ? diags_.expression_pos(*at, err.offset) : pos_of(table);
  std::string message = key.empty() ? err.message : std::string(key) + ": " + err.message;
  diags_.report(p, std::move(message), notes_);
  ok_ = false;
}

bool plan_context::check_fields_exist(const schema& in, const std::vector<located>& names,
                                      std::string_view key) {
  key_list fields;
  for (const auto& f : in.fields())
    fields.push_back(f.name);
  bool good = true;
  for (const auto& n : names) {
    if (in.index_of(n.value))
      continue;
    auto notes = notes_;
    if (auto c = closest(n.value, fields))
      notes.push_back("hint: did you mean " + quote(*c) + "?");
    notes.push_back("hint: the input's fields are " + in.to_string());
    diags_.report(pos_of(*n.node), std::string(key) + ": unknown field " + quote(n.value),
                  std::move(notes));
    good = false;
  }
  if (!good)
    ok_ = false;
  return good;
}

key_list parse_context::children(std::string_view table) const {
  key_list out;
  const std::string prefix = std::string(table) + ".";
  for (const auto& k : kind.keys) {
    if (k.name.size() <= prefix.size() || k.name.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto rest = std::string_view{k.name}.substr(prefix.size());
    if (rest.find('.') == std::string_view::npos)
      out.emplace_back(rest);
  }
  return out;
}

kind_registry& kind_registry::instance() {
  static kind_registry* r = [] {
    auto* reg = new kind_registry();
    kinds::register_builtin_kinds(*reg);
    return reg;
  }();
  return *r;
}

void kind_registry::add(kind_descriptor d) {
  for (auto& k : kinds_) {
    if (k.category == d.category && k.type == d.type) {
      k = std::move(d);
      return;
    }
  }
  kinds_.push_back(std::move(d));
}

void kind_registry::remove(kind_category c, std::string_view type) {
  std::erase_if(kinds_, [&](const kind_descriptor& k) { return k.category == c && k.type == type; });
}

const kind_descriptor* kind_registry::find(kind_category c, std::string_view type) const {
  for (const auto& k : kinds_)
    if (k.category == c && k.type == type)
      return &k;
  return nullptr;
}

std::vector<const kind_descriptor*> kind_registry::kinds(kind_category c) const {
  std::vector<const kind_descriptor*> out;
  for (const auto& k : kinds_)
    if (k.category == c)
      out.push_back(&k);
  return out;
}

key_list kind_registry::types(kind_category c, bool all) const {
  key_list out;
  for (const auto& k : kinds_)
    if (k.category == c && (all || k.available))
      out.push_back(k.type);
  return out;
}

key_list kind_registry::kinds_with_key(kind_category c, std::string_view key) const {
  key_list out;
  for (const auto& k : kinds_) {
    if (k.category != c)
      continue;
    if (std::any_of(k.keys.begin(), k.keys.end(),
                    [&](const key_spec& s) { return s.name == key; }))
      out.push_back(k.type);
  }
  return out;
}

kind_descriptor not_built_kind(kind_category c, std::string type, std::string how) {
  kind_descriptor d;
  d.category = c;
  d.type = std::move(type);
  d.min_inputs = c == kind_category::source ? 0 : 1;
  d.available = false;
  d.not_built = std::move(how);
  return d;
}

std::string and_list(const key_list& xs) {
  if (xs.size() == 2)
    return xs[0] + " and " + xs[1];
  return plain_list(xs);
}

} // namespace weir::config
