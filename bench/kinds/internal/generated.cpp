// SPDX-License-Identifier: Apache-2.0
#include "generated.hpp"

#include <limits>

namespace weir::kinds::internal {

using namespace weir::config;

generated_common parse_generated_common(parse_context& c, std::string_view count_key) {
  auto& r = c.hard;
  auto& soft = c.soft;
  generated_common g;
  constexpr auto unbounded = std::numeric_limits<std::int64_t>::max();
  if (auto v = r.integer(count_key, 0, unbounded))
    g.count = static_cast<std::uint64_t>(*v);
  if (auto* n = r.get("seed")) {
    if (auto* i = n->as_integer())
      g.seed = static_cast<std::uint64_t>(i->get());
    else
      r.wrong_type(*n, "seed", "an integer");
  }
  if (auto v = positive_rate(r, "rate"))
    g.rate = *v;
  if (auto v = r.string("generation_time_field", false, true))
    g.generation_time_field = v->value;
  if (auto v = r.boolean("projection_push_down"))
    g.projection_push_down = *v;
  if (auto v = soft.integer("parallelism", 1, max_key_groups)) {
    if (static_cast<std::size_t>(*v) > c.max_parallelism)
      soft.fail(pos_of(*soft.get("parallelism")),
                "parallelism must not exceed job.max_parallelism (" +
                  std::to_string(c.max_parallelism) + "), got " + std::to_string(*v));
    else
      g.parallelism = static_cast<std::size_t>(*v);
  }
  if (auto* w = soft.subtable("watermark")) {
    auto wr = soft.sub(*w, "watermark");
    wr.check_keys(c.children("watermark"));
    if (auto v = wr.duration("max_out_of_orderness"))
      g.watermark.max_out_of_orderness = *v;
    if (auto v = wr.duration("idle_timeout"))
      g.watermark.idle_timeout = *v;
  }
  return g;
}

} // namespace weir::kinds::internal
