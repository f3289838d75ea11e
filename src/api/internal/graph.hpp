// SPDX-License-Identifier: Apache-2.0
#pragma once
// What a kind outside src/api needs to add a node to a job's graph the way
// the API's own methods do (the benchmark generators in bench/kinds define
// `job::from_generator` and `job::from_nexmark` with it).

#include "weir/api/job.hpp"
#include "weir/runtime/job_graph.hpp"

#include <cstddef>
#include <string_view>

namespace weir::internal {

/// Claims a source's stream name (generated from `kind` when empty; errors
/// for a duplicate) and adds its node without inputs; the caller finishes it.
expected<runtime::stream_node*> add_source_node(runtime::job_graph& g,
                                                const operator_options& opts,
                                                std::string_view kind, schema_ptr output,
                                                std::size_t parallelism,
                                                watermark_options watermark,
                                                runtime::source_factory factory);

/// `requested`, or the job's parallelism when it is 0.
std::size_t default_parallelism(const runtime::job_graph& g, std::size_t requested);

} // namespace weir::internal
