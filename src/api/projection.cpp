// SPDX-License-Identifier: Apache-2.0
#include "internal/projection.hpp"

#include "internal/graph.hpp"

#include <algorithm>
#include <memory>

namespace weir::internal {

projection::projection(schema_ptr output, std::vector<output_column> columns)
  : output_(std::move(output)), columns_(std::move(columns)), last_use_(columns_.size()) {
  std::vector<bool> seen;
  for (std::size_t i = columns_.size(); i-- > 0;) {
    const int src = columns_[i].source;
    if (src < 0)
      continue;
    const auto k = static_cast<std::size_t>(src);
    if (k >= seen.size())
      seen.resize(k + 1);
    last_use_[i] = !seen[k];
    seen[k] = true;
  }
}

void projection::process_batch(const record_batch_ptr& batch, output_collector& out) {
  auto result = std::make_shared<record_batch>();
  result->schema = output_;
  result->num_rows = batch->num_rows;
  result->columns.resize(columns_.size());
  // Expressions first: they read input columns that a field may then take.
  for (std::size_t i = 0; i < columns_.size(); ++i)
    if (columns_[i].source < 0)
      result->columns[i] = columns_[i].expression.evaluate(*batch);
  // Sole owner: batches are made non-const (make_shared<record_batch>) and
  // only shared as const, so taking from one nobody else holds is sound.
  record_batch* owned = batch.use_count() == 1 ? const_cast<record_batch*>(batch.get()) : nullptr;
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    if (columns_[i].source < 0)
      continue;
    auto& in = batch->columns[static_cast<std::size_t>(columns_[i].source)];
    if (owned && last_use_[i])
      result->columns[i] = std::move(const_cast<column&>(in));
    else
      result->columns[i] = in;
  }
  if (owned)
    result->timestamps = std::move(owned->timestamps);
  else
    result->timestamps = batch->timestamps;
  // An expression may yield a different but compatible type (int for a
  // float field is never produced: the schema takes the expression's type).
  out.collect(std::move(result));
}

expected<std::size_t> make_projection(const data_stream& in, bool keep_input,
                                      std::vector<std::pair<std::string, std::string>> fields,
                                      const operator_options& opts, runtime::job_graph* g,
                                      std::size_t node_idx, std::size_t port) {
  const schema& input = *in.output_schema();
  std::vector<field> out_fields;
  std::vector<projection::output_column> columns;
  std::vector<std::string> computed_names;
  for (const auto& [fname, text] : fields) {
    for (const auto& seen : computed_names)
      if (seen == fname)
        return make_error(errc::invalid_argument, "field '" + fname + "' is computed twice");
    computed_names.push_back(fname);
  }
  if (keep_input) {
    for (std::size_t i = 0; i < input.size(); ++i) {
      out_fields.push_back(input.at(i));
      columns.push_back({static_cast<int>(i), {}});
    }
  }
  for (const auto& [fname, text] : fields) {
    auto compiled = expr::compile(text, input);
    if (!compiled) {
      auto err = compiled.error();
      err.message = "field '" + fname + "': " + err.message;
      return err;
    }
    auto t = compiled->result_type();
    if (t == type_id::null_type)
      t = type_id::string; // a bare null literal: an all-null string column
    // A bare field name passes its column through (moved when the batch
    // is the projection's alone) instead of evaluating a copy.
    const auto passed = compiled->field_reference();
    projection::output_column col{passed ? static_cast<int>(*passed) : -1,
                                  std::move(*compiled)};
    std::size_t pos = out_fields.size();
    for (std::size_t i = 0; i < out_fields.size(); ++i)
      if (out_fields[i].name == fname)
        pos = i;
    if (pos == out_fields.size()) {
      out_fields.push_back(field{fname, t});
      columns.push_back(std::move(col));
    } else {
      out_fields[pos] = field{fname, t};
      columns[pos] = std::move(col);
    }
  }
  if (out_fields.empty())
    return make_error(errc::invalid_argument, "a select needs at least one field");
  auto schema = make_schema(std::move(out_fields));
  std::vector<std::size_t> reads;
  if (!keep_input) {
    // A select reads only what its expressions reference.
    for (const auto& c : columns)
      for (auto f : c.expression.referenced_fields())
        reads.push_back(f);
    std::sort(reads.begin(), reads.end());
    reads.erase(std::unique(reads.begin(), reads.end()), reads.end());
  }
  auto id = add_operator_node(*g, opts,
                              {keep_input ? "map" : "select", schema,
                               [schema, columns = std::move(columns)] {
                                 return std::make_unique<projection>(schema, columns);
                               }},
                              {{node_idx, port}});
  if (!id)
    return id.error();
  if (!keep_input)
    g->nodes[*id].reads = std::move(reads);
  return *id;
}

} // namespace weir::internal
