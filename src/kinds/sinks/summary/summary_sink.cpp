// SPDX-License-Identifier: Apache-2.0
#include "weir/summary/sink.hpp"

#include "window/aggregates.hpp"

#include "weir/core/key_group.hpp"
#include "weir/expr/expression.hpp"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <unordered_map>

namespace weir {

namespace {

using internal::accumulator;
using internal::aggregate_kind;
using internal::aggregate_set;
using internal::row_target;

// First field of the sink's operator state; bump the version when the layout
// changes.
constexpr std::string_view state_magic = "weir-summary-sink v1";

// Proleptic Gregorian date of a day count since 1970-01-01 (H. Hinnant's
// civil_from_days).
void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const auto doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<std::int64_t>(yoe) + era * 400 + (m <= 2 ? 1 : 0);
}

std::string format_timestamp(std::int64_t ms) {
  std::int64_t days = ms / 86'400'000;
  std::int64_t rem = ms % 86'400'000;
  if (rem < 0) {
    rem += 86'400'000;
    --days;
  }
  std::int64_t y = 0;
  unsigned mo = 0;
  unsigned d = 0;
  civil_from_days(days, y, mo, d);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                static_cast<long long>(y), mo, d, static_cast<long long>(rem / 3'600'000),
                static_cast<long long>(rem / 60'000 % 60),
                static_cast<long long>(rem / 1000 % 60), static_cast<long long>(rem % 1000));
  return buf;
}

std::string format_value(const value& v, type_id t) {
  if (std::holds_alternative<std::monostate>(v))
    return "null";
  if (t == type_id::timestamp)
    return format_timestamp(std::get<std::int64_t>(v));
  if (const auto* f = std::get_if<double>(&v)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.2f", *f);
    return buf;
  }
  return to_display_string(v);
}

double as_double(const value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v))
    return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(&v))
    return *f;
  return 0.0;
}

// Three-way comparison of two non-null values of one column type.
int compare_values(const value& a, const value& b) {
  if (const auto* x = std::get_if<std::int64_t>(&a)) {
    auto y = std::get<std::int64_t>(b);
    return *x < y ? -1 : (y < *x ? 1 : 0);
  }
  if (const auto* x = std::get_if<double>(&a)) {
    auto y = std::get<double>(b);
    return *x < y ? -1 : (y < *x ? 1 : 0);
  }
  if (const auto* x = std::get_if<std::string>(&a)) {
    int c = x->compare(std::get<std::string>(b));
    return c < 0 ? -1 : (c > 0 ? 1 : 0);
  }
  if (const auto* x = std::get_if<bool>(&a)) {
    bool y = std::get<bool>(b);
    return *x == y ? 0 : (*x ? 1 : -1);
  }
  return 0;
}

bool is_right_aligned(type_id t) {
  return t == type_id::int64 || t == type_id::float64;
}

struct summary_config {
  std::string title;
  std::vector<std::size_t> group_fields;
  std::vector<field> columns; // group fields, then aggregates
  aggregate_set aggregates;
  aggregate_set first_only; // the first aggregate alone (share, highlight)
  std::size_t order_column = 0;
  bool ascending = false;
  std::size_t limit = 0;
  bool show_share = false;
  std::optional<expr::compiled_expression> highlight;
  std::string highlight_label;
  std::function<void(const std::string&)> write; // the rendered table, once
  // The shape of the state (columns with their types, aggregate kinds): a
  // snapshot of another shape is refused on restore.
  std::string state_signature;
};

class summary_sink final : public stream_operator {
public:
  explicit summary_sink(std::shared_ptr<const summary_config> cfg) : cfg_(std::move(cfg)) {
    matched_.resize(1);
    total_.resize(1);
  }

  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    (void) out;
    const record_batch& in = *batch;
    if (in.num_rows == 0)
      return;
    const auto& c = *cfg_;
    auto args = c.aggregates.evaluate(in);
    targets_.clear();
    for (std::size_t row = 0; row < in.num_rows; ++row) {
      key_.clear();
      encode_key(in, c.group_fields, row, key_);
      auto it = groups_.find(key_);
      if (it == groups_.end()) {
        group g;
        for (auto idx : c.group_fields)
          g.key_values.push_back(in.columns[idx].get(row));
        g.accs.resize(c.aggregates.size());
        it = groups_.emplace(key_, std::move(g)).first;
      }
      targets_.push_back(row_target{static_cast<std::uint32_t>(row), it->second.accs.data()});
    }
    c.aggregates.update(args, targets_);

    std::vector<column> first;
    first.push_back(std::move(args[0]));
    for (auto& t : targets_)
      t.accs = total_.data();
    c.first_only.update(first, targets_);
    if (c.highlight) {
      targets_.clear();
      for (auto row : c.highlight->select(in))
        targets_.push_back(row_target{row, matched_.data()});
      c.first_only.update(first, targets_);
    }
  }

  // A stopped job prints its table of what it has read.
  void stop(output_collector& out) override { finish(out); }

  void finish(output_collector& out) override {
    (void) out;
    const auto& c = *cfg_;

    struct row {
      std::vector<value> values;
      std::vector<std::string> key_text;
    };
    std::vector<row> rows;
    rows.reserve(groups_.size());
    double total = 0.0;
    for (const auto& [k, g] : groups_) {
      row r;
      r.values = g.key_values;
      for (std::size_t j = 0; j < c.aggregates.size(); ++j)
        r.values.push_back(c.aggregates.result(j, g.accs[j]));
      for (std::size_t i = 0; i < g.key_values.size(); ++i)
        r.key_text.push_back(format_value(g.key_values[i], c.columns[i].type));
      total += as_double(r.values[c.group_fields.size()]);
      rows.push_back(std::move(r));
    }
    const std::size_t oc = c.order_column;
    std::sort(rows.begin(), rows.end(), [&](const row& a, const row& b) {
      const bool an = std::holds_alternative<std::monostate>(a.values[oc]);
      const bool bn = std::holds_alternative<std::monostate>(b.values[oc]);
      if (an != bn)
        return bn; // nulls last in either direction
      if (!an) {
        int cmp = compare_values(a.values[oc], b.values[oc]);
        if (cmp != 0)
          return c.ascending ? cmp < 0 : cmp > 0;
      }
      return a.key_text < b.key_text;
    });
    const std::size_t shown =
      c.limit == 0 ? rows.size() : std::min(rows.size(), c.limit);

    // Cells: header row, then one row per shown group.
    std::vector<std::vector<std::string>> cells;
    std::vector<bool> right;
    std::vector<std::string> header;
    for (const auto& f : c.columns) {
      header.push_back(f.name);
      right.push_back(is_right_aligned(f.type));
    }
    if (c.show_share) {
      header.emplace_back("share");
      right.push_back(true);
    }
    cells.push_back(std::move(header));
    const std::size_t first_agg = c.group_fields.size();
    for (std::size_t i = 0; i < shown; ++i) {
      std::vector<std::string> line;
      for (std::size_t j = 0; j < c.columns.size(); ++j)
        line.push_back(format_value(rows[i].values[j], c.columns[j].type));
      if (c.show_share)
        line.push_back(percent(as_double(rows[i].values[first_agg]), total));
      cells.push_back(std::move(line));
    }
    std::vector<std::size_t> width(right.size(), 0);
    for (const auto& line : cells)
      for (std::size_t j = 0; j < line.size(); ++j)
        width[j] = std::max(width[j], line[j].size());
    std::size_t table_width = 0;
    for (auto w : width)
      table_width += w;
    table_width += 2 * (width.empty() ? 0 : width.size() - 1);

    std::string text = c.title;
    text += '\n';
    for (std::size_t li = 0; li < cells.size(); ++li) {
      std::string line;
      for (std::size_t j = 0; j < cells[li].size(); ++j) {
        if (j > 0)
          line += "  ";
        const auto& cell = cells[li][j];
        std::string pad(width[j] - cell.size(), ' ');
        line += right[j] ? pad + cell : cell + pad;
      }
      while (!line.empty() && line.back() == ' ')
        line.pop_back();
      text += line;
      text += '\n';
      if (li == 0)
        text += std::string(table_width, '-') + '\n';
    }
    if (shown < rows.size())
      text += "(" + std::to_string(rows.size() - shown)
              + (rows.size() - shown == 1 ? " more row)\n" : " more rows)\n");
    if (c.highlight) {
      const auto matched = c.first_only.result(0, matched_[0]);
      const auto all = c.first_only.result(0, total_[0]);
      const type_id t = c.columns[first_agg].type;
      text += c.highlight_label + ": " + percent(as_double(matched), as_double(all)) + " ("
              + format_value(matched, t) + " of " + format_value(all, t) + ")\n";
    }
    c.write(text);
  }

  /// Operator state: magic, signature, the highlight's total and matched
  /// accumulators, then every group as (encoded key, key values,
  /// accumulators).
  void snapshot_state(std::uint64_t checkpoint_id, operator_snapshot& out) override {
    (void) checkpoint_id;
    using namespace state;
    std::string& b = out.operator_state;
    b.clear();
    wire::put_bytes(b, state_magic);
    wire::put_bytes(b, cfg_->state_signature);
    codec<internal::accumulator>::encode(total_[0], b);
    codec<internal::accumulator>::encode(matched_[0], b);
    wire::put_u64(b, groups_.size());
    for (const auto& [k, g] : groups_) {
      wire::put_bytes(b, k);
      codec<std::vector<value>>::encode(g.key_values, b);
      codec<std::vector<accumulator>>::encode(g.accs, b);
    }
  }

  /// Merges every handed-over state (several after a change of parallelism)
  /// into this sink's groups. Throws std::runtime_error on a malformed
  /// state or one written by a summary of another shape.
  void restore_state(const operator_restore& in) override {
    for (const auto& bytes : in.operator_states)
      if (!bytes.empty())
        merge_state(bytes, in.checkpoint_id);
  }

private:
  void merge_state(std::string_view in, std::uint64_t checkpoint_id) {
    using namespace state;
    const auto& c = *cfg_;
    auto fail = [&](const std::string& why) {
      return std::runtime_error("summary sink: cannot restore the state of checkpoint "
                                + std::to_string(checkpoint_id) + ": " + why);
    };
    std::string_view magic, signature;
    if (!wire::get_bytes(in, magic) || magic != state_magic)
      throw fail("not a summary sink state");
    if (!wire::get_bytes(in, signature))
      throw fail("malformed state");
    if (signature != c.state_signature)
      throw fail("it was written by a summary with other columns or aggregates ("
                 + std::string{signature} + "; now " + c.state_signature + ")");
    accumulator total, matched;
    std::uint64_t n = 0;
    if (!codec<accumulator>::decode(in, total) || !codec<accumulator>::decode(in, matched)
        || !wire::get_u64(in, n) || n > in.size())
      throw fail("malformed state");
    std::unordered_map<std::string, group> restored;
    for (std::uint64_t i = 0; i < n; ++i) {
      std::string key;
      group g;
      if (!codec<std::string>::decode(in, key)
          || !codec<std::vector<value>>::decode(in, g.key_values)
          || !codec<std::vector<accumulator>>::decode(in, g.accs)
          || g.key_values.size() != c.group_fields.size()
          || g.accs.size() != c.aggregates.size())
        throw fail("malformed group " + std::to_string(i));
      if (!restored.emplace(std::move(key), std::move(g)).second)
        throw fail("group " + std::to_string(i) + " appears twice");
    }
    if (!in.empty())
      throw fail(std::to_string(in.size()) + " trailing bytes");
    // Decoded whole: merge (sums add, distinct sets unite, ...).
    c.first_only.merge(total_.data(), &total);
    c.first_only.merge(matched_.data(), &matched);
    for (auto& [k, g] : restored) {
      auto [it, fresh] = groups_.try_emplace(k);
      if (fresh)
        it->second = std::move(g);
      else
        c.aggregates.merge(it->second.accs.data(), g.accs.data());
    }
  }

  static std::string percent(double part, double whole) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f%%", whole == 0.0 ? 0.0 : 100.0 * part / whole);
    return buf;
  }

  struct group {
    std::vector<value> key_values;
    std::vector<accumulator> accs;
  };

  std::shared_ptr<const summary_config> cfg_;
  std::unordered_map<std::string, group> groups_;
  std::vector<accumulator> matched_;
  std::vector<accumulator> total_;
  std::string key_;
  std::vector<row_target> targets_;
};

error invalid(std::string msg) {
  return make_error(errc::invalid_argument, "summary: " + std::move(msg));
}

} // namespace

expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec,
                          std::ostream& out) {
  return make_summary_sink_factory(input, spec, [&out](const std::string& text) {
    out << text;
    out.flush();
  });
}

expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec,
                          std::function<void(const std::string&)> write) {
  if (!input)
    return invalid("no input schema");
  auto cfg = std::make_shared<summary_config>();
  cfg->title = spec.title.empty() ? "Summary" : spec.title;
  cfg->ascending = spec.ascending;
  cfg->limit = spec.limit;
  cfg->write = std::move(write);

  for (const auto& name : spec.group_by) {
    auto idx = input->index_of(name);
    if (!idx)
      return invalid("unknown group_by field '" + name + "' (fields: " + input->to_string()
                     + ")");
    if (std::find(cfg->group_fields.begin(), cfg->group_fields.end(), *idx)
        != cfg->group_fields.end())
      return invalid("group_by field '" + name + "' is listed twice");
    cfg->group_fields.push_back(*idx);
    cfg->columns.push_back(input->at(*idx));
  }
  if (spec.aggregates.empty())
    return invalid("needs at least one aggregate, e.g. views = \"sum(views)\"");
  auto aggs = aggregate_set::make(spec.aggregates, *input);
  if (!aggs) {
    auto err = aggs.error();
    err.message = "summary: " + err.message;
    return err;
  }
  for (auto& f : aggs->output_fields()) {
    if (std::find(spec.group_by.begin(), spec.group_by.end(), f.name) != spec.group_by.end())
      return invalid("aggregate '" + f.name + "' has the name of a group_by field");
    cfg->columns.push_back(std::move(f));
  }
  cfg->first_only =
    std::move(*aggregate_set::make({spec.aggregates.front()}, *input));
  cfg->aggregates = std::move(*aggs);
  for (const auto& f : cfg->columns)
    cfg->state_signature += f.name + ":" + std::string{to_string(f.type)} + " ";
  for (std::size_t j = 0; j < cfg->aggregates.size(); ++j)
    cfg->state_signature += std::string{internal::to_string(cfg->aggregates.function(j).kind)}
                            + (j + 1 < cfg->aggregates.size() ? " " : "");
  const auto first_kind = cfg->aggregates.function(0).kind;
  const bool additive = first_kind == aggregate_kind::count_rows
                        || first_kind == aggregate_kind::count
                        || first_kind == aggregate_kind::sum;
  cfg->show_share = additive;

  if (spec.order_by.empty()) {
    cfg->order_column = cfg->group_fields.size();
  } else {
    auto it = std::find_if(cfg->columns.begin(), cfg->columns.end(),
                           [&](const field& f) { return f.name == spec.order_by; });
    if (it == cfg->columns.end()) {
      std::string known;
      for (const auto& f : cfg->columns)
        known += (known.empty() ? "" : ", ") + f.name;
      return invalid("order_by '" + spec.order_by
                     + "' names neither an aggregate nor a group_by field (known: "
                     + known + ")");
    }
    cfg->order_column = static_cast<std::size_t>(it - cfg->columns.begin());
  }

  if (!spec.highlight_where.empty()) {
    auto cond = expr::compile(spec.highlight_where, *input);
    if (!cond) {
      auto err = cond.error();
      err.message = "summary: highlight_where: " + err.message;
      return err;
    }
    if (cond->result_type() != type_id::boolean)
      return make_error(errc::type_error,
                        "summary: highlight_where must be a boolean condition, got "
                          + std::string{to_string(cond->result_type())},
                        0);
    if (!additive)
      return invalid("highlight_where needs the first aggregate ('"
                     + cfg->aggregates.name(0) + "') to be a count or a sum");
    cfg->highlight = std::move(*cond);
    cfg->highlight_label =
      spec.highlight_label.empty() ? spec.highlight_where : spec.highlight_label;
  }

  std::shared_ptr<const summary_config> shared = std::move(cfg);
  return std::function<stream_operator_ptr()>{
    [shared] { return std::make_unique<summary_sink>(shared); }};
}

expected<std::function<stream_operator_ptr()>>
make_summary_sink_factory(const schema_ptr& input, const summary::sink& spec) {
  return make_summary_sink_factory(input, spec, std::cout);
}

} // namespace weir
