// SPDX-License-Identifier: Apache-2.0
#include "internal/row_multiplier.hpp"

#include <simdjson.h>

#include <memory>
#include <stdexcept>

namespace weir::internal {

expected<std::size_t> string_field(const schema& s, const std::string& field,
                                   std::string_view op) {
  auto idx = s.index_of(field);
  if (!idx)
    return make_error(errc::type_error, std::string{op} + ": unknown field '" + field
                                          + "' (fields: " + s.to_string() + ")");
  if (s.at(*idx).type != type_id::string)
    return make_error(errc::type_error, std::string{op} + ": field '" + field
                                          + "' must be a string, got "
                                          + std::string{to_string(s.at(*idx).type)});
  return *idx;
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
