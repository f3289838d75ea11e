// SPDX-License-Identifier: Apache-2.0
#pragma once
// Avro binary (Apache Avro 1.11 specification): writer schemas, their
// resolution against a pipeline's declared fields (the reader side), datum
// decoding into record batches, and Object Container Files. Built only with
// avro-c (WEIR_WITH_AVRO, Debian's libavro-dev), which validates every schema.

#include "internal/decoder_common.hpp"
#include "weir/format/format.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace weir::format::avro {

/// A node of a parsed Avro schema.
struct node {
  enum class kind : std::uint8_t {
    null_type, boolean, int_type, long_type, float_type, double_type, bytes, string,
    record, enum_type, array, map, union_type, fixed,
  };
  enum class logical : std::uint8_t {
    none, timestamp_millis, timestamp_micros, date, decimal, uuid, time_millis, time_micros,
  };
  kind k = kind::null_type;
  logical lt = logical::none;
  int precision = 0;
  int scale = 0;
  std::int64_t size = 0;             ///< fixed: its bytes
  std::string name;                  ///< named types: the full name
  std::vector<std::string> names;    ///< record: field names; enum: symbols
  std::vector<const node*> children; ///< record fields, array items, map values, union branches
};

/// A writer's schema, parsed from its JSON (an .avsc file's text).
/// Immutable; shared by the decoders that read its datums.
class writer_schema {
public:
  const node& root() const noexcept { return *root_; }
  const std::string& json() const noexcept { return json_; }

private:
  friend expected<std::shared_ptr<const writer_schema>> parse_schema(std::string_view json);
  std::vector<std::unique_ptr<node>> nodes_;
  const node* root_ = nullptr;
  std::string json_;
};
using writer_schema_ptr = std::shared_ptr<const writer_schema>;

/// Parses an Avro schema. avro-c (`avro_schema_from_json_length`) checks it
/// first; the logical types (`logicalType`, `precision`, `scale`), which
/// avro-c 1.11 drops, are read from the JSON alongside. Errors:
/// `errc::invalid_argument` "invalid Avro schema: <avro-c's reason>".
[[nodiscard]] expected<writer_schema_ptr> parse_schema(std::string_view json);

/// The decoding plan of one writer schema against the declared fields: for
/// each field of the writer's record, the column it fills (or none: skipped).
/// The resolution rules (docs/kinds/formats/avro.md): fields match by
/// name; a declared field the writer lacks is null; a writer field not
/// declared is skipped; int and long read into int64 or float64, float and
/// double into float64; string, bytes, enum and uuid into string (bytes must
/// be UTF-8); timestamp-millis/micros into timestamp (ms; micros floored) or
/// int64 (the raw number); date into timestamp (midnight UTC) or int64
/// (days); decimal into float64 (nearest) or string (exact text); records,
/// arrays and maps into string as JSON text (as jsonl keeps nested values);
/// a union into a field every non-null branch can be read into, null being
/// null. Errors: `errc::invalid_argument` naming the field and both types
/// when the writer's root is not a record or a type cannot be read into its
/// field.
class resolution {
public:
  struct target {
    const node* writer = nullptr;
    int column = -1; ///< -1: not declared or not read (skipped)
  };
  const std::vector<target>& targets() const noexcept { return targets_; }
  const writer_schema_ptr& writer() const noexcept { return writer_; }

private:
  friend expected<resolution> resolve(writer_schema_ptr, const schema&,
                                      const std::vector<bool>&);
  writer_schema_ptr writer_;
  std::vector<target> targets_;
};

/// Resolves `writer` against `reader` (`read`: per reader field, whether it
/// is decoded; shorter: the rest are). See `resolution`.
[[nodiscard]] expected<resolution> resolve(writer_schema_ptr writer, const schema& reader,
                                           const std::vector<bool>& read = {});

/// Decodes one datum of `plan`'s writer schema from `datum` into a row of
/// `out`, whole: a truncated datum, a union index or enum symbol out of
/// range, a negative length, invalid UTF-8 in a string read into a string
/// field, or bytes left after the datum (`trailing_ok` false) make it bad,
/// with `reason` saying which field and at which byte. `consumed`: the
/// datum's length (a container block holds datums back to back). Nothing is
/// allocated from a length read in the datum before the bytes are there.
/// The writer schema comes with each call's `plan`: a schema registry's
/// reader resolves each writer schema once (by its id) and passes the plan
/// of each message's schema.
record_decoder::status decode_datum(const resolution& plan, std::string_view datum,
                                    const internal::common_options& co, batch_builder& out,
                                    std::string& reason, std::size_t& consumed,
                                    bool trailing_ok);

/// A record_decoder whose records are single datums (a Kafka message's
/// value), all of `opts.avro_schema`'s writer schema. Errors: those of
/// `parse_schema` and `resolve`, and `errc::invalid_argument` when
/// `avro_schema` is empty.
///
/// With `opts.schema_registry.url` set, each record is framed as
/// Confluent's wire format instead (Flink's
/// `ConfluentRegistryAvroDeserializationSchema`): the writer schema of each
/// id is fetched once from the registry (src/format/schema_registry.hpp),
/// resolved, and its plan kept for the decoder's life. A record too short
/// for the header, with a magic byte other than 0, of an id the registry
/// does not have (404), of a schema that is not Avro or does not resolve, or
/// whose datum is bad, is bad, the reason saying which; a registry that
/// cannot be reached or answers otherwise throws std::runtime_error from
/// `decode` (the source fails). Errors: `errc::invalid_argument` for the url
/// (`client::make`) or `schema_registry_not_built`.
[[nodiscard]] expected<std::unique_ptr<record_decoder>>
make_datum_decoder(const decoder_options& opts, internal::common_options co);

/// Reads the header of the Object Container File at `path`: its writer
/// schema and codec. Errors: `errc::io_error` (cannot open),
/// `errc::invalid_argument` ("not an Avro container file", unsupported codec,
/// invalid schema).
struct container_header {
  writer_schema_ptr schema;
  std::string codec; ///< "null", "deflate", "xz" ("snappy" is refused)
  std::uint64_t data_offset = 0;
  std::string sync;
};
[[nodiscard]] expected<container_header> read_container_header(const std::string& path);

/// A reader of one Object Container File (Flink's `AvroInputFormat`): blocks
/// read one at a time, decompressed (null, deflate, xz), their datums decoded
/// with `make_datum_decoder`'s rules against the file's own writer schema.
/// A bad datum is a bad record (origin: the path, `offset`: the byte offset of
/// its block, `line`: its 1-based number among the records read, a corrupt
/// block's records not counted); the rest of its
/// block cannot be framed and is skipped, counted in the reason. A corrupt
/// block (wrong sync marker, a size beyond the file, a codec error) is one bad
/// record; reading resumes at the next sync marker found. `positions()`: one,
/// the file's path and the records consumed (unit "event"); `seek` skips as
/// many. Errors: those of `read_container_header` and `resolve`.
[[nodiscard]] expected<source_reader_ptr>
make_container_reader(const file_source_options& opts, bad_record_handler on_bad);

} // namespace weir::format::avro
