// SPDX-License-Identifier: Apache-2.0
#pragma once
// The generic positioned reader of the TOML loader: typed values, durations,
// choices and tables read from one toml++ table, each problem reported once as
// a diagnostic with file:line:col, plus the text helpers of diagnostics
// (quoting, did-you-mean). Kinds (src/kinds/) read their keys through it.

#include "weir/config/diagnostic.hpp"
#include "weir/config/loader.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/schema.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::config {

using key_list = std::vector<std::string>;

// -- small text helpers ------------------------------------------------------

/// `s` in double quotes with ", \, newline, tab and CR escaped.
std::string quote(std::string_view s);
/// "\"a\", \"b\"" from a list.
std::string quoted_list(const key_list& xs);
/// "filter, select, map" from a list of names.
std::string plain_list(const key_list& xs);
bool contains(const key_list& xs, std::string_view x);
/// The TOML type of a node as users write it ("string", "integer", ...).
std::string_view type_name(const toml::node& n);
/// The candidate closest to `word` within edit distance 2, if any; a
/// candidate must also differ in fewer characters than it has.
std::optional<std::string> closest(std::string_view word, const key_list& candidates);
/// "1m", "10s", "250ms".
std::string format_duration(std::chrono::milliseconds d);
/// `err` with `prefix` removed from the front of its message.
error without_prefix(error err, std::string_view prefix);

// -- positions ---------------------------------------------------------------

struct pos {
  std::size_t line = 0;
  std::size_t column = 0;

  friend bool operator<(const pos& a, const pos& b) noexcept {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  }
};

inline pos pos_of(const toml::source_region& r) {
  return {static_cast<std::size_t>(r.begin.line), static_cast<std::size_t>(r.begin.column)};
}

inline pos pos_of(const toml::node& n) {
  return pos_of(n.source());
}

/// A string value together with the node it came from.
struct located {
  std::string value;
  const toml::node* node = nullptr;
};

/// A `name = "text"` entry of a table (schema, fields, aggregate), in file
/// order.
struct named_text {
  std::string name;
  pos key_pos;
  std::string text;
  const toml::node* node = nullptr;
};

/// Where diagnostics go: the file's name and text (to place a position
/// inside an expression string) and the list of diagnostics so far.
class diagnostics {
public:
  diagnostics(std::string_view text, std::string file);

  void report(pos p, std::string message, std::vector<std::string> notes) {
    list_.push_back(diagnostic{file_, p.line, p.column, std::move(message), std::move(notes)});
  }

  std::string location(pos p) const {
    return file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
  }

  /// Where byte `offset` of the string value `value` is in the file: exact
  /// for a one-line string without escapes before the offset, else the
  /// value's start.
  pos expression_pos(const toml::node& value, std::size_t offset) const;

  const std::string& file() const noexcept { return file_; }
  std::vector<diagnostic>& list() noexcept { return list_; }

private:
  std::string_view text_;
  std::string file_;
  std::vector<std::string_view> lines_;
  std::vector<diagnostic> list_;
};

/// Reads typed values from one table, reporting each problem once.
class reader {
public:
  reader(diagnostics& l, const toml::table& t, std::string prefix,
         const std::vector<std::string>& notes, bool& ok)
    : l_(l), t_(t), prefix_(std::move(prefix)), notes_(notes), ok_(ok) {}

  const toml::node* get(std::string_view key) const { return t_.get(key); }
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }

  reader sub(const toml::table& t, std::string_view key) const {
    return reader(l_, t, path(key) + ".", notes_, ok_);
  }

  void fail(pos p, std::string message, std::vector<std::string> extra = {});

  /// The table this reader reads.
  const toml::table& table() const noexcept { return t_; }
  /// The notes every diagnostic of this reader carries ("in [[operator]] #2 ...").
  const std::vector<std::string>& notes() const noexcept { return notes_; }
  diagnostics& diags() const noexcept { return l_; }

  void missing(std::string_view key, std::vector<std::string> extra = {}) {
    fail(pos_of(t_), "missing required key '" + path(key) + "'", std::move(extra));
  }

  void wrong_type(const toml::node& n, std::string_view key, std::string_view expected,
                  std::vector<std::string> extra = {}) {
    fail(pos_of(n),
         path(key) + " must be " + std::string(expected) + ", got " +
           std::string(type_name(n)),
         std::move(extra));
  }

  std::optional<located> string(std::string_view key, bool required = false,
                                bool non_empty = false) {
    auto* n = get(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    auto* s = n->as_string();
    if (!s) {
      wrong_type(*n, key, "a string");
      return std::nullopt;
    }
    if (non_empty && s->get().empty()) {
      fail(pos_of(*n), path(key) + " must not be empty");
      return std::nullopt;
    }
    return located{s->get(), n};
  }

  /// An integer in [min, max].
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t min,
                                      std::int64_t max) {
    auto* n = get(key);
    if (!n)
      return std::nullopt;
    auto* i = n->as_integer();
    if (!i) {
      wrong_type(*n, key, "an integer");
      return std::nullopt;
    }
    auto v = i->get();
    if (v < min || v > max) {
      if (max == std::numeric_limits<std::int64_t>::max())
        fail(pos_of(*n), path(key) + " must be at least " + std::to_string(min) +
                           ", got " + std::to_string(v));
      else
        fail(pos_of(*n), path(key) + " must be between " + std::to_string(min) +
                           " and " + std::to_string(max) + ", got " +
                           std::to_string(v));
      return std::nullopt;
    }
    return v;
  }

  std::optional<bool> boolean(std::string_view key) {
    auto* n = get(key);
    if (!n)
      return std::nullopt;
    auto* b = n->as_boolean();
    if (!b) {
      wrong_type(*n, key, "a boolean (true or false)");
      return std::nullopt;
    }
    return b->get();
  }

  enum class sign { non_negative, positive, any };

  std::optional<std::chrono::milliseconds> duration(std::string_view key, sign s = sign::non_negative,
                                       bool required = false) {
    auto* n = get(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    const std::string hint = s == sign::any
                               ? "hint: write an integer with a unit (ms, s, m, h, d): "
                                 "\"500ms\", \"10s\", \"5m\", \"-8h\""
                               : "hint: write an integer with a unit (ms, s, m, h, d): "
                                 "\"500ms\", \"10s\", \"5m\"";
    auto* str = n->as_string();
    if (!str) {
      wrong_type(*n, key, "a duration", {hint});
      return std::nullopt;
    }
    const auto& text = str->get();
    auto d = s == sign::any ? parse_signed_duration(text) : parse_duration(text);
    if (!d) {
      if (s != sign::any && parse_signed_duration(text))
        fail(pos_of(*n), path(key) + " must not be negative, got " + quote(text));
      else
        fail(pos_of(*n), path(key) + " must be a duration, got " + quote(text), {hint});
      return std::nullopt;
    }
    if (s == sign::positive && d->count() <= 0) {
      fail(pos_of(*n), path(key) + " must be a positive duration, got " + quote(text),
           {hint});
      return std::nullopt;
    }
    return d;
  }

  /// A string that must be one of `allowed`.
  std::optional<located> choice(std::string_view key, const key_list& allowed,
                                bool required = false) {
    auto v = string(key, required);
    if (!v)
      return std::nullopt;
    if (!contains(allowed, v->value)) {
      std::vector<std::string> extra;
      if (auto c = closest(v->value, allowed))
        extra.push_back("hint: did you mean " + quote(*c) + "?");
      fail(pos_of(*v->node), path(key) + " must be one of " + quoted_list(allowed) +
                               ", got " + quote(v->value),
           std::move(extra));
      return std::nullopt;
    }
    return v;
  }

  const toml::table* subtable(std::string_view key, bool required = false) {
    auto* n = get(key);
    if (!n) {
      if (required)
        missing(key);
      return nullptr;
    }
    auto* t = n->as_table();
    if (!t)
      wrong_type(*n, key, "a table");
    return t;
  }

  /// An array of strings with at least `min_size` elements.
  std::optional<std::vector<located>> string_array(std::string_view key,
                                                   bool required = false,
                                                   std::size_t min_size = 0) {
    auto* n = get(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    auto* a = n->as_array();
    if (!a) {
      wrong_type(*n, key, "an array of strings");
      return std::nullopt;
    }
    std::vector<located> out;
    bool good = true;
    for (const auto& e : *a) {
      auto* s = e.as_string();
      if (!s) {
        fail(pos_of(e), path(key) + " must contain only strings, got " +
                          std::string(type_name(e)));
        good = false;
        continue;
      }
      out.push_back(located{s->get(), &e});
    }
    if (!good)
      return std::nullopt;
    if (out.size() < min_size) {
      fail(pos_of(*n), path(key) + " must list at least " + std::to_string(min_size) +
                         " names, got " + std::to_string(out.size()));
      return std::nullopt;
    }
    return out;
  }

  /// A table of `name = "text"` entries in file order; nullopt if absent or
  /// broken. `what` describes a value ("an expression").
  std::optional<std::vector<named_text>> string_table(std::string_view key, bool required,
                                                      std::string_view what) {
    auto* n = get(key);
    if (!n) {
      if (required)
        missing(key);
      return std::nullopt;
    }
    auto* t = n->as_table();
    if (!t) {
      wrong_type(*n, key, "a table");
      return std::nullopt;
    }
    std::vector<named_text> out;
    bool good = true;
    for (auto&& [k, v] : *t) {
      auto* s = v.as_string();
      if (!s) {
        fail(pos_of(v), path(key) + "." + std::string(k.str()) + " must be " +
                          std::string(what) + ", got " + std::string(type_name(v)));
        good = false;
        continue;
      }
      out.push_back(named_text{std::string(k.str()), pos_of(k.source()), s->get(), &v});
    }
    // toml++ keeps tables sorted by key; the file's order is what users mean.
    std::stable_sort(out.begin(), out.end(), [](const named_text& a, const named_text& b) {
      return pos_of(*a.node) < pos_of(*b.node);
    });
    if (!good)
      return std::nullopt;
    if (out.empty()) {
      fail(pos_of(*n), path(key) + " must not be empty");
      return std::nullopt;
    }
    return out;
  }

  /// Reports every key not in `allowed`. `misplaced(key)` may return a
  /// message for a key that is known but not valid here.
  template <class Misplaced>
  void check_keys(const key_list& allowed, Misplaced&& misplaced) {
    for (auto&& [k, v] : t_) {
      std::string_view name = k.str();
      if (contains(allowed, name))
        continue;
      if (auto m = misplaced(name)) {
        fail(pos_of(k.source()), m->first, m->second);
        continue;
      }
      std::vector<std::string> extra;
      if (auto c = closest(name, allowed))
        extra.push_back("hint: did you mean '" + *c + "'?");
      fail(pos_of(k.source()), "unknown key '" + path(name) + "'", std::move(extra));
    }
  }

  void check_keys(const key_list& allowed) {
    check_keys(allowed, [](std::string_view)
                 -> std::optional<std::pair<std::string, std::vector<std::string>>> {
      return std::nullopt;
    });
  }

private:
  diagnostics& l_;
  const toml::table& t_;
  std::string prefix_;
  const std::vector<std::string>& notes_;
  bool& ok_;
};

/// A rate: a positive integer or float (rows or events per second).
std::optional<double> positive_rate(reader& r, std::string_view key);

/// A source's `schema = { name = "type", ... }` table as a schema, fields in
/// file order (types: bool, int64, float64, string, timestamp). nullptr if
/// the key is absent or any type is unknown (each unknown type reported at
/// its value).
schema_ptr schema_table(reader& r);

} // namespace weir::config
