// SPDX-License-Identifier: Apache-2.0
#include "join_rows.hpp"

#include "api/internal/graph.hpp"

#include "weir/core/key_group.hpp"
#include "weir/state/codec.hpp"

#include <algorithm>
#include <stdexcept>

namespace weir::internal {

namespace {

bool has_field(const std::vector<field>& fs, std::string_view name) {
  return std::any_of(fs.begin(), fs.end(), [&](const field& f) { return f.name == name; });
}

} // namespace

expected<join_rows> join_rows::make(const schema_ptr& left, const schema_ptr& right,
                                    const std::vector<std::size_t>& right_keys,
                                    const join_select& select, bool windowed) {
  join_rows j;
  j.left_fields_ = left->size();
  j.right_fields_ = right->size();
  j.windowed_ = windowed;
  std::vector<field> scope;
  for (const auto& f : left->fields())
    scope.push_back(field{"left." + f.name, f.type});
  for (const auto& f : right->fields())
    scope.push_back(field{"right." + f.name, f.type});
  scope.push_back(field{"timestamp", type_id::timestamp});
  if (windowed) {
    scope.push_back(field{"window_start", type_id::timestamp});
    scope.push_back(field{"window_end", type_id::timestamp});
  }
  j.scope_ = make_schema(scope);
  std::vector<field> out;
  if (select.empty()) {
    for (std::size_t i = 0; i < left->size(); ++i) {
      out.push_back(left->at(i));
      j.sources_.push_back(static_cast<int>(i));
    }
    for (std::size_t i = 0; i < right->size(); ++i) {
      if (std::find(right_keys.begin(), right_keys.end(), i) != right_keys.end())
        continue;
      auto f = right->at(i);
      if (has_field(out, f.name))
        f.name = "right_" + f.name;
      if (has_field(out, f.name))
        return make_error(errc::invalid_argument,
                          "the right field '" + right->at(i).name + "' would be named '" +
                            f.name + "', which a left field is: write a select");
      out.push_back(f);
      j.sources_.push_back(static_cast<int>(left->size() + i));
    }
    if (windowed) {
      for (auto name : {"window_start", "window_end"}) {
        if (has_field(out, name))
          return make_error(errc::invalid_argument,
                            std::string{"an input field is named '"} + name +
                              "', as the window join's own field: write a select");
        const auto k = scope.size() - (std::string_view{name} == "window_start" ? 2 : 1);
        out.push_back(field{name, type_id::timestamp});
        j.sources_.push_back(static_cast<int>(k));
      }
    }
    j.exprs_.resize(out.size());
  } else {
    for (const auto& [name, text] : select) {
      if (has_field(out, name))
        return make_error(errc::invalid_argument, "select: field '" + name + "' is named twice");
      auto e = expr::compile(text, *j.scope_);
      if (!e) {
        auto err = e.error();
        err.message = "select field '" + name + "': " + err.message;
        return err;
      }
      auto t = e->result_type();
      if (t == type_id::null_type)
        t = type_id::string; // a bare null: an all-null string column, as in a select
      out.push_back(field{name, t});
      auto ref = e->field_reference();
      j.sources_.push_back(ref ? static_cast<int>(*ref) : -1);
      j.exprs_.push_back(std::move(*e));
    }
  }
  j.output_ = make_schema(std::move(out));
  return j;
}

void join_rows::append(const join_row& l, const join_row& r, event_time ts,
                       event_time window_start, event_time window_end) {
  if (!builder_)
    builder_.emplace(scope_);
  auto& b = *builder_;
  std::size_t c = 0;
  for (std::size_t i = 0; i < left_fields_; ++i)
    b.col(c++).append_value(l[i]);
  for (std::size_t i = 0; i < right_fields_; ++i)
    b.col(c++).append_value(r[i]);
  b.col(c++).append_int(ts);
  if (windowed_) {
    b.col(c++).append_int(window_start);
    b.col(c++).append_int(window_end);
  }
  b.commit_row();
  b.timestamps().push_back(ts);
}

record_batch_ptr join_rows::finish() {
  if (!builder_ || builder_->rows() == 0)
    return nullptr;
  auto scope = builder_->finish();
  auto result = std::make_shared<record_batch>();
  result->schema = output_;
  result->num_rows = scope->num_rows;
  result->timestamps = scope->timestamps;
  result->columns.resize(sources_.size());
  for (std::size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i] >= 0)
      result->columns[i] = scope->columns[static_cast<std::size_t>(sources_[i])];
    else
      result->columns[i] = exprs_[i].evaluate(*scope);
  }
  return result;
}

join_row row_values(const record_batch& batch, std::size_t row) {
  join_row out;
  out.reserve(batch.columns.size());
  for (const auto& c : batch.columns)
    out.push_back(c.get(row));
  return out;
}

expected<std::monostate> check_join_keys(const schema& left, const std::vector<std::size_t>& lk,
                                         const schema& right,
                                         const std::vector<std::size_t>& rk) {
  if (lk.empty() || lk.size() != rk.size())
    return make_error(errc::invalid_argument,
                      "a join needs as many key fields for each input, at least one (" +
                        std::to_string(lk.size()) + " and " + std::to_string(rk.size()) + ")");
  for (std::size_t i = 0; i < lk.size(); ++i) {
    const auto& a = left.at(lk[i]);
    const auto& b = right.at(rk[i]);
    if (a.type != b.type)
      return make_error(errc::type_error, "key field '" + a.name + "' is " +
                                            std::string{to_string(a.type)} + ", but '" +
                                            b.name + "' is " + std::string{to_string(b.type)});
  }
  return std::monostate{};
}

expected<std::size_t> add_join_node(runtime::job_graph& g, const operator_options& opts,
                                    std::string_view kind, const schema_ptr& rows,
                                    std::pair<std::size_t, std::size_t> left,
                                    const schema_ptr& left_schema,
                                    std::vector<std::size_t> left_keys,
                                    std::pair<std::size_t, std::size_t> right,
                                    const schema_ptr& right_schema,
                                    std::vector<std::size_t> right_keys,
                                    const std::string& left_late, const std::string& right_late,
                                    runtime::operator_factory factory) {
  auto name = claim_stream_name(g, opts.name, kind);
  if (!name)
    return name.error();
  for (const auto* late : {&left_late, &right_late}) {
    if (late->empty())
      continue;
    bool taken = *late == *name || g.find_stream(*late) != nullptr
                 || (late == &right_late && right_late == left_late);
    for (const auto& n : g.nodes)
      taken = taken || n.name == *late;
    if (taken)
      return make_error(errc::invalid_argument, "duplicate stream name '" + *late + "'");
  }
  runtime::stream_node node;
  node.name = *name;
  node.kind = std::string{kind};
  node.parallelism = default_parallelism(g, opts.parallelism);
  node.outputs.push_back(runtime::output_port{*name, rows, false});
  node.outputs.push_back(runtime::output_port{left_late, left_schema, true});
  node.outputs.push_back(runtime::output_port{right_late, right_schema, true});
  node.make_operator = std::move(factory);
  node.num_inputs = 2;
  // Its state: each side's buffered rows by key (keyed_state_backend), keyed
  // by the key types.
  node.state_descriptor = std::string{kind} + "; keys (";
  for (std::size_t i = 0; i < left_keys.size(); ++i)
    node.state_descriptor += (i ? ", " : "")
                             + std::string{to_string(left_schema->at(left_keys[i]).type)};
  node.state_descriptor += ")";
  auto id = add_graph_node(g, std::move(node), {left, right}, std::nullopt);
  auto& in1 = g.edges[g.edges.size() - 2];
  auto& in2 = g.edges.back();
  in2.target_input = 1;
  in1.mode = runtime::partitioning::hash;
  in1.key_fields = std::move(left_keys);
  in2.mode = runtime::partitioning::hash;
  in2.key_fields = std::move(right_keys);
  return id;
}

// -- keyed_join_operator ------------------------------------------------------

void keyed_join_operator::open(const operator_context& ctx) {
  backend_ = std::make_unique<state::keyed_state_backend>(
    state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism, ctx.subtask_index),
    ctx.max_parallelism);
  register_states();
}

void keyed_join_operator::process_input(std::size_t side, const record_batch_ptr& batch,
                                        output_collector& out) {
  const auto& b = *batch;
  if (b.num_rows == 0)
    return;
  if (!b.has_timestamps())
    throw std::runtime_error("a join needs event time: its inputs' sources must set event_time");
  late_rows_.clear();
  for (std::size_t row = 0; row < b.num_rows; ++row) {
    const event_time ts = b.timestamps[row];
    key_scratch_.clear();
    encode_key(b, keys_[side], row, key_scratch_);
    backend_->set_current_key(key_scratch_);
    backend_->set_current_namespace({});
    if (!process_row(side, row_values(b, row), ts))
      late_rows_.push_back(static_cast<std::uint32_t>(row));
  }
  flush(out);
  if (!late_rows_.empty()) {
    late_ += late_rows_.size();
    out.collect_side(side + 1, std::make_shared<record_batch>(b.take(late_rows_)));
  }
}

void keyed_join_operator::process_watermark(event_time wm, output_collector& out) {
  backend_->advance_watermark(wm, [this](event_time ts) { on_timer(ts); });
  flush(out);
  out.emit_watermark(wm);
}

void keyed_join_operator::flush(output_collector& out) {
  if (auto batch = rows_.finish())
    out.collect(std::move(batch));
}

void keyed_join_operator::snapshot_state(std::uint64_t, operator_snapshot& out) {
  out.keyed_state = backend_->snapshot();
  out.operator_state.clear();
  state::wire::put_u64(out.operator_state,
                       static_cast<std::uint64_t>(backend_->current_watermark()));
}

void keyed_join_operator::restore_state(const operator_restore& in) {
  for (const auto& [group, bytes] : in.key_groups)
    if (auto r = backend_->restore_key_group(group, bytes); !r)
      throw std::runtime_error("join: cannot restore key group " + std::to_string(group) +
                               " of checkpoint " + std::to_string(in.checkpoint_id) + ": " +
                               r.error().message);
  // As the window operator: every previous subtask held the same watermark
  // at the barrier; a subtask that inherits no operator state after scaling
  // up reads theirs.
  const auto& states =
    in.operator_states.empty() ? in.union_operator_states : in.operator_states;
  std::optional<event_time> watermark;
  for (const auto& s : states) {
    std::string_view v = s;
    std::uint64_t wm = 0;
    if (!state::wire::get_u64(v, wm))
      throw std::runtime_error("join: malformed operator state in checkpoint " +
                               std::to_string(in.checkpoint_id));
    auto w = static_cast<event_time>(wm);
    watermark = watermark ? std::min(*watermark, w) : w;
  }
  // Every timer at or before it fired before the checkpoint was taken.
  if (watermark && *watermark > min_watermark)
    backend_->advance_watermark(*watermark, [](event_time) {});
}

} // namespace weir::internal

namespace weir::kinds::internal {

using namespace weir::config;

std::vector<located> join_spec::side_outputs() const {
  std::vector<located> out;
  if (left_late_output.node)
    out.push_back(left_late_output);
  if (right_late_output.node)
    out.push_back(right_late_output);
  return out;
}

std::vector<key_spec> join_keys() {
  return {
    {"key_by", "array of strings", false, "",
     "the key fields, named alike in both inputs (or left_key_by and right_key_by)"},
    {"left_key_by", "array of strings", false, "", "the left input's key fields"},
    {"right_key_by", "array of strings", false, "",
     "the right input's key fields, pairwise of the left's types"},
    {"select", "table of expressions", false, "",
     "the output fields: name = expression over left.<field>, right.<field>, timestamp"},
    {"left_late_output", "string", false, "", "a stream of the left rows that arrived late"},
    {"right_late_output", "string", false, "", "a stream of the right rows that arrived late"},
  };
}

void parse_join(parse_context& c, join_spec& s) {
  auto& r = c.hard;
  const auto* kb = r.get("key_by");
  const auto* lk = r.get("left_key_by");
  const auto* rk = r.get("right_key_by");
  s.key_node = kb ? kb : lk ? lk : rk;
  if (kb && (lk || rk)) {
    r.fail(pos_of(*(lk ? lk : rk)), "give either key_by or left_key_by and right_key_by, not both");
  } else if (kb) {
    if (auto v = r.string_array("key_by", true, 1)) {
      s.left_key_by = *v;
      s.right_key_by = *v;
    }
  } else if (lk || rk || c.keys_required) {
    if (!lk && !rk) {
      r.missing("key_by", {"hint: key_by = [\"k\"] keys both inputs by field k; "
                           "left_key_by and right_key_by name each side's fields"});
    } else {
      auto a = r.string_array("left_key_by", true, 1);
      auto b = r.string_array("right_key_by", true, 1);
      if (a && b && a->size() != b->size())
        r.fail(pos_of(*rk), "right_key_by must list as many fields as left_key_by (" +
                              std::to_string(a->size()) + "), got " +
                              std::to_string(b->size()));
      else if (a && b) {
        s.left_key_by = std::move(*a);
        s.right_key_by = std::move(*b);
      }
    }
  }
  s.select_node = r.get("select");
  if (auto sel = r.string_table("select", false, "an expression string"))
    s.select = std::move(*sel);
  if (auto v = r.string("left_late_output", false, true))
    s.left_late_output = *v;
  if (auto v = r.string("right_late_output", false, true))
    s.right_late_output = *v;
}

std::optional<std::pair<keyed_stream, keyed_stream>> plan_join_inputs(plan_context& c,
                                                                     const join_spec& s) {
  const auto& left = c.inputs.at(0);
  const auto& right = c.inputs.at(1);
  if (s.left_key_by.empty())
    return std::nullopt; // reported while parsing
  const bool kb = c.table.get("key_by") != nullptr;
  bool ok = c.check_fields_exist(*left.output_schema(), s.left_key_by,
                                 kb ? "key_by (left input)" : "left_key_by");
  ok = c.check_fields_exist(*right.output_schema(), s.right_key_by,
                            kb ? "key_by (right input)" : "right_key_by") && ok;
  if (!ok)
    return std::nullopt;
  std::vector<std::string> lk, rk;
  for (const auto& k : s.left_key_by)
    lk.push_back(k.value);
  for (const auto& k : s.right_key_by)
    rk.push_back(k.value);
  auto a = left.key_by(lk);
  auto b = right.key_by(rk);
  if (!a || !b) {
    c.report_api(s.key_node, "", a ? b.error() : a.error());
    return std::nullopt;
  }
  return std::pair{*a, *b};
}

join_select select_of(const join_spec& s) {
  join_select out;
  for (const auto& f : s.select)
    out.emplace_back(f.name, f.text);
  return out;
}

void report_join_error(plan_context& c, const join_spec& s, const error& e) {
  const std::string prefix = "select field '";
  if (e.message.rfind(prefix, 0) == 0) {
    auto end = e.message.find("': ", prefix.size());
    auto name = e.message.substr(prefix.size(), end - prefix.size());
    for (const auto& f : s.select)
      if (f.name == name) {
        c.report_api(f.node, "select." + name,
                     error{e.code, e.message.substr(end + 3), e.offset});
        return;
      }
  }
  const bool keys = e.message.find("key field") != std::string::npos;
  c.report_api(keys ? s.key_node : nullptr, "", error{e.code, e.message, error::npos});
}

} // namespace weir::kinds::internal
