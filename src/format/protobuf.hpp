// SPDX-License-Identifier: Apache-2.0
#pragma once
// Protocol Buffers (proto2 and proto3 binary wire format): message types
// loaded at run time from .proto files (libprotobuf's compiler Importer),
// the plan that maps a message's fields onto a pipeline's declared fields,
// and the decoders of single messages (a Kafka message's value) and of
// length-delimited streams of them (a file). Built only with libprotobuf
// (WEIR_WITH_PROTOBUF, Debian's libprotobuf-dev 3.21). Flink counterpart:
// the `protobuf` format (flink-protobuf, `PbRowDataDeserializationSchema`).

#include "internal/decoder_common.hpp"
#include "weir/format/format.hpp"

#include <memory>
#include <string>
#include <vector>

namespace google::protobuf {
class Descriptor;
class FieldDescriptor;
} // namespace google::protobuf

namespace weir::format::protobuf {

/// The message types of one .proto file and its imports, loaded with
/// libprotobuf's `compiler::Importer` over a source tree of the file's own
/// directory, the `includes` (in order) and the directory of Protobuf's
/// well-known types (google/protobuf/timestamp.proto, ...). Owns the
/// descriptors it hands out; shared by the decoders that use them.
class proto_set;
using proto_set_ptr = std::shared_ptr<const proto_set>;

/// Loads `proto_file`. Errors: `errc::io_error` "cannot read <file>: <why>";
/// `errc::invalid_argument` "<file>:<line>:<col>: <protoc's message>" for a
/// .proto that does not compile (the first errors, up to 5).
[[nodiscard]] expected<proto_set_ptr> load_proto(const std::string& proto_file,
                                                 const std::vector<std::string>& includes);

/// The message type named `full_name` ("pkg.Msg") in `set`, or nullptr;
/// `candidates`: the full names of the set's message types (for a
/// did-you-mean), nested ones included.
const google::protobuf::Descriptor* find_message(const proto_set& set,
                                                 const std::string& full_name,
                                                 std::vector<std::string>* candidates = nullptr);

/// Why a declared field cannot be read from a message type.
struct field_problem {
  std::string field;                   ///< the declared field
  std::string message;                 ///< "field 'x': ..."
  std::vector<std::string> candidates; ///< names that exist where the path broke
};

/// The decoding plan of one message type against the declared fields: per
/// declared and read field, the path of Protobuf fields it reads (a dotted
/// name `a.b` walks into the message field `a`) and how it converts. The
/// rules (docs/kinds/formats/protobuf.md): bool into bool; the integer types
/// into int64 (uint64 above INT64_MAX is a bad record) or float64; float and
/// double into float64; string into string; bytes into string as base64
/// (Protobuf's JSON mapping); an enum into string (its value's name, or
/// the number for a number the enum does not name) or int64 (the number);
/// google.protobuf.Timestamp into timestamp (ms since the epoch, floored) or
/// string (RFC 3339 text); the wrappers (google.protobuf.Int64Value, ...)
/// as their value, null when absent; any other message, a repeated field or
/// a map into string, as JSON text. A field with explicit presence (proto2
/// optional, proto3 `optional`, a oneof member, a message) that is absent is
/// null, as is a path through an absent message; a proto3 field without
/// presence reads its default (0, "", false, the enum's first value).
class plan;

/// Resolves `msg` against `reader` (`read`: per reader field whether it is
/// decoded; shorter: the rest are). A reader field that is not in the
/// message, or whose type cannot read the Protobuf field, is a problem.
[[nodiscard]] expected<std::shared_ptr<const plan>, field_problem>
resolve(const google::protobuf::Descriptor& msg, const schema& reader,
        const std::vector<bool>& read = {});

/// A record_decoder of single serialized messages of `msg` (one Kafka
/// message's value): read straight from the wire format when the fast path
/// settles the message (proto3 types, no JSON-text field, a well-formed
/// message; `opts.proto_reference` turns it off), else decoded with
/// `DynamicMessage`, the reference, which also gives every bad message's
/// reason (docs/kinds/formats/protobuf.md). `set` keeps `msg` alive. This is the entry point a schema registry's framing uses: it
/// takes the descriptor from the schema it fetched. A message that does
/// not parse (truncated, malformed wire data, a proto3 string that is not
/// UTF-8, a proto2 required field missing) or whose value does not fit
/// its field (uint64 beyond int64, NUL or invalid UTF-8 in a string) is
/// bad, with the reason. Errors: those of `resolve` as
/// `errc::invalid_argument`.
[[nodiscard]] expected<std::unique_ptr<record_decoder>>
make_message_decoder(proto_set_ptr set, const google::protobuf::Descriptor& msg,
                     const decoder_options& opts, internal::common_options co);

/// `make_message_decoder` for `opts.proto_file`, `opts.proto_include` and
/// `opts.proto_message`. Errors: those of `load_proto`, an unknown message
/// and an unresolvable field (`errc::invalid_argument`).
[[nodiscard]] expected<std::unique_ptr<record_decoder>>
make_decoder(const decoder_options& opts, internal::common_options co);

/// A reader of a file of length-delimited messages (each a varint length,
/// then that many bytes: Java's `writeDelimitedTo`, C++'s
/// `SerializeDelimitedToOstream`), decoded as `make_decoder` does. A message
/// that does not decode is a bad record (origin: the path, `line`: its
/// 1-based number in the file, `offset`: the byte offset of its length
/// prefix, `raw`: its first 1024 bytes as hex); a length prefix that is
/// malformed or runs past the end of the file ends the file with one bad
/// record (nothing after it can be framed). `positions()`: the byte offset
/// after the last consumed message (unit "byte"); `seek` goes there.
/// Errors: those of `make_decoder`; `errc::io_error` when the file cannot be
/// opened.
[[nodiscard]] expected<source_reader_ptr>
make_delimited_reader(const file_source_options& opts, bad_record_handler on_bad);

} // namespace weir::format::protobuf
