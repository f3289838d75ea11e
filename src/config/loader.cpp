// SPDX-License-Identifier: Apache-2.0
#include "weir/config/loader.hpp"
#include "weir/runtime/job_graph.hpp"

#include "weir/connectors/generator_source.hpp"
#include "weir/connectors/summary_sink.hpp"
#include "weir/core/timestamp.hpp"
#include "weir/expr/expression.hpp"
#include "weir/format/format.hpp"
#include "weir/window/window_operator.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

namespace weir::config {

namespace {

using std::chrono::milliseconds;

// -- key catalogue -----------------------------------------------------------

const std::vector<std::string> key_catalogue = {
  "job.name",
  "job.parallelism",
  "job.max_parallelism",
  "job.batch_size",
  "job.buffer_timeout",
  "job.on_bad_record",
  "job.dead_letter",
  "job.dead_letter.path",
  "job.status_interval",
  "job.worker_threads",
  "job.restart",
  "job.restart.attempts",
  "job.restart.delay",
  "job.inject_failure",
  "job.inject_failure.operator",
  "job.inject_failure.after_records",
  "checkpoint",
  "checkpoint.interval",
  "checkpoint.mode",
  "checkpoint.dir",
  "checkpoint.retain",
  "checkpoint.timeout",
  "checkpoint.min_pause",
  "source[].name",
  "source[].type",
  "source[].path",
  "source[].format",
  "source[].schema",
  "source[].event_time",
  "source[].event_time.field",
  "source[].watermark",
  "source[].watermark.max_out_of_orderness",
  "source[].watermark.idle_timeout",
  "source[].csv",
  "source[].csv.header",
  "source[].csv.delimiter",
  "source[].parallelism",
  "source[].count",
  "source[].rate",
  "source[].fields",
  "source[].seed",
  "source[].events",
  "source[].stream",
  "source[].event_rate",
  "source[].base_time",
  "source[].generation_time_field",
  "source[].partition_by",
  "source[].partitions",
  "source[].processing_time",
  "source[].processing_time.field",
  "operator[].name",
  "operator[].type",
  "operator[].input",
  "operator[].inputs",
  "operator[].parallelism",
  "operator[].where",
  "operator[].fields",
  "operator[].key_by",
  "operator[].output",
  "operator[].field",
  "operator[].separator",
  "operator[].keep_empty",
  "operator[].window",
  "operator[].window.type",
  "operator[].window.size",
  "operator[].window.offset",
  "operator[].window.slide",
  "operator[].window.gap",
  "operator[].window.time",
  "operator[].trigger",
  "operator[].trigger.type",
  "operator[].trigger.count",
  "operator[].trigger.purge",
  "operator[].aggregate",
  "operator[].allowed_lateness",
  "operator[].late_output",
  "operator[].local_aggregation",
  "sink[].name",
  "sink[].input",
  "sink[].type",
  "sink[].path",
  "sink[].format",
  "sink[].title",
  "sink[].group_by",
  "sink[].aggregate",
  "sink[].order_by",
  "sink[].ascending",
  "sink[].limit",
  "sink[].highlight",
  "sink[].highlight.label",
  "sink[].highlight.where",
  "sink[].rate",
  "sink[].report",
  "sink[].digest",
  "sink[].latency_field",
};

/// The direct children of `prefix` ("job.", "operator[].window.") in the
/// catalogue.
std::vector<std::string> children(std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& k : key_catalogue) {
    if (k.size() <= prefix.size() || k.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto rest = std::string_view{k}.substr(prefix.size());
    if (rest.find('.') == std::string_view::npos)
      out.emplace_back(rest);
  }
  return out;
}

using key_list = std::vector<std::string>;

// Keys that only some operator / sink types take.
const std::map<std::string, key_list, std::less<>> operator_type_keys = {
  {"filter", {"where"}},
  {"select", {"fields"}},
  {"map", {"fields"}},
  {"window",
   {"key_by", "window", "trigger", "aggregate", "allowed_lateness", "late_output",
    "local_aggregation"}},
  {"union", {}},
  {"running_count", {"key_by", "output"}},
  {"split", {"field", "separator", "keep_empty"}},
  {"explode", {"field"}},
};

const std::map<std::string, key_list, std::less<>> sink_type_keys = {
  {"file", {"path", "format"}},
  {"stdout", {"format"}},
  {"blackhole", {"rate", "report", "digest", "latency_field"}},
  {"summary",
   {"title", "group_by", "aggregate", "order_by", "ascending", "limit", "highlight"}},
};

const key_list source_types = {"file", "generator", "nexmark"};
const key_list unavailable_source_types = {"kafka"};
// The keys of generated sources; only they take the keys in
// generated_source_only_keys.
const key_list generator_source_keys = {"name", "type", "count", "rate", "fields", "seed",
                                        "event_time", "watermark", "parallelism",
                                        "generation_time_field"};
const key_list nexmark_source_keys = {"name", "type", "events", "stream", "seed", "rate",
                                      "event_rate", "base_time", "watermark", "parallelism",
                                      "generation_time_field"};
const key_list generated_source_only_keys = {"count", "rate", "fields", "seed", "events",
                                             "stream", "event_rate", "base_time",
                                             "generation_time_field"};
const key_list nexmark_streams = {"bid", "auction", "person"};
const key_list operator_types = {"filter", "select", "map", "window", "union",
                                 "running_count", "split", "explode"};
const key_list sink_types = {"file", "stdout", "summary", "blackhole"};
const key_list window_types = {"tumbling", "sliding", "session", "global", "count"};
// The keys of `window = {...}` that each window type takes.
const std::map<std::string, key_list, std::less<>> window_type_keys = {
  {"tumbling", {"type", "size", "offset", "time"}},
  {"sliding", {"type", "size", "slide", "offset", "time"}},
  {"session", {"type", "gap", "time"}},
  {"global", {"type"}},
  {"count", {"type", "size", "slide"}},
};
const key_list window_times = {"event", "processing"};
const key_list trigger_types = {"event_time", "processing_time", "count"};
const key_list source_formats = {"jsonl", "csv", "apache_combined"};
const key_list file_sink_formats = {"jsonl", "csv"};
const key_list stdout_formats = {"jsonl"};
const key_list bad_record_policies = {"fail", "skip", "dead_letter"};

constexpr std::int64_t max_key_groups = 32768;
/// Rows per batch at most: a batch is built in memory whole.
constexpr std::int64_t max_batch_size = 1 << 20;

// -- small text helpers ------------------------------------------------------

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

std::optional<milliseconds> parse_duration_impl(std::string_view s,
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

// -- positions ---------------------------------------------------------------

struct pos {
  std::size_t line = 0;
  std::size_t column = 0;

  friend bool operator<(const pos& a, const pos& b) noexcept {
    return a.line != b.line ? a.line < b.line : a.column < b.column;
  }
};

pos pos_of(const toml::source_region& r) {
  return {static_cast<std::size_t>(r.begin.line), static_cast<std::size_t>(r.begin.column)};
}

pos pos_of(const toml::node& n) {
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

// -- the model read from the file ---------------------------------------------

struct element {
  std::size_t index = 0; ///< 1-based within its kind
  const toml::table* table = nullptr;
  std::vector<std::string> notes;
  bool ok = true;
  std::string name;
  const toml::node* name_node = nullptr;
};

struct source_def : element {
  located path;
  bool file_error = false;
  format::decoder_options decoder;
  located event_time_field;
  watermark_options watermark;
  located partition_by;
  std::vector<std::string> partitions;
  located processing_time_field;
  // Generated sources (type = "generator" or "nexmark"):
  std::string generated; ///< the type, empty for a file source
  generator_source_spec generator;
  nexmark_source_spec nexmark;
  std::vector<named_text> generator_fields;
  const toml::node* fields_node = nullptr;
  const toml::node* event_time_node = nullptr;
  std::size_t generated_parallelism = 0;
};

enum class op_kind { filter, select, map, window, union_, running_count, split, explode };

/// `window = {...}` of a window operator; `type` is empty when broken.
struct window_def {
  std::string type;
  milliseconds size{0};
  milliseconds slide{0};
  milliseconds offset{0};
  milliseconds gap{0};
  std::int64_t count_size = 0;  ///< count windows: records per window
  std::int64_t count_slide = 0; ///< count windows: records per firing; 0 = size
  bool processing_time = false; ///< time = "processing"
};

/// `trigger = {...}` of a window operator; `type` is empty when broken.
struct trigger_def {
  std::string type;
  std::int64_t count = 0;
  bool purge = false;
  const toml::node* node = nullptr;
};

struct operator_def : element {
  std::optional<op_kind> op;
  std::vector<located> inputs; ///< `input`, or each of `inputs`
  const toml::node* inputs_node = nullptr;
  std::size_t parallelism = 0;
  located where;
  std::vector<named_text> fields;
  const toml::node* fields_node = nullptr;
  std::vector<located> key_by;
  const toml::node* key_by_node = nullptr;
  located count_output; ///< running_count: the count field's name
  located split_field;  ///< split / explode
  located split_separator;
  bool split_keep_empty = false;
  window_def window;
  const toml::node* window_node = nullptr;
  std::optional<trigger_def> trigger;
  const toml::node* trigger_node = nullptr;
  std::vector<named_text> aggregates;
  const toml::node* aggregate_node = nullptr;
  milliseconds allowed_lateness{0};
  located late_output;
  bool local_aggregation = false;
};

enum class sink_kind { file, stdout_, summary, blackhole };

struct sink_def : element {
  std::optional<sink_kind> sink;
  located input;
  file_sink_spec file;
  std::string title;
  std::vector<located> group_by;
  std::vector<named_text> aggregates;
  const toml::node* aggregate_node = nullptr;
  located order_by;
  bool ascending = false;
  std::size_t limit = 10;
  std::string highlight_label;
  located highlight_where;
  blackhole_sink_spec blackhole;
  const toml::node* latency_node = nullptr;
};

std::string context_note(std::string_view kind, std::size_t index,
                         const toml::table& t) {
  std::string note = "in [[" + std::string(kind) + "]] #" + std::to_string(index);
  if (auto n = t.get_as<std::string>("name"))
    note += " (name = " + quote(n->get()) + ")";
  return note;
}

// -- the loader --------------------------------------------------------------

class loader;

/// Reads typed values from one table, reporting each problem once.
class reader {
public:
  reader(loader& l, const toml::table& t, std::string prefix,
         const std::vector<std::string>& notes, bool& ok)
    : l_(l), t_(t), prefix_(std::move(prefix)), notes_(notes), ok_(ok) {}

  const toml::node* get(std::string_view key) const { return t_.get(key); }
  std::string path(std::string_view key) const { return prefix_ + std::string(key); }

  reader sub(const toml::table& t, std::string_view key) const {
    return reader(l_, t, path(key) + ".", notes_, ok_);
  }

  void fail(pos p, std::string message, std::vector<std::string> extra = {});

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

  std::optional<milliseconds> duration(std::string_view key, sign s = sign::non_negative,
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
  loader& l_;
  const toml::table& t_;
  std::string prefix_;
  const std::vector<std::string>& notes_;
  bool& ok_;
};

class loader {
public:
  loader(std::string_view text, std::string file, const load_options& opts)
    : text_(text), file_(std::move(file)), opts_(opts) {
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

  expected<std::unique_ptr<job>, std::vector<diagnostic>> run();

  void report(pos p, std::string message, std::vector<std::string> notes) {
    diags_.push_back(diagnostic{file_, p.line, p.column, std::move(message), std::move(notes)});
  }

  std::string location(pos p) const {
    return file_ + ":" + std::to_string(p.line) + ":" + std::to_string(p.column);
  }

  /// Where byte `offset` of the string value `value` is in the file: exact
  /// for a one-line string without escapes before the offset, else the
  /// value's start.
  pos expression_pos(const toml::node& value, std::size_t offset) const {
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

private:
  void parse_top(const toml::table& root);
  void parse_job(const toml::table& root);
  void parse_checkpoint(const toml::table& root);
  void parse_source(const toml::table& t, std::size_t index);
  void parse_generated_source(const toml::table& t, std::size_t index, const std::string& type);
  void build_generated_source(job& j, source_def& s);
  void parse_operator(const toml::table& t, std::size_t index);
  void parse_sink(const toml::table& t, std::size_t index);
  template <class F>
  void for_each_element(const toml::table& root, std::string_view key, F&& f);
  void check_names();
  void resolve_inputs();
  std::vector<std::size_t> order_operators();
  void build();
  void build_operator(job& j, operator_def& op);
  void build_sink(job& j, sink_def& s);
  bool check_fields_exist(element& e, const schema& in, const std::vector<located>& names,
                          std::string_view key);
  void report_api(element& e, const toml::node* at, std::string_view key,
                  const error& err);

  std::string_view text_;
  std::string file_;
  load_options opts_;
  std::vector<std::string_view> lines_;
  std::vector<diagnostic> diags_;

  job_options job_opts_;
  bool job_ok_ = true;
  const toml::node* inject_failure_node_ = nullptr;
  std::vector<source_def> sources_;
  std::vector<operator_def> operators_;
  std::vector<sink_def> sinks_;

  struct name_entry {
    std::string name;
    pos at;
    char kind; ///< 's'ource, 'o'perator, 'l'ate output, 'k' sink
    std::size_t index;
  };
  std::map<std::string, name_entry, std::less<>> names_; ///< first definition
  key_list stream_names_;
  std::unique_ptr<job> job_;
};

void reader::fail(pos p, std::string message, std::vector<std::string> extra) {
  std::vector<std::string> notes = notes_;
  notes.insert(notes.end(), std::make_move_iterator(extra.begin()),
               std::make_move_iterator(extra.end()));
  l_.report(p, std::move(message), std::move(notes));
  ok_ = false;
}

expected<std::unique_ptr<job>, std::vector<diagnostic>> loader::run() {
  // Debian's toml++ is a shared library built with exceptions: its
  // parse_error is caught here, at the boundary, and becomes a diagnostic.
  toml::table root;
  try {
    root = toml::parse(text_, std::string_view{file_});
  } catch (const toml::parse_error& e) {
    report(pos_of(e.source()), std::string(e.description()), {});
    return diags_;
  }
  parse_top(root);
  check_names();
  resolve_inputs();
  try {
    build();
  } catch (const std::exception& e) {
    // The API throws only where its contract says so (never for inputs the
    // loader has checked); should it happen, it is a diagnostic, not a crash.
    report({}, std::string("cannot build the job: ") + e.what(), {});
  }
  if (!diags_.empty()) {
    sort_diagnostics(diags_);
    return diags_;
  }
  return std::move(job_);
}

template <class F>
void loader::for_each_element(const toml::table& root, std::string_view key, F&& f) {
  auto* n = root.get(key);
  if (!n)
    return;
  auto* a = n->as_array();
  if (!a) {
    report(pos_of(*n),
          std::string(key) + " must be an array of tables, got " + std::string(type_name(*n)),
          {"hint: write each one under a [[" + std::string(key) + "]] header"});
    return;
  }
  if (a->empty()) {
    report(pos_of(*n), "a pipeline needs at least one [[" + std::string(key) + "]]", {});
    return;
  }
  std::size_t index = 0;
  for (const auto& e : *a) {
    ++index;
    auto* t = e.as_table();
    if (!t) {
      report(pos_of(e),
            "each " + std::string(key) + " must be a table, got " + std::string(type_name(e)),
            {"hint: write each one under a [[" + std::string(key) + "]] header"});
      continue;
    }
    f(*t, index);
  }
}

void loader::parse_top(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  bool ok = true;
  reader r(*this, root, "", no_notes, ok);
  r.check_keys({"job", "checkpoint", "source", "operator", "sink"});
  parse_job(root);
  parse_checkpoint(root);
  if (const auto* job = root["job"].as_table(); job && !root.get("checkpoint")) {
    if (const auto* restart = job->get("restart"))
      report(pos_of(*restart), "job.restart needs a [checkpoint] section",
             {"hint: a restart resumes from the latest completed checkpoint; add "
              "[checkpoint] with a dir, or remove job.restart"});
  }
  for_each_element(root, "source",
                   [this](const toml::table& t, std::size_t i) { parse_source(t, i); });
  for_each_element(root, "operator",
                   [this](const toml::table& t, std::size_t i) { parse_operator(t, i); });
  for_each_element(root, "sink",
                   [this](const toml::table& t, std::size_t i) { parse_sink(t, i); });
  if (!root.get("source"))
    report({}, "a pipeline needs at least one [[source]]", {});
  if (!root.get("sink"))
    report({}, "a pipeline needs at least one [[sink]]", {});
}

void loader::parse_checkpoint(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  auto* n = root.get("checkpoint");
  if (!n)
    return;
  auto* t = n->as_table();
  if (!t) {
    report(pos_of(*n), "checkpoint must be a table, got " + std::string(type_name(*n)),
           {"hint: write the checkpoint settings under a [checkpoint] header"});
    job_ok_ = false;
    return;
  }
  reader r(*this, *t, "checkpoint.", no_notes, job_ok_);
  r.check_keys(children("checkpoint."));
  auto& cp = job_opts_.checkpoint;
  cp.enabled = true;
  if (auto v = r.duration("interval")) {
    if (v->count() <= 0)
      r.fail(pos_of(*r.get("interval")), "checkpoint.interval must be positive, got \"0s\"");
    else
      cp.interval = *v;
  }
  if (auto m = r.choice("mode", {"exactly_once", "at_least_once"}))
    cp.mode = m->value == "exactly_once" ? checkpointing_mode::exactly_once
                                         : checkpointing_mode::at_least_once;
  if (auto d = r.string("dir", true, true))
    cp.dir = d->value;
  if (auto v = r.integer("retain", 1, 1000000))
    cp.retain = static_cast<std::size_t>(*v);
  if (auto v = r.duration("timeout"))
    cp.timeout = *v;
  if (auto v = r.duration("min_pause"))
    cp.min_pause = *v;
}

void loader::parse_job(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  job_opts_.name = std::filesystem::path(file_).stem().string();
  if (job_opts_.name.empty())
    job_opts_.name = "weir-job";
  if (auto* n = root.get("job")) {
    auto* t = n->as_table();
    if (!t) {
      report(pos_of(*n), "job must be a table, got " + std::string(type_name(*n)),
            {"hint: write the job settings under a [job] header"});
      job_ok_ = false;
    } else {
      constexpr auto unbounded = std::numeric_limits<std::int64_t>::max();
      reader r(*this, *t, "job.", no_notes, job_ok_);
      r.check_keys(children("job."));
      if (auto v = r.string("name", false, true))
        job_opts_.name = v->value;
      auto parallelism = r.integer("parallelism", 1, unbounded);
      if (parallelism)
        job_opts_.parallelism = static_cast<std::size_t>(*parallelism);
      auto max_par = r.integer("max_parallelism", 1, max_key_groups);
      if (max_par)
        job_opts_.max_parallelism = static_cast<std::size_t>(*max_par);
      // Checked here unless --parallelism overrides it (checked below).
      if (parallelism && !opts_.parallelism &&
          static_cast<std::size_t>(*parallelism) > job_opts_.max_parallelism)
        r.fail(pos_of(*r.get("parallelism")),
               "job.parallelism must not exceed job.max_parallelism (" +
                 std::to_string(job_opts_.max_parallelism) + "), got " +
                 std::to_string(*parallelism));
      if (auto v = r.integer("batch_size", 1, max_batch_size))
        job_opts_.batch_size = static_cast<std::size_t>(*v);
      if (auto v = r.duration("buffer_timeout"))
        job_opts_.buffer_timeout = *v;
      auto policy = r.choice("on_bad_record", bad_record_policies);
      if (policy) {
        if (policy->value == "fail")
          job_opts_.on_bad_record = bad_record_policy::fail;
        else if (policy->value == "skip")
          job_opts_.on_bad_record = bad_record_policy::skip;
        else
          job_opts_.on_bad_record = bad_record_policy::dead_letter;
      }
      if (auto* dl = r.subtable("dead_letter")) {
        auto dr = r.sub(*dl, "dead_letter");
        dr.check_keys(children("job.dead_letter."));
        if (auto p = dr.string("path", true, true))
          job_opts_.dead_letter_path = p->value;
      } else if (policy && policy->value == "dead_letter" && !r.get("dead_letter")) {
        r.missing("dead_letter", {"hint: on_bad_record = \"dead_letter\" needs "
                                  "dead_letter = { path = \"bad_records.jsonl\" }"});
      }
      if (auto v = r.duration("status_interval"))
        job_opts_.status_interval = *v;
      if (auto v = r.integer("worker_threads", 0, unbounded))
        job_opts_.worker_threads = static_cast<std::size_t>(*v);
      if (auto* rs = r.subtable("restart")) {
        auto rr = r.sub(*rs, "restart");
        rr.check_keys(children("job.restart."));
        if (auto v = rr.integer("attempts", 0, 1000000))
          job_opts_.restart.attempts = static_cast<std::size_t>(*v);
        if (auto v = rr.duration("delay"))
          job_opts_.restart.delay = *v;
      }
      if (auto* fi = r.subtable("inject_failure")) {
        auto fr = r.sub(*fi, "inject_failure");
        fr.check_keys(children("job.inject_failure."));
        failure_injection inj;
        if (auto v = fr.string("operator", true, true)) {
          inj.operator_name = v->value;
          inject_failure_node_ = v->node;
        }
        if (auto v = fr.integer("after_records", 0, unbounded))
          inj.after_records = static_cast<std::uint64_t>(*v);
        job_opts_.inject_failure = inj;
      }
    }
  }
  if (opts_.batch_size) {
    job_opts_.batch_size = *opts_.batch_size;
    if (*opts_.batch_size < 1 || *opts_.batch_size > static_cast<std::size_t>(max_batch_size)) {
      const auto* job = root.get("job");
      report(job ? pos_of(*job) : pos{},
             "--batch-size " + std::to_string(*opts_.batch_size) + " must lie in 1.."
               + std::to_string(max_batch_size),
             {});
      job_ok_ = false;
    }
  }
  if (opts_.parallelism) {
    job_opts_.parallelism = *opts_.parallelism;
    if (*opts_.parallelism < 1 || *opts_.parallelism > job_opts_.max_parallelism) {
      const auto* job = root.get("job");
      report(job ? pos_of(*job) : pos{},
             "--parallelism " + std::to_string(*opts_.parallelism) +
               " must lie in 1..job.max_parallelism (" +
               std::to_string(job_opts_.max_parallelism) + ")",
             {"hint: raise job.max_parallelism (at most 32768) to run more subtasks"});
      job_ok_ = false;
    }
  }
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

void loader::parse_source(const toml::table& t, std::size_t index) {
  if (auto* ty = t.get_as<std::string>("type");
      ty && (ty->get() == "generator" || ty->get() == "nexmark")) {
    parse_generated_source(t, index, ty->get());
    return;
  }
  auto& d = sources_.emplace_back();
  d.index = index;
  d.table = &t;
  d.notes = {context_note("source", index, t)};
  reader r(*this, t, "", d.notes, d.ok);
  // Problems that do not change what the source produces are reported but
  // do not stop it from being built, so that its dependents are checked too.
  bool soft_ok = true;
  reader soft(*this, t, "", d.notes, soft_ok);
  key_list file_keys;
  for (const auto& k : children("source[]."))
    if (!contains(generated_source_only_keys, k))
      file_keys.push_back(k);
  r.check_keys(file_keys, [](std::string_view key)
                 -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    if (!contains(generated_source_only_keys, key))
      return std::nullopt;
    return std::pair{"'" + std::string(key) + "' does not apply to a file source",
                     std::vector<std::string>{"hint: '" + std::string(key) +
                                              "' is a key of generator and nexmark sources"}};
  });
  if (auto v = r.string("name", true, true)) {
    d.name = v->value;
    d.name_node = v->node;
  }
  auto type = r.string("type", true);
  // The keys of a file source are required unless another type was named.
  const bool file_keys_required = !type || type->value == "file";
  if (auto& ty = type; ty && !contains(source_types, ty->value)) {
    if (contains(unavailable_source_types, ty->value)) {
      r.fail(pos_of(*ty->node), "source type '" + ty->value + "' is not supported yet",
             {"hint: supported source types: " + quoted_list(source_types)});
    } else {
      std::vector<std::string> extra;
      if (auto c = closest(ty->value, source_types))
        extra.push_back("hint: did you mean " + quote(*c) + "?");
      extra.push_back("hint: supported source types: " + quoted_list(source_types));
      r.fail(pos_of(*ty->node), "unknown source type '" + ty->value + "'", std::move(extra));
    }
  }
  if (auto p = r.string("path", file_keys_required, true)) {
    d.path = *p;
    // Checked now, not when the job starts: users prefer to hear it early.
    std::string reason;
    std::error_code ec;
    if (std::filesystem::is_directory(p->value, ec)) {
      reason = "it is a directory";
    } else if (std::FILE* f = std::fopen(p->value.c_str(), "rb"); f == nullptr) {
      reason = std::strerror(errno);
    } else {
      std::fclose(f);
    }
    if (!reason.empty()) {
      report(pos_of(*p->node), "cannot read source file " + quote(p->value) + ": " + reason,
            d.notes);
      d.file_error = true;
    }
  }
  auto fmt = r.choice("format", source_formats, file_keys_required);
  if (fmt) {
    if (fmt->value == "jsonl")
      d.decoder.kind = format::format_kind::jsonl;
    else if (fmt->value == "csv")
      d.decoder.kind = format::format_kind::csv;
    else
      d.decoder.kind = format::format_kind::apache_combined;
  }
  const auto* schema_node = r.get("schema");
  if (fmt && fmt->value == "apache_combined") {
    d.decoder.schema = format::apache_combined_schema();
    if (schema_node)
      r.fail(pos_of(*schema_node),
             "schema must not be set for format \"apache_combined\" (its schema is fixed)",
             {"hint: its fields are " + d.decoder.schema->to_string()});
  } else if (!schema_node) {
    if (fmt)
      r.missing("schema", {"hint: format " + quote(fmt->value) +
                           " needs the fields and their types: schema = { ts = "
                           "\"timestamp\", key = \"string\" }"});
  } else if (auto entries = r.string_table("schema", false, "a type name")) {
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
    if (good)
      d.decoder.schema = make_schema(std::move(fields));
  }
  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(children("source[].event_time."));
    if (auto f = er.string("field", true, true)) {
      d.event_time_field = *f;
      if (const auto& s = d.decoder.schema) {
        if (auto idx = s->index_of(f->value); !idx) {
          key_list names;
          for (const auto& fl : s->fields())
            names.push_back(fl.name);
          std::vector<std::string> extra;
          if (auto c = closest(f->value, names))
            extra.push_back("hint: did you mean " + quote(*c) + "?");
          extra.push_back("hint: the fields are " + s->to_string());
          er.fail(pos_of(*f->node),
                  "event_time.field " + quote(f->value) + " is not a field of the schema",
                  std::move(extra));
        } else if (auto ty = s->at(*idx).type;
                   ty != type_id::timestamp && ty != type_id::int64) {
          er.fail(pos_of(*f->node), "event_time.field " + quote(f->value) +
                                      " must name a timestamp or int64 field, got " +
                                      std::string(to_string(ty)));
        }
      }
    }
  }
  if (auto* wm = soft.subtable("watermark")) {
    auto wr = soft.sub(*wm, "watermark");
    wr.check_keys(children("source[].watermark."));
    if (auto v = wr.duration("max_out_of_orderness"))
      d.watermark.max_out_of_orderness = *v;
    if (auto v = wr.duration("idle_timeout"))
      d.watermark.idle_timeout = *v;
  }
  // Checks that `f` names a field of the schema (with a did-you-mean hint).
  auto field_of_schema = [&](reader& rr, const located& f, const std::string& what)
    -> std::optional<type_id> {
    const auto& s = d.decoder.schema;
    if (!s)
      return std::nullopt;
    auto idx = s->index_of(f.value);
    if (idx)
      return s->at(*idx).type;
    key_list names;
    for (const auto& fl : s->fields())
      names.push_back(fl.name);
    std::vector<std::string> extra;
    if (auto c = closest(f.value, names))
      extra.push_back("hint: did you mean " + quote(*c) + "?");
    extra.push_back("hint: the fields are " + s->to_string());
    rr.fail(pos_of(*f.node), what + " " + quote(f.value) + " is not a field of the schema",
            std::move(extra));
    return std::nullopt;
  };
  if (auto v = r.string("partition_by", false, true)) {
    d.partition_by = *v;
    field_of_schema(r, *v, "partition_by");
  }
  if (auto ps = r.string_array("partitions", false, 1)) {
    for (const auto& p : *ps)
      d.partitions.push_back(p.value);
    if (d.partition_by.value.empty())
      r.fail(pos_of(*r.get("partitions")), "partitions needs partition_by",
                {"hint: partition_by names the field whose values are the partitions"});
  }
  if (auto* pt = r.subtable("processing_time")) {
    auto pr = r.sub(*pt, "processing_time");
    pr.check_keys(children("source[].processing_time."));
    if (auto f = pr.string("field", true, true)) {
      d.processing_time_field = *f;
      if (auto ty = field_of_schema(pr, *f, "processing_time.field");
          ty && *ty != type_id::timestamp && *ty != type_id::int64)
        pr.fail(pos_of(*f->node), "processing_time.field " + quote(f->value) +
                                    " must name a timestamp or int64 field, got " +
                                    std::string(to_string(*ty)));
    }
  }
  if (auto* c = soft.subtable("csv")) {
    auto cr = soft.sub(*c, "csv");
    cr.check_keys(children("source[].csv."));
    if (fmt && fmt->value != "csv")
      soft.fail(pos_of(*soft.get("csv")),
             "csv options apply only to format = \"csv\", not " + quote(fmt->value));
    if (auto v = cr.boolean("header"))
      d.decoder.csv_header = *v;
    if (auto v = cr.string("delimiter")) {
      if (v->value.size() != 1)
        cr.fail(pos_of(*v->node),
                "csv.delimiter must be a single character, got " + quote(v->value));
      else
        d.decoder.csv_delimiter = v->value[0];
    }
  }
  if (auto v = soft.integer("parallelism", 1, max_key_groups); v && *v != 1)
    soft.fail(pos_of(*soft.get("parallelism")),
           "parallelism must be 1 for a file source (one split per file), got " +
             std::to_string(*v));
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

/// Reads the keys of `window = {...}` (table `w`) for window type `type`.
void parse_window(operator_def& op, const toml::table& w, const std::string& type,
                  reader& wr) {
  auto& wd = op.window;
  const auto& allowed = window_type_keys.at(type);
  wr.check_keys(allowed, [&](std::string_view key)
                  -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    key_list users;
    for (const auto& [t, keys] : window_type_keys)
      if (contains(keys, key))
        users.push_back(t);
    if (users.empty()) {
      // A typo of a key of another window type ('slid' in a tumbling window)?
      key_list all = children("operator[].window.");
      if (closest(key, allowed) || !closest(key, all))
        return std::nullopt;
      auto c = *closest(key, all);
      key_list owners;
      for (const auto& [t, keys] : window_type_keys)
        if (contains(keys, c))
          owners.push_back(t);
      return std::pair{"unknown key 'window." + std::string(key) + "'",
                       std::vector<std::string>{"hint: did you mean '" + c + "'? It is a key of " +
                                                plain_list(owners) + " windows"}};
    }
    return std::pair{"'" + std::string(key) + "' does not apply to a " + type + " window",
                     std::vector<std::string>{"hint: '" + std::string(key) + "' is a key of " +
                                              plain_list(users) + " windows"}};
  });
  bool ok = true;
  if (contains(allowed, "time")) {
    if (auto t = wr.choice("time", window_times))
      wd.processing_time = t->value == "processing";
    else if (w.get("time"))
      ok = false;
  }
  if (type == "tumbling" || type == "sliding") {
    auto size = wr.duration("size", reader::sign::positive, true);
    std::optional<milliseconds> slide;
    if (type == "sliding") {
      slide = wr.duration("slide", reader::sign::positive, true);
      ok = ok && slide.has_value();
    }
    auto offset = wr.duration("offset", reader::sign::any);
    ok = ok && size.has_value() && (offset.has_value() || !w.get("offset"));
    if (size && offset && (offset->count() >= size->count() ||
                           -offset->count() >= size->count())) {
      wr.fail(pos_of(*w.get("offset")),
              "window.offset must be smaller than window.size (" + format_duration(*size) +
                ") in magnitude, got " + quote(w.get("offset")->as_string()->get()));
      ok = false;
    }
    if (size)
      wd.size = *size;
    if (slide)
      wd.slide = *slide;
    if (offset)
      wd.offset = *offset;
  } else if (type == "session") {
    auto gap = wr.duration("gap", reader::sign::positive, true);
    ok = ok && gap.has_value();
    if (gap)
      wd.gap = *gap;
  } else if (type == "count") {
    const std::vector<std::string> hint = {
      "hint: a count window's size and slide are numbers of records: "
      "window = { type = \"count\", size = 100, slide = 10 }"};
    constexpr auto max = std::numeric_limits<std::int64_t>::max();
    if (!w.get("size")) {
      wr.missing("size", hint);
      ok = false;
    } else if (auto v = wr.integer("size", 1, max)) {
      wd.count_size = *v;
    } else {
      ok = false;
    }
    if (w.get("slide")) {
      if (auto v = wr.integer("slide", 1, max))
        wd.count_slide = *v;
      else
        ok = false;
    }
  }
  if (ok)
    wd.type = type;
}

/// The cross-checks of a window operator's keys: a trigger where none
/// applies, lateness where nothing is ever late.
void check_window_options(operator_def& op, reader& soft) {
  const auto& wd = op.window;
  if (wd.type.empty())
    return;
  if (wd.type == "count" && op.trigger_node) {
    soft.fail(pos_of(*op.trigger_node), "a count window has its own trigger",
              {"hint: for another trigger write window = { type = \"global\" } and the "
               "trigger"});
  }
  if (wd.type == "global" && !op.trigger_node) {
    soft.fail(pos_of(*op.window_node), "a global window needs a trigger, or it never fires",
              {"hint: add trigger = { type = \"count\", count = 100 } (purge = true to emit "
               "disjoint batches)"});
  }
  const bool event_time = !wd.processing_time && wd.type != "global" && wd.type != "count";
  if (event_time)
    return;
  const std::string kind = wd.processing_time ? "a processing-time" : "a " + wd.type;
  if (auto* n = soft.get("allowed_lateness"); n && op.allowed_lateness.count() > 0)
    soft.fail(pos_of(*n), "allowed_lateness applies to event-time windows only; " + kind +
                            " window is never late");
  if (op.late_output.node)
    soft.fail(pos_of(*op.late_output.node),
              "late_output applies to event-time windows only; " + kind +
                " window is never late");
}

/// The assigner, trigger and evictor a window operator's keys describe.
struct windowing {
  std::shared_ptr<const window::window_assigner> assigner;
  std::shared_ptr<const window::trigger> trigger; ///< null = the assigner's default
  std::shared_ptr<const window::evictor> evictor;
};

template <class T>
std::shared_ptr<const T> shared(T x) {
  return std::make_shared<const T>(std::move(x));
}

/// Builds the windowing of `op`; a broken window table (already reported)
/// gets a 1ms tumbling window as a stand-in so that the rest is checked.
expected<windowing> make_windowing(const operator_def& op) {
  const auto& wd = op.window;
  windowing out;
  auto take = [&out](auto made) -> expected<std::monostate> {
    if (!made)
      return made.error();
    out.assigner = shared(std::move(*made));
    return std::monostate{};
  };
  expected<std::monostate> ok = std::monostate{};
  if (wd.type == "sliding") {
    ok = wd.processing_time
           ? take(window::sliding_processing_time_windows::make(wd.size, wd.slide, wd.offset))
           : take(window::sliding_event_time_windows::make(wd.size, wd.slide, wd.offset));
  } else if (wd.type == "session") {
    ok = wd.processing_time ? take(window::processing_time_session_windows::make(wd.gap))
                            : take(window::event_time_session_windows::make(wd.gap));
  } else if (wd.type == "global" || wd.type == "count") {
    out.assigner = std::make_shared<const window::global_windows>();
  } else if (wd.type == "tumbling" && wd.processing_time) {
    ok = take(window::tumbling_processing_time_windows::make(wd.size, wd.offset));
  } else if (wd.type.empty()) {
    ok = take(window::tumbling_event_time_windows::make(milliseconds{1}));
  } else {
    ok = take(window::tumbling_event_time_windows::make(wd.size, wd.offset));
  }
  if (!ok)
    return ok.error();

  if (wd.type == "count") {
    // Flink's KeyedStream.countWindow(size[, slide]).
    auto count = window::count_trigger::make(wd.count_slide > 0 ? wd.count_slide
                                                                : wd.count_size);
    if (!count)
      return count.error();
    if (wd.count_slide > 0) {
      auto ev = window::count_evictor::make(wd.count_size);
      if (!ev)
        return ev.error();
      out.evictor = shared(std::move(*ev));
      out.trigger = shared(std::move(*count));
    } else {
      out.trigger = std::make_shared<const window::purging_trigger>(shared(std::move(*count)));
    }
    return out;
  }
  if (op.trigger && !op.trigger->type.empty()) {
    const auto& td = *op.trigger;
    if (td.type == "event_time") {
      out.trigger = std::make_shared<const window::event_time_trigger>();
    } else if (td.type == "processing_time") {
      out.trigger = std::make_shared<const window::processing_time_trigger>();
    } else {
      auto count = window::count_trigger::make(td.count);
      if (!count)
        return count.error();
      out.trigger = shared(std::move(*count));
    }
    if (td.purge)
      out.trigger = std::make_shared<const window::purging_trigger>(out.trigger);
  } else if (wd.type == "global") {
    // Reported by check_window_options; a never-firing trigger stands in.
    out.trigger = out.assigner->default_trigger();
  }
  return out;
}

void loader::parse_operator(const toml::table& t, std::size_t index) {
  auto& op = operators_.emplace_back();
  op.index = index;
  op.table = &t;
  op.notes = {context_note("operator", index, t)};
  reader r(*this, t, "", op.notes, op.ok);
  // Problems that leave the output schema alone are reported but do not stop
  // the operator from being built (with a stand-in value), so that its
  // expressions and its dependents are checked too.
  bool soft_ok = true;
  reader soft(*this, t, "", op.notes, soft_ok);
  if (auto v = r.string("name", true, true)) {
    op.name = v->value;
    op.name_node = v->node;
  }
  std::optional<std::string> type;
  if (auto ty = r.string("type", true)) {
    if (!contains(operator_types, ty->value)) {
      std::vector<std::string> extra;
      if (auto c = closest(ty->value, operator_types))
        extra.push_back("hint: did you mean " + quote(*c) + "?");
      extra.push_back("hint: operator types: " + quoted_list(operator_types));
      r.fail(pos_of(*ty->node), "unknown operator type '" + ty->value + "'",
             std::move(extra));
    } else {
      type = ty->value;
      if (*type == "filter")
        op.op = op_kind::filter;
      else if (*type == "select")
        op.op = op_kind::select;
      else if (*type == "map")
        op.op = op_kind::map;
      else if (*type == "window")
        op.op = op_kind::window;
      else if (*type == "running_count")
        op.op = op_kind::running_count;
      else if (*type == "split")
        op.op = op_kind::split;
      else if (*type == "explode")
        op.op = op_kind::explode;
      else
        op.op = op_kind::union_;
    }
  }

  key_list allowed;
  if (!type) {
    allowed = children("operator[].");
  } else {
    allowed = {"name", "type", "parallelism", *type == "union" ? "inputs" : "input"};
    for (const auto& k : operator_type_keys.at(*type))
      allowed.push_back(k);
  }
  r.check_keys(allowed, [&](std::string_view key)
                 -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    if (!type)
      return std::nullopt;
    std::string message =
      "'" + std::string(key) + "' does not apply to a " + *type + " operator";
    if (key == "input")
      return std::pair{message, std::vector<std::string>{
                                  "hint: a union reads inputs = [\"a\", \"b\"]"}};
    if (key == "inputs")
      return std::pair{message, std::vector<std::string>{
                                  "hint: only a union reads several inputs; write "
                                  "input = \"name\""}};
    key_list users;
    for (const auto& tn : operator_types)
      if (contains(operator_type_keys.at(tn), key))
        users.push_back(tn);
    if (users.empty())
      return std::nullopt;
    return std::pair{message, std::vector<std::string>{"hint: '" + std::string(key) +
                                                       "' is a key of " +
                                                       plain_list(users) + " operators"}};
  });

  if (!type || *type != "union") {
    if (auto in = r.string("input", type.has_value(), true)) {
      op.inputs.push_back(*in);
      op.inputs_node = in->node;
    }
  }
  if (!type || *type == "union") {
    if (auto ins = r.string_array("inputs", type.has_value(), type ? 2 : 0)) {
      op.inputs.insert(op.inputs.end(), ins->begin(), ins->end());
      op.inputs_node = r.get("inputs");
    }
  }
  if (auto v = soft.integer("parallelism", 1, max_key_groups)) {
    if (static_cast<std::size_t>(*v) > job_opts_.max_parallelism)
      soft.fail(pos_of(*soft.get("parallelism")),
                "parallelism must not exceed job.max_parallelism (" +
                  std::to_string(job_opts_.max_parallelism) + "), got " +
                  std::to_string(*v));
    else
      op.parallelism = static_cast<std::size_t>(*v);
  }
  if (!type)
    return;

  if (*type == "filter") {
    if (auto w = r.string("where", true, true))
      op.where = *w;
  } else if (*type == "select" || *type == "map") {
    op.fields_node = r.get("fields");
    if (auto f = r.string_table("fields", true, "an expression string"))
      op.fields = std::move(*f);
  } else if (*type == "split" || *type == "explode") {
    if (auto f = r.string("field", true, true))
      op.split_field = *f;
    if (*type == "split") {
      if (auto sep = r.string("separator", true, true))
        op.split_separator = *sep;
      if (auto k = r.boolean("keep_empty"))
        op.split_keep_empty = *k;
    }
  } else if (*type == "running_count") {
    op.key_by_node = r.get("key_by");
    if (auto kb = r.string_array("key_by", true, 1))
      op.key_by = std::move(*kb);
    if (auto o = r.string("output", false, true))
      op.count_output = *o;
  } else if (*type == "window") {
    op.key_by_node = r.get("key_by");
    if (auto kb = r.string_array("key_by"))
      op.key_by = std::move(*kb);
    op.window_node = r.get("window");
    if (auto* w = soft.subtable("window", true)) {
      // The type fixes the output schema (global and count windows number
      // their firings), so a broken type stops the operator's dependents.
      auto hard = r.sub(*w, "window");
      auto wt = hard.string("type", true);
      if (wt && !contains(window_types, wt->value)) {
        std::vector<std::string> extra;
        if (auto c = closest(wt->value, window_types))
          extra.push_back("hint: did you mean " + quote(*c) + "?");
        extra.push_back("hint: window types: " + quoted_list(window_types));
        hard.fail(pos_of(*wt->node), "unknown window type '" + wt->value + "'",
                  std::move(extra));
      } else if (wt) {
        auto wr = soft.sub(*w, "window");
        parse_window(op, *w, wt->value, wr);
      }
    }
    op.trigger_node = r.get("trigger");
    if (auto* tt = soft.subtable("trigger")) {
      auto tr = soft.sub(*tt, "trigger");
      tr.check_keys(children("operator[].trigger."));
      trigger_def td;
      td.node = op.trigger_node;
      if (auto ty = tr.choice("type", trigger_types, true)) {
        td.type = ty->value;
        if (td.type == "count") {
          if (!tt->get("count")) {
            tr.missing("count", {"hint: count is the number of records per firing: "
                                 "trigger = { type = \"count\", count = 100 }"});
            td.type.clear();
          } else if (auto c = tr.integer("count", 1, std::numeric_limits<std::int64_t>::max()))
            td.count = *c;
          else
            td.type.clear();
        } else if (auto* c = tt->get("count")) {
          tr.fail(pos_of(*c), "trigger.count applies to a count trigger only, not to " +
                                quote(td.type));
        }
      }
      if (auto pg = tr.boolean("purge"))
        td.purge = *pg;
      op.trigger = td;
    }
    op.aggregate_node = r.get("aggregate");
    if (auto a = r.string_table("aggregate", true, "a call string such as \"sum(bytes)\""))
      op.aggregates = std::move(*a);
    if (auto v = soft.duration("allowed_lateness"))
      op.allowed_lateness = *v;
    if (auto v = soft.string("late_output", false, true))
      op.late_output = *v;
    if (auto v = soft.boolean("local_aggregation"))
      op.local_aggregation = *v;
    check_window_options(op, soft);
  }
}

void loader::parse_sink(const toml::table& t, std::size_t index) {
  auto& s = sinks_.emplace_back();
  s.index = index;
  s.table = &t;
  s.notes = {context_note("sink", index, t)};
  reader r(*this, t, "", s.notes, s.ok);
  // Problems in presentation keys are reported but the sink is still built,
  // so that its expressions are checked too.
  bool soft_ok = true;
  reader soft(*this, t, "", s.notes, soft_ok);
  if (auto v = r.string("name", true, true)) {
    s.name = v->value;
    s.name_node = v->node;
  }
  std::optional<std::string> type;
  if (auto ty = r.string("type", true)) {
    if (!contains(sink_types, ty->value)) {
      std::vector<std::string> extra;
      if (auto c = closest(ty->value, sink_types))
        extra.push_back("hint: did you mean " + quote(*c) + "?");
      extra.push_back("hint: sink types: " + quoted_list(sink_types));
      r.fail(pos_of(*ty->node), "unknown sink type '" + ty->value + "'", std::move(extra));
    } else {
      type = ty->value;
      s.sink = *type == "file"        ? sink_kind::file
               : *type == "stdout"    ? sink_kind::stdout_
               : *type == "blackhole" ? sink_kind::blackhole
                                      : sink_kind::summary;
    }
  }
  key_list allowed;
  if (!type) {
    allowed = children("sink[].");
  } else {
    allowed = {"name", "input", "type"};
    for (const auto& k : sink_type_keys.at(*type))
      allowed.push_back(k);
  }
  r.check_keys(allowed, [&](std::string_view key)
                 -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    if (!type)
      return std::nullopt;
    key_list users;
    for (const auto& tn : sink_types)
      if (contains(sink_type_keys.at(tn), key))
        users.push_back(tn);
    if (users.empty())
      return std::nullopt;
    return std::pair{"'" + std::string(key) + "' does not apply to a " + *type + " sink",
                     std::vector<std::string>{"hint: '" + std::string(key) +
                                              "' is a key of " + plain_list(users) +
                                              " sinks"}};
  });
  if (auto v = r.string("input", true, true))
    s.input = *v;
  if (!type)
    return;
  if (*type == "file") {
    if (auto p = r.string("path", true, true))
      s.file.path = p->value;
    if (auto f = soft.choice("format", file_sink_formats))
      s.file.format =
        f->value == "csv" ? format::format_kind::csv : format::format_kind::jsonl;
  } else if (*type == "stdout") {
    soft.choice("format", stdout_formats);
  } else if (*type == "blackhole") {
    if (auto v = positive_rate(soft, "rate"))
      s.blackhole.rate = *v;
    if (auto v = soft.boolean("report"))
      s.blackhole.report = *v;
    if (auto v = soft.boolean("digest"))
      s.blackhole.digest = *v;
    if (auto v = r.string("latency_field", false, true)) {
      s.blackhole.latency_field = v->value;
      s.latency_node = v->node;
    }
  } else {
    if (auto v = soft.string("title"))
      s.title = v->value;
    if (auto g = r.string_array("group_by"))
      s.group_by = std::move(*g);
    bool aggregates_ok = false;
    s.aggregate_node = r.get("aggregate");
    if (auto a = r.string_table("aggregate", true, "a call string such as \"count(*)\"")) {
      s.aggregates = std::move(*a);
      aggregates_ok = true;
    }
    if (auto o = soft.string("order_by", false, true)) {
      s.order_by = *o;
      if (aggregates_ok) {
        key_list names;
        for (const auto& a : s.aggregates)
          names.push_back(a.name);
        for (const auto& g : s.group_by)
          names.push_back(g.value);
        if (!contains(names, o->value)) {
          std::vector<std::string> extra;
          if (auto c = closest(o->value, names))
            extra.push_back("hint: did you mean " + quote(*c) + "?");
          extra.push_back("hint: order by one of " + quoted_list(names));
          soft.fail(pos_of(*o->node),
                    "order_by " + quote(o->value) + " names no aggregate or group_by field",
                    std::move(extra));
          s.order_by = {}; // the API's default stands in
        }
      }
    }
    if (auto v = soft.boolean("ascending"))
      s.ascending = *v;
    if (auto v = soft.integer("limit", 1, std::numeric_limits<std::int64_t>::max()))
      s.limit = static_cast<std::size_t>(*v);
    if (auto* h = soft.subtable("highlight")) {
      auto hr = soft.sub(*h, "highlight");
      hr.check_keys(children("sink[].highlight."));
      if (auto w = hr.string("where", true, true)) {
        s.highlight_where = *w;
        s.highlight_label = w->value;
      }
      if (auto l = hr.string("label"))
        s.highlight_label = l->value;
    }
  }
}

void loader::check_names() {
  struct def {
    std::string name;
    pos at;
    char kind;
    std::size_t index;
    element* owner;
  };
  std::vector<def> defs;
  for (std::size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].name_node)
      defs.push_back({sources_[i].name, pos_of(*sources_[i].name_node), 's', i, &sources_[i]});
  for (std::size_t i = 0; i < operators_.size(); ++i) {
    auto& op = operators_[i];
    if (op.name_node)
      defs.push_back({op.name, pos_of(*op.name_node), 'o', i, &op});
    if (op.late_output.node)
      defs.push_back({op.late_output.value, pos_of(*op.late_output.node), 'l', i, &op});
  }
  for (std::size_t i = 0; i < sinks_.size(); ++i)
    if (sinks_[i].name_node)
      defs.push_back({sinks_[i].name, pos_of(*sinks_[i].name_node), 'k', i, &sinks_[i]});
  std::stable_sort(defs.begin(), defs.end(),
                   [](const def& a, const def& b) { return a.at < b.at; });
  for (const auto& d : defs) {
    auto it = names_.find(d.name);
    if (it != names_.end()) {
      auto notes = d.owner->notes;
      notes.push_back("note: first defined at " + location(it->second.at));
      report(d.at, "duplicate name " + quote(d.name), std::move(notes));
      d.owner->ok = false;
      continue;
    }
    names_.emplace(d.name, name_entry{d.name, d.at, d.kind, d.index});
    if (d.kind != 'k')
      stream_names_.push_back(d.name);
  }
}

void loader::resolve_inputs() {
  auto check = [this](element& e, const located& in) {
    auto it = names_.find(in.value);
    if (it == names_.end()) {
      auto notes = e.notes;
      if (auto c = closest(in.value, stream_names_))
        notes.push_back("hint: did you mean " + quote(*c) + "?");
      report(pos_of(*in.node), "input " + quote(in.value) + " names no stream",
            std::move(notes));
      e.ok = false;
    } else if (it->second.kind == 'k') {
      report(pos_of(*in.node), "input " + quote(in.value) + " names a sink, not a stream",
            e.notes);
      e.ok = false;
    }
  };
  for (auto& op : operators_)
    for (const auto& in : op.inputs)
      check(op, in);
  for (auto& s : sinks_)
    if (s.input.node)
      check(s, s.input);
}

std::vector<std::size_t> loader::order_operators() {
  const std::size_t n = operators_.size();
  // deps[i]: (operator index producing an input of i, that input)
  std::vector<std::vector<std::pair<std::size_t, const located*>>> deps(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& in : operators_[i].inputs) {
      auto it = names_.find(in.value);
      if (it != names_.end() && (it->second.kind == 'o' || it->second.kind == 'l'))
        deps[i].emplace_back(it->second.index, &in);
    }
  }
  enum class mark { fresh, active, done };
  std::vector<mark> marks(n, mark::fresh);
  std::vector<std::size_t> stack;
  std::vector<std::size_t> order;
  auto visit = [&](auto& self, std::size_t i) -> void {
    marks[i] = mark::active;
    stack.push_back(i);
    for (auto [j, in] : deps[i]) {
      if (marks[j] == mark::fresh) {
        self(self, j);
      } else if (marks[j] == mark::active) {
        // stack = [..., j, a, ..., i]: each reads the next and i reads j, so
        // data flows j -> i -> ... -> a -> j.
        auto it = std::find(stack.begin(), stack.end(), j);
        std::vector<std::size_t> flow(it, stack.end());
        std::reverse(flow.begin() + 1, flow.end());
        auto first = std::min_element(flow.begin(), flow.end());
        std::rotate(flow.begin(), first, flow.end());
        std::string text = "cycle: ";
        for (auto k : flow)
          text += operators_[k].name + " -> ";
        text += operators_[flow.front()].name;
        // Point at the input of the first operator that closes the cycle.
        const std::size_t start = flow.front();
        const std::size_t prev = flow.back();
        const located* at = nullptr;
        for (auto [p, pin] : deps[start])
          if (p == prev && !at)
            at = pin;
        report(at ? pos_of(*at->node) : pos_of(*operators_[start].table), text,
              operators_[start].notes);
        for (auto k : flow)
          operators_[k].ok = false;
      }
    }
    stack.pop_back();
    marks[i] = mark::done;
    order.push_back(i);
  };
  for (std::size_t i = 0; i < n; ++i)
    if (marks[i] == mark::fresh)
      visit(visit, i);
  return order;
}

void loader::report_api(element& e, const toml::node* at, std::string_view key,
                        const error& err) {
  pos p = at ? expression_pos(*at, err.offset) : pos_of(*e.table);
  std::string message = key.empty() ? err.message : std::string(key) + ": " + err.message;
  report(p, std::move(message), e.notes);
  e.ok = false;
}

bool loader::check_fields_exist(element& e, const schema& in,
                                const std::vector<located>& names, std::string_view key) {
  key_list fields;
  for (const auto& f : in.fields())
    fields.push_back(f.name);
  bool good = true;
  for (const auto& n : names) {
    if (in.index_of(n.value))
      continue;
    auto notes = e.notes;
    if (auto c = closest(n.value, fields))
      notes.push_back("hint: did you mean " + quote(*c) + "?");
    notes.push_back("hint: the input's fields are " + in.to_string());
    report(pos_of(*n.node), std::string(key) + ": unknown field " + quote(n.value),
          std::move(notes));
    good = false;
  }
  if (!good)
    e.ok = false;
  return good;
}

void loader::parse_generated_source(const toml::table& t, std::size_t index,
                                    const std::string& type) {
  auto& d = sources_.emplace_back();
  d.index = index;
  d.table = &t;
  d.generated = type;
  d.notes = {context_note("source", index, t)};
  reader r(*this, t, "", d.notes, d.ok);
  bool soft_ok = true;
  reader soft(*this, t, "", d.notes, soft_ok);
  const bool is_nexmark = type == "nexmark";
  const key_list& allowed = is_nexmark ? nexmark_source_keys : generator_source_keys;
  r.check_keys(allowed, [&](std::string_view key)
                 -> std::optional<std::pair<std::string, std::vector<std::string>>> {
    if (!contains(children("source[]."), key))
      return std::nullopt;
    key_list users;
    if (contains(generator_source_keys, key))
      users.push_back("generator");
    if (contains(nexmark_source_keys, key))
      users.push_back("nexmark");
    if (!contains(generated_source_only_keys, key))
      users.insert(users.begin(), "file");
    return std::pair{"'" + std::string(key) + "' does not apply to a " + type + " source",
                     std::vector<std::string>{"hint: '" + std::string(key) +
                                              "' is a key of " + plain_list(users) +
                                              " sources"}};
  });
  if (auto v = r.string("name", true, true)) {
    d.name = v->value;
    d.name_node = v->node;
  }
  constexpr auto unbounded = std::numeric_limits<std::int64_t>::max();
  std::optional<std::uint64_t> count;
  if (auto v = r.integer(is_nexmark ? "events" : "count", 0, unbounded))
    count = static_cast<std::uint64_t>(*v);
  std::uint64_t seed = 0;
  if (auto* n = r.get("seed")) {
    if (auto* i = n->as_integer())
      seed = static_cast<std::uint64_t>(i->get());
    else
      r.wrong_type(*n, "seed", "an integer");
  }
  double rate = 0;
  if (auto v = positive_rate(r, "rate"))
    rate = *v;
  std::string generation_time_field;
  if (auto v = r.string("generation_time_field", false, true))
    generation_time_field = v->value;
  if (auto v = soft.integer("parallelism", 1, max_key_groups)) {
    if (static_cast<std::size_t>(*v) > job_opts_.max_parallelism)
      soft.fail(pos_of(*soft.get("parallelism")),
                "parallelism must not exceed job.max_parallelism (" +
                  std::to_string(job_opts_.max_parallelism) + "), got " + std::to_string(*v));
    else
      d.generated_parallelism = static_cast<std::size_t>(*v);
  }
  watermark_options wm;
  if (auto* w = soft.subtable("watermark")) {
    auto wr = soft.sub(*w, "watermark");
    wr.check_keys(children("source[].watermark."));
    if (auto v = wr.duration("max_out_of_orderness"))
      wm.max_out_of_orderness = *v;
    if (auto v = wr.duration("idle_timeout"))
      wm.idle_timeout = *v;
  }
  if (is_nexmark) {
    auto& spec = d.nexmark;
    spec.events = count;
    spec.generator.seed = seed;
    spec.rate = rate;
    spec.generation_time_field = generation_time_field;
    spec.watermark = wm;
    if (auto v = r.choice("stream", nexmark_streams))
      spec.stream = v->value == "bid"       ? nexmark_stream::bid
                    : v->value == "auction" ? nexmark_stream::auction
                                            : nexmark_stream::person;
    if (auto v = r.integer("event_rate", 1, unbounded))
      spec.generator.event_rate = *v;
    if (auto* n = r.get("base_time")) {
      if (auto* i = n->as_integer()) {
        spec.generator.base_time = i->get();
      } else if (auto* str = n->as_string()) {
        if (auto ms = parse_iso8601(str->get()))
          spec.generator.base_time = *ms;
        else
          r.fail(pos_of(*n), "base_time must be an ISO-8601 time, got " + quote(str->get()),
                 {"hint: write \"2015-07-15T00:00:00Z\" or an integer of ms since the epoch"});
      } else {
        r.wrong_type(*n, "base_time", "an ISO-8601 string or an integer of ms");
      }
    }
    return;
  }
  auto& spec = d.generator;
  spec.count = count;
  spec.seed = seed;
  spec.rate = rate;
  spec.generation_time_field = generation_time_field;
  spec.watermark = wm;
  d.fields_node = r.get("fields");
  if (auto f = r.string_table("fields", true, "an expression string")) {
    d.generator_fields = std::move(*f);
    for (const auto& e : d.generator_fields)
      spec.fields.emplace_back(e.name, e.text);
  }
  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(children("source[].event_time."));
    if (auto f = er.string("field", true, true)) {
      spec.event_time_field = f->value;
      d.event_time_node = f->node;
      if (!d.generator_fields.empty()) {
        key_list names;
        for (const auto& e : d.generator_fields)
          names.push_back(e.name);
        if (!contains(names, f->value)) {
          std::vector<std::string> extra;
          if (auto c = closest(f->value, names))
            extra.push_back("hint: did you mean " + quote(*c) + "?");
          extra.push_back("hint: the fields are " + plain_list(names));
          er.fail(pos_of(*f->node),
                  "event_time.field " + quote(f->value) + " is not a field of the generator",
                  std::move(extra));
        }
      }
    }
  }
}

void loader::build_generated_source(job& j, source_def& s) {
  const operator_options oo{s.name, s.generated_parallelism};
  if (s.generated == "nexmark") {
    auto r = j.from_nexmark(s.nexmark, oo);
    if (!r)
      report_api(s, s.table->get("generation_time_field"), "", r.error());
    return;
  }
  auto r = j.from_generator(s.generator, oo);
  if (r)
    return;
  // Point at every field expression that does not compile.
  bool found = false;
  for (const auto& f : s.generator_fields) {
    auto c = expr::compile(f.text, *generator_input_schema(),
                           expr::compile_options{s.generator.seed});
    if (!c) {
      report_api(s, f.node, "fields." + f.name, c.error());
      found = true;
    }
  }
  if (found)
    return;
  const auto& msg = r.error().message;
  const toml::node* at = nullptr;
  if (msg.rfind("event_time", 0) == 0)
    at = s.event_time_node;
  else if (msg.rfind("generation_time_field", 0) == 0)
    at = s.table->get("generation_time_field");
  report_api(s, at, "", error{r.error().code, msg, error::npos});
}

void loader::build_operator(job& j, operator_def& op) {
  if (!op.ok || !op.op)
    return;
  std::vector<data_stream> ins;
  for (const auto& in : op.inputs) {
    auto s = j.stream(in.value);
    if (!s)
      return; // its producer is broken and already reported
    ins.push_back(*s);
  }
  if (ins.empty())
    return;
  const operator_options oo{op.name, op.parallelism};
  const auto& in = ins.front();
  const auto& input_schema = in.output_schema();
  switch (*op.op) {
    case op_kind::filter: {
      auto r = in.filter(std::string_view{op.where.value}, oo);
      if (!r)
        report_api(op, op.where.node, "where", r.error());
      break;
    }
    case op_kind::select:
    case op_kind::map: {
      std::vector<std::pair<std::string, std::string>> fs;
      for (const auto& f : op.fields)
        fs.emplace_back(f.name, f.text);
      auto r = *op.op == op_kind::select ? in.select(std::move(fs), oo)
                                         : in.map(std::move(fs), oo);
      if (r)
        break;
      // The API reports the first problem; compile each expression alone to
      // point at every broken one.
      bool found = false;
      for (const auto& f : op.fields) {
        if (auto c = expr::compile(f.text, *input_schema); !c) {
          report_api(op, f.node, "fields." + f.name, c.error());
          found = true;
        }
      }
      if (!found)
        report_api(op, op.fields_node, "fields",
                   error{r.error().code, r.error().message, error::npos});
      break;
    }
    case op_kind::window: {
      if (!check_fields_exist(op, *input_schema, op.key_by, "key_by"))
        return;
      std::vector<std::string> keys;
      for (const auto& k : op.key_by)
        keys.push_back(k.value);
      auto keyed = in.key_by(keys);
      if (!keyed) {
        report_api(op, op.key_by_node, "key_by",
                   error{keyed.error().code, keyed.error().message, error::npos});
        return;
      }
      auto w = make_windowing(op);
      if (!w) {
        report_api(op, op.window_node, "window",
                   error{w.error().code, w.error().message, error::npos});
        return;
      }
      const auto& shared = w->assigner;
      std::vector<window::aggregate_spec> aggs;
      for (const auto& a : op.aggregates)
        aggs.push_back(window::aggregate_spec{a.name, a.text});
      auto r = keyed->window(shared, aggs,
                             window_options{op.allowed_lateness, op.late_output.value,
                                            w->trigger, w->evictor, op.local_aggregation},
                             oo);
      if (r)
        break;
      bool found = false;
      for (const auto& a : op.aggregates) {
        window::window_operator_spec spec{keys, shared, {{a.name, a.text}},
                                          op.allowed_lateness, w->trigger, w->evictor};
        if (auto p = window::window_plan::make(input_schema, std::move(spec)); !p) {
          report_api(op, a.node, "", p.error()); // the message names the aggregate
          found = true;
        }
      }
      if (!found)
        report_api(op, nullptr, "", r.error());
      break;
    }
    case op_kind::split:
    case op_kind::explode: {
      auto r = *op.op == op_kind::split
                 ? in.split(op.split_field.value, op.split_separator.value,
                            op.split_keep_empty, oo)
                 : in.explode(op.split_field.value, oo);
      if (!r)
        report_api(op, op.split_field.node, "field",
                   error{r.error().code, r.error().message, error::npos});
      break;
    }
    case op_kind::running_count: {
      if (!check_fields_exist(op, *input_schema, op.key_by, "key_by"))
        return;
      std::vector<std::string> keys;
      for (const auto& k : op.key_by)
        keys.push_back(k.value);
      auto keyed = in.key_by(keys);
      if (!keyed) {
        report_api(op, op.key_by_node, "key_by",
                   error{keyed.error().code, keyed.error().message, error::npos});
        return;
      }
      auto field_name = op.count_output.value.empty() ? std::string{"count"}
                                                      : op.count_output.value;
      auto r = keyed->count(field_name, oo);
      if (!r)
        report_api(op, op.count_output.node, "output",
                   error{r.error().code, r.error().message, error::npos});
      break;
    }
    case op_kind::union_: {
      std::vector<data_stream> rest(ins.begin() + 1, ins.end());
      auto r = in.union_with(rest, oo);
      if (!r)
        report_api(op, op.inputs_node, "inputs",
                   error{r.error().code, r.error().message, error::npos});
      break;
    }
  }
}

void loader::build_sink(job& j, sink_def& s) {
  if (!s.ok || !s.sink)
    return;
  auto in = j.stream(s.input.value);
  if (!in)
    return;
  const operator_options oo{s.name, 0};
  switch (*s.sink) {
    case sink_kind::file: {
      auto r = in->sink_to_file(s.file, oo);
      if (!r)
        report_api(s, nullptr, "", r.error());
      break;
    }
    case sink_kind::stdout_:
      in->print(oo);
      break;
    case sink_kind::blackhole: {
      auto r = in->sink_to_blackhole(s.blackhole, oo);
      if (!r)
        report_api(s, s.latency_node, "", without_prefix(r.error(), "blackhole: "));
      break;
    }
    case sink_kind::summary: {
      const auto& input_schema = in->output_schema();
      if (!check_fields_exist(s, *input_schema, s.group_by, "group_by"))
        return;
      summary_sink_spec spec;
      spec.title = s.title;
      for (const auto& g : s.group_by)
        spec.group_by.push_back(g.value);
      for (const auto& a : s.aggregates)
        spec.aggregates.push_back(window::aggregate_spec{a.name, a.text});
      spec.order_by = s.order_by.value;
      spec.ascending = s.ascending;
      spec.limit = s.limit;
      spec.highlight_label = s.highlight_label;
      spec.highlight_where = s.highlight_where.value;
      auto r = in->sink_to_summary(spec, oo);
      if (r)
        break;
      // Find which expression the API tripped on, and any others: check each
      // aggregate alone, then the highlight with the first aggregate.
      bool found = false;
      bool first_ok = true;
      for (const auto& a : s.aggregates) {
        summary_sink_spec one;
        one.group_by = spec.group_by;
        one.aggregates = {window::aggregate_spec{a.name, a.text}};
        if (auto f = make_summary_sink_factory(input_schema, one); !f) {
          report_api(s, a.node, "", without_prefix(f.error(), "summary: "));
          found = true;
          first_ok = first_ok && &a != &s.aggregates.front();
        }
      }
      if (first_ok && s.highlight_where.node) {
        summary_sink_spec first;
        first.group_by = spec.group_by;
        first.aggregates = {spec.aggregates.front()};
        first.highlight_where = spec.highlight_where;
        if (auto f = make_summary_sink_factory(input_schema, first); !f) {
          auto err = without_prefix(f.error(), "summary: ");
          if (err.message.rfind("highlight_where: ", 0) == 0 ||
              err.message.rfind("highlight_where ", 0) == 0)
            err.message.erase(0, std::string_view{"highlight_where"}.size() + 1);
          report_api(s, s.highlight_where.node, "highlight.where", err);
          found = true;
        }
      }
      if (!found)
        report_api(s, nullptr, "", without_prefix(r.error(), "summary: "));
      break;
    }
  }
}

void loader::build() {
  job_ = std::make_unique<job>(job_opts_);
  auto order = order_operators();
  for (auto& s : sources_) {
    if (!s.ok)
      continue;
    if (!s.generated.empty()) {
      build_generated_source(*job_, s);
      continue;
    }
    file_source_spec spec;
    spec.path = s.path.value;
    spec.decoder = s.decoder;
    spec.event_time_field = s.event_time_field.value;
    spec.watermark = s.watermark;
    spec.partition_by = s.partition_by.value;
    spec.partitions = s.partitions;
    spec.processing_time_field = s.processing_time_field.value;
    auto r = job_->from_file(std::move(spec), operator_options{s.name, 1});
    if (!r && !s.file_error)
      report_api(s, nullptr, "", r.error());
  }
  for (auto i : order)
    build_operator(*job_, operators_[i]);
  for (auto& s : sinks_)
    build_sink(*job_, s);
  if (const auto& inj = job_opts_.inject_failure; inj && inject_failure_node_) {
    bool found = false;
    for (const auto& n : job_->graph()->nodes)
      found = found || n.name == inj->operator_name;
    if (!found)
      report(pos_of(*inject_failure_node_),
             "job.inject_failure.operator " + quote(inj->operator_name) +
               " names no operator, source or sink",
             {});
  }
}

} // namespace

std::optional<milliseconds> parse_duration(std::string_view text) noexcept {
  return parse_duration_impl(text, false);
}

std::optional<milliseconds> parse_signed_duration(std::string_view text) noexcept {
  return parse_duration_impl(text, true);
}

expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline(std::string_view toml_text, const std::string& path,
              const load_options& opts) {
  loader l(toml_text, path, opts);
  return l.run();
}

expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline_file(const std::string& path, const load_options& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::vector<diagnostic>{
      diagnostic{path, 0, 0, "cannot read pipeline file: it is a directory", {}}};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    return std::vector<diagnostic>{
      diagnostic{path, 0, 0, "cannot read pipeline file: " + std::string(std::strerror(e)),
                 {}}};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_pipeline(text.str(), path, opts);
}

const std::vector<std::string>& known_keys() {
  return key_catalogue;
}

} // namespace weir::config
