// SPDX-License-Identifier: Apache-2.0
#include "internal/operators.hpp"

#include "weir/core/key_group.hpp"

#include <simdjson.h>

#include <memory>
#include <stdexcept>

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

namespace {

/// The elements of a JSON array as text: strings unquoted, anything else as
/// its minified JSON. Throws std::runtime_error for text that is not an array.
void json_array_elements(std::string_view text, std::vector<std::string>& out) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded{text};
  simdjson::dom::element doc;
  if (auto err = parser.parse(padded).get(doc))
    throw std::runtime_error(std::string{"explode: invalid JSON: "}
                             + simdjson::error_message(err));
  simdjson::dom::array arr;
  if (doc.get_array().get(arr))
    throw std::runtime_error("explode: the field holds no JSON array: "
                             + std::string{text.substr(0, 200)});
  for (auto e : arr) {
    std::string_view sv;
    if (!e.get_string().get(sv))
      out.emplace_back(sv);
    else
      out.push_back(simdjson::minify(e));
  }
}

} // namespace

void row_multiplier::process_batch(const record_batch_ptr& batch, output_collector& out) {
  const column& in = batch->columns[field_];
  std::vector<std::uint32_t> rows;
  column pieces{type_id::string};
  for (std::size_t r = 0; r < batch->num_rows; ++r) {
    if (in.is_null(r))
      continue;
    pieces_.clear();
    auto text = in.str(r);
    if (mode_ == mode::explode) {
      json_array_elements(text, pieces_);
    } else {
      std::size_t start = 0;
      for (;;) {
        auto at = separator_.empty() ? std::string_view::npos : text.find(separator_, start);
        auto piece = text.substr(start, at == std::string_view::npos ? at : at - start);
        if (keep_empty_ || !piece.empty())
          pieces_.emplace_back(piece);
        if (at == std::string_view::npos)
          break;
        start = at + separator_.size();
      }
    }
    for (const auto& p : pieces_) {
      rows.push_back(static_cast<std::uint32_t>(r));
      pieces.append_string(p);
    }
  }
  if (rows.empty())
    return;
  auto result = std::make_shared<record_batch>(batch->take(rows));
  result->columns[field_] = std::move(pieces);
  out.collect(std::move(result));
}

void running_count::open(const operator_context& ctx) {
  auto range = state::key_group_range_for_subtask(ctx.max_parallelism, ctx.parallelism,
                                                  ctx.subtask_index);
  backend_ = std::make_unique<state::keyed_state_backend>(range, ctx.max_parallelism);
  auto handle = backend_->get_value_state<std::int64_t>("count");
  if (!handle)
    throw std::logic_error(handle.error().message);
  counts_ = *handle;
}

void running_count::snapshot_state(std::uint64_t, operator_snapshot& out) {
  out.keyed_state = backend_->snapshot();
}

void running_count::restore_state(const operator_restore& in) {
  for (const auto& [group, bytes] : in.key_groups)
    if (auto r = backend_->restore_key_group(group, bytes); !r)
      throw std::runtime_error("restoring key group " + std::to_string(group) + ": "
                               + r.error().message);
}

void running_count::process_batch(const record_batch_ptr& batch, output_collector& out) {
  const std::size_t n = batch->num_rows;
  keys_.clear();
  key_ends_.clear();
  addresses_.clear();
  for (std::size_t row = 0; row < n; ++row) {
    encode_key(*batch, key_fields_, row, keys_);
    key_ends_.push_back(keys_.size());
  }
  const auto key = [this](std::size_t row) {
    const std::size_t begin = row == 0 ? 0 : key_ends_[row - 1];
    return std::string_view{keys_}.substr(begin, key_ends_[row] - begin);
  };
  for (std::size_t row = 0; row < n; ++row)
    addresses_.push_back(backend_->address_of(key(row), {}));
  batch_builder builder{output_};
  state::for_each_prefetched(counts_, addresses_, [&](std::size_t row) {
    backend_->set_current_key(key(row), addresses_[row]);
    auto c = counts_.value_or(0) + 1;
    counts_.update(c);
    for (std::size_t k = 0; k < key_fields_.size(); ++k)
      builder.col(k).append_from(batch->columns[key_fields_[k]], row);
    builder.col(key_fields_.size()).append_int(c);
    builder.commit_row();
    if (batch->has_timestamps())
      builder.timestamps().push_back(batch->timestamps[row]);
  });
  if (builder.rows() > 0)
    out.collect(builder.finish());
}

} // namespace weir::internal
