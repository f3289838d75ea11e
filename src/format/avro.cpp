// SPDX-License-Identifier: Apache-2.0
// Avro writer schemas, their resolution against the declared fields, and
// datum decoding (see avro.hpp).
#include "avro.hpp"

#ifdef WEIR_HAVE_CURL
#include "schema_registry.hpp"
#endif

#include <avro.h>
#include <simdjson.h>

#include <cmath>
#include <stdexcept>
#include <cstring>
#include <map>
#include <optional>

namespace weir::format::avro {

namespace {

using kind = node::kind;
using logical = node::logical;

error invalid(std::string msg) { return make_error(errc::invalid_argument, std::move(msg)); }

std::optional<kind> primitive(std::string_view s) {
  if (s == "null") return kind::null_type;
  if (s == "boolean") return kind::boolean;
  if (s == "int") return kind::int_type;
  if (s == "long") return kind::long_type;
  if (s == "float") return kind::float_type;
  if (s == "double") return kind::double_type;
  if (s == "bytes") return kind::bytes;
  if (s == "string") return kind::string;
  return std::nullopt;
}

std::string_view kind_name(kind k) {
  switch (k) {
    case kind::null_type: return "null";
    case kind::boolean: return "boolean";
    case kind::int_type: return "int";
    case kind::long_type: return "long";
    case kind::float_type: return "float";
    case kind::double_type: return "double";
    case kind::bytes: return "bytes";
    case kind::string: return "string";
    case kind::record: return "record";
    case kind::enum_type: return "enum";
    case kind::array: return "array";
    case kind::map: return "map";
    case kind::union_type: return "union";
    case kind::fixed: return "fixed";
  }
  return "?";
}

std::string describe(const node& n) {
  switch (n.lt) {
    case logical::timestamp_millis: return "timestamp-millis";
    case logical::timestamp_micros: return "timestamp-micros";
    case logical::date: return "date";
    case logical::decimal: return "decimal";
    case logical::uuid: return "uuid";
    case logical::time_millis: return "time-millis";
    case logical::time_micros: return "time-micros";
    case logical::none: break;
  }
  if (n.k == kind::union_type) {
    std::string out = "[";
    for (std::size_t i = 0; i < n.children.size(); ++i)
      out += (i ? ", " : "") + describe(*n.children[i]);
    return out + "]";
  }
  return std::string{kind_name(n.k)};
}

// Builds the node tree from the schema's JSON (already checked by avro-c).
struct builder {
  std::vector<std::unique_ptr<node>>& nodes;
  std::map<std::string, const node*, std::less<>> named;
  int depth = 0;

  node* make() { return nodes.emplace_back(std::make_unique<node>()).get(); }

  expected<const node*> lookup(std::string_view name, const std::string& ns) {
    if (name.find('.') == std::string_view::npos && !ns.empty())
      if (auto it = named.find(ns + "." + std::string{name}); it != named.end())
        return it->second;
    if (auto it = named.find(name); it != named.end())
      return it->second;
    return invalid("invalid Avro schema: unknown type '" + std::string{name} + "'");
  }

  static void set_logical(node& n, simdjson::dom::object o) {
    std::string_view lt;
    if (o["logicalType"].get(lt) != simdjson::SUCCESS)
      return;
    auto base = n.k;
    auto is_int = base == kind::int_type, is_long = base == kind::long_type;
    if (lt == "timestamp-millis" && is_long) n.lt = logical::timestamp_millis;
    else if (lt == "local-timestamp-millis" && is_long) n.lt = logical::timestamp_millis;
    else if (lt == "timestamp-micros" && is_long) n.lt = logical::timestamp_micros;
    else if (lt == "local-timestamp-micros" && is_long) n.lt = logical::timestamp_micros;
    else if (lt == "date" && is_int) n.lt = logical::date;
    else if (lt == "time-millis" && is_int) n.lt = logical::time_millis;
    else if (lt == "time-micros" && is_long) n.lt = logical::time_micros;
    else if (lt == "uuid" && base == kind::string) n.lt = logical::uuid;
    else if (lt == "decimal" && (base == kind::bytes || base == kind::fixed)) {
      std::int64_t p = 0, s = 0;
      if (o["precision"].get(p) != simdjson::SUCCESS || p <= 0)
        return; // an invalid logical type is ignored (the specification's rule)
      if (o["scale"].get(s) != simdjson::SUCCESS)
        s = 0;
      if (s < 0 || s > p)
        return;
      n.lt = logical::decimal;
      n.precision = static_cast<int>(p);
      n.scale = static_cast<int>(s);
    }
  }

  static std::string full_name(simdjson::dom::object o, const std::string& ns,
                               std::string& new_ns) {
    std::string_view name, space;
    if (o["name"].get(name) != simdjson::SUCCESS)
      name = {}; // avro-c refused a named type without a name already
    std::string full{name};
    if (full.find('.') != std::string::npos) {
      new_ns = full.substr(0, full.rfind('.'));
      return full;
    }
    if (o["namespace"].get(space) == simdjson::SUCCESS)
      new_ns = std::string{space};
    else
      new_ns = ns;
    return new_ns.empty() ? full : new_ns + "." + full;
  }

  // A named type (record, enum, fixed): its full name, and registered
  // under it and under its short name for later references.
  void name_type(node* n, simdjson::dom::object o, const std::string& ns,
                 std::string& new_ns) {
    n->name = full_name(o, ns, new_ns);
    named[n->name] = n;
    if (auto dot = n->name.rfind('.'); dot != std::string::npos)
      named.emplace(n->name.substr(dot + 1), n);
  }

  expected<const node*> build(simdjson::dom::element e, const std::string& ns) {
    if (++depth > 256)
      return invalid("invalid Avro schema: nested deeper than 256 levels");
    struct guard {
      int& d;
      ~guard() { --d; }
    } g{depth};
    std::string_view s;
    if (e.get(s) == simdjson::SUCCESS) {
      if (auto k = primitive(s)) {
        auto* n = make();
        n->k = *k;
        return n;
      }
      return lookup(s, ns);
    }
    simdjson::dom::array arr;
    if (e.get(arr) == simdjson::SUCCESS) {
      auto* n = make();
      n->k = kind::union_type;
      for (auto b : arr) {
        auto c = build(b, ns);
        if (!c)
          return c;
        n->children.push_back(*c);
      }
      return n;
    }
    simdjson::dom::object o;
    if (e.get(o) != simdjson::SUCCESS)
      return invalid("invalid Avro schema: a type must be a string, an array or an object");
    simdjson::dom::element te;
    if (o["type"].get(te) != simdjson::SUCCESS)
      return invalid("invalid Avro schema: an object without \"type\"");
    std::string_view t;
    if (te.get(t) != simdjson::SUCCESS) {
      auto inner = build(te, ns);
      return inner;
    }
    if (auto k = primitive(t)) {
      auto* n = make();
      n->k = *k;
      set_logical(*n, o);
      return n;
    }
    auto* n = make();
    std::string new_ns = ns;
    if (t == "record" || t == "error") {
      n->k = kind::record;
      name_type(n, o, ns, new_ns);
      simdjson::dom::array fields;
      if (o["fields"].get(fields) != simdjson::SUCCESS)
        return invalid("invalid Avro schema: record '" + n->name + "' without fields");
      for (auto f : fields) {
        std::string_view fname;
        simdjson::dom::element ft;
        if (f["name"].get(fname) != simdjson::SUCCESS || f["type"].get(ft) != simdjson::SUCCESS)
          return invalid("invalid Avro schema: a field of '" + n->name
                         + "' without a name or type");
        auto c = build(ft, new_ns);
        if (!c)
          return c;
        n->names.emplace_back(fname);
        n->children.push_back(*c);
      }
    } else if (t == "enum") {
      n->k = kind::enum_type;
      name_type(n, o, ns, new_ns);
      simdjson::dom::array symbols;
      if (o["symbols"].get(symbols) != simdjson::SUCCESS)
        return invalid("invalid Avro schema: enum '" + n->name + "' without symbols");
      for (auto sym : symbols) {
        std::string_view v;
        if (sym.get(v) != simdjson::SUCCESS)
          return invalid("invalid Avro schema: an enum symbol is not a string");
        n->names.emplace_back(v);
      }
    } else if (t == "fixed") {
      n->k = kind::fixed;
      name_type(n, o, ns, new_ns);
      if (o["size"].get(n->size) != simdjson::SUCCESS || n->size < 0)
        return invalid("invalid Avro schema: fixed '" + n->name + "' without a size");
      set_logical(*n, o);
    } else if (t == "array" || t == "map") {
      n->k = t == "array" ? kind::array : kind::map;
      simdjson::dom::element inner;
      if (o[t == "array" ? "items" : "values"].get(inner) != simdjson::SUCCESS)
        return invalid("invalid Avro schema: " + std::string{t} + " without its "
                       + (t == "array" ? "items" : "values"));
      auto c = build(inner, ns);
      if (!c)
        return c;
      n->children.push_back(*c);
    } else {
      return lookup(t, ns);
    }
    return n;
  }
};

// Whether a value of writer type `w` can be read into a column of type `t`;
// the reason when not.
std::optional<std::string> incompatible(const node& w, type_id t) {
  if (w.k == kind::union_type) {
    for (const auto* b : w.children)
      if (auto why = incompatible(*b, t))
        return why;
    return std::nullopt;
  }
  bool ok = false;
  switch (w.k) {
    case kind::null_type: ok = true; break;
    case kind::boolean: ok = t == type_id::boolean; break;
    case kind::int_type:
    case kind::long_type:
      if (w.lt == logical::timestamp_millis || w.lt == logical::timestamp_micros
          || w.lt == logical::date)
        ok = t == type_id::timestamp || t == type_id::int64;
      else
        ok = t == type_id::int64 || t == type_id::float64;
      break;
    case kind::float_type:
    case kind::double_type: ok = t == type_id::float64; break;
    case kind::bytes:
    case kind::fixed:
      if (w.lt == logical::decimal)
        ok = t == type_id::float64 || t == type_id::string;
      else
        ok = t == type_id::string && w.k == kind::bytes;
      break;
    case kind::string:
    case kind::enum_type: ok = t == type_id::string; break;
    case kind::record:
    case kind::array:
    case kind::map: ok = t == type_id::string; break;
    case kind::union_type: break;
  }
  if (ok)
    return std::nullopt;
  std::string why = "the writer's " + describe(w) + " cannot be read as " + std::string{to_string(t)};
  if (t != type_id::string && (w.k == kind::record || w.k == kind::array || w.k == kind::map))
    why += " (declare it a string: it is read as JSON text)";
  return why;
}

constexpr int max_depth = 512;

// A bounded cursor over one datum.
struct cursor {
  const unsigned char* begin;
  const unsigned char* p;
  const unsigned char* end;
  std::string* reason;
  int depth = 0;

  std::size_t at() const { return static_cast<std::size_t>(p - begin); }

  bool fail(std::string what) {
    if (reason->empty())
      *reason = std::move(what);
    return false;
  }
  bool truncated(std::string_view what) {
    return fail("truncated datum: " + std::string{what} + " at byte " + std::to_string(at()));
  }

  bool read_long(std::int64_t& out, int max_bytes = 10) {
    std::uint64_t v = 0;
    for (int shift = 0, i = 0; i < max_bytes; ++i, shift += 7) {
      if (p == end)
        return truncated("varint");
      const unsigned b = *p++;
      v |= static_cast<std::uint64_t>(b & 0x7F) << shift;
      if ((b & 0x80) == 0) {
        out = static_cast<std::int64_t>((v >> 1) ^ (~(v & 1) + 1));
        return true;
      }
    }
    return fail("invalid varint at byte " + std::to_string(at()) + ": longer than "
                + std::to_string(max_bytes) + " bytes");
  }
  bool read_int(std::int64_t& out) {
    if (!read_long(out, 5))
      return false;
    if (out < INT32_MIN || out > INT32_MAX)
      return fail("int out of range at byte " + std::to_string(at()));
    return true;
  }
  bool read_len(std::int64_t& n, std::string_view what) {
    if (!read_long(n))
      return false;
    if (n < 0)
      return fail("negative " + std::string{what} + " length at byte " + std::to_string(at()));
    if (static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(end - p))
      return truncated(what);
    return true;
  }
  bool read_bytes(std::string_view& out, std::string_view what) {
    std::int64_t n = 0;
    if (!read_len(n, what))
      return false;
    out = {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
    p += n;
    return true;
  }
  bool read_fixed(std::string_view& out, std::int64_t n) {
    if (static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(end - p))
      return truncated("fixed");
    out = {reinterpret_cast<const char*>(p), static_cast<std::size_t>(n)};
    p += n;
    return true;
  }
  bool read_raw(void* dst, std::size_t n, std::string_view what) {
    if (static_cast<std::size_t>(end - p) < n)
      return truncated(what);
    std::memcpy(dst, p, n);
    p += n;
    return true;
  }
  bool read_branch(const node& u, const node*& out) {
    std::int64_t i = 0;
    if (!read_long(i))
      return false;
    if (i < 0 || static_cast<std::uint64_t>(i) >= u.children.size())
      return fail("union branch " + std::to_string(i) + " out of range (" +
                  std::to_string(u.children.size()) + " branches) at byte "
                  + std::to_string(at()));
    out = u.children[static_cast<std::size_t>(i)];
    return true;
  }
  // One block header of an array or map: the item count (0 ends), whose
  // bound keeps a forged count from looping: every item takes at least one
  // byte unless its type may be empty, then at most 2^20 items a block.
  bool read_block(std::int64_t& count, bool empty_items) {
    if (!read_long(count))
      return false;
    if (count < 0) {
      if (count == INT64_MIN)
        return fail("invalid block count at byte " + std::to_string(at()));
      count = -count;
      std::int64_t size = 0;
      if (!read_len(size, "block"))
        return false;
    }
    const auto limit = empty_items ? std::uint64_t{1} << 20
                                   : static_cast<std::uint64_t>(end - p);
    if (static_cast<std::uint64_t>(count) > limit)
      return empty_items ? fail("block of " + std::to_string(count) + " items at byte "
                                + std::to_string(at()) + " exceeds 2^20")
                         : truncated("block");
    return true;
  }
};

bool may_be_empty(const node& n, int depth = 0) {
  if (depth > 64)
    return true;
  switch (n.k) {
    case kind::null_type: return true;
    case kind::fixed: return n.size == 0;
    case kind::record:
      for (const auto* c : n.children)
        if (!may_be_empty(*c, depth + 1))
          return false;
      return true;
    default: return false;
  }
}

struct depth_guard {
  cursor& c;
  bool ok;
  explicit depth_guard(cursor& cu) : c(cu), ok(++cu.depth <= max_depth) {
    if (!ok)
      c.fail("datum nested deeper than " + std::to_string(max_depth) + " levels");
  }
  ~depth_guard() { --c.depth; }
};

void append_json_string(std::string_view s, std::string& out) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 0xF];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

// Bytes as a JSON string of code points U+0000..U+00FF (Avro's JSON
// encoding of bytes and fixed).
void append_json_bytes(std::string_view s, std::string& out) {
  std::string latin;
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      latin += ch;
    } else {
      latin += static_cast<char>(0xC0 | (c >> 6));
      latin += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  append_json_string(latin, out);
}

void append_double(double d, std::string& out) {
  if (!std::isfinite(d)) {
    out += "null";
    return;
  }
  char buf[32];
  auto [e, ec] = std::to_chars(buf, buf + sizeof buf, d);
  out.append(buf, e);
}

// The exact text of a decimal: two's-complement big-endian `raw` scaled by
// 10^-scale. False when wider than 16 bytes.
__extension__ typedef __int128 int128;
__extension__ typedef unsigned __int128 uint128;

bool decimal_text(std::string_view raw, int scale, std::string& out) {
  if (raw.size() > 16)
    return false;
  int128 v = 0;
  if (!raw.empty() && (static_cast<unsigned char>(raw[0]) & 0x80))
    v = -1;
  for (const char ch : raw)
    v = static_cast<int128>((static_cast<uint128>(v) << 8)
                              | static_cast<unsigned char>(ch));
  const bool neg = v < 0;
  uint128 u = neg ? -static_cast<uint128>(v) : static_cast<uint128>(v);
  std::string digits;
  do {
    digits += static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  } while (u != 0);
  while (static_cast<int>(digits.size()) <= scale)
    digits += '0';
  std::string text(digits.rbegin(), digits.rend());
  if (scale > 0)
    text.insert(text.size() - static_cast<std::size_t>(scale), ".");
  out = (neg ? "-" : "") + text;
  return true;
}

double decimal_value(std::string_view raw, int scale) {
  double v = 0;
  const bool neg = !raw.empty() && (static_cast<unsigned char>(raw[0]) & 0x80);
  for (const char ch : raw)
    v = v * 256 + static_cast<unsigned char>(neg ? ~static_cast<unsigned char>(ch) : ch);
  if (neg)
    v = -(v + 1);
  return v / std::pow(10.0, scale);
}

bool skip(cursor& c, const node& n);

bool skip_items(cursor& c, const node& item, bool map) {
  std::int64_t count = 0;
  const bool empty = !map && may_be_empty(item);
  for (;;) {
    if (!c.read_block(count, empty))
      return false;
    if (count == 0)
      return true;
    for (std::int64_t i = 0; i < count; ++i) {
      std::string_view key;
      if (map && !c.read_bytes(key, "map key"))
        return false;
      if (!skip(c, item))
        return false;
    }
  }
}

bool skip(cursor& c, const node& n) {
  depth_guard g{c};
  if (!g.ok)
    return false;
  std::int64_t v = 0;
  std::string_view s;
  switch (n.k) {
    case kind::null_type: return true;
    case kind::boolean: {
      unsigned char b = 0;
      if (!c.read_raw(&b, 1, "boolean"))
        return false;
      return b <= 1 || c.fail("invalid boolean byte " + std::to_string(b));
    }
    case kind::int_type: return c.read_int(v);
    case kind::long_type: return c.read_long(v);
    case kind::float_type: return c.read_fixed(s, 4);
    case kind::double_type: return c.read_fixed(s, 8);
    case kind::bytes:
    case kind::string: return c.read_bytes(s, kind_name(n.k));
    case kind::fixed: return c.read_fixed(s, n.size);
    case kind::enum_type:
      if (!c.read_int(v))
        return false;
      return (v >= 0 && static_cast<std::uint64_t>(v) < n.names.size())
             || c.fail("enum index " + std::to_string(v) + " out of range");
    case kind::record:
      for (const auto* f : n.children)
        if (!skip(c, *f))
          return false;
      return true;
    case kind::array: return skip_items(c, *n.children[0], false);
    case kind::map: return skip_items(c, *n.children[0], true);
    case kind::union_type: {
      const node* b = nullptr;
      return c.read_branch(n, b) && skip(c, *b);
    }
  }
  return false;
}

// The value as JSON text (nested values read into a string field).
bool to_json(cursor& c, const node& n, std::string& out) {
  depth_guard g{c};
  if (!g.ok)
    return false;
  std::int64_t v = 0;
  std::string_view s;
  switch (n.k) {
    case kind::null_type: out += "null"; return true;
    case kind::boolean: {
      unsigned char b = 0;
      if (!c.read_raw(&b, 1, "boolean"))
        return false;
      if (b > 1)
        return c.fail("invalid boolean byte " + std::to_string(b));
      out += b ? "true" : "false";
      return true;
    }
    case kind::int_type:
    case kind::long_type:
      if (!(n.k == kind::int_type ? c.read_int(v) : c.read_long(v)))
        return false;
      out += std::to_string(v);
      return true;
    case kind::float_type: {
      float f = 0;
      if (!c.read_raw(&f, 4, "float"))
        return false;
      append_double(f, out);
      return true;
    }
    case kind::double_type: {
      double d = 0;
      if (!c.read_raw(&d, 8, "double"))
        return false;
      append_double(d, out);
      return true;
    }
    case kind::string:
      if (!c.read_bytes(s, "string"))
        return false;
      if (internal::first_invalid_utf8(s) != s.size())
        return c.fail("invalid UTF-8 in a string at byte " + std::to_string(c.at()));
      append_json_string(s, out);
      return true;
    case kind::bytes:
    case kind::fixed:
      if (!(n.k == kind::bytes ? c.read_bytes(s, "bytes") : c.read_fixed(s, n.size)))
        return false;
      if (n.lt == logical::decimal) {
        std::string text;
        if (!decimal_text(s, n.scale, text))
          return c.fail("decimal wider than 16 bytes");
        append_json_string(text, out);
      } else {
        append_json_bytes(s, out);
      }
      return true;
    case kind::enum_type:
      if (!c.read_int(v))
        return false;
      if (v < 0 || static_cast<std::uint64_t>(v) >= n.names.size())
        return c.fail("enum index " + std::to_string(v) + " out of range");
      append_json_string(n.names[static_cast<std::size_t>(v)], out);
      return true;
    case kind::record:
      out += '{';
      for (std::size_t i = 0; i < n.children.size(); ++i) {
        if (i)
          out += ',';
        append_json_string(n.names[i], out);
        out += ':';
        if (!to_json(c, *n.children[i], out))
          return false;
      }
      out += '}';
      return true;
    case kind::array:
    case kind::map: {
      const bool map = n.k == kind::map;
      const auto& item = *n.children[0];
      const bool empty = !map && may_be_empty(item);
      out += map ? '{' : '[';
      bool first = true;
      for (;;) {
        if (!c.read_block(v, empty))
          return false;
        if (v == 0)
          break;
        for (std::int64_t i = 0; i < v; ++i) {
          if (!first)
            out += ',';
          first = false;
          if (map) {
            if (!c.read_bytes(s, "map key"))
              return false;
            append_json_string(s, out);
            out += ':';
          }
          if (!to_json(c, item, out))
            return false;
        }
      }
      out += map ? '}' : ']';
      return true;
    }
    case kind::union_type: {
      const node* b = nullptr;
      return c.read_branch(n, b) && to_json(c, *b, out);
    }
  }
  return false;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  auto q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Reads a value of writer type `n` into column `col` (already resolved as
// compatible).
bool read_into(cursor& c, const node& n, column& col, const std::string& field,
               const internal::common_options& co, std::string& scratch) {
  std::int64_t v = 0;
  std::string_view s;
  switch (n.k) {
    case kind::null_type: col.append_null(); return true;
    case kind::boolean: {
      unsigned char b = 0;
      if (!c.read_raw(&b, 1, "boolean"))
        return false;
      if (b > 1)
        return c.fail("field '" + field + "': invalid boolean byte " + std::to_string(b));
      col.append_bool(b != 0);
      return true;
    }
    case kind::int_type:
    case kind::long_type:
      if (!(n.k == kind::int_type ? c.read_int(v) : c.read_long(v)))
        return false;
      if (col.type == type_id::timestamp) {
        if (n.lt == logical::timestamp_micros)
          v = floor_div(v, 1000);
        else if (n.lt == logical::date) {
          if (v > INT64_MAX / 86'400'000 || v < INT64_MIN / 86'400'000)
            return c.fail("field '" + field + "': date out of range");
          v *= 86'400'000;
        }
      }
      if (col.type == type_id::float64)
        col.append_float(static_cast<double>(v));
      else
        col.append_int(v);
      return true;
    case kind::float_type: {
      float f = 0;
      if (!c.read_raw(&f, 4, "float"))
        return false;
      col.append_float(f);
      return true;
    }
    case kind::double_type: {
      double d = 0;
      if (!c.read_raw(&d, 8, "double"))
        return false;
      col.append_float(d);
      return true;
    }
    case kind::bytes:
    case kind::fixed:
    case kind::string:
      if (!(n.k == kind::fixed ? c.read_fixed(s, n.size) : c.read_bytes(s, kind_name(n.k))))
        return false;
      if (n.lt == logical::decimal) {
        if (col.type == type_id::float64) {
          col.append_float(decimal_value(s, n.scale));
          return true;
        }
        if (!decimal_text(s, n.scale, scratch))
          return c.fail("field '" + field + "': decimal wider than 16 bytes");
        col.append_string(scratch);
        return true;
      }
      if (auto at = internal::first_invalid_utf8(s); at != s.size()) {
        if (co.invalid_utf8 == invalid_utf8_policy::error)
          return c.fail("field '" + field + "': invalid UTF-8 at byte " + std::to_string(at)
                        + " of its value");
        internal::replace_invalid_utf8(s, scratch);
        s = scratch;
      }
      if (s.find('\0') != std::string_view::npos)
        return c.fail("field '" + field + "': NUL byte in its value");
      col.append_string(s);
      return true;
    case kind::enum_type:
      if (!c.read_int(v))
        return false;
      if (v < 0 || static_cast<std::uint64_t>(v) >= n.names.size())
        return c.fail("field '" + field + "': enum index " + std::to_string(v)
                      + " out of range (" + std::to_string(n.names.size()) + " symbols)");
      col.append_string(n.names[static_cast<std::size_t>(v)]);
      return true;
    case kind::record:
    case kind::array:
    case kind::map:
      scratch.clear();
      if (!to_json(c, n, scratch))
        return false;
      col.append_string(scratch);
      return true;
    case kind::union_type: {
      const node* b = nullptr;
      return c.read_branch(n, b) && read_into(c, *b, col, field, co, scratch);
    }
  }
  return false;
}

class datum_decoder final : public record_decoder {
public:
  datum_decoder(schema_ptr s, resolution plan, internal::common_options co)
    : schema_(std::move(s)), plan_(std::move(plan)), co_(std::move(co)) {}

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof, std::size_t& lines) override {
    lines = 0;
    return at_eof ? buffer.size() : 0; // a message is one datum
  }

  status decode(std::string_view record, batch_builder& out, std::string& reason) override {
    std::size_t consumed = 0;
    return decode_datum(plan_, record, co_, out, reason, consumed, false);
  }

private:
  schema_ptr schema_;
  resolution plan_;
  internal::common_options co_;
};

#ifdef WEIR_HAVE_CURL
// Datums framed for a schema registry: byte 0, the writer schema's id (4
// bytes big-endian), the datum. Each id's schema is fetched once and its
// resolution (or why it does not resolve) kept.
class registry_decoder final : public record_decoder {
public:
  registry_decoder(schema_ptr s, std::shared_ptr<schema_registry::client> c,
                   internal::common_options co)
    : schema_(std::move(s)), client_(std::move(c)), co_(std::move(co)) {}

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof, std::size_t& lines) override {
    lines = 0;
    return at_eof ? buffer.size() : 0;
  }

  status decode(std::string_view record, batch_builder& out, std::string& reason) override {
    auto id = schema_registry::read_frame_header(record);
    if (!id) {
      reason = id.error().message;
      return status::bad;
    }
    auto it = plans_.find(*id);
    if (it == plans_.end())
      it = plans_.emplace(*id, plan_of(*id)).first;
    if (!it->second) {
      reason = it->second.error().message;
      return status::bad;
    }
    std::size_t consumed = 0;
    const auto st = decode_datum(*it->second, record.substr(schema_registry::frame_header_size),
                                 co_, out, reason, consumed, false);
    if (st == status::bad)
      reason = "schema id " + std::to_string(*id) + ": " + reason;
    return st;
  }

private:
  // The plan of schema `id`, or why there is none (a bad record's reason).
  // A registry that cannot be reached fails the source (std::runtime_error):
  // its messages are not bad, they are unreadable for now.
  expected<resolution> plan_of(std::int32_t id) {
    auto s = client_->schema_by_id(id);
    if (!s) {
      if (s.error().code == errc::not_found)
        return make_error(errc::bad_record, s.error().message);
      throw std::runtime_error(s.error().message);
    }
    if ((*s)->type != "AVRO")
      return make_error(errc::bad_record, "schema id " + std::to_string(id) + " is a "
                                            + (*s)->type + " schema, not Avro");
    auto ws = parse_schema((*s)->text);
    if (!ws)
      return make_error(errc::bad_record,
                        "schema id " + std::to_string(id) + ": " + ws.error().message);
    auto plan = resolve(*ws, *schema_, co_.read);
    if (!plan)
      return make_error(errc::bad_record, "schema id " + std::to_string(id)
                                            + " does not resolve against the declared "
                                              "schema: "
                                            + plan.error().message);
    return plan;
  }

  schema_ptr schema_;
  std::shared_ptr<schema_registry::client> client_;
  internal::common_options co_;
  std::map<std::int32_t, expected<resolution>> plans_;
};
#endif

} // namespace

expected<writer_schema_ptr> parse_schema(std::string_view json) {
  avro_schema_t checked = nullptr;
  if (avro_schema_from_json_length(json.data(), json.size(), &checked) != 0) {
    std::string why = avro_strerror();
    while (!why.empty() && (why.back() == '\n' || why.back() == ' '))
      why.pop_back();
    return invalid("invalid Avro schema: " + why);
  }
  avro_schema_decref(checked);
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(simdjson::padded_string{json}).get(doc) != simdjson::SUCCESS)
    return invalid("invalid Avro schema: not JSON");
  auto ws = std::make_shared<writer_schema>();
  builder b{ws->nodes_, {}};
  auto root = b.build(doc, "");
  if (!root)
    return root.error();
  ws->root_ = *root;
  ws->json_ = std::string{json};
  return writer_schema_ptr{std::move(ws)};
}

expected<resolution> resolve(writer_schema_ptr writer, const schema& reader,
                             const std::vector<bool>& read) {
  const auto& root = writer->root();
  if (root.k != kind::record)
    return invalid("the Avro writer schema must be a record, got " + describe(root));
  resolution r;
  for (std::size_t i = 0; i < root.children.size(); ++i) {
    resolution::target t;
    t.writer = root.children[i];
    if (auto idx = reader.index_of(root.names[i])) {
      const auto& f = reader.at(*idx);
      if (auto why = incompatible(*t.writer, f.type))
        return invalid("field '" + f.name + "': " + *why);
      if (*idx >= read.size() || read[*idx])
        t.column = static_cast<int>(*idx);
    }
    r.targets_.push_back(t);
  }
  r.writer_ = std::move(writer);
  return r;
}

record_decoder::status decode_datum(const resolution& plan, std::string_view datum,
                                    const internal::common_options& co, batch_builder& out,
                                    std::string& reason, std::size_t& consumed,
                                    bool trailing_ok) {
  const auto* b = reinterpret_cast<const unsigned char*>(datum.data());
  cursor c{b, b, b + datum.size(), &reason};
  std::string scratch;
  const auto& root = plan.writer()->root();
  for (std::size_t i = 0; i < plan.targets().size(); ++i) {
    const auto& t = plan.targets()[i];
    const bool ok = t.column < 0
                      ? skip(c, *t.writer)
                      : read_into(c, *t.writer, out.col(static_cast<std::size_t>(t.column)),
                                  root.names[i], co, scratch);
    if (!ok) {
      out.rollback_row();
      consumed = c.at();
      if (reason.find("field '") != 0)
        reason = "field '" + root.names[i] + "': " + reason;
      return record_decoder::status::bad;
    }
  }
  consumed = c.at();
  if (!trailing_ok && c.p != c.end) {
    out.rollback_row();
    reason = std::to_string(c.end - c.p) + " bytes after the datum's end at byte "
             + std::to_string(c.at()) + " (another writer schema?)";
    return record_decoder::status::bad;
  }
  for (std::size_t i = 0; i < out.output_schema().size(); ++i)
    if (i < co.read.size() && !co.read[i])
      internal::append_unread(out.col(i));
  return co.rc.commit(out, reason);
}

expected<std::unique_ptr<record_decoder>>
make_datum_decoder(const decoder_options& opts, internal::common_options co) {
  if (!opts.schema_registry.url.empty()) {
#ifdef WEIR_HAVE_CURL
    auto c = schema_registry::client::make(opts.schema_registry);
    if (!c)
      return c.error();
    return std::unique_ptr<record_decoder>{
      std::make_unique<registry_decoder>(opts.schema, std::move(*c), std::move(co))};
#else
    return invalid(std::string{schema_registry_not_built});
#endif
  }
  if (opts.avro_schema.empty())
    return invalid("format avro needs the writer's schema (avro_schema)");
  auto ws = parse_schema(opts.avro_schema);
  if (!ws)
    return ws.error();
  auto plan = resolve(*ws, *opts.schema, co.read);
  if (!plan)
    return plan.error();
  return std::unique_ptr<record_decoder>{
    std::make_unique<datum_decoder>(opts.schema, std::move(*plan), std::move(co))};
}

} // namespace weir::format::avro
