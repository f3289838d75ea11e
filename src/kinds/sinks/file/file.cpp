// SPDX-License-Identifier: Apache-2.0
// `type = "file"` sink: JSONL or CSV; with checkpoints a directory of
// committed parts (two-phase commit). The sinks themselves are
// weir/connectors/file_sink.hpp and transactional_file_sink.hpp.
#include "config/kind.hpp"

#include "weir/api/job.hpp"
#include "weir/connectors/file_sink.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list file_sink_formats = {"jsonl", "csv"};

struct file_sink_def : kind_spec {
  file_sink_spec file;
};
} // namespace

kind_descriptor describe_sinks_file() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "file";
  d.keys = {
    {"path", "string", true, "", "the output file; with checkpoints a directory of parts"},
    {"format", "string", false, "\"jsonl\"", "jsonl | csv"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<file_sink_def>();
    if (auto p = c.hard.string("path", true, true))
      s->file.path = p->value;
    if (auto f = c.soft.choice("format", file_sink_formats))
      s->file.format = f->value == "csv" ? format::format_kind::csv : format::format_kind::jsonl;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<file_sink_def>(ks);
    auto r = c.inputs.front().sink_to_file(s.file, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

} // namespace weir::kinds
