// SPDX-License-Identifier: Apache-2.0
#include "reader.hpp"

namespace weir::config {

using std::chrono::milliseconds;

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  out += '"';
  return out;
}

std::string quoted_list(const key_list& xs) {
  std::string out;
  for (const auto& x : xs) {
    if (!out.empty())
      out += ", ";
    out += quote(x);
  }
  return out;
}

bool contains(const key_list& xs, std::string_view x) {
  return std::find(xs.begin(), xs.end(), x) != xs.end();
}

std::string_view type_name(const toml::node& n) {
  switch (n.type()) {
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::table: return "table";
    case toml::node_type::array: return "array";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    default: return "nothing";
  }
}

/// Optimal string alignment distance (Levenshtein plus adjacent swaps).
std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1,
                                          std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i)
    d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j)
    d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

/// The candidate closest to `word` within edit distance 2, if any; a
/// candidate must also differ in fewer characters than it has.
std::optional<std::string> closest(std::string_view word, const key_list& candidates) {
  std::optional<std::string> best;
  std::size_t best_d = 3;
  for (const auto& c : candidates) {
    auto dist = edit_distance(word, c);
    if (dist < best_d && dist < std::max(word.size(), c.size())) {
      best_d = dist;
      best = c;
    }
  }
  return best;
}

std::size_t count_code_points(std::string_view s) {
  std::size_t n = 0;
  for (char c : s)
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80)
      ++n;
  return n;
}

/// Byte index of the 1-based code-point column `col` in `line`.
std::size_t byte_of_column(std::string_view line, std::size_t col) {
  std::size_t cp = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80) {
      ++cp;
      if (cp == col)
        return i;
    }
  }
  return line.size();
}

std::optional<std::chrono::milliseconds> parse_duration_impl(std::string_view s,
                                                bool allow_negative) noexcept {
  std::size_t i = 0;
  bool negative = false;
  if (allow_negative && i < s.size() && s[i] == '-') {
    negative = true;
    ++i;
  }
  const std::size_t digits = i;
  std::int64_t n = 0;
  constexpr auto max = std::numeric_limits<std::int64_t>::max();
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    std::int64_t d = s[i] - '0';
    if (n > (max - d) / 10)
      return std::nullopt;
    n = n * 10 + d;
    ++i;
  }
  if (i == digits)
    return std::nullopt;
  if (i == s.size()) {
    // A bare number is ambiguous, except zero which is zero in every unit.
    if (n != 0)
      return std::nullopt;
    return milliseconds{0};
  }
  if (s[i] == ' ')
    ++i;
  auto unit = s.substr(i);
  std::int64_t factor = 0;
  if (unit == "ms")
    factor = 1;
  else if (unit == "s")
    factor = 1000;
  else if (unit == "m")
    factor = 60 * 1000;
  else if (unit == "h")
    factor = 60 * 60 * 1000;
  else if (unit == "d")
    factor = 24 * 60 * 60 * 1000;
  else
    return std::nullopt;
  if (n > max / factor)
    return std::nullopt;
  return milliseconds{negative ? -(n * factor) : n * factor};
}

std::string format_duration(milliseconds d) {
  auto ms = d.count();
  struct unit {
    std::int64_t factor;
    const char* name;
  };
  for (auto u : {unit{86400000, "d"}, unit{3600000, "h"}, unit{60000, "m"},
                 unit{1000, "s"}}) {
    if (ms != 0 && ms % u.factor == 0)
      return std::to_string(ms / u.factor) + u.name;
  }
  return std::to_string(ms) + "ms";
}

/// `err` with `prefix` removed from the front of its message.
error without_prefix(error err, std::string_view prefix) {
  if (err.message.rfind(prefix, 0) == 0)
    err.message.erase(0, prefix.size());
  return err;
}

/// "filter, select, map" from a list of names.
std::string plain_list(const key_list& xs) {
  std::string out;
  for (const auto& x : xs) {
    if (!out.empty())
      out += ", ";
    out += x;
  }
  return out;
}

/// A rate: a positive integer or float (rows or events per second).
std::optional<double> positive_rate(reader& r, std::string_view key) {
  auto* n = r.get(key);
  if (!n)
    return std::nullopt;
  double v = 0;
  if (auto* i = n->as_integer()) {
    v = static_cast<double>(i->get());
  } else if (auto* f = n->as_floating_point()) {
    v = f->get();
  } else {
    r.wrong_type(*n, key, "a number (per second)");
    return std::nullopt;
  }
  if (!(v > 0) || v > 1e15) {
    auto* i = n->as_integer();
    r.fail(pos_of(*n), r.path(key) + " must be a positive number per second, got " +
                         (i ? std::to_string(i->get()) : std::to_string(v)));
    return std::nullopt;
  }
  return v;
}

diagnostics::diagnostics(std::string_view text, std::string file)
  : text_(text), file_(std::move(file)) {
  std::size_t start = 0;
  while (start <= text_.size()) {
    auto end = text_.find('\n', start);
    if (end == std::string_view::npos) {
      lines_.push_back(text_.substr(start));
      break;
    }
    lines_.push_back(text_.substr(start, end - start));
    start = end + 1;
  }
}

pos diagnostics::expression_pos(const toml::node& value, std::size_t offset) const {
  auto p = pos_of(value);
  if (offset == error::npos || p.line == 0 || p.line > lines_.size())
    return p;
  auto line = lines_[p.line - 1];
  auto at = byte_of_column(line, p.column);
  if (at >= line.size())
    return p;
  char q = line[at];
  if (q != '"' && q != '\'')
    return p;
  auto rest = line.substr(at + 1);
  if (rest.size() >= 2 && rest[0] == q && rest[1] == q)
    return p; // a multi-line string
  if (offset > rest.size())
    return p;
  auto before = rest.substr(0, offset);
  if (before.find(q) != std::string_view::npos ||
      (q == '"' && before.find('\\') != std::string_view::npos))
    return p;
  return {p.line, p.column + 1 + count_code_points(before)};
}

void reader::fail(pos p, std::string message, std::vector<std::string> extra) {
  std::vector<std::string> notes = notes_;
  notes.insert(notes.end(), std::make_move_iterator(extra.begin()),
               std::make_move_iterator(extra.end()));
  l_.report(p, std::move(message), std::move(notes));
  ok_ = false;
}

std::optional<milliseconds> parse_duration(std::string_view text) noexcept {
  return parse_duration_impl(text, false);
}

std::optional<milliseconds> parse_signed_duration(std::string_view text) noexcept {
  return parse_duration_impl(text, true);
}

} // namespace weir::config

namespace weir::config {

schema_ptr schema_table(reader& r) {
  auto entries = r.string_table("schema", false, "a type name");
  if (!entries)
    return nullptr;
  std::vector<field> fields;
  bool good = true;
  for (const auto& e : *entries) {
    auto ty = parse_type_id(e.text);
    if (!ty || *ty == type_id::null_type) {
      r.fail(pos_of(*e.node), "schema." + e.name + " has unknown type " + quote(e.text),
             {"hint: types are bool, int64, float64, string, timestamp"});
      good = false;
      continue;
    }
    fields.push_back(field{e.name, *ty});
  }
  return good ? make_schema(std::move(fields)) : nullptr;
}

} // namespace weir::config
