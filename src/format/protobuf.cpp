// SPDX-License-Identifier: Apache-2.0
// Protobuf message types loaded at run time, their plans against the
// declared fields, and the message decoders (see protobuf.hpp).
#include "protobuf.hpp"

#include <google/protobuf/arena.h>
#include <google/protobuf/compiler/importer.h>
#include <google/protobuf/descriptor.h>
#include <google/protobuf/dynamic_message.h>
#include <google/protobuf/message.h>
#include <google/protobuf/stubs/logging.h>
#include <simdjson.h>
#include <sys/stat.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <mutex>

#ifndef WEIR_PROTOBUF_INCLUDE_DIR
#define WEIR_PROTOBUF_INCLUDE_DIR "/usr/include"
#endif

namespace gp = google::protobuf;

namespace weir::format::protobuf {

namespace {

error invalid(std::string msg) { return make_error(errc::invalid_argument, std::move(msg)); }

// libprotobuf logs a parse failure (a proto3 string that is not UTF-8) to
// stderr; the decoder reports it as a bad record instead.
void silence_protobuf_logs() {
  static std::once_flag once;
  std::call_once(once, [] { gp::SetLogHandler([](gp::LogLevel, const char*, int,
                                                 const std::string&) {}); });
}

class error_collector final : public gp::compiler::MultiFileErrorCollector {
public:
  void AddError(const std::string& file, int line, int col, const std::string& msg) override {
    if (errors.size() < 5)
      errors.push_back(file + ":" + std::to_string(line + 1) + ":" + std::to_string(col + 1)
                       + ": " + msg);
  }
  std::vector<std::string> errors;
};

} // namespace

class proto_set {
public:
  gp::compiler::DiskSourceTree tree;
  error_collector errors;
  std::unique_ptr<gp::compiler::Importer> importer;
  const gp::FileDescriptor* file = nullptr;
};

expected<proto_set_ptr> load_proto(const std::string& proto_file,
                                   const std::vector<std::string>& includes) {
  silence_protobuf_logs();
  namespace fs = std::filesystem;
  if (std::ifstream probe{proto_file}; !probe)
    return make_error(errc::io_error,
                      "cannot read " + proto_file + ": " + std::strerror(errno));
  std::error_code ec;
  // The compiler reads the file to its end: a device (/dev/zero) would
  // never end. A .proto is a regular file of text, megabytes at most.
  constexpr std::uintmax_t max_proto_bytes = std::uintmax_t{64} << 20;
  if (!fs::is_regular_file(proto_file, ec))
    return make_error(errc::invalid_argument, proto_file + " is not a regular file");
  if (auto size = fs::file_size(proto_file, ec); !ec && size > max_proto_bytes)
    return make_error(errc::invalid_argument,
                      proto_file + " is " + std::to_string(size >> 20)
                        + " MiB: not a .proto file (at most 64 MiB)");
  const fs::path abs = fs::weakly_canonical(fs::absolute(proto_file, ec), ec);
  auto set = std::make_shared<proto_set>();
  // The file's name in the tree: relative to the first include holding it
  // (so that imports of it by that path are the same file), else its name
  // in its own directory.
  std::string virtual_name;
  for (const auto& inc : includes) {
    const fs::path root = fs::weakly_canonical(fs::absolute(inc, ec), ec);
    set->tree.MapPath("", root.string());
    const auto rel = abs.lexically_relative(root);
    if (virtual_name.empty() && !rel.empty() && *rel.begin() != "..")
      virtual_name = rel.generic_string();
  }
  if (virtual_name.empty()) {
    set->tree.MapPath("", abs.parent_path().string());
    virtual_name = abs.filename().string();
  }
  set->tree.MapPath("", WEIR_PROTOBUF_INCLUDE_DIR);
  set->importer = std::make_unique<gp::compiler::Importer>(&set->tree, &set->errors);
  set->file = set->importer->Import(virtual_name);
  if (!set->file) {
    std::string msg;
    for (const auto& e : set->errors.errors)
      msg += (msg.empty() ? "" : "; ") + e;
    if (msg.empty())
      msg = "cannot import " + proto_file;
    return invalid(msg);
  }
  return proto_set_ptr{std::move(set)};
}

namespace {

void collect_messages(const gp::Descriptor& d, std::vector<std::string>& out) {
  out.push_back(d.full_name());
  for (int i = 0; i < d.nested_type_count(); ++i)
    if (!d.nested_type(i)->options().map_entry())
      collect_messages(*d.nested_type(i), out);
}

} // namespace

const gp::Descriptor* find_message(const proto_set& set, const std::string& full_name,
                                   std::vector<std::string>* candidates) {
  const auto* d = set.importer->pool()->FindMessageTypeByName(full_name);
  if (candidates) {
    candidates->clear();
    for (int i = 0; i < set.file->message_type_count(); ++i)
      collect_messages(*set.file->message_type(i), *candidates);
  }
  return d;
}

namespace {

enum class conv : std::uint8_t {
  boolean,
  int_to_int,    ///< signed integer types and uint32 into int64
  uint64_to_int, ///< uint64, fixed64 into int64 (checked)
  int_to_float,
  uint64_to_float,
  float_to_float,
  string,
  bytes_base64,
  enum_name,
  enum_number,
  timestamp_ms,
  timestamp_text,
  json, ///< a message, a repeated field or a map as JSON text
};

bool is_wrapper(const gp::Descriptor& d) {
  const auto& n = d.full_name();
  return n == "google.protobuf.DoubleValue" || n == "google.protobuf.FloatValue"
         || n == "google.protobuf.Int64Value" || n == "google.protobuf.UInt64Value"
         || n == "google.protobuf.Int32Value" || n == "google.protobuf.UInt32Value"
         || n == "google.protobuf.BoolValue" || n == "google.protobuf.StringValue"
         || n == "google.protobuf.BytesValue";
}

bool is_timestamp(const gp::Descriptor& d) {
  return d.full_name() == "google.protobuf.Timestamp";
}

std::string describe(const gp::FieldDescriptor& f) {
  std::string t = f.is_map()        ? "map"
                  : f.is_repeated() ? std::string{"repeated "}
                                    : std::string{};
  if (f.is_map())
    return t;
  if (f.type() == gp::FieldDescriptor::TYPE_MESSAGE)
    return t + f.message_type()->full_name();
  if (f.type() == gp::FieldDescriptor::TYPE_ENUM)
    return t + "enum " + f.enum_type()->full_name();
  return t + f.type_name();
}

// How a leaf field reads into `t`; nullopt when it cannot.
std::optional<conv> conversion(const gp::FieldDescriptor& f, type_id t) {
  using FD = gp::FieldDescriptor;
  if (f.is_repeated())
    return t == type_id::string ? std::optional{conv::json} : std::nullopt;
  switch (f.type()) {
    case FD::TYPE_BOOL:
      return t == type_id::boolean ? std::optional{conv::boolean} : std::nullopt;
    case FD::TYPE_INT32: case FD::TYPE_SINT32: case FD::TYPE_SFIXED32:
    case FD::TYPE_INT64: case FD::TYPE_SINT64: case FD::TYPE_SFIXED64:
    case FD::TYPE_UINT32: case FD::TYPE_FIXED32:
      if (t == type_id::int64) return conv::int_to_int;
      if (t == type_id::float64) return conv::int_to_float;
      return std::nullopt;
    case FD::TYPE_UINT64: case FD::TYPE_FIXED64:
      if (t == type_id::int64) return conv::uint64_to_int;
      if (t == type_id::float64) return conv::uint64_to_float;
      return std::nullopt;
    case FD::TYPE_FLOAT: case FD::TYPE_DOUBLE:
      return t == type_id::float64 ? std::optional{conv::float_to_float} : std::nullopt;
    case FD::TYPE_STRING:
      return t == type_id::string ? std::optional{conv::string} : std::nullopt;
    case FD::TYPE_BYTES:
      return t == type_id::string ? std::optional{conv::bytes_base64} : std::nullopt;
    case FD::TYPE_ENUM:
      if (t == type_id::string) return conv::enum_name;
      if (t == type_id::int64) return conv::enum_number;
      return std::nullopt;
    case FD::TYPE_MESSAGE: case FD::TYPE_GROUP:
      if (is_timestamp(*f.message_type())) {
        if (t == type_id::timestamp) return conv::timestamp_ms;
        if (t == type_id::string) return conv::timestamp_text;
        return std::nullopt;
      }
      return t == type_id::string ? std::optional{conv::json} : std::nullopt;
  }
  return std::nullopt;
}

std::string field_names(const gp::Descriptor& d, std::vector<std::string>& out,
                        const std::string& prefix) {
  std::string list;
  for (int i = 0; i < d.field_count(); ++i) {
    out.push_back(prefix + d.field(i)->name());
    list += (i ? ", " : "") + d.field(i)->name();
  }
  return list;
}

// --- JSON text of nested values (messages, repeated fields, maps) ---------

constexpr char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

void append_base64(std::string_view s, std::string& out) {
  std::size_t i = 0;
  for (; i + 2 < s.size(); i += 3) {
    const auto v = (static_cast<unsigned>(static_cast<unsigned char>(s[i])) << 16)
                   | (static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])) << 8)
                   | static_cast<unsigned char>(s[i + 2]);
    out += b64[(v >> 18) & 63];
    out += b64[(v >> 12) & 63];
    out += b64[(v >> 6) & 63];
    out += b64[v & 63];
  }
  if (i + 1 == s.size()) {
    const auto v = static_cast<unsigned>(static_cast<unsigned char>(s[i])) << 16;
    out += b64[(v >> 18) & 63];
    out += b64[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == s.size()) {
    const auto v = (static_cast<unsigned>(static_cast<unsigned char>(s[i])) << 16)
                   | (static_cast<unsigned>(static_cast<unsigned char>(s[i + 1])) << 8);
    out += b64[(v >> 18) & 63];
    out += b64[(v >> 12) & 63];
    out += b64[(v >> 6) & 63];
    out += '=';
  }
}

std::string enum_text(const gp::EnumDescriptor& e, int number) {
  if (const auto* v = e.FindValueByNumber(number))
    return v->name();
  return std::to_string(number);
}

// Milliseconds of a google.protobuf.Timestamp, floored; false when beyond
// what weir's timestamps hold.
bool timestamp_millis(const gp::Message& m, std::int64_t& out) {
  const auto* d = m.GetDescriptor();
  const auto* r = m.GetReflection();
  const std::int64_t seconds = r->GetInt64(m, d->field(0));
  const std::int32_t nanos = r->GetInt32(m, d->field(1));
  constexpr std::int64_t limit = std::int64_t{1} << 52;
  if (seconds > limit || seconds < -limit)
    return false;
  std::int64_t ms = seconds * 1000;
  ms += nanos >= 0 ? nanos / 1'000'000 : -((-static_cast<std::int64_t>(nanos) + 999'999) / 1'000'000);
  out = ms;
  return true;
}

// A Timestamp inside JSON text: its ms, as weir's JSON writes timestamps.
void append_timestamp_json(const gp::Message& m, std::string& out) {
  std::int64_t ms = 0;
  if (timestamp_millis(m, ms))
    out += std::to_string(ms);
  else
    out += "null";
}

void append_message_json(const gp::Message& m, std::string& out, int depth);
void append_field_json(const gp::Message& m, const gp::FieldDescriptor& f, std::string& out,
                       int depth);

void append_scalar_json(const gp::Message& m, const gp::FieldDescriptor& f, int index,
                        std::string& out, int depth) {
  using CT = gp::FieldDescriptor::CppType;
  const auto* r = m.GetReflection();
  const bool rep = index >= 0;
  switch (f.cpp_type()) {
    case CT::CPPTYPE_BOOL:
      out += (rep ? r->GetRepeatedBool(m, &f, index) : r->GetBool(m, &f)) ? "true" : "false";
      return;
    case CT::CPPTYPE_INT32:
      out += std::to_string(rep ? r->GetRepeatedInt32(m, &f, index) : r->GetInt32(m, &f));
      return;
    case CT::CPPTYPE_INT64:
      out += std::to_string(rep ? r->GetRepeatedInt64(m, &f, index) : r->GetInt64(m, &f));
      return;
    case CT::CPPTYPE_UINT32:
      out += std::to_string(rep ? r->GetRepeatedUInt32(m, &f, index) : r->GetUInt32(m, &f));
      return;
    case CT::CPPTYPE_UINT64:
      out += std::to_string(rep ? r->GetRepeatedUInt64(m, &f, index) : r->GetUInt64(m, &f));
      return;
    case CT::CPPTYPE_FLOAT:
      append_json_double(rep ? r->GetRepeatedFloat(m, &f, index) : r->GetFloat(m, &f), out);
      return;
    case CT::CPPTYPE_DOUBLE:
      append_json_double(rep ? r->GetRepeatedDouble(m, &f, index) : r->GetDouble(m, &f), out);
      return;
    case CT::CPPTYPE_ENUM:
      append_json_string(enum_text(*f.enum_type(), rep ? r->GetRepeatedEnumValue(m, &f, index)
                                                       : r->GetEnumValue(m, &f)),
                         out);
      return;
    case CT::CPPTYPE_STRING: {
      std::string scratch;
      const auto& s = rep ? r->GetRepeatedStringReference(m, &f, index, &scratch)
                          : r->GetStringReference(m, &f, &scratch);
      if (f.type() == gp::FieldDescriptor::TYPE_BYTES) {
        out += '"';
        append_base64(s, out);
        out += '"';
      } else {
        append_json_string(s, out);
      }
      return;
    }
    case CT::CPPTYPE_MESSAGE: {
      const auto& sub = rep ? r->GetRepeatedMessage(m, &f, index) : r->GetMessage(m, &f);
      append_message_json(sub, out, depth + 1);
      return;
    }
  }
}

// The value of field `f` of `m` as JSON: a map as an object, a repeated
// field as an array, else its one value.
void append_field_json(const gp::Message& m, const gp::FieldDescriptor& f, std::string& out,
                       int depth) {
  const auto* r = m.GetReflection();
  if (f.is_map()) {
    // Sorted by key (a map's order on the wire means nothing): the same
    // map gives the same text.
    const int n = r->FieldSize(m, &f);
    const auto* key = f.message_type()->map_key();
    const auto* val = f.message_type()->map_value();
    std::vector<const gp::Message*> entries;
    for (int i = 0; i < n; ++i)
      entries.push_back(&r->GetRepeatedMessage(m, &f, i));
    std::stable_sort(entries.begin(), entries.end(), [key](const gp::Message* a,
                                                           const gp::Message* b) {
      using CT = gp::FieldDescriptor::CppType;
      const auto* ra = a->GetReflection();
      const auto* rb = b->GetReflection();
      switch (key->cpp_type()) {
        case CT::CPPTYPE_STRING: return ra->GetString(*a, key) < rb->GetString(*b, key);
        case CT::CPPTYPE_BOOL: return ra->GetBool(*a, key) < rb->GetBool(*b, key);
        case CT::CPPTYPE_INT32: return ra->GetInt32(*a, key) < rb->GetInt32(*b, key);
        case CT::CPPTYPE_UINT32: return ra->GetUInt32(*a, key) < rb->GetUInt32(*b, key);
        case CT::CPPTYPE_UINT64: return ra->GetUInt64(*a, key) < rb->GetUInt64(*b, key);
        default: return ra->GetInt64(*a, key) < rb->GetInt64(*b, key);
      }
    });
    // A key that comes twice keeps its last value, as parsing into a map
    // does (the sort is stable: equal keys stay in wire order).
    std::vector<std::string> keys(entries.size());
    for (std::size_t i = 0; i < entries.size(); ++i) {
      append_scalar_json(*entries[i], *key, -1, keys[i], depth);
      if (keys[i].empty() || keys[i].front() != '"')
        keys[i] = "\"" + keys[i] + "\"";
    }
    out += '{';
    bool first = true;
    for (std::size_t i = 0; i < entries.size(); ++i) {
      if (i + 1 < entries.size() && keys[i + 1] == keys[i])
        continue;
      out += first ? "" : ",";
      first = false;
      out += keys[i];
      out += ':';
      append_scalar_json(*entries[i], *val, -1, out, depth);
    }
    out += '}';
  } else if (f.is_repeated()) {
    out += '[';
    const int n = r->FieldSize(m, &f);
    for (int i = 0; i < n; ++i) {
      out += i ? "," : "";
      append_scalar_json(m, f, i, out, depth);
    }
    out += ']';
  } else {
    append_scalar_json(m, f, -1, out, depth);
  }
}

// A message as JSON: its present fields in declaration order, named as in
// the .proto; a Timestamp as integer ms (weir's JSON timestamps), a
// wrapper as its value, a map as an object.
void append_message_json(const gp::Message& m, std::string& out, int depth) {
  const auto* d = m.GetDescriptor();
  if (depth > 100) { // DynamicMessage parsing stops at 100 levels already
    out += "null";
    return;
  }
  if (is_timestamp(*d)) {
    append_timestamp_json(m, out);
    return;
  }
  if (is_wrapper(*d)) {
    append_scalar_json(m, *d->field(0), -1, out, depth);
    return;
  }
  const auto* r = m.GetReflection();
  std::vector<const gp::FieldDescriptor*> fields;
  r->ListFields(m, &fields);
  out += '{';
  bool first = true;
  for (const auto* f : fields) {
    out += first ? "" : ",";
    first = false;
    append_json_string(f->name(), out);
    out += ':';
    append_field_json(m, *f, out, depth);
  }
  out += '}';
}

} // namespace

class plan {
public:
  struct target {
    std::vector<const gp::FieldDescriptor*> path; ///< message fields, then the leaf
    conv c = conv::string;
    std::size_t column = 0;
    std::string name; ///< the declared field
  };
  std::vector<target> targets;
};

expected<std::shared_ptr<const plan>, field_problem>
resolve(const gp::Descriptor& msg, const schema& reader, const std::vector<bool>& read) {
  auto p = std::make_shared<plan>();
  for (std::size_t i = 0; i < reader.size(); ++i) {
    const auto& f = reader.at(i);
    plan::target t;
    t.column = i;
    t.name = f.name;
    const gp::Descriptor* at = &msg;
    std::string walked;
    std::string_view rest = f.name;
    for (;;) {
      const auto dot = rest.find('.');
      const std::string seg{rest.substr(0, dot)};
      const auto* fd = at->FindFieldByName(seg);
      if (!fd) {
        field_problem pr;
        pr.field = f.name;
        const auto list = field_names(*at, pr.candidates, walked);
        pr.message = "field '" + f.name + "' is not in message " + msg.full_name()
                     + (walked.empty() ? "" : " (" + walked.substr(0, walked.size() - 1)
                                                + " is " + at->full_name() + ")")
                     + "; " + (walked.empty() ? "its" : at->full_name() + "'s")
                     + " fields: " + list;
        return pr;
      }
      // A wrapper reads as its value; its own absence is the null.
      t.path.push_back(fd);
      if (dot == std::string_view::npos) {
        if (!fd->is_repeated() && fd->type() == gp::FieldDescriptor::TYPE_MESSAGE
            && is_wrapper(*fd->message_type()))
          t.path.push_back(fd->message_type()->field(0));
        break;
      }
      walked += seg + ".";
      if (fd->is_repeated() || fd->cpp_type() != gp::FieldDescriptor::CPPTYPE_MESSAGE
          || is_timestamp(*fd->message_type())) {
        field_problem pr;
        pr.field = f.name;
        pr.message = "field '" + f.name + "': '" + walked.substr(0, walked.size() - 1)
                     + "' is " + describe(*fd) + ", not a message a path can walk into"
                     + (fd->is_repeated() ? " (declare it a string, its JSON array text, "
                                            "which explode unnests)"
                                          : "");
        return pr;
      }
      at = fd->message_type();
      rest = rest.substr(dot + 1);
    }
    const auto& leaf = *t.path.back();
    const auto c = conversion(leaf, f.type);
    if (!c) {
      field_problem pr;
      pr.field = f.name;
      std::string hint;
      if (leaf.is_repeated())
        hint = " (weir has no array type: declare it a string, its JSON array text, which "
               "explode unnests)";
      else if (leaf.cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE)
        hint = " (declare it a string, its JSON text, or read its fields by path, e.g. '"
               + f.name + "." + (leaf.message_type()->field_count() > 0
                                   ? leaf.message_type()->field(0)->name()
                                   : std::string{"x"})
               + "')";
      pr.message = "field '" + f.name + "': the message's " + describe(leaf)
                   + " cannot be read as " + std::string{to_string(f.type)} + hint;
      return pr;
    }
    t.c = *c;
    if (i < read.size() && !read[i])
      continue;
    p->targets.push_back(std::move(t));
  }
  return std::shared_ptr<const plan>{std::move(p)};
}

namespace {


// --- The wire-format fast path ----------------------------------------------
//
// Reads the declared fields straight from the wire format (the encoding
// guide's varints, fixed32/64, length-delimited values) into the columns,
// without building a DynamicMessage. It settles a message only when it is
// sure to agree with libprotobuf: the message type and every type it holds
// are proto3 (no required fields, closed enums, groups or defaults), no
// declared field is read as JSON text, and the whole message is well formed
// by the rules it checks (every field's wire type the one its type encodes
// as, proto3 strings valid UTF-8, nesting within 64 levels where
// libprotobuf allows 100, tags of at most 5 bytes, varints of at most 10
// bytes whose 10th byte is 0 or 1). Anything else —
// a bad message above all — goes to DynamicMessage, the reference, which
// gives the row or the reason. Parsing concatenated encodings merges them,
// so a nested message's fields are looked up over all of its occurrences in
// order, the last one winning, as libprotobuf's merge does; a oneof member
// is present only if it is the oneof's last member on the wire.

struct wire {
  const unsigned char* p;
  const unsigned char* end;

  bool varint(std::uint64_t& v) {
    v = 0;
    for (int i = 0; i < 10; ++i) {
      if (p == end)
        return false;
      const unsigned b = *p++;
      if (i == 9 && b > 1)
        return false;
      v |= static_cast<std::uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0)
        return true;
    }
    return false;
  }
  bool fixed(std::size_t n, std::uint64_t& v) {
    if (static_cast<std::size_t>(end - p) < n)
      return false;
    v = 0;
    for (std::size_t i = 0; i < n; ++i)
      v |= static_cast<std::uint64_t>(p[i]) << (8 * i);
    p += n;
    return true;
  }
  bool bytes(std::string_view& out) {
    std::uint64_t len = 0;
    if (!varint(len) || len > static_cast<std::uint64_t>(end - p))
      return false;
    out = {reinterpret_cast<const char*>(p), static_cast<std::size_t>(len)};
    p += len;
    return true;
  }
  /// Reads the next field of a message checked well-formed: its tag, and
  /// its value as a number (`v`: varint, fixed64, fixed32) or as bytes
  /// (`ld`: length-delimited).
  void field(std::uint64_t& tag, std::uint64_t& v, std::string_view& ld) {
    (void) varint(tag);
    switch (tag & 7) {
      case 0: (void) varint(v); break;
      case 1: (void) fixed(8, v); break;
      case 5: (void) fixed(4, v); break;
      default: (void) bytes(ld); break;
    }
  }
};

// The wire type a field of `f`'s type is written with (not packed).
int wire_type_of(const gp::FieldDescriptor& f) {
  using FD = gp::FieldDescriptor;
  switch (f.type()) {
    case FD::TYPE_DOUBLE: case FD::TYPE_FIXED64: case FD::TYPE_SFIXED64: return 1;
    case FD::TYPE_FLOAT: case FD::TYPE_FIXED32: case FD::TYPE_SFIXED32: return 5;
    case FD::TYPE_STRING: case FD::TYPE_BYTES: case FD::TYPE_MESSAGE: return 2;
    case FD::TYPE_GROUP: return 3;
    default: return 0;
  }
}

// Whether `d` and every message type it holds are proto3 (well-known types
// included), so the fast path's rules are Protobuf's.
bool all_proto3(const gp::Descriptor& d, std::vector<const gp::Descriptor*>& seen) {
  if (std::find(seen.begin(), seen.end(), &d) != seen.end())
    return true;
  seen.push_back(&d);
  if (d.file()->syntax() != gp::FileDescriptor::SYNTAX_PROTO3 || d.extension_range_count() > 0)
    return false;
  for (int i = 0; i < d.field_count(); ++i) {
    const auto* f = d.field(i);
    if (f->type() == gp::FieldDescriptor::TYPE_GROUP)
      return false;
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE
        && !all_proto3(*f->message_type(), seen))
      return false;
  }
  return true;
}

// Walks a whole message of type `d`: true when it is well formed by the
// fast path's rules (see above).
bool well_formed(std::string_view bytes, const gp::Descriptor& d, int depth) {
  if (depth > 64) // well inside libprotobuf's 100 levels: deeper goes to it
    return false;
  wire w{reinterpret_cast<const unsigned char*>(bytes.data()),
         reinterpret_cast<const unsigned char*>(bytes.data()) + bytes.size()};
  while (w.p != w.end) {
    std::uint64_t tag = 0, v = 0;
    const auto* tag_at = w.p;
    if (!w.varint(tag) || tag > 0xFFFFFFFFu || w.p - tag_at > 5)
      return false;
    const int number = static_cast<int>(tag >> 3);
    const int wt = static_cast<int>(tag & 7);
    if (number == 0)
      return false;
    const auto* f = d.FindFieldByNumber(number);
    std::string_view ld;
    switch (wt) {
      case 0: if (!w.varint(v)) return false; break;
      case 1: if (!w.fixed(8, v)) return false; break;
      case 5: if (!w.fixed(4, v)) return false; break;
      case 2: if (!w.bytes(ld)) return false; break;
      default: return false; // groups (3, 4), and 6, 7
    }
    if (!f)
      continue; // an unknown field, skipped as libprotobuf keeps it
    const int want = wire_type_of(*f);
    if (wt != want) {
      // Repeated numbers may come packed: a run of their encodings.
      if (!(wt == 2 && f->is_packable()))
        return false;
      wire pw{reinterpret_cast<const unsigned char*>(ld.data()),
              reinterpret_cast<const unsigned char*>(ld.data()) + ld.size()};
      while (pw.p != pw.end)
        if (!(want == 0 ? pw.varint(v) : pw.fixed(want == 1 ? 8 : 4, v)))
          return false;
      continue;
    }
    if (f->type() == gp::FieldDescriptor::TYPE_STRING
        && !simdjson::validate_utf8(ld.data(), ld.size()))
      return false;
    if (f->type() == gp::FieldDescriptor::TYPE_MESSAGE
        && !well_formed(ld, *f->message_type(), depth + 1))
      return false;
  }
  return true;
}

// The last occurrence of field `f` (in oneof `f`'s, the last member) over
// the messages `slices` (already well formed), as its raw value: a varint's
// value, a fixed's bits, or a length-delimited value's bytes.
struct found {
  bool present = false;
  std::uint64_t number = 0;
  std::string_view bytes;
};

found last_of(const std::vector<std::string_view>& slices, const gp::FieldDescriptor& f) {
  found out;
  const auto* oneof = f.real_containing_oneof();
  for (const auto& s : slices) {
    wire w{reinterpret_cast<const unsigned char*>(s.data()),
           reinterpret_cast<const unsigned char*>(s.data()) + s.size()};
    while (w.p != w.end) {
      std::uint64_t tag = 0, v = 0;
      std::string_view ld;
      w.field(tag, v, ld);
      const int number = static_cast<int>(tag >> 3);
      if (number == f.number()) {
        out.present = true;
        out.number = v;
        out.bytes = ld;
      } else if (oneof) {
        const auto* other = f.containing_type()->FindFieldByNumber(number);
        if (other && other->real_containing_oneof() == oneof)
          out.present = false; // another member set after it clears it
      }
    }
  }
  return out;
}

// Every occurrence of the message field `f` over `slices`, in order.
std::vector<std::string_view> all_of(const std::vector<std::string_view>& slices,
                                     const gp::FieldDescriptor& f) {
  std::vector<std::string_view> out;
  for (const auto& s : slices) {
    wire w{reinterpret_cast<const unsigned char*>(s.data()),
           reinterpret_cast<const unsigned char*>(s.data()) + s.size()};
    while (w.p != w.end) {
      std::uint64_t tag = 0, v = 0;
      std::string_view ld;
      w.field(tag, v, ld);
      if (static_cast<int>(tag >> 3) == f.number())
        out.push_back(ld);
    }
  }
  return out;
}

// The integer a field of `f`'s type holds in `raw` (a varint or fixed).
std::int64_t signed_value(const gp::FieldDescriptor& f, std::uint64_t raw) {
  using FD = gp::FieldDescriptor;
  switch (f.type()) {
    case FD::TYPE_INT32: case FD::TYPE_SFIXED32: case FD::TYPE_ENUM:
      return static_cast<std::int32_t>(static_cast<std::uint32_t>(raw));
    case FD::TYPE_UINT32: case FD::TYPE_FIXED32:
      return static_cast<std::uint32_t>(raw);
    case FD::TYPE_SINT32: {
      const auto u = static_cast<std::uint32_t>(raw);
      return static_cast<std::int32_t>((u >> 1) ^ (~(u & 1) + 1));
    }
    case FD::TYPE_SINT64:
      return static_cast<std::int64_t>((raw >> 1) ^ (~(raw & 1) + 1));
    default:
      return static_cast<std::int64_t>(raw);
  }
}

// Whether `d` or a message type it holds has a proto2 `required` field:
// without one, IsInitialized (a walk over the fields by reflection) is
// always true and is not called.
bool has_required(const gp::Descriptor& d, std::vector<const gp::Descriptor*>& seen) {
  if (std::find(seen.begin(), seen.end(), &d) != seen.end())
    return false;
  seen.push_back(&d);
  for (int i = 0; i < d.field_count(); ++i) {
    const auto* f = d.field(i);
    if (f->is_required())
      return true;
    if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE
        && has_required(*f->message_type(), seen))
      return true;
  }
  return false;
}

class message_decoder final : public record_decoder {
public:
  message_decoder(proto_set_ptr set, const gp::Descriptor& msg, schema_ptr s,
                  std::shared_ptr<const plan> p, internal::common_options co,
                  bool reference_only)
    : set_(std::move(set)), msg_type_(&msg), schema_(std::move(s)), plan_(std::move(p)),
      co_(std::move(co)) {
    factory_ = std::make_unique<gp::DynamicMessageFactory>(set_ ? set_->importer->pool()
                                                                : msg.file()->pool());
    prototype_ = factory_->GetPrototype(&msg);
    std::vector<const gp::Descriptor*> seen;
    check_required_ = has_required(msg, seen);
    seen.clear();
    fast_ = !reference_only && all_proto3(msg, seen);
    int max_number = 0;
    for (int i = 0; i < msg.field_count(); ++i)
      max_number = std::max(max_number, msg.field(i)->number());
    if (max_number > 4096)
      fast_ = false; // the one-pass scan's table would be too large
    const auto slots = static_cast<std::size_t>(std::min(max_number, 4096)) + 1;
    top_.resize(slots);
    top_fields_.assign(slots, nullptr);
    for (int i = 0; i < msg.field_count(); ++i)
      if (static_cast<std::size_t>(msg.field(i)->number()) < slots)
        top_fields_[static_cast<std::size_t>(msg.field(i)->number())] = msg.field(i);
    oneof_last_.resize(static_cast<std::size_t>(msg.oneof_decl_count()));
    for (const auto& t : plan_->targets) {
      if (t.c == conv::json || t.path.size() > nested_.size())
        fast_ = false;
      // A oneof's message member, once cleared by another member, does
      // not merge with its earlier occurrences: left to the reference.
      for (const auto* f : t.path)
        if (f->cpp_type() == gp::FieldDescriptor::CPPTYPE_MESSAGE && f->real_containing_oneof())
          fast_ = false;
    }
  }

  const schema_ptr& output_schema() const override { return schema_; }

  std::size_t next_record(std::string_view buffer, bool at_eof, std::size_t& lines) override {
    lines = 0;
    return at_eof ? buffer.size() : 0; // one message a record (a Kafka value)
  }

  status decode(std::string_view record, batch_builder& out, std::string& reason) override {
    if (fast_ && well_formed(record, *msg_type_, 0)) {
      if (fast_row(record, out))
        return co_.rc.commit(out, reason);
      out.rollback_row(); // a value that does not fit: the reference says why
    }
    // Each message on an arena, dropped whole now and then: cheaper than
    // Message::Clear, which walks a DynamicMessage's fields by reflection.
    if (++since_reset_ >= 1024) {
      msg_ = nullptr;
      arena_.Reset();
      since_reset_ = 0;
    }
    msg_ = prototype_->New(&arena_);
    if (!msg_->ParsePartialFromArray(record.data(), static_cast<int>(record.size()))) {
      reason = "not a valid " + msg_type_->full_name() + " message ("
               + std::to_string(record.size())
               + " bytes: truncated, malformed wire data, or a string that is not UTF-8)";
      return status::bad;
    }
    if (check_required_ && !msg_->IsInitialized()) {
      reason = msg_type_->full_name() + " message without its required fields: "
               + msg_->InitializationErrorString();
      return status::bad;
    }
    for (const auto& t : plan_->targets)
      if (!read_target(t, out.col(t.column), reason)) {
        out.rollback_row();
        reason = "field '" + t.name + "': " + reason;
        return status::bad;
      }
    for (std::size_t i = 0; i < schema_->size(); ++i)
      if (i < co_.read.size() && !co_.read[i])
        internal::append_unread(out.col(i));
    return co_.rc.commit(out, reason);
  }

private:
  // The row of a well-formed message, read from the wire; false (with a
  // partial row) when a value does not fit its field.
  bool fast_row(std::string_view record, batch_builder& out) {
    roots_.assign(1, record);
    // One pass over the top level: each field's last occurrence, and each
    // oneof's last member (so a top-level field costs no scan of its own).
    ++seq_;
    {
      wire w{reinterpret_cast<const unsigned char*>(record.data()),
             reinterpret_cast<const unsigned char*>(record.data()) + record.size()};
      while (w.p != w.end) {
        std::uint64_t tag = 0, v = 0;
        std::string_view ld;
        w.field(tag, v, ld);
        const auto number = static_cast<std::size_t>(tag >> 3);
        if (number >= top_.size())
          continue;
        auto& slot = top_[number];
        slot.seq = seq_;
        slot.v = found{true, v, ld};
        if (const auto* f = top_fields_[number]; f && f->real_containing_oneof()) {
          auto& o = oneof_last_[static_cast<std::size_t>(f->real_containing_oneof()->index())];
          o.seq = seq_;
          o.number = static_cast<int>(number);
        }
      }
    }
    for (const auto& t : plan_->targets) {
      column& col = out.col(t.column);
      const std::vector<std::string_view>* slices = &roots_;
      const std::size_t n = t.path.size();
      bool absent = false;
      for (std::size_t i = 0; i + 1 < n && !absent; ++i) {
        nested_[i] = all_of(*slices, *t.path[i]);
        slices = &nested_[i];
        absent = slices->empty();
      }
      if (absent) {
        col.append_null();
        continue;
      }
      const auto* f = t.path.back();
      found v;
      if (n == 1 && static_cast<std::size_t>(f->number()) < top_.size()) {
        const auto& slot = top_[static_cast<std::size_t>(f->number())];
        if (slot.seq == seq_)
          v = slot.v;
        if (const auto* o = f->real_containing_oneof()) {
          const auto& last = oneof_last_[static_cast<std::size_t>(o->index())];
          if (last.seq == seq_ && last.number != f->number())
            v.present = false;
        }
      } else {
        v = last_of(*slices, *f);
      }
      const bool in_wrapper = n > 1 && is_wrapper(*t.path[n - 2]->message_type());
      if (!v.present && f->has_presence() && !in_wrapper) {
        col.append_null();
        continue;
      }
      switch (t.c) {
        case conv::boolean: col.append_bool(v.number != 0); break;
        case conv::int_to_int: col.append_int(signed_value(*f, v.number)); break;
        case conv::int_to_float:
          col.append_float(static_cast<double>(signed_value(*f, v.number)));
          break;
        case conv::uint64_to_int:
          if (v.number > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
            return false;
          col.append_int(static_cast<std::int64_t>(v.number));
          break;
        case conv::uint64_to_float: col.append_float(static_cast<double>(v.number)); break;
        case conv::float_to_float:
          if (f->type() == gp::FieldDescriptor::TYPE_FLOAT) {
            float x = 0;
            const auto bits = static_cast<std::uint32_t>(v.number);
            std::memcpy(&x, &bits, sizeof x);
            col.append_float(x);
          } else {
            double x = 0;
            std::memcpy(&x, &v.number, sizeof x);
            col.append_float(x);
          }
          break;
        case conv::string: {
          std::string reason;
          const auto text = internal::check_text(v.bytes, co_.invalid_utf8, text_scratch_, reason);
          if (!text)
            return false;
          col.append_string(*text);
          break;
        }
        case conv::bytes_base64:
          json_.clear();
          append_base64(v.bytes, json_);
          col.append_string(json_);
          break;
        case conv::enum_name:
          col.append_string(enum_text(*f->enum_type(), static_cast<int>(signed_value(*f, v.number))));
          break;
        case conv::enum_number: col.append_int(signed_value(*f, v.number)); break;
        case conv::timestamp_ms:
        case conv::timestamp_text: {
          // A Timestamp's occurrences merge: its seconds and nanos, each the last.
          const auto parts = all_of(*slices, *f);
          const auto& td = *f->message_type();
          const found sec = last_of(parts, *td.field(0));
          const found nan = last_of(parts, *td.field(1));
          const auto seconds = static_cast<std::int64_t>(sec.number);
          const auto nanos = static_cast<std::int32_t>(static_cast<std::uint32_t>(nan.number));
          constexpr std::int64_t limit = std::int64_t{1} << 52;
          if (seconds > limit || seconds < -limit)
            return false;
          const std::int64_t ms = seconds * 1000
            + (nanos >= 0 ? nanos / 1'000'000
                          : -((-static_cast<std::int64_t>(nanos) + 999'999) / 1'000'000));
          if (t.c == conv::timestamp_ms)
            col.append_int(ms);
          else
            col.append_string(format_iso8601(ms));
          break;
        }
        case conv::json:
          return false; // not on the fast path (see the constructor)
      }
    }
    for (std::size_t i = 0; i < schema_->size(); ++i)
      if (i < co_.read.size() && !co_.read[i])
        internal::append_unread(out.col(i));
    return true;
  }

  bool read_target(const plan::target& t, column& col, std::string& reason) {
    const gp::Message* m = msg_;
    const std::size_t n = t.path.size();
    for (std::size_t i = 0; i + 1 < n; ++i) {
      const auto* r = m->GetReflection();
      if (!r->HasField(*m, t.path[i])) {
        col.append_null();
        return true;
      }
      m = &r->GetMessage(*m, t.path[i]);
    }
    const auto* f = t.path.back();
    const auto* r = m->GetReflection();
    if (!f->is_repeated() && f->has_presence() && !r->HasField(*m, f)
        && !(n > 1 && is_wrapper(*t.path[n - 2]->message_type()))) {
      col.append_null();
      return true;
    }
    using CT = gp::FieldDescriptor::CppType;
    switch (t.c) {
      case conv::boolean:
        col.append_bool(r->GetBool(*m, f));
        return true;
      case conv::int_to_int:
      case conv::int_to_float: {
        std::int64_t v = 0;
        switch (f->cpp_type()) {
          case CT::CPPTYPE_INT32: v = r->GetInt32(*m, f); break;
          case CT::CPPTYPE_UINT32: v = r->GetUInt32(*m, f); break;
          default: v = r->GetInt64(*m, f); break;
        }
        if (t.c == conv::int_to_int)
          col.append_int(v);
        else
          col.append_float(static_cast<double>(v));
        return true;
      }
      case conv::uint64_to_int: {
        const auto v = r->GetUInt64(*m, f);
        if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
          reason = "uint64 " + std::to_string(v) + " is beyond int64 (declare it float64)";
          return false;
        }
        col.append_int(static_cast<std::int64_t>(v));
        return true;
      }
      case conv::uint64_to_float:
        col.append_float(static_cast<double>(r->GetUInt64(*m, f)));
        return true;
      case conv::float_to_float:
        col.append_float(f->cpp_type() == CT::CPPTYPE_FLOAT ? r->GetFloat(*m, f)
                                                            : r->GetDouble(*m, f));
        return true;
      case conv::string: {
        const auto& s = r->GetStringReference(*m, f, &scratch_);
        const auto text = internal::check_text(s, co_.invalid_utf8, text_scratch_, reason);
        if (!text)
          return false;
        col.append_string(*text);
        return true;
      }
      case conv::bytes_base64: {
        const auto& s = r->GetStringReference(*m, f, &scratch_);
        json_.clear();
        append_base64(s, json_);
        col.append_string(json_);
        return true;
      }
      case conv::enum_name:
        col.append_string(enum_text(*f->enum_type(), r->GetEnumValue(*m, f)));
        return true;
      case conv::enum_number:
        col.append_int(r->GetEnumValue(*m, f));
        return true;
      case conv::timestamp_ms:
      case conv::timestamp_text: {
        std::int64_t ms = 0;
        if (!timestamp_millis(r->GetMessage(*m, f), ms)) {
          reason = "google.protobuf.Timestamp beyond weir's timestamps";
          return false;
        }
        if (t.c == conv::timestamp_ms) {
          col.append_int(ms);
        } else {
          col.append_string(format_iso8601(ms));
        }
        return true;
      }
      case conv::json: {
        json_.clear();
        if (f->is_repeated()) {
          append_field_json(*m, *f, json_, 0);
        } else {
          append_message_json(r->GetMessage(*m, f), json_, 0);
        }
        const auto text = internal::check_text(json_, co_.invalid_utf8, text_scratch_, reason);
        if (!text)
          return false;
        col.append_string(*text);
        return true;
      }
    }
    return false;
  }

  proto_set_ptr set_;
  const gp::Descriptor* msg_type_;
  schema_ptr schema_;
  std::shared_ptr<const plan> plan_;
  internal::common_options co_;
  std::unique_ptr<gp::DynamicMessageFactory> factory_;
  const gp::Message* prototype_ = nullptr;
  gp::Arena arena_;
  gp::Message* msg_ = nullptr; ///< the message decoded last, on arena_
  std::size_t since_reset_ = 0;
  bool check_required_ = true; ///< a proto2 `required` field somewhere in the type
  bool fast_ = false;          ///< the wire-format fast path may settle messages
  std::vector<std::string_view> roots_;
  /// The top level's fields by number (up to 4096), for the one-pass scan.
  struct top_slot {
    std::uint64_t seq = 0; ///< the message it was seen in (seq_)
    found v;
  };
  struct oneof_slot {
    std::uint64_t seq = 0;
    int number = 0;
  };
  std::vector<top_slot> top_;
  std::vector<const gp::FieldDescriptor*> top_fields_;
  std::vector<oneof_slot> oneof_last_;
  std::uint64_t seq_ = 0;
  std::array<std::vector<std::string_view>, 128> nested_; ///< per path level
  std::string scratch_, text_scratch_, json_;
};

} // namespace

expected<std::unique_ptr<record_decoder>>
make_message_decoder(proto_set_ptr set, const gp::Descriptor& msg, const decoder_options& opts,
                     internal::common_options co) {
  silence_protobuf_logs();
  if (!opts.schema)
    return invalid("format protobuf needs a schema (the fields to read)");
  auto p = resolve(msg, *opts.schema, co.read);
  if (!p)
    return invalid(p.error().message);
  return std::unique_ptr<record_decoder>{std::make_unique<message_decoder>(
    std::move(set), msg, opts.schema, std::move(*p), std::move(co), opts.proto_reference)};
}

expected<std::unique_ptr<record_decoder>> make_decoder(const decoder_options& opts,
                                                       internal::common_options co) {
  if (opts.proto_file.empty())
    return invalid("format protobuf needs proto_file (the .proto file of its messages)");
  if (opts.proto_message.empty())
    return invalid("format protobuf needs message (the full name of the message type)");
  auto set = load_proto(opts.proto_file, opts.proto_include);
  if (!set)
    return set.error();
  const auto* d = find_message(**set, opts.proto_message);
  if (!d)
    return invalid("message " + opts.proto_message + " is not defined in "
                   + opts.proto_file + " or its imports");
  return make_message_decoder(std::move(*set), *d, opts, std::move(co));
}

namespace {

constexpr std::uint64_t max_message_bytes = std::uint64_t{1} << 31; // ParseFromArray's int

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using file_ptr = std::unique_ptr<std::FILE, file_closer>;

class delimited_reader final : public source_reader {
public:
  delimited_reader(file_source_options opts, file_ptr f, std::unique_ptr<record_decoder> dec,
                   bad_record_handler on_bad)
    : opts_(std::move(opts)), f_(std::move(f)), dec_(std::move(dec)),
      on_bad_(std::move(on_bad)), builder_(dec_->output_schema()) {}

  const schema_ptr& output_schema() const override { return dec_->output_schema(); }

  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (done_)
      return nullptr;
    if (max_rows == 0)
      max_rows = 1;
    std::size_t consumed = 0;
    std::string reason;
    while (builder_.rows() < max_rows && consumed < max_rows + 4096) {
      std::string_view msg;
      const auto at = offset_;
      const auto fr = frame(msg, reason);
      if (fr == framed::end) {
        done_ = true;
        break;
      }
      ++records_;
      ++consumed;
      if (fr == framed::broken) {
        done_ = true;
        report(at, reason, msg);
        break;
      }
      reason.clear();
      if (dec_->decode(msg, builder_, reason) == record_decoder::status::bad)
        report(at, reason, msg);
    }
    if (done_ && builder_.rows() == 0)
      return nullptr;
    return builder_.finish();
  }

  std::vector<source_position> positions() const override {
    return {{opts_.path, position_unit::byte_offset, offset_}};
  }

  void seek(const std::vector<source_position>& to) override {
    const auto target = select_position(to, opts_.path, position_unit::byte_offset);
    // Walk the length prefixes to the target, counting the messages (their
    // numbers are the dead letters' `line`).
    std::string reason;
    while (offset_ < target) {
      std::string_view msg;
      const auto fr = frame(msg, reason);
      // A broken tail was consumed whole (one bad record): its end is a
      // position the reader reports, and checkpoints record.
      if (fr == framed::broken && offset_ == target) {
        ++records_;
        done_ = true;
        break;
      }
      if (fr == framed::end || fr == framed::broken || offset_ > target)
        throw std::runtime_error("cannot resume " + opts_.path + " at byte "
                                 + std::to_string(target)
                                 + ": no message of the file ends there");
      ++records_;
    }
  }

private:
  enum class framed { ok, end, broken };

  // Makes `n` bytes from the read position available in buf_; false at the
  // end of the file before that.
  bool need(std::size_t n) {
    while (buf_.size() - pos_ < n) {
      if (eof_)
        return false;
      if (pos_ > 0) {
        buf_.erase(0, pos_);
        pos_ = 0;
      }
      // A chunk at a time: a length prefix is not trusted with an
      // allocation before its bytes are there.
      const std::size_t old = buf_.size();
      const std::size_t want = opts_.chunk_bytes;
      buf_.resize(old + want);
      const std::size_t got = std::fread(buf_.data() + old, 1, want, f_.get());
      buf_.resize(old + got);
      if (got < want) {
        if (std::ferror(f_.get()))
          throw std::runtime_error("cannot read " + opts_.path + ": " + std::strerror(errno));
        eof_ = true;
      }
    }
    return true;
  }

  // The next message: its bytes in `msg`; `broken` (with `reason`, and the
  // bytes that are there in `msg`) when its prefix is malformed or runs past
  // the end of the file. Nothing after a broken prefix can be framed: the
  // rest of the file is consumed with it (the read position is then the
  // file's end), so that a checkpoint taken after it resumes past it.
  framed frame(std::string_view& msg, std::string& reason) {
    auto r = frame_at(msg, reason);
    if (r == framed::broken) {
      struct stat st{};
      const std::uint64_t end = ::fstat(::fileno(f_.get()), &st) == 0
                                  ? static_cast<std::uint64_t>(st.st_size) : offset_;
      offset_ = std::max<std::uint64_t>(offset_, end);
      pos_ = buf_.size();
      eof_ = true;
    }
    return r;
  }

  framed frame_at(std::string_view& msg, std::string& reason) {
    const std::uint64_t at = offset_;
    std::uint64_t len = 0;
    std::size_t i = 0;
    for (;; ++i) {
      if (!need(i + 1)) {
        if (i == 0)
          return framed::end;
        reason = "truncated length prefix at byte " + std::to_string(at);
        msg = std::string_view{buf_}.substr(pos_);
        return framed::broken;
      }
      const auto b = static_cast<unsigned char>(buf_[pos_ + i]);
      if (i == 9 && b > 1) {
        reason = "malformed length prefix at byte " + std::to_string(at)
                 + " (a varint beyond 64 bits)";
        msg = std::string_view{buf_}.substr(pos_, i + 1);
        return framed::broken;
      }
      len |= static_cast<std::uint64_t>(b & 0x7F) << (7 * i);
      if ((b & 0x80) == 0)
        break;
    }
    const std::size_t prefix = i + 1;
    if (len >= max_message_bytes) {
      reason = "length prefix " + std::to_string(len) + " at byte " + std::to_string(at)
               + " beyond 2 GiB (not a length-delimited stream?)";
      msg = std::string_view{buf_}.substr(pos_, prefix);
      return framed::broken;
    }
    if (!need(prefix + static_cast<std::size_t>(len))) {
      reason = "truncated message at byte " + std::to_string(at) + ": its prefix says "
               + std::to_string(len) + " bytes, the file has "
               + std::to_string(buf_.size() - pos_ - prefix);
      msg = std::string_view{buf_}.substr(pos_ + prefix);
      pos_ = buf_.size();
      offset_ = at + prefix + msg.size();
      return framed::broken;
    }
    msg = std::string_view{buf_}.substr(pos_ + prefix, static_cast<std::size_t>(len));
    pos_ += prefix + static_cast<std::size_t>(len);
    offset_ = at + prefix + len;
    return framed::ok;
  }

  void report(std::uint64_t at, const std::string& reason, std::string_view raw) {
    if (!on_bad_)
      return;
    bad_record r;
    r.source = bad_record_source::file;
    r.origin = opts_.path;
    r.line = records_;
    r.offset = at;
    r.reason = reason;
    r.raw = internal::hex_prefix(raw);
    on_bad_(r); // may throw (on_bad_record = "fail")
  }

  file_source_options opts_;
  file_ptr f_;
  std::unique_ptr<record_decoder> dec_;
  bad_record_handler on_bad_;
  batch_builder builder_;
  std::string buf_;
  std::size_t pos_ = 0;         ///< the read position in buf_
  std::uint64_t offset_ = 0;    ///< file offset of buf_[pos_]: after the last message
  std::uint64_t records_ = 0;   ///< messages consumed
  bool eof_ = false;
  bool done_ = false;
};

} // namespace

expected<source_reader_ptr> make_delimited_reader(const file_source_options& opts,
                                                  bad_record_handler on_bad) {
  file_source_options o = opts;
  if (!o.event_time_field.empty())
    o.decoder.event_time_field = o.event_time_field;
  if (!o.decoder.schema)
    return invalid("format protobuf needs a schema (the fields to read)");
  auto co = internal::make_common_options(o.decoder, o.decoder.schema);
  if (!co)
    return co.error();
  auto dec = make_decoder(o.decoder, std::move(*co));
  if (!dec)
    return dec.error();
  file_ptr f{std::fopen(o.path.c_str(), "rb")};
  if (!f)
    return make_error(errc::io_error, "cannot open " + o.path + ": " + std::strerror(errno));
  if (o.chunk_bytes == 0)
    o.chunk_bytes = 1 << 20;
  return source_reader_ptr{std::make_unique<delimited_reader>(std::move(o), std::move(f),
                                                              std::move(*dec),
                                                              std::move(on_bad))};
}

} // namespace weir::format::protobuf
