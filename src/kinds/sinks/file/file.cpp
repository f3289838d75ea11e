// SPDX-License-Identifier: Apache-2.0
// `type = "file"` sink: JSONL or CSV; with checkpoints a directory of
// committed parts (two-phase commit): its keys, `file::add_sink` (`data_stream::sink_to`),
// and the sinks themselves (file_sink.cpp, transactional_file_sink.cpp,
// declared in weir/file/sink.hpp and transactional_file_sink.hpp).
#include "config/kind.hpp"
#include "config/output_path.hpp"

#include "api/internal/graph.hpp"

#include "weir/api/job.hpp"
#include "weir/file/transactional_sink.hpp"

#include <stdexcept>
#include "weir/file/sink.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list file_sink_formats = {"jsonl", "csv"};
const key_list timestamp_formats = {"epoch_ms", "iso8601"};

struct file_sink_def : kind_spec {
  file::sink file;
};
} // namespace

kind_descriptor describe_sinks_file() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "file";
  d.keys = {
    {"path", "string", true, "", "the output file; with checkpoints a directory of parts"},
    {"format", "string", false, "\"jsonl\"", "jsonl | csv"},
    {"flush_interval", "duration", false, "\"1s\"",
     "without checkpoints: output reaches the file at least this often; 0: every batch"},
    {"timestamp_format", "string", false, "\"epoch_ms\"", "epoch_ms | iso8601 (timestamp fields, window_start and window_end)"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<file_sink_def>();
    if (auto p = c.hard.string("path", true, true)) {
      s->file.path = p->value;
      // Checked now, not when the job has read its input: with checkpoints
      // the path is a directory of committed parts, else one file.
      if (c.check_paths)
        check_output_path(c.soft, "path", *p,
                          c.checkpointing ? output_path_kind::directory : output_path_kind::file);
    }
    if (auto f = c.soft.choice("format", file_sink_formats))
      s->file.format = f->value == "csv" ? format::format_kind::csv : format::format_kind::jsonl;
    if (auto fi = c.soft.duration("flush_interval"))
      s->file.flush_interval = *fi;
    if (auto f = c.soft.choice("timestamp_format", timestamp_formats))
      s->file.timestamp_format = f->value == "iso8601" ? format::timestamp_format::iso8601
                                                       : format::timestamp_format::epoch_ms;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<file_sink_def>(ks);
    auto r = c.inputs.front().sink_to(s.file, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds

namespace weir {

// The API's entry point for this kind (`data_stream::sink_to`).
expected<std::monostate> file::add_sink(const data_stream& in, sink spec,
                                        operator_options opts) {
  auto& graph = *internal::stream_access::graph(in);
  const auto input = internal::stream_access::input(in);
  if (spec.path.empty())
    return make_error(errc::invalid_argument, "a file sink needs a path");
  if (spec.format == format::format_kind::apache_combined)
    return make_error(errc::invalid_argument,
                      "apache_combined is an input format only; write jsonl or csv");
  auto factory = [spec, schema = in.output_schema()](bool transactional) {
    return [spec, schema, transactional] {
      auto op = transactional ? make_transactional_file_sink(spec.path, spec.format, schema,
                                                             spec.timestamp_format)
                              : make_file_sink(spec.path, spec.format, schema,
                                               spec.flush_interval, spec.timestamp_format);
      if (!op)
        throw std::runtime_error(op.error().message);
      return std::move(*op);
    };
  };
  // One output file (or one directory of committed parts): parallelism 1.
  auto id = internal::add_operator_node(
    graph, opts, {"file_sink", nullptr, factory(false), true, 1}, {input});
  if (!id)
    return id.error();
  graph.nodes[*id].make_transactional_operator = factory(true);
  return std::monostate{};
}

} // namespace weir
