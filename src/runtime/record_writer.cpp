// SPDX-License-Identifier: Apache-2.0
#include "weir/runtime/record_writer.hpp"

#include "weir/core/key_group.hpp"

#include <memory>
#include <vector>

namespace weir::runtime {

void record_writer::write(const record_batch_ptr& batch, output_channels& out) {
  const auto& ws = *spec_;
  switch (ws.mode) {
    case partitioning::forward:
      out.push(ws.channels[0], output_element{element_kind::batch, batch, 0});
      break;
    case partitioning::rebalance: {
      auto d = round_robin_++ % ws.channels.size();
      out.push(ws.channels[d], output_element{element_kind::batch, batch, 0});
      break;
    }
    case partitioning::hash: {
      const auto p = ws.target_parallelism;
      const auto maxp = max_parallelism_;
      if (p == 1) {
        out.push(ws.channels[0], output_element{element_kind::batch, batch, 0});
        break;
      }
      if (ws.key_fields.empty()) {
        // key_by nothing: every row has the same (empty) key.
        auto d = operator_index_for_key_group(assign_key_group({}, maxp), maxp, p);
        out.push(ws.channels[d], output_element{element_kind::batch, batch, 0});
        break;
      }
      std::vector<std::vector<std::uint32_t>> rows(p);
      for (std::size_t r = 0; r < batch->num_rows; ++r) {
        scratch_.clear();
        encode_key(*batch, ws.key_fields, r, scratch_);
        auto group = assign_key_group(scratch_, maxp);
        rows[operator_index_for_key_group(group, maxp, p)].push_back(
          static_cast<std::uint32_t>(r));
      }
      for (std::size_t d = 0; d < p; ++d) {
        if (rows[d].empty())
          continue;
        auto part = rows[d].size() == batch->num_rows
                      ? batch
                      : std::make_shared<record_batch>(batch->take(rows[d]));
        out.push(ws.channels[d], output_element{element_kind::batch, std::move(part), 0});
      }
      break;
    }
  }
}

} // namespace weir::runtime
