// SPDX-License-Identifier: Apache-2.0
#pragma once

// Helpers for the window tests: a recording output_collector, batch makers,
// and loading/replaying the semantics cases of tests/golden/cases.

#include "weir/core/record_batch.hpp"
#include "weir/operators/stream_operator.hpp"

#include "source_dir.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace weir::test {

/// One row as field name -> value.
using row_map = std::map<std::string, value>;

/// Records everything an operator emits, in order.
class recording_collector final : public output_collector {
public:
  struct event {
    enum kind_t { batch, side_batch, watermark } kind;
    std::size_t port = 0;
    record_batch_ptr data;
    event_time wm = 0;
  };

  void collect(record_batch_ptr b) override {
    events.push_back({event::batch, 0, std::move(b), 0});
  }
  void collect_side(std::size_t port, record_batch_ptr b) override {
    events.push_back({event::side_batch, port, std::move(b), 0});
  }
  void emit_watermark(event_time wm) override {
    events.push_back({event::watermark, 0, nullptr, wm});
  }
  void count_late(std::uint64_t n) override { late_counted += n; }

  std::uint64_t late_counted = 0;

  /// Rows of every batch on `port` (0 = main), in emission order.
  std::vector<row_map> rows(std::size_t port = 0) const {
    std::vector<row_map> out;
    for (const auto& e : events) {
      if (e.kind == event::watermark || e.port != port)
        continue;
      for (std::size_t r = 0; r < e.data->num_rows; ++r) {
        row_map m;
        for (std::size_t c = 0; c < e.data->columns.size(); ++c)
          m[e.data->schema->at(c).name] = e.data->columns[c].get(r);
        out.push_back(std::move(m));
      }
    }
    return out;
  }

  /// Event times of every main-output row, in emission order.
  std::vector<event_time> timestamps(std::size_t port = 0) const {
    std::vector<event_time> out;
    for (const auto& e : events)
      if (e.kind != event::watermark && e.port == port)
        out.insert(out.end(), e.data->timestamps.begin(), e.data->timestamps.end());
    return out;
  }

  std::vector<event_time> watermarks() const {
    std::vector<event_time> out;
    for (const auto& e : events)
      if (e.kind == event::watermark)
        out.push_back(e.wm);
    return out;
  }

  std::vector<event> events;
};

/// Builds a batch from rows of values (monostate = null) with timestamps.
inline record_batch_ptr make_batch(const schema_ptr& s, const std::vector<std::vector<value>>& rows,
                                   const std::vector<event_time>& ts) {
  batch_builder b{s};
  for (std::size_t r = 0; r < rows.size(); ++r) {
    for (std::size_t c = 0; c < rows[r].size(); ++c)
      b.col(c).append_value(rows[r][c]);
    if (r < ts.size())
      b.timestamps().push_back(ts[r]);
    b.commit_row();
  }
  return b.finish();
}

/// Parses one flat JSON object (numbers, strings, null) into a row_map.
inline row_map parse_json_row(const std::string& line) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc = parser.parse(line);
  row_map out;
  for (auto [k, v] : simdjson::dom::object(doc)) {
    std::string key{k};
    switch (v.type()) {
      case simdjson::dom::element_type::INT64:
        out[key] = std::int64_t(v);
        break;
      case simdjson::dom::element_type::UINT64:
        out[key] = static_cast<std::int64_t>(std::uint64_t(v));
        break;
      case simdjson::dom::element_type::DOUBLE:
        out[key] = double(v);
        break;
      case simdjson::dom::element_type::STRING:
        out[key] = std::string{std::string_view(v)};
        break;
      case simdjson::dom::element_type::NULL_VALUE:
        out[key] = std::monostate{};
        break;
      default:
        throw std::runtime_error("unsupported JSON value in " + line);
    }
  }
  return out;
}

/// Every non-empty line of a JSONL file as a row_map; throws if unreadable.
inline std::vector<row_map> read_jsonl(const std::string& path) {
  std::ifstream in{path};
  if (!in)
    throw std::runtime_error("cannot open " + path);
  std::vector<row_map> out;
  std::string line;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos)
      out.push_back(parse_json_row(line));
  return out;
}

inline std::string case_dir(const std::string& name) {
  return source_dir() + "/tests/golden/cases/" + name;
}

/// The schema of the windowing cases' input records.
inline schema_ptr case_schema() {
  return make_schema({{"id", type_id::string},
                      {"key", type_id::string},
                      {"ts", type_id::timestamp},
                      {"value", type_id::int64}});
}

/// Replays a case's input into `op` one record per batch under the cases'
/// execution model: after each record the watermark becomes
/// `max_ts - bound - 1` (if that advances it), and a final `max_watermark`
/// ends the input.
inline void replay(stream_operator& op, const std::vector<row_map>& input,
                   std::int64_t bound_ms, output_collector& out) {
  const auto s = case_schema();
  event_time max_ts = min_watermark;
  event_time wm = min_watermark;
  for (const auto& rec : input) {
    const auto ts = std::get<std::int64_t>(rec.at("ts"));
    op.process_batch(make_batch(s, {{rec.at("id"), rec.at("key"), ts, rec.at("value")}}, {ts}),
                     out);
    max_ts = std::max(max_ts, ts);
    if (max_ts - bound_ms - 1 > wm) {
      wm = max_ts - bound_ms - 1;
      op.process_watermark(wm, out);
    }
  }
  op.process_watermark(max_watermark, out);
  op.finish(out);
}

/// True when `a` and `b` hold the same value; numbers compare across int and
/// float with a 1e-9 relative tolerance.
inline bool same_value(const value& a, const value& b) {
  auto num = [](const value& v, double& d) {
    if (auto* i = std::get_if<std::int64_t>(&v)) {
      d = static_cast<double>(*i);
      return true;
    }
    if (auto* f = std::get_if<double>(&v)) {
      d = *f;
      return true;
    }
    return false;
  };
  double x = 0;
  double y = 0;
  if (num(a, x) && num(b, y)) {
    if (std::holds_alternative<std::int64_t>(a) && std::holds_alternative<std::int64_t>(b))
      return std::get<std::int64_t>(a) == std::get<std::int64_t>(b);
    return std::fabs(x - y) <= 1e-9 * std::max({1.0, std::fabs(x), std::fabs(y)});
  }
  return a == b;
}

inline std::string to_text(const row_map& r) {
  std::string out = "{";
  for (const auto& [k, v] : r) {
    if (out.size() > 1)
      out += ", ";
    out += k + ": " + to_display_string(v);
  }
  return out + "}";
}

/// Empty when `actual` matches `expected` row by row and field by field
/// (same field names, same_value); else a description of the first mismatch.
inline std::string diff_rows(const std::vector<row_map>& actual,
                             const std::vector<row_map>& expected) {
  std::ostringstream os;
  if (actual.size() != expected.size()) {
    os << "got " << actual.size() << " rows, expected " << expected.size() << ":";
    for (const auto& r : actual)
      os << "\n  " << to_text(r);
    return os.str();
  }
  for (std::size_t i = 0; i < actual.size(); ++i) {
    bool same = actual[i].size() == expected[i].size();
    for (const auto& [k, v] : expected[i]) {
      auto it = actual[i].find(k);
      if (it == actual[i].end() || !same_value(it->second, v))
        same = false;
    }
    if (!same) {
      os << "row " << i << ": got " << to_text(actual[i]) << ", expected "
         << to_text(expected[i]);
      return os.str();
    }
  }
  return {};
}

} // namespace weir::test
