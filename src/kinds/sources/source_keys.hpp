// SPDX-License-Identifier: Apache-2.0
#pragma once
// What the decoding source kinds (file, http, kafka) share: the rows of their
// key tables for event time and watermarks, and the parsing of the keys they
// have in common (a field of the schema, the watermark table, csv options),
// so that the three read and report them alike.
#include "config/kind.hpp"
#include "weir/api/source_options.hpp"
#include "weir/format/format.hpp"

#include <initializer_list>
#include <optional>
#include <string_view>
#include <vector>

namespace weir::kinds::sources {

/// The key rows of a source's table, in order: the groups concatenated.
std::vector<config::key_spec> key_rows(
  std::initializer_list<std::vector<config::key_spec>> groups);

/// The key rows `event_time` and `event_time.field` (required within the table
/// unless another key can give the event time).
std::vector<config::key_spec> event_time_keys(bool field_required);

/// The key rows `watermark`, `watermark.max_out_of_orderness` and
/// `watermark.idle_timeout`. `generator` ends "the watermark generator" (", one
/// per partition"); `idle_unit` is what goes idle ("a partition", "the source").
std::vector<config::key_spec> watermark_keys(std::string_view generator,
                                             std::string_view idle_unit);

/// The key rows `csv` and `csv.delimiter`, and `csv.header` documented as
/// `header_doc` unless that is empty (no header line: a Kafka message is one
/// record).
std::vector<config::key_spec> csv_keys(std::string_view header_doc);

/// The type of schema field `f` names; nullopt when there is no schema yet (it
/// failed to parse: reported already) or, reported at `f` as "<what> '<f>' is
/// not a field of the schema" with a did-you-mean and the fields, when the
/// schema has no such field.
std::optional<type_id> field_of_schema(config::reader& r, const schema_ptr& schema,
                                       const config::located& f, std::string_view what);

/// field_of_schema, and then the field must be a timestamp or int64 (an event
/// or processing time): "<what> '<f>' must name a timestamp or int64 field,
/// got <type>". False if either was reported.
bool check_time_field(config::reader& r, const schema_ptr& schema, const config::located& f,
                      std::string_view what);

/// The `watermark` table (soft: a bad duration is reported, the source still
/// built) into `w`.
void read_watermark(config::parse_context& c, watermark_options& w);

/// The `csv` table (soft) into `d`: `header` when `with_header`, `delimiter`
/// (one character). The table is refused unless `format` is "csv".
void read_csv_options(config::parse_context& c, const std::optional<config::located>& format,
                      format::decoder_options& d, bool with_header);

/// The key rows of format "protobuf": `proto_file`, `proto_include`,
/// `message`.
std::vector<config::key_spec> protobuf_keys();

/// The Protobuf keys (hard) into `d`: `proto_file` and `message` required
/// by format "protobuf", and all three refused by the other formats. The
/// .proto is loaded now and checked against the declared fields
/// (format::check_protobuf): an unreadable or invalid .proto is reported at
/// `proto_file`, an unknown message at `message`, a declared field the
/// message cannot give at its key in `schema` (each with a did-you-mean).
/// False when anything was reported.
bool read_protobuf_options(config::reader& r, const std::optional<config::located>& format,
                           format::decoder_options& d);

} // namespace weir::kinds::sources
