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

} // namespace weir::internal
