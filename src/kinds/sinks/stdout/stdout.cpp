// SPDX-License-Identifier: Apache-2.0
// `type = "stdout"` sink: JSON lines on stdout.
#include "config/kind.hpp"

#include "weir/api/job.hpp"

namespace weir::kinds {

namespace {
using namespace weir::config;

const key_list stdout_formats = {"jsonl"};
} // namespace

kind_descriptor describe_sinks_stdout() {
  kind_descriptor d;
  d.category = kind_category::sink;
  d.type = "stdout";
  d.keys = {
    {"format", "string", false, "\"jsonl\"", "jsonl"},
  };
  d.parse = [](parse_context& c) {
    c.soft.choice("format", stdout_formats);
    return std::make_unique<kind_spec>();
  };
  d.plan = [](plan_context& c, const kind_spec&) { c.inputs.front().print(c.options); };
  return d;
}

} // namespace weir::kinds
