// SPDX-License-Identifier: Apache-2.0
#pragma once
// The runtime operator shared by the split and explode kinds
// (src/kinds/operators/split/, explode/), and the field check both plan with
// (row_multiplier.cpp).

#include "weir/api/job.hpp"
#include "weir/operators/stream_operator.hpp"

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir::internal {

/// Turns each row into zero or more rows, one per piece of a string field
/// (Flink's flatMap; SQL's UNNEST): `split` cuts the text at a separator,
/// `explode` unnests a JSON array held as text. The other fields are copied;
/// a null field gives no row.
class row_multiplier final : public stream_operator {
public:
  enum class mode { split, explode };
  row_multiplier(mode m, std::size_t field, std::string separator, bool keep_empty)
    : mode_(m), field_(field), separator_(std::move(separator)), keep_empty_(keep_empty) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override;

private:
  mode mode_;
  std::size_t field_;
  std::string separator_;
  bool keep_empty_;
  std::vector<std::string> pieces_;
};

/// The index of `field` in `s` if it is a string field; else a type error
/// naming `op`.
expected<std::size_t> string_field(const schema& s, const std::string& field,
                                   std::string_view op);

} // namespace weir::internal
