// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/connectors/source_reader.hpp"
#include "weir/core/expected.hpp"
#include "weir/core/record_batch.hpp"
#include "weir/core/time_zone.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace weir::format {

/// Record formats of files (docs/reference/pipeline.md: `format = "jsonl" | "csv" |
/// "apache_combined" | "avro" | "protobuf"`). Avro and Protobuf are decoded
/// only (no encoder) and only in a build with avro-c (`avro_built()`) or
/// libprotobuf (`protobuf_built()`).
enum class format_kind { jsonl, csv, apache_combined, avro, protobuf };

/// Whether this build decodes Avro (built with avro-c, WEIR_WITH_AVRO).
bool avro_built() noexcept;

/// Why a build without avro-c refuses format "avro".
inline constexpr std::string_view avro_not_built =
  "format \"avro\" is not built into this weir: rebuild with -DWEIR_WITH_AVRO=ON and "
  "libavro-dev installed";

/// Whether this build decodes Protobuf (built with libprotobuf, WEIR_WITH_PROTOBUF).
bool protobuf_built() noexcept;

/// Why a build without libprotobuf refuses format "protobuf".
inline constexpr std::string_view protobuf_not_built =
  "format \"protobuf\" is not built into this weir: rebuild with -DWEIR_WITH_PROTOBUF=ON and "
  "libprotobuf-dev and libprotoc-dev installed";

std::optional<format_kind> parse_format(std::string_view name) noexcept;
std::string_view to_string(format_kind k) noexcept;

/// The fixed schema of `apache_combined`: client, ident, user (string),
/// ts (timestamp), method, path, protocol (string), status (int64),
/// bytes (int64, null for "-"), referrer, agent (string).
schema_ptr apache_combined_schema();

/// What a decoder does with text that is not valid UTF-8 (a source's
/// `invalid_utf8` key): `error` makes the record bad ("invalid UTF-8 at byte
/// N"); `replace` reads each maximal ill-formed subsequence as U+FFFD.
enum class invalid_utf8_policy { error, replace };

/// How an encoder writes timestamp fields (a sink's `timestamp_format`):
/// integer ms since the epoch, or ISO-8601 UTC text with milliseconds
/// ("2023-03-05T15:13:37.320Z", format_iso8601).
enum class timestamp_format { epoch_ms, iso8601 };

/// How a schema registry names the subject of a schema (Confluent's
/// `value.subject.name.strategy`): `topic` = `<topic>-value` (or `-key`),
/// `record` = the record's full name, `topic_record` = `<topic>-<full name>`.
enum class subject_strategy { topic, record, topic_record };

/// A Confluent-compatible schema registry over REST
/// (src/format/schema_registry.hpp), e.g. `http://127.0.0.1:8081` or
/// Apicurio's `http://host:8080/apis/ccompat/v7`. Built only with libcurl
/// (`schema_registry_built()`).
struct schema_registry_options {
  std::string url; ///< the API's base URL; empty: no registry
  /// "user:password" for HTTP basic auth (Confluent's
  /// `basic.auth.user.info`); empty: none. Never logged.
  std::string basic_auth_user_info;
  std::string ca_file; ///< https: PEM file of the CAs trusted; empty: the system's
  subject_strategy strategy = subject_strategy::topic;
  /// How long one request may take, connection included.
  std::chrono::milliseconds timeout{10000};
};

/// Whether this build has the schema registry client (libcurl, WEIR_WITH_CURL).
bool schema_registry_built() noexcept;

/// Why a build without libcurl refuses `schema_registry`.
inline constexpr std::string_view schema_registry_not_built =
  "schema_registry is not built into this weir: rebuild with -DWEIR_WITH_CURL=ON and "
  "libcurl4-openssl-dev installed";

/// Options of a decoder.
struct decoder_options {
  format_kind kind = format_kind::jsonl;
  schema_ptr schema;        ///< required for jsonl and csv; ignored for apache
  bool csv_header = true;   ///< first CSV record names the columns
  char csv_delimiter = ',';  ///< any byte except '"', '\r' and '\n'
  /// When set, names a timestamp or int64 field of the schema that carries
  /// each record's event time: every committed row also appends that value
  /// (ms) to `batch_builder::timestamps()`, and a record in which the field is
  /// null or missing is bad ("event time field 'ts' is null").
  std::string event_time_field;
  /// jsonl only: an object with a "control" key is a control line, not data.
  /// `{"control": "advance_processing_time", "proc_time": N}` moves the
  /// replay clock to N ms (decode returns `status::control`); any other
  /// control line is a bad record.
  bool control_lines = false;
  /// Invalid UTF-8 in a record: bad (default) or replaced by U+FFFD. A NUL
  /// byte makes a record bad either way.
  invalid_utf8_policy invalid_utf8 = invalid_utf8_policy::error;
  /// The zone of ISO-8601 timestamps written without one (jsonl and csv;
  /// apache_combined stamps always carry their offset). Default UTC.
  time_zone zone;
  /// Projection push-down (Flink's `SupportsProjectionPushDown`), jsonl and
  /// csv: per schema field, whether anything reads it; empty = all. An
  /// unread field is not decoded: its column stays all null without values
  /// (`column::has_values` false, as generated sources leave the fields they
  /// skip) and nothing in its text is checked beyond what splitting the
  /// record needs, so a value of the wrong type there does not make the
  /// record bad (Flink's JSON and CSV formats read only the projected
  /// fields too). The event-time field is decoded whatever this says.
  /// Fields past the vector's end are read.
  std::vector<bool> read_fields;
  /// avro only: the writer's schema (JSON text, an .avsc file's content)
  /// for single datums (a Kafka message's value). An Object Container File
  /// carries its own and ignores this.
  std::string avro_schema;
  /// avro only: when `url` is set, each datum is framed as Confluent's wire
  /// format (byte 0, the writer schema's id as 4 bytes big-endian, the
  /// datum) and its writer schema is fetched from the registry by id
  /// (`avro_schema` is then not used).
  schema_registry_options schema_registry;
  /// protobuf only: the .proto file describing the messages, the
  /// directories its imports are looked up in (after the file's own), and
  /// the full name of the message type ("pkg.Msg") each record is.
  std::string proto_file;
  std::vector<std::string> proto_include;
  std::string proto_message;
  /// protobuf only: decode every message with DynamicMessage (the
  /// reference), never the wire-format fast path. A testing and benchmark
  /// knob, not a TOML key.
  bool proto_reference = false;
  /// jsonl `decode_many` only: the bytes simdjson's stage 1 indexes at a time
  /// (`iterate_many`'s batch size); a line longer than this is decoded by the
  /// per-line path. 0 = 256 KiB. A tuning and testing knob, not a TOML key.
  std::size_t batch_window = 0;
};

/// Readable bytes `record_decoder::decode_many` may read past the end of its
/// text (simdjson's SIMDJSON_PADDING): the file reader's chunk buffer keeps
/// this much slack after its data.
inline constexpr std::size_t decode_many_padding = 64;

/// Splits a byte stream into records and decodes each into a batch_builder.
///
/// Type rules: a missing field or an empty CSV cell is null; a JSON value or
/// CSV cell that does not fit the declared type is an error (a bad record).
/// int64 accepts integers; float64 accepts any number; string accepts strings,
/// and in jsonl also arrays and objects, kept as minified JSON text (what the
/// `explode` operator unnests); timestamp accepts an
/// integer (ms since epoch) or an ISO-8601 string ("2023-03-05T15:13:37.320Z",
/// "2015-05-17 10:05:03", an offset like +02:00 is honoured, none means UTC).
///
/// The record contract (docs/concepts/bad-input.md), in every format: a record holding a
/// NUL byte is bad ("NUL byte at byte N"); one that is not valid UTF-8 is bad
/// ("invalid UTF-8 at byte N") or, with `invalid_utf8_policy::replace`, read
/// with U+FFFD for each maximal invalid subsequence. An integer beyond int64
/// is bad in an int64 or timestamp field and the nearest double in a float64
/// field; a float beyond a double's range is bad. Nothing is clamped.
///
/// Per format:
/// - **jsonl**: one JSON object per line, read with simdjson On-Demand (one
///   reused parser): the keys are walked once, the values of declared and
///   read fields parsed, the others skipped by structure (brackets and
///   strings, which simdjson's first stage checks, as it checks UTF-8), so a
///   malformed literal such as `tru` in an undeclared or unread key is not
///   noticed. A record the fast path does not settle (any error, a value of
///   the wrong type, a nested value in a string field, an escaped key, text
///   after the object) is decoded again by simdjson DOM, which gives the
///   reasons below. Undeclared keys are skipped whatever their size, depth or content: a
///   document nested deeper than simdjson's default 1024 levels is parsed
///   again with a limit of its length, and one holding a number the DOM
///   refuses (beyond 64 bits, beyond a double) is validated with such numbers
///   blanked out and its declared fields read with simdjson On-Demand.
///   The file reader decodes a chunk's lines in one `decode_many` call:
///   simdjson `iterate_many` over the chunk, each document taken as its
///   line's record only if it starts and ends on that line, other lines
///   decoded as above, one by one (same rows, reasons and positions).
///   Fields are looked up by name; unknown keys are ignored, a duplicate key
///   keeps its last value, JSON null is null. int64 accepts JSON integers
///   only (`1.5` and also `3.0` are bad, as is an integer above INT64_MAX);
///   bool accepts true/false; string accepts strings only. Blank lines are
///   skipped. Not an object: bad, "invalid JSON: <simdjson error>" or
///   "invalid JSON: expected an object, got array".
/// - **csv**: RFC 4180 (quoted fields may hold the delimiter, `""` and
///   newlines; "\n" or "\r\n" endings). With a header, columns map to schema
///   fields by name (unknown columns ignored, absent fields null); without
///   one, by position. A row whose cell count differs from the header's (or
///   the schema's) is bad: "expected N fields, got M". An empty unquoted cell
///   is null; `""` is the empty string for string fields and null otherwise.
///   Numbers parse strictly (std::from_chars, whole cell); bool accepts
///   true/false (any case) and 1/0. A quote inside an unquoted cell is kept
///   literally; text after a closing quote is bad. A quote still open at the
///   end of the file ends its record at the end of the line it opened on
///   (bad, "unterminated quote"), and the lines after are records again.
/// - **apache_combined**: `client ident user [dd/Mon/yyyy:HH:MM:SS +zzzz]
///   "METHOD path protocol" status bytes "referrer" "agent"`; "-" is null for
///   ident, user and bytes, and kept as the string "-" for referrer and agent.
///   Inside quotes `\"` and `\\` are unescaped, other escapes (`\xhh`) kept.
///   A request that is not `METHOD target [PROTOCOL]` is parsed with nulls,
///   not bad: "-" and "" make method, path and protocol null; a request whose
///   first word is not a method (A-Z, '-', '_'), or that has one word, goes
///   whole to `path` with null method and protocol; the protocol is the last
///   word only if it starts with "HTTP/" (else null, the target keeping any
///   inner spaces). Text after the agent is ignored.
class record_decoder {
public:
  virtual ~record_decoder() = default;

  virtual const schema_ptr& output_schema() const = 0;

  /// Length in bytes of the first complete record in `buffer`, including its
  /// terminating newline ("\n" or "\r\n"); 0 when `buffer` holds no complete
  /// record yet. After a 0 the next call must pass the same record start
  /// (with more bytes after it): the scan resumes where it stopped, so a
  /// record growing over many chunks costs O(its length). At end of file (`at_eof`) a
  /// final record without newline is complete. Sets `lines` to the number of newlines the
  /// record spans.
  virtual std::size_t next_record(std::string_view buffer, bool at_eof,
                                  std::size_t& lines) = 0;

  /// Decodes one record (without its trailing newline) into `out`:
  /// `ok` = one row committed; `skipped` = nothing committed and nothing wrong
  /// (a CSV header, an empty line); `bad` = nothing committed (the partial row
  /// is rolled back) and `reason` says why.
  enum class status { ok, skipped, bad, control };
  virtual status decode(std::string_view record, batch_builder& out,
                        std::string& reason) = 0;

  /// After `decode` returned `status::control`: the processing time (ms) the
  /// control line advances the replay clock to.
  virtual event_time control_time() const { return 0; }

  /// Limits of one `decode_many` call.
  struct batch_limits {
    std::size_t max_rows = static_cast<std::size_t>(-1);    ///< rows committed by the call
    std::size_t max_records = static_cast<std::size_t>(-1); ///< records consumed (any status)
    /// A record starting after this byte of the text is left unconsumed
    /// (a file split's end).
    std::size_t max_start = static_cast<std::size_t>(-1);
    /// Stop before a record spanning more than one line (a CSV quoted
    /// newline), leaving it to the caller (a file split refuses one).
    bool single_line = false;
  };
  /// What a `decode_many` call consumed: whole records only, from the start
  /// of its text. Updated record by record (before `on_bad` is called), so
  /// it is exact also when `on_bad` throws.
  struct batch_progress {
    std::size_t bytes = 0;   ///< bytes of the consumed records, newlines included
    std::size_t lines = 0;   ///< newlines in them
    std::size_t records = 0; ///< records consumed: ok, skipped, bad and control
    bool control = false;    ///< stopped after a control line (see control_time())
  };
  /// A bad record met by `decode_many`: its byte offset and 0-based line in
  /// the call's text, its text without the newline, and the reason.
  using bad_record_sink = std::function<void(std::size_t offset, std::size_t line,
                                             std::string_view record,
                                             const std::string& reason)>;

  /// Decodes the complete records at the start of `text` into `out`, in
  /// order, as `next_record` + `decode` would one by one, until a limit of
  /// `lim` is reached, a control line was consumed, or no complete record is
  /// left (at EOF, `at_eof`, a final record without newline is complete).
  /// Bad records go to `on_bad`, which may throw (the exception propagates;
  /// `progress` then includes the bad record). `progress` must start zeroed.
  /// `text` must be followed by `decode_many_padding` readable bytes.
  ///
  /// The default implementation loops `next_record` and `decode` (csv,
  /// apache_combined); jsonl overrides it with simdjson's `iterate_many`
  /// (see its docstring in src/format/jsonl_decoder.cpp), with rows, bad
  /// records, reasons, line numbers and byte counts equal to the default's
  /// on the same bytes.
  virtual void decode_many(std::string_view text, bool at_eof, const batch_limits& lim,
                           batch_builder& out, batch_progress& progress,
                           const bad_record_sink& on_bad);
};

/// Makes a decoder. Errors: `errc::invalid_argument` when jsonl/csv lack a
/// schema, the CSV delimiter is '"', '\r' or '\n', or `event_time_field` is
/// not a timestamp or int64 field of the schema.
[[nodiscard]] expected<std::unique_ptr<record_decoder>>
make_decoder(const decoder_options& opts);


/// Options of a file source split.
struct file_source_options {
  std::string path;
  decoder_options decoder;
  std::string event_time_field;     ///< empty: no event time
  std::size_t chunk_bytes = 1 << 20; ///< read size; the file is never read whole
  /// Byte offset to resume from (a `position()` of an earlier reader, i.e. a
  /// record boundary). Records before it are only split, not decoded (except
  /// a CSV header), so line numbers stay exact.
  std::uint64_t start_offset = 0;
  /// Decode each chunk's complete records with one
  /// `record_decoder::decode_many` call (jsonl: simdjson `iterate_many`);
  /// false: record by record (`next_record` + `decode`), the reference the
  /// tests and `weir_decode_bench --per-line` compare with. Same rows, bad
  /// records and positions either way.
  bool batch_decode = true;
};

/// Makes a reader over one file, read in chunks of `chunk_bytes`, tracking
/// the byte offset and line number of every record. A record whose event-time
/// field is null or not a timestamp/int64 is bad. Bad records go to
/// `on_bad` (with origin = path, 1-based line, byte offset, reason, raw text
/// without its newline and cut to at most 4096 bytes); an exception thrown by
/// `on_bad` propagates out of `poll_next`. A UTF-8 BOM at the start is
/// skipped. `poll_next` stops at `max_rows` rows, at the end of the file, or
/// after `max_rows + 4096` records consumed (so a long run of bad records
/// yields 0-row batches instead of blocking); `position()` is the byte offset
/// just after the last consumed record. Read errors throw std::runtime_error.
/// Errors: `errc::io_error` if the file cannot be opened;
/// `errc::invalid_argument` if the event-time field is missing from the schema
/// or has a non-time type.
[[nodiscard]] expected<source_reader_ptr>
make_file_source_reader(const file_source_options& opts, bad_record_handler on_bad);

/// The decoder a file source reads with: `opts.decoder`, with
/// `opts.event_time_field` when set. Errors: those of `make_decoder`.
[[nodiscard]] expected<std::unique_ptr<record_decoder>>
make_file_decoder(const file_source_options& opts);

/// What is wrong with an Avro container file for a file source.
struct avro_file_problem {
  bool header = false; ///< the file itself (not readable, not Avro); else the resolution
  std::string message;
};

/// Load-time check of an Avro Object Container File for a file source: its
/// header can be read and its writer schema resolves against `reader` (the
/// rules of src/format/avro.hpp, `resolve`). nullopt when it does, else the
/// problem; `avro_not_built` (a header problem) in a build without avro-c.
std::optional<avro_file_problem> check_avro_file(const std::string& path,
                                                 const schema& reader);

/// Makes a reader of the Avro Object Container File `opts.path`
/// (src/format/avro.hpp, `make_container_reader`): `opts.decoder.schema`
/// gives the fields read, the file its writer schema. Errors: those of
/// `make_container_reader`, or `errc::invalid_argument` (`avro_not_built`)
/// in a build without avro-c.
[[nodiscard]] expected<source_reader_ptr> make_avro_file_reader(const file_source_options& opts,
                                                                bad_record_handler on_bad);

/// What is wrong with a source's Protobuf options, found at load time.
struct protobuf_problem {
  enum class at { proto_file, message, field } where = at::proto_file;
  std::string message;
  std::string field;                   ///< at::field: the declared field
  std::vector<std::string> candidates; ///< names for a did-you-mean
};

/// Load-time check of `opts` for format "protobuf": `proto_file` loads
/// (with `proto_include`), `proto_message` names one of its message types,
/// and every declared field reads from it (src/format/protobuf.hpp,
/// `resolve`). nullopt when all do; `protobuf_not_built` in a build
/// without libprotobuf.
std::optional<protobuf_problem> check_protobuf(const decoder_options& opts);

/// Makes a reader of a file of length-delimited Protobuf messages
/// (src/format/protobuf.hpp, `make_delimited_reader`). Errors: those of
/// `make_delimited_reader`, or `errc::invalid_argument`
/// (`protobuf_not_built`) in a build without libprotobuf.
[[nodiscard]] expected<source_reader_ptr>
make_protobuf_file_reader(const file_source_options& opts, bad_record_handler on_bad);

/// Writes rows of a batch as text, one record per line.
class record_encoder {
public:
  virtual ~record_encoder() = default;
  /// Text written before the first record (CSV header line), may be empty.
  virtual std::string header(const schema& s) const = 0;
  /// Appends row `row` of `batch`, with its trailing '\n', to `out`.
  virtual void encode(const record_batch& batch, std::size_t row,
                      std::string& out) const = 0;
};

/// jsonl: one object per line, fields in schema order, null as null,
/// floats in shortest round-trip form with a ".0" on integral values,
/// timestamps as integer ms. csv: RFC 4180 (quotes when needed, "" inside).
///
/// jsonl is compact (`{"a":1,"b":"x"}`); NaN and infinities become null (JSON
/// has none). csv uses ',' and "\n" line ends, a header line of field names,
/// quotes a cell holding ',', '"', CR or LF, writes null as an empty cell and
/// the empty string as `""` (so the csv decoder reads both back). Returns
/// nullptr for apache_combined, which is read-only.
///
/// `ts`: timestamp fields (window_start and window_end too) as integer ms
/// (default) or as ISO-8601 UTC text with milliseconds,
/// "2023-03-05T15:13:37.320Z" (a JSON string in jsonl), which the decoders
/// read back to the same ms; years outside 0000..9999 are written with more
/// digits and do not read back.
std::unique_ptr<record_encoder> make_encoder(
  format_kind kind, timestamp_format ts = timestamp_format::epoch_ms);

/// Writes rows as Avro binary datums (a Kafka sink's `format = "avro"`),
/// one datum a row, of the record schema it generates from the rows' schema
/// (Flink's `AvroRowDataSerializationSchema`, and with a registry frame its
/// `ConfluentRegistryAvroSerializationSchema`). Needs no library: built in
/// every weir. Immutable after `make`: `encode` may be called from any thread.
class avro_encoder {
public:
  /// Errors: `errc::invalid_argument` when `record_full_name` or a field's
  /// name is not an Avro name (`[A-Za-z_][A-Za-z0-9_]*`, dot-separated
  /// namespaces in the record's).
  [[nodiscard]] static expected<avro_encoder> make(schema_ptr s, std::string record_full_name);
  /// The writer schema, JSON: a record of `record_full_name` whose fields
  /// are the schema's in order, each a union `["null", T]` with default
  /// null: bool -> boolean, int64 -> long, float64 -> double, string ->
  /// string, timestamp -> long timestamp-millis, a null-typed field -> null.
  const std::string& schema_json() const noexcept { return json_; }
  /// Appends row `row` of `batch` (of the schema given to `make`) as one
  /// datum to `out` (union branch 0 for null, 1 for a value).
  void encode(const record_batch& batch, std::size_t row, std::string& out) const;

private:
  schema_ptr schema_;
  std::string json_;
};

/// Registers the schema `text` (of registry type `type`, "AVRO" or
/// "PROTOBUF") under `subject` with the registry of `opts`, or finds it
/// registered there (`lookup_only`: only finds it); its id. One client (and
/// cache) per registry URL and credentials in the process. Errors: those of
/// src/format/schema_registry.hpp's `client::register_schema` and
/// `lookup_schema`, starting "subject '<subject>': ";
/// `schema_registry_not_built` without libcurl.
[[nodiscard]] expected<std::int32_t> register_schema(const schema_registry_options& opts,
                                                     const std::string& subject,
                                                     const std::string& text,
                                                     const std::string& type = "AVRO",
                                                     bool lookup_only = false);

/// The subject of a value (or key) schema written to `topic` under
/// `strategy`: `<topic>-value` (`-key`), the record's full name, or
/// `<topic>-<full name>` (Confluent's TopicNameStrategy, RecordNameStrategy,
/// TopicRecordNameStrategy).
std::string subject_name(subject_strategy strategy, std::string_view topic,
                         std::string_view record_full_name, bool is_key = false);

/// The Confluent wire format's 5-byte header for schema `id`: magic byte 0
/// and the id, 4 bytes big-endian.
std::string schema_registry_frame(std::int32_t id);

/// Encodes one value as a JSON value into `out` (strings escaped per RFC 8259:
/// `"` `\\` and control characters escaped, \u00XX for those without a short
/// form; invalid UTF-8 bytes become U+FFFD). A float64 field holding an int
/// is written as a float; NaN and infinities as null.
void append_json(const value& v, type_id t, std::string& out);

/// Appends `s` as a JSON string literal (quotes included) to `out`.
void append_json_string(std::string_view s, std::string& out);

/// Appends `d` in shortest round-trip form ("22.0", "28.75", "1e+300");
/// NaN and infinities as null.
void append_json_double(double d, std::string& out);

/// Appends one dead-letter line for `r` to `out`, its origin fields by
/// `r.source`, then `"reason"` and `"raw"`, and '\n':
/// - file (and other): `{"origin":"path:line","file":path,"line":N,"offset":bytes,...}`
/// - kafka: `{"origin":"topic/partition@offset","topic":..,"partition":N,"offset":N,
///   "key":string|null,"timestamp":ms|null,...}`
/// - http: `{"origin":"http source 'name' request id:line","source":name,
///   "request_id":..,"line":N,...}`
void append_bad_record_json(const bad_record& r, std::string& out);

} // namespace weir::format
