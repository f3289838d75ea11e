// SPDX-License-Identifier: Apache-2.0
// `type = "file"` source: jsonl, csv or apache_combined, one split per file
// or byte-range splits of one file, read in chunks (weir/format/format.hpp:
// the decoders and the reader, shared format code): its keys, parsing,
// planning and `file::add_source` (`job::from`).
#include "config/byte_size.hpp"
#include "config/kind.hpp"
#include "kinds/sources/source_keys.hpp"
#include "connectors/internal/rate_limited_reader.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/file/source.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list source_formats = {"jsonl", "csv", "apache_combined", "avro", "protobuf"};
const key_list invalid_utf8_choices = {"error", "replace"};

struct file_source_def : kind_spec {
  located path;
  bool file_error = false;
  format::decoder_options decoder;
  located event_time_field;
  watermark_options watermark;
  located partition_by;
  std::vector<std::string> partitions;
  located processing_time_field;
  bool many = false; ///< path is a directory or glob
  format::file_set_mode files = format::file_set_mode::sequential;
  std::chrono::milliseconds monitor_interval{0};
  double rate = 0; ///< rows/s over all subtasks; 0: unlimited
  format::file_split_mode split = format::file_split_mode::automatic;
  std::uint64_t split_size = 0;
  /// The source's own `parallelism` key (0: absent). The loader passes a
  /// parallelism to operators only, so the kind keeps it, as generated
  /// sources do.
  std::size_t parallelism = 0;
  bool split_error = false; ///< a split key's error, reported at its key (not again by plan)
};

std::unique_ptr<kind_spec> parse(parse_context& c) {
  auto spec = std::make_unique<file_source_def>();
  auto& d = *spec;
  auto& r = c.hard;
  auto& soft = c.soft;
  auto files = r.choice("files", {"sequential", "partitioned"});
  if (files && files->value == "partitioned")
    d.files = format::file_set_mode::partitioned;
  if (auto v = positive_rate(r, "rate"))
    d.rate = *v;
  auto monitor = r.duration("monitor_interval", reader::sign::positive);
  if (monitor)
    d.monitor_interval = *monitor;
  auto split = r.choice("split", {"auto", "lines", "none"});
  if (split && split->value == "lines")
    d.split = format::file_split_mode::lines;
  else if (split && split->value == "none")
    d.split = format::file_split_mode::none;
  if (auto v = byte_size(r, "split_size", std::uint64_t{1} << 10, "1KiB")) {
    d.split_size = *v;
    if (d.split == format::file_split_mode::none) {
      r.fail(pos_of(*r.get("split_size")), "split_size splits the file, and split = \"none\" "
                                           "reads it as one stream");
      d.split_error = true;
    }
  }
  if (auto p = r.string("path", c.keys_required, true)) {
    d.path = *p;
    // Checked now, not when the job starts: users prefer to hear it early.
    std::string reason;
    std::error_code ec;
    const bool is_dir = std::filesystem::is_directory(p->value, ec);
    if (is_dir || (format::is_glob(p->value) && !std::filesystem::exists(p->value, ec))) {
      d.many = true;
      auto listed = format::list_files(p->value);
      if (!listed)
        reason = listed.error().message;
      else if (listed->empty() && !monitor)
        r.fail(pos_of(*p->node), "source path " + quote(p->value) + " matches no file",
               {"hint: a directory's files are read, not its subdirectories nor names "
                "starting with '.' or '_'",
                "hint: monitor_interval = \"10s\" waits for files to arrive"});
      if (!reason.empty()) {
        r.diags().report(pos_of(*p->node), reason, r.notes());
        d.file_error = true;
      }
      for (const char* key : {"split", "split_size"})
        if (const auto* n = r.get(key);
            n && (std::string_view{key} == "split_size" || d.split == format::file_split_mode::lines))
          r.fail(pos_of(*n), std::string{key} + " applies to one file, and " + quote(p->value)
                               + " is a directory or glob",
                 {"hint: files = \"partitioned\" reads each file as a partition"});
    } else {
      if (std::FILE* f = std::fopen(p->value.c_str(), "rb"); f == nullptr) {
        reason = std::strerror(errno);
      } else {
        std::fclose(f);
      }
      if (!reason.empty()) {
        r.diags().report(pos_of(*p->node),
                         "cannot read source file " + quote(p->value) + ": " + reason, r.notes());
        d.file_error = true;
      }
      for (const char* key : {"files", "monitor_interval"})
        if (const auto* n = r.get(key))
          r.fail(pos_of(*n), std::string{key} + " applies to a directory or glob path, and "
                               + quote(p->value) + " is a file");
    }
  }
  auto fmt = r.choice("format", source_formats, c.keys_required);
  if (fmt) {
    if (fmt->value == "jsonl")
      d.decoder.kind = format::format_kind::jsonl;
    else if (fmt->value == "csv")
      d.decoder.kind = format::format_kind::csv;
    else if (fmt->value == "avro")
      d.decoder.kind = format::format_kind::avro;
    else if (fmt->value == "protobuf")
      d.decoder.kind = format::format_kind::protobuf;
    else
      d.decoder.kind = format::format_kind::apache_combined;
  }
  const bool avro = fmt && fmt->value == "avro";
  if (avro && !format::avro_built()) {
    r.fail(pos_of(*fmt->node), std::string{format::avro_not_built});
    d.file_error = true;
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
  } else if (auto schema = schema_table(r)) {
    d.decoder.schema = std::move(schema);
  }
  // An Avro container file carries its writer's schema: it must resolve
  // against the declared fields now, not when the job starts.
  if (avro && format::avro_built() && !d.file_error && !d.path.value.empty()) {
    if (d.many) {
      r.fail(pos_of(*d.path.node), "format \"avro\" reads one container file, and "
                                     + quote(d.path.value) + " is a directory or glob",
             {"hint: a directory of Avro files is not supported yet"});
      d.file_error = true;
    } else if (d.decoder.schema) {
      if (auto why = format::check_avro_file(d.path.value, *d.decoder.schema)) {
        if (why->header)
          r.fail(pos_of(*d.path.node), why->message);
        else
          r.fail(pos_of(schema_node ? *schema_node : *d.path.node), why->message,
                 {"hint: docs/kinds/formats/avro.md lists the Avro types each field type "
                  "reads"});
        d.file_error = true;
      }
    }
    for (const char* key : {"split", "split_size"})
      if (const auto* n = r.get(key)) {
        r.fail(pos_of(*n), std::string{key} + " does not apply to format \"avro\": a "
                                                "container file is read as one stream");
        d.split_error = true;
      }
  }
  // Protobuf: the .proto loads and gives every declared field, now.
  const bool protobuf = fmt && fmt->value == "protobuf";
  if (!sources::read_protobuf_options(r, fmt, d.decoder))
    d.file_error = true;
  if (protobuf) {
    if (d.many) {
      r.fail(pos_of(*d.path.node), "format \"protobuf\" reads one file of length-delimited "
                                     "messages, and " + quote(d.path.value)
                                     + " is a directory or glob");
      d.file_error = true;
    }
    for (const char* key : {"split", "split_size"})
      if (const auto* n = r.get(key)) {
        r.fail(pos_of(*n), std::string{key} + " does not apply to format \"protobuf\": a "
                                                "file of length-delimited messages is read as "
                                                "one stream");
        d.split_error = true;
      }
  }
  if (auto* et = r.subtable("event_time")) {
    auto er = r.sub(*et, "event_time");
    er.check_keys(c.children("event_time"));
    if (auto f = er.string("field", true, true)) {
      d.event_time_field = *f;
      sources::check_time_field(er, d.decoder.schema, *f, "event_time.field");
    }
  }
  sources::read_watermark(c, d.watermark);
  if (auto v = r.string("partition_by", false, true)) {
    d.partition_by = *v;
    sources::field_of_schema(r, d.decoder.schema, *v, "partition_by");
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
    pr.check_keys(c.children("processing_time"));
    if (auto f = pr.string("field", true, true)) {
      d.processing_time_field = *f;
      sources::check_time_field(pr, d.decoder.schema, *f, "processing_time.field");
    }
  }
  sources::read_csv_options(c, fmt, d.decoder, true);
  // The record contract's options (src/format, format.hpp).
  if (auto v = r.choice("invalid_utf8", invalid_utf8_choices))
    d.decoder.invalid_utf8 = v->value == "replace" ? format::invalid_utf8_policy::replace
                                                   : format::invalid_utf8_policy::error;
  if (auto v = r.string("time_zone", false, true)) {
    if (auto z = time_zone::parse(v->value))
      d.decoder.zone = *z;
    else
      r.fail(pos_of(*v->node), "time_zone: " + z.error().message,
             {"hint: \"UTC\", a fixed offset like \"+02:00\", or an IANA name like "
              "\"Europe/Berlin\""});
  }
  if (auto v = soft.integer("parallelism", 1, max_key_groups);
      v && static_cast<std::size_t>(*v) <= c.max_parallelism)
    d.parallelism = static_cast<std::size_t>(*v);
  if (auto v = soft.integer("parallelism", 1, max_key_groups); v && *v != 1) {
    const auto* at = soft.get("parallelism");
    if (d.many && d.files != format::file_set_mode::partitioned)
      soft.fail(pos_of(*at),
                "parallelism must be 1 for a directory read as one stream, got "
                  + std::to_string(*v),
                {"hint: files = \"partitioned\" spreads a directory's files over subtasks"});
    else if (avro)
      soft.fail(pos_of(*at),
                "parallelism must be 1 for format \"avro\" (one container file, one stream), "
                "got " + std::to_string(*v));
    else if (d.decoder.kind == format::format_kind::protobuf)
      soft.fail(pos_of(*at),
                "parallelism must be 1 for format \"protobuf\" (one file of length-delimited "
                "messages, one stream), got " + std::to_string(*v));
    else if (!d.many && d.split == format::file_split_mode::none)
      soft.fail(pos_of(*at),
                "parallelism must be 1 for a file read as one stream (split = \"none\"), got "
                  + std::to_string(*v),
                {"hint: leave split out to read the file as splits, one per subtask"});
    else if (!d.many && d.split == format::file_split_mode::automatic
             && d.decoder.kind == format::format_kind::csv) {
      soft.fail(pos_of(*at),
                "a csv file is read by one subtask unless split = \"lines\", got parallelism "
                  + std::to_string(*v),
                {"hint: split = \"lines\" splits it at line boundaries, safe when no quoted "
                 "field holds a newline (a record spanning lines then fails the job)"});
      d.split_error = true;
    }
  }
  return spec;
}

void plan(plan_context& c, const kind_spec& ks) {
  const auto& s = spec_cast<file_source_def>(ks);
  file::source spec;
  spec.path = s.path.value;
  spec.decoder = s.decoder;
  spec.event_time_field = s.event_time_field.value;
  spec.watermark = s.watermark;
  spec.partition_by = s.partition_by.value;
  spec.partitions = s.partitions;
  spec.processing_time_field = s.processing_time_field.value;
  spec.files = s.files;
  spec.monitor_interval = s.monitor_interval;
  spec.rate = s.rate;
  spec.split = s.split;
  spec.split_size = s.split_size;
  const bool partitioned = s.many && s.files == format::file_set_mode::partitioned;
  const bool may_split = !s.many && s.split != format::file_split_mode::none;
  auto res = c.target.from(
    std::move(spec),
    operator_options{c.options.name, partitioned || may_split ? s.parallelism : 1});
  if (!res && !s.file_error && !s.split_error)
    c.report_api(nullptr, "", res.error());
}

} // namespace

kind_descriptor describe_sources_file() {
  kind_descriptor d;
  d.category = kind_category::source;
  d.type = "file";
  d.min_inputs = d.max_inputs = 0;
  d.keys = sources::key_rows({{
    {"path", "string", true, "", "a file, a directory or a glob"},
    {"files", "string", false, "\"sequential\"", "sequential | partitioned: one stream in name order, or a partition per file"},
    {"monitor_interval", "duration", false, "", "look for new files this often; none: bounded"},
    {"rate", "number", false, "as fast as possible", "rows/s over all subtasks: replays the file at a steady pace"},
    {"split", "string", false, "\"auto\"", "auto | lines | none: one file read as line-boundary splits, one per subtask (auto: jsonl and apache_combined when the source's parallelism > 1)"},
    {"split_size", "string", false, "", "one file: bytes per split, e.g. \"64MiB\" (splits spread round robin over subtasks); none: one split per subtask"},
    {"format", "string", true, "", "jsonl | csv | apache_combined | avro (an Avro container file) | protobuf (length-delimited messages)"},
    {"schema", "table of type names", true, "", "name = \"int64\" (not for apache_combined)"},
  }, sources::protobuf_keys(), sources::event_time_keys(true), sources::watermark_keys("", "a partition"),
  sources::csv_keys("the first line names the fields"), {
    {"partition_by", "string", false, "", "a field whose values are partitions with own watermarks"},
    {"partitions", "array of strings", false, "[]", "the partitions known up front"},
    {"processing_time", "table", false, "", "a replay clock"},
    {"processing_time.field", "string", true, "", "a timestamp or int64 field giving processing time"},
    {"invalid_utf8", "string", false, "\"error\"", "error (a bad record) | replace (U+FFFD per invalid sequence)"},
    {"time_zone", "string", false, "\"UTC\"", "zone of timestamps written without one: UTC, \"+02:00\" or an IANA name"},
  }});
  d.parse = parse;
  d.plan = plan;
  d.misplaced = [](std::string_view key) -> std::optional<misplaced_note> {
    // A key of another source type (the file source also stands in for a
    // source of unknown type).
    const auto& reg = kind_registry::instance();
    if (reg.kinds_with_key(kind_category::source, key).empty())
      return std::nullopt;
    key_list others;
    for (const auto& t : reg.types(kind_category::source))
      if (t != "file")
        others.push_back(t);
    return misplaced_note{"'" + std::string(key) + "' does not apply to a file source",
                          {"hint: '" + std::string(key) + "' is a key of " + and_list(others) +
                           " sources"}};
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

namespace {
error invalid(std::string msg) {
  return make_error(errc::invalid_argument, std::move(msg));
}
} // namespace

// The API's entry point for this kind (`job::from`).
expected<data_stream> file::add_source(job& j, source spec, operator_options opts) {
  if (spec.path.empty())
    return invalid("a file source needs a path");
  if (spec.decoder.kind == format::format_kind::apache_combined)
    spec.decoder.schema = format::apache_combined_schema();
  if (!spec.decoder.schema || spec.decoder.schema->size() == 0)
    return invalid("a " + std::string{format::to_string(spec.decoder.kind)}
                   + " source needs a schema");
  if (!spec.event_time_field.empty()) {
    auto idx = spec.decoder.schema->index_of(spec.event_time_field);
    if (!idx)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' is not in the schema (fields: "
                     + spec.decoder.schema->to_string() + ")");
    auto t = spec.decoder.schema->at(*idx).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("event_time.field '" + spec.event_time_field
                     + "' must be a timestamp or int64, got "
                     + std::string{to_string(t)});
  }
  std::error_code ec;
  const bool many = std::filesystem::is_directory(spec.path, ec)
                    || (format::is_glob(spec.path) && !std::filesystem::exists(spec.path, ec));
  const bool partitioned = many && spec.files == format::file_set_mode::partitioned;
  const bool avro = spec.decoder.kind == format::format_kind::avro;
  if (avro && !format::avro_built())
    return invalid(std::string{format::avro_not_built});
  if (avro && many)
    return invalid("format \"avro\" reads one container file, and '" + spec.path
                   + "' is a directory or glob");
  if (avro && (spec.split == format::file_split_mode::lines || spec.split_size > 0
               || opts.parallelism > 1))
    return invalid("format \"avro\" reads a container file as one stream (parallelism 1, "
                   "no split)");
  if (avro)
    spec.split = format::file_split_mode::none;
  const bool protobuf = spec.decoder.kind == format::format_kind::protobuf;
  if (protobuf && !format::protobuf_built())
    return invalid(std::string{format::protobuf_not_built});
  if (protobuf && many)
    return invalid("format \"protobuf\" reads one file of length-delimited messages, and '"
                   + spec.path + "' is a directory or glob");
  if (protobuf && (spec.split == format::file_split_mode::lines || spec.split_size > 0
                   || opts.parallelism > 1))
    return invalid("format \"protobuf\" reads a file of length-delimited messages as one "
                   "stream (parallelism 1, no split)");
  if (protobuf)
    spec.split = format::file_split_mode::none;
  if (!many && spec.monitor_interval.count() > 0)
    return invalid("monitor_interval applies to a directory or glob path, and '" + spec.path
                   + "' is a file");
  using format::file_split_mode;
  if (spec.split == file_split_mode::none && spec.split_size > 0)
    return invalid("split_size splits the file, and split = \"none\" reads it as one stream");
  if (many && (spec.split == file_split_mode::lines || spec.split_size > 0))
    return invalid("split and split_size apply to one file, and '" + spec.path
                   + "' is a directory or glob (files = \"partitioned\" reads each file as "
                     "a partition)");
  // One file splits when asked to (split = "lines"), or by default when the
  // source's own parallelism or split_size asks for more than one reader. A
  // job's default parallelism alone keeps the file one stream, in file order.
  const bool split =
    !many
    && (spec.split == file_split_mode::lines
        || (spec.split == file_split_mode::automatic
            && (opts.parallelism > 1 || spec.split_size > 0)));
  if (split && spec.split == file_split_mode::automatic
      && spec.decoder.kind == format::format_kind::csv)
    return invalid("a csv file is split only with split = \"lines\": a quoted field may "
                   "hold a newline, and a split boundary inside one would misread it");
  if (split && !spec.processing_time_field.empty())
    return invalid("a file read as splits has no file order for processing_time.field "
                   "(split = \"none\" reads it as one stream)");
  if (split && !spec.partition_by.empty())
    return invalid("partition_by needs the file read as one stream (split = \"none\"): "
                   "the splits are the partitions");
  if (split && spec.split_size == 0 && std::filesystem::exists(spec.path, ec)
      && !std::filesystem::is_regular_file(spec.path, ec))
    return invalid("'" + spec.path + "' is not a regular file and cannot be split "
                   "(split = \"none\" reads it as one stream)");
  const std::size_t parallelism = partitioned || split
                                    ? internal::default_parallelism(*j.graph(), opts.parallelism)
                                    : 1;
  if (opts.parallelism > 1 && !partitioned && !split)
    return invalid("a file source read as one stream has parallelism 1 (files = "
                   "\"partitioned\" spreads a directory's files over subtasks; split = "
                   "\"lines\" splits one file)");
  std::optional<std::size_t> partition_field;
  if (!spec.partition_by.empty()) {
    partition_field = spec.decoder.schema->index_of(spec.partition_by);
    if (!partition_field)
      return invalid("partition_by '" + spec.partition_by + "' is not in the schema (fields: "
                     + spec.decoder.schema->to_string() + ")");
  } else if (!spec.partitions.empty()) {
    return invalid("partitions are declared without partition_by");
  }
  std::optional<std::size_t> proc_field;
  if (!spec.processing_time_field.empty()) {
    proc_field = spec.decoder.schema->index_of(spec.processing_time_field);
    if (!proc_field)
      return invalid("processing_time.field '" + spec.processing_time_field
                     + "' is not in the schema (fields: " + spec.decoder.schema->to_string()
                     + ")");
    auto t = spec.decoder.schema->at(*proc_field).type;
    if (t != type_id::timestamp && t != type_id::int64)
      return invalid("processing_time.field '" + spec.processing_time_field
                     + "' must be a timestamp or int64, got " + std::string{to_string(t)});
    spec.decoder.control_lines = true;
  }
  // One split per file, or byte-range splits of one file; the splits spread
  // over the source's subtasks. `needed`: the fields some operator reads,
  // filled by runtime::prune_generated_fields before the readers are made
  // (projection push-down into the decoder; empty = all).
  auto needed = std::make_shared<std::vector<bool>>();
  auto node = internal::add_source_node(
    *j.graph(), opts, "file_source", spec.decoder.schema, parallelism, spec.watermark,
    [spec, many, split, needed, options = &j.graph()->options](std::size_t subtask, std::size_t n,
                                                            bad_record_handler on_bad)
      -> source_reader_ptr {
      format::file_source_options fo;
      fo.path = spec.path;
      fo.decoder = spec.decoder;
      fo.decoder.read_fields = *needed;
      fo.event_time_field = spec.event_time_field;
      auto reader = [&] {
        if (fo.decoder.kind == format::format_kind::avro)
          return format::make_avro_file_reader(fo, std::move(on_bad));
        if (fo.decoder.kind == format::format_kind::protobuf)
          return format::make_protobuf_file_reader(fo, std::move(on_bad));
        if (split) {
          format::file_split_options so;
          so.file = fo;
          so.count = n;
          so.split_size = spec.split_size;
          so.subtask = subtask;
          so.parallelism = n;
          return format::make_file_split_reader(std::move(so), std::move(on_bad));
        }
        if (!many)
          return format::make_file_source_reader(fo, std::move(on_bad));
        format::file_set_options so;
        so.path = spec.path;
        so.file = fo;
        so.mode = spec.files;
        so.monitor_interval = spec.monitor_interval;
        so.subtask = subtask;
        so.parallelism = n;
        return format::make_file_set_reader(std::move(so), std::move(on_bad));
      }();
      if (!reader)
        throw std::runtime_error(reader.error().message);
      if (spec.rate > 0)
        return std::make_unique<internal::rate_limited_reader>(
          std::move(*reader), spec.rate / static_cast<double>(n), options->buffer_timeout);
      return std::move(*reader);
    });
  if (!node)
    return node.error();
  (*node)->partition_field = partition_field;
  (*node)->partitions = spec.partitions;
  (*node)->processing_time_field = proc_field;
  if (spec.decoder.kind != format::format_kind::apache_combined)
    (*node)->needed_columns = std::move(needed);
  return internal::stream_access::make(j.graph(), (*node)->id);
}

} // namespace weir
