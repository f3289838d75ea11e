// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "weir/api/job.hpp"
#include "weir/connectors/source_reader.hpp"
#include "weir/operators/stream_operator.hpp"

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <mutex>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace weir {
class http_source_handle; // weir/http/source.hpp
} // namespace weir

namespace weir::runtime {

/// How an edge distributes batches over the downstream subtasks.
enum class partitioning {
  forward,   ///< subtask i -> subtask i (equal parallelism); chainable
  rebalance, ///< round-robin per batch over all downstream subtasks
  hash,      ///< by key group of the key fields (key_by)
};

/// Makes the source reader of one subtask. A failure to open is reported by
/// throwing std::runtime_error (the job fails naming the source).
using source_factory = std::function<source_reader_ptr(
  std::size_t subtask_index, std::size_t parallelism, bad_record_handler on_bad)>;

/// Makes the operator of one subtask.
using operator_factory = std::function<stream_operator_ptr()>;

/// One output of a node: its stream name and schema. Port 0 is the main
/// output; others are side outputs.
struct output_port {
  std::string name;
  schema_ptr schema;
  bool counts_as_late = false; ///< rows on it are counted as late records
};

/// A logical operator (a vertex of Flink's `StreamGraph`).
struct stream_node {
  std::size_t id = 0;
  std::string name;
  std::string kind; ///< "file_source", "filter", "window", "file_sink", ...
  std::size_t parallelism = 1;
  bool is_source = false;
  bool is_sink = false;
  std::vector<output_port> outputs; ///< empty for sinks
  source_factory make_source;       ///< sources only
  operator_factory make_operator;   ///< everything but sources
  /// Sinks with an exactly-once variant (two-phase commit), used instead of
  /// `make_operator` when checkpoints are enabled.
  operator_factory make_transactional_operator;
  /// What the layout of the node's snapshot depends on (Flink's
  /// `TypeSerializerSnapshot`, compacted to text), e.g. "window
  /// tumbling_event_time_windows; keys (int64); aggregates count(*),
  /// sum(float64)". Stored with each checkpoint's handles of the node; a
  /// restore refuses state whose descriptor differs
  /// (`checkpoint::check_state_compatibility`). Empty: nothing checked.
  std::string state_descriptor;
  watermark_options watermark;      ///< sources only
  std::optional<std::size_t> partition_field;       ///< sources: partition_by column
  std::vector<std::string> partitions;              ///< sources: declared partitions
  /// Logical inputs: 1, or 2 for a `two_input_stream_operator` (its edges
  /// say which input they feed by `stream_edge::target_input`). A node with
  /// two inputs is never chained to either.
  std::size_t num_inputs = 1;
  std::optional<std::size_t> processing_time_field; ///< sources: replay clock column
  /// Columns of its (main) input the node reads, as indices into that
  /// schema; nullopt = unknown, taken as all of them. With
  /// `forwards_input_columns` (a filter) its output has the input's columns,
  /// so what its consumers read counts too. Used by
  /// `prune_generated_fields`: a node with known `reads` must not touch the
  /// values of any other column of its input (they may have none).
  std::optional<std::vector<std::size_t>> reads;
  bool forwards_input_columns = false;
  /// Generated sources and expression filters: per output column, whether
  /// anything downstream reads it (set by `prune_generated_fields` before the
  /// job runs; a reader leaves the others null instead of computing them, a
  /// filter does not copy them). Null or empty: all.
  std::shared_ptr<std::vector<bool>> needed_columns;
};

/// A connection from (source node, port) to a target node.
struct stream_edge {
  std::size_t source = 0;
  std::size_t port = 0;
  std::size_t target = 0;
  partitioning mode = partitioning::forward;
  std::vector<std::size_t> key_fields; ///< hash only: indices in the port's schema
  /// The target's logical input this edge feeds: 0, or 1 for the second
  /// input of a two-input node.
  std::size_t target_input = 0;
};

struct job_graph;

/// Projection push-down into generated sources (Flink's
/// `SupportsProjectionPushDown`): marks, in each generated source's
/// `needed_columns`, the columns some consumer reads (directly, through
/// filters, or as a hash key) and the columns of consumers whose reads are
/// unknown (all). The event-time field is evaluated whether marked or not;
/// unmarked, its values move to the batch's event times and its column
/// travels as the other unread ones do. A generator then skips
/// evaluating the expressions of the other fields: their columns stay null,
/// which nothing observes. Expression filters get the same marks for their
/// own consumers, and copy only those columns of the rows they keep.
void prune_generated_fields(job_graph& g);

/// Text that sinks produce once, at the end of a job (summary tables), kept
/// in slots reserved in declaration order and printed in that order by
/// `job::execute`, whichever subtask finishes first. Thread-safe.
class end_of_job_output {
public:
  /// A new slot, after every slot reserved before.
  std::size_t reserve() {
    std::lock_guard lock{mutex_};
    slots_.emplace_back();
    return slots_.size() - 1;
  }
  /// Sets the text of `slot` (replacing earlier text: a restarted job's
  /// sink finishes again).
  void put(std::size_t slot, std::string text) {
    std::lock_guard lock{mutex_};
    if (slot < slots_.size())
      slots_[slot] = std::move(text);
  }
  /// Writes the slots' texts in slot order and empties them.
  void print(std::ostream& out) {
    std::lock_guard lock{mutex_};
    for (auto& text : slots_) {
      out << text;
      text.clear();
    }
    out.flush();
  }

private:
  std::mutex mutex_;
  std::vector<std::string> slots_;
};

/// The logical job graph built by the public API (and so by the TOML loader).
struct job_graph {
  job_options options;
  /// Summary tables, printed in [[sink]] order at the end of `execute`.
  std::shared_ptr<end_of_job_output> end_output = std::make_shared<end_of_job_output>();
  std::vector<stream_node> nodes;
  std::vector<stream_edge> edges;

  /// (node, port) of each named stream.
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> streams;

  /// Index of the stream called `name`, if any.
  const std::pair<std::size_t, std::size_t>* find_stream(std::string_view name) const;
  /// Whether a node is called `name`.
  bool has_node_named(std::string_view name) const;

  /// Lookup indexes kept by the API as it adds nodes (a graph of 20,000
  /// operators is built in linear time): position in `streams` by name, and
  /// node names. A graph whose vectors were filled directly is searched.
  std::map<std::string, std::size_t, std::less<>> stream_index;
  std::set<std::string, std::less<>> node_names;

  /// The job's http sources by name (`http::add_source` (`job::from`)): what
  /// `POST /ingest/{source}` hands its body to.
  std::map<std::string, std::shared_ptr<http_source_handle>, std::less<>> http_sources;
};

} // namespace weir::runtime
