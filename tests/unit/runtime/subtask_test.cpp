// SPDX-License-Identifier: Apache-2.0
// The subtask runtime (operator chain, record writers, output channels with
// credits, checkpointed input gate, source driver) driven by the chain
// harness, without CAF.
#include "../../support/chain_harness.hpp"

#include "weir/core/key_group.hpp"
#include "weir/operators/two_input_stream_operator.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <tuple>

using namespace weir;
using namespace weir::runtime;
using weir::testing::chain_harness;

namespace {

const schema_ptr& test_schema() {
  static const auto s = make_schema({{"k", type_id::string}, {"v", type_id::int64}});
  return s;
}

/// Rows (key, value) with event time = value.
record_batch_ptr rows(const std::vector<std::pair<std::string, std::int64_t>>& xs) {
  batch_builder b{test_schema()};
  for (const auto& [k, v] : xs) {
    b.col(0).append_string(k);
    b.col(1).append_int(v);
    b.timestamps().push_back(v);
    b.commit_row();
  }
  return b.finish();
}

std::vector<std::int64_t> values_of(const std::vector<record_batch_ptr>& bs) {
  std::vector<std::int64_t> out;
  for (const auto& b : bs)
    for (std::size_t r = 0; r < b->num_rows; ++r)
      out.push_back(b->columns[1].ints[r]);
  return out;
}

const schema_ptr& swapped_schema() {
  static const auto s = make_schema({{"v", type_id::int64}, {"key", type_id::string}});
  return s;
}

/// Rows (value, key) with event time = value: the second input's shape.
record_batch_ptr swapped_rows(const std::vector<std::pair<std::string, std::int64_t>>& xs) {
  batch_builder b{swapped_schema()};
  for (const auto& [k, v] : xs) {
    b.col(0).append_int(v);
    b.col(1).append_string(k);
    b.timestamps().push_back(v);
    b.commit_row();
  }
  return b.finish();
}

/// Reads (k<i % keys>, i) for i in 0..count-1; its position is the number
/// of rows returned so far.
class counting_reader final : public source_reader {
public:
  counting_reader(std::int64_t count, std::size_t keys, bool swapped = false)
    : count_(count), keys_(keys), swapped_(swapped) {}
  const schema_ptr& output_schema() const override {
    return swapped_ ? swapped_schema() : test_schema();
  }
  record_batch_ptr poll_next(std::size_t max_rows) override {
    if (next_ >= count_)
      return nullptr;
    std::vector<std::pair<std::string, std::int64_t>> xs;
    for (; next_ < count_ && xs.size() < max_rows; ++next_)
      xs.emplace_back("k" + std::to_string(next_ % static_cast<std::int64_t>(keys_)), next_);
    ++polls;
    return swapped_ ? swapped_rows(xs) : rows(xs);
  }
  std::vector<source_position> positions() const override {
    return {{"rows", position_unit::event_number, static_cast<std::uint64_t>(next_)}};
  }
  void seek(const std::vector<source_position>& to) override {
    next_ = static_cast<std::int64_t>(select_position(to, "rows", position_unit::event_number));
  }
  std::size_t polls = 0;

private:
  std::int64_t count_;
  std::size_t keys_;
  bool swapped_;
  std::int64_t next_ = 0;
};

/// Adds `delta` to column v of every row.
class add_operator final : public stream_operator {
public:
  explicit add_operator(std::int64_t delta) : delta_(delta) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    auto copy = std::make_shared<record_batch>(*batch);
    for (auto& x : copy->columns[1].ints)
      x += delta_;
    out.collect(std::move(copy));
  }

private:
  std::int64_t delta_;
};

/// Forwards batches and counts rows; the count is its operator state.
class counting_operator final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    count_ += batch->num_rows;
    out.collect(batch);
  }
  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
    out.operator_state = std::to_string(count_);
  }
  void restore_state(const operator_restore& in) override {
    if (!in.operator_states.empty() && !in.operator_states[0].empty())
      count_ = std::stoull(in.operator_states[0]);
  }
  std::size_t count_ = 0;
};

/// Replays scripted batches of (partition, event time, processing time) rows.
class scripted_reader final : public source_reader {
public:
  using row = std::tuple<std::string, std::int64_t, std::int64_t>;
  explicit scripted_reader(std::vector<std::vector<row>> batches) : batches_(std::move(batches)) {}
  static const schema_ptr& schema() {
    static const auto s = make_schema(
      {{"k", type_id::string}, {"v", type_id::int64}, {"pt", type_id::int64}});
    return s;
  }
  const schema_ptr& output_schema() const override { return schema(); }
  record_batch_ptr poll_next(std::size_t) override {
    if (next_ >= batches_.size())
      return nullptr;
    batch_builder b{schema()};
    for (const auto& [k, v, pt] : batches_[next_++]) {
      b.col(0).append_string(k);
      b.col(1).append_int(v);
      b.col(2).append_int(pt);
      b.timestamps().push_back(v);
      b.commit_row();
    }
    return b.finish();
  }
  std::vector<source_position> positions() const override {
    return {{"script", position_unit::event_number, next_}};
  }

private:
  std::vector<std::vector<row>> batches_;
  std::size_t next_ = 0;
};

/// Keeps the rows whose v is a multiple of `m`; its state is the number kept.
class sampling_operator final : public stream_operator {
public:
  explicit sampling_operator(std::int64_t m) : m_(m) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    std::vector<std::pair<std::string, std::int64_t>> xs;
    for (std::size_t r = 0; r < batch->num_rows; ++r)
      if (batch->columns[1].ints[r] % m_ == 0)
        xs.emplace_back(std::string{batch->columns[0].str(r)}, batch->columns[1].ints[r]);
    kept_ += xs.size();
    out.collect(rows(xs));
  }
  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
    out.operator_state = std::to_string(kept_);
  }
  void restore_state(const operator_restore& in) override {
    if (!in.operator_states.empty() && !in.operator_states[0].empty())
      kept_ = std::stoull(in.operator_states[0]);
  }

private:
  std::int64_t m_;
  std::size_t kept_ = 0;
};

/// Forwards a copy of each batch; a batch it solely owns (`use_count() ==
/// 1`, as a projection checks before taking columns) it then spoils
/// (v = -1), counting how often in `*taken`.
class taking_operator final : public stream_operator {
public:
  explicit taking_operator(std::shared_ptr<std::size_t> taken) : taken_(std::move(taken)) {}
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    auto copy = std::make_shared<record_batch>(*batch);
    if (batch.use_count() == 1) {
      ++*taken_;
      for (auto& x : const_cast<record_batch&>(*batch).columns[1].ints)
        x = -1;
    }
    out.collect(std::move(copy));
  }

private:
  std::shared_ptr<std::size_t> taken_;
};

/// Even values on its main output, odd ones on side output 1.
class parity_operator final : public stream_operator {
public:
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    std::vector<std::pair<std::string, std::int64_t>> even, odd;
    for (std::size_t r = 0; r < batch->num_rows; ++r)
      (batch->columns[1].ints[r] % 2 == 0 ? even : odd)
        .emplace_back(std::string{batch->columns[0].str(r)}, batch->columns[1].ints[r]);
    out.collect(rows(even));
    out.collect_side(1, rows(odd));
  }
};

stream_node node(std::size_t id, std::string name, std::size_t parallelism) {
  stream_node n;
  n.id = id;
  n.name = name;
  n.kind = "test";
  n.parallelism = parallelism;
  n.outputs.push_back({name, test_schema(), false});
  n.make_operator = [] { return std::make_unique<counting_operator>(); };
  return n;
}

stream_node source(std::size_t id, std::string name, std::int64_t count, std::size_t keys = 4) {
  auto n = node(id, std::move(name), 1);
  n.is_source = true;
  n.kind = "test_source";
  n.make_operator = nullptr;
  n.make_source = [count, keys](std::size_t, std::size_t, bad_record_handler) {
    return std::make_unique<counting_reader>(count, keys);
  };
  return n;
}

stream_node sink(std::size_t id, std::string name, std::size_t parallelism) {
  auto n = node(id, std::move(name), parallelism);
  n.is_sink = true;
  n.outputs.clear();
  return n;
}

stream_edge edge(std::size_t a, std::size_t b, partitioning m,
                 std::vector<std::size_t> keys = {}) {
  stream_edge e;
  e.source = a;
  e.target = b;
  e.mode = m;
  e.key_fields = std::move(keys);
  return e;
}

std::shared_ptr<job_graph> graph(std::vector<stream_node> nodes, std::vector<stream_edge> edges,
                                 std::size_t batch_size = 4) {
  auto g = std::make_shared<job_graph>();
  g->options.batch_size = batch_size;
  g->nodes = std::move(nodes);
  g->edges = std::move(edges);
  return g;
}

/// src -> (a, b) union -> u -> sink: u has two input channels.
std::shared_ptr<job_graph> union_graph(checkpointing_mode mode) {
  auto g = graph({source(0, "a", 0), source(1, "b", 0), node(2, "u", 1), sink(3, "out", 1)},
                 {edge(0, 2, partitioning::rebalance), edge(1, 2, partitioning::rebalance),
                  edge(2, 3, partitioning::rebalance)});
  g->options.checkpoint.mode = mode;
  return g;
}

/// The chain (plan vertex) whose head is node `n`.
std::size_t vertex_of(const job_graph& g, std::size_t n) {
  return build_execution_plan(g).vertex_of_node[n];
}

/// Merges both inputs into (k, v) rows; checks that every key it sees, from
/// either input, belongs to its subtask's key groups.
class tag_and_merge final : public two_input_stream_operator {
public:
  void open(const operator_context& ctx) override { ctx_ = ctx; }
  void process_batch1(const record_batch_ptr& batch, output_collector& out) override {
    check_keys(*batch, 0);
    out.collect(batch);
  }
  void process_batch2(const record_batch_ptr& batch, output_collector& out) override {
    check_keys(*batch, 1);
    std::vector<std::pair<std::string, std::int64_t>> xs;
    for (std::size_t r = 0; r < batch->num_rows; ++r)
      xs.emplace_back(std::string{batch->columns[1].str(r)}, batch->columns[0].ints[r]);
    out.collect(rows(xs));
  }
  void snapshot_state(std::uint64_t, operator_snapshot& out) override {
    out.operator_state = std::to_string(rows_[0]) + "/" + std::to_string(rows_[1]);
  }
  std::size_t rows_[2] = {0, 0};

private:
  void check_keys(const record_batch& b, std::size_t input) {
    rows_[input] += b.num_rows;
    const std::size_t fields[] = {input == 0 ? 0u : 1u};
    for (std::size_t r = 0; r < b.num_rows; ++r) {
      std::string key;
      encode_key(b, fields, r, key);
      auto g = assign_key_group(key, ctx_.max_parallelism);
      if (operator_index_for_key_group(g, ctx_.max_parallelism, ctx_.parallelism)
          != ctx_.subtask_index)
        throw std::runtime_error("key of input " + std::to_string(input + 1)
                                 + " on the wrong subtask");
    }
  }
  operator_context ctx_;
};

/// a (k, v) and b (v, key) -> co, keyed by k and by key, parallelism 2 -> out.
std::shared_ptr<job_graph> two_input_graph(std::int64_t rows_a = 0, std::int64_t rows_b = 0) {
  auto b = source(1, "b", rows_b);
  b.outputs[0].schema = swapped_schema();
  b.make_source = [rows_b](std::size_t, std::size_t, bad_record_handler) {
    return std::make_unique<counting_reader>(rows_b, 5, true);
  };
  auto co = node(2, "co", 2);
  co.num_inputs = 2;
  co.make_operator = [] { return std::make_unique<tag_and_merge>(); };
  auto in2 = edge(1, 2, partitioning::hash, {1});
  in2.target_input = 1;
  return graph({source(0, "a", rows_a, 5), std::move(b), std::move(co), sink(3, "out", 2)},
               {edge(0, 2, partitioning::hash, {0}), in2, edge(2, 3, partitioning::forward)});
}

/// src -> (a: +1, b: +100), each to its own sink over a rebalance edge;
/// `b_first` declares src -> b before src -> a.
std::shared_ptr<job_graph> fan_out_graph(bool b_first) {
  auto g = graph({source(0, "src", 10), node(1, "a", 1), node(2, "b", 1), sink(3, "out_a", 1),
                  sink(4, "out_b", 1)},
                 {edge(0, 1, partitioning::forward), edge(0, 2, partitioning::forward),
                  edge(1, 3, partitioning::rebalance), edge(2, 4, partitioning::rebalance)});
  if (b_first)
    std::swap(g->edges[0], g->edges[1]);
  g->nodes[1].make_operator = [] { return std::make_unique<add_operator>(1); };
  g->nodes[2].make_operator = [] { return std::make_unique<add_operator>(100); };
  return g;
}

/// The output channel of subtask harness `h` leading to node `n`.
std::size_t channel_to(const chain_harness& h, std::size_t n) {
  for (std::size_t ch = 0; ch < h.targets.size(); ++ch)
    if (h.targets[ch].vertex == h.plan().vertex_of_node[n])
      return ch;
  FAIL("no channel to node " << n);
  return 0;
}

} // namespace

TEST_SUITE("runtime") {

TEST_CASE("chaining: a source chain feeds its members by direct calls, in order") {
  auto g = graph({source(0, "src", 10), node(1, "plus1", 1), node(2, "times", 1),
                  sink(3, "out", 2)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::forward),
                  edge(2, 3, partitioning::rebalance)});
  g->nodes[1].make_operator = [] { return std::make_unique<add_operator>(1); };
  g->nodes[2].make_operator = [] { return std::make_unique<add_operator>(100); };
  chain_harness h{g};
  REQUIRE(h.plan().vertices.size() == 2);
  CHECK(h.plan().vertices[0].name == "src -> plus1 -> times");
  h.open();
  CHECK(h.poll_requested);
  h.run_source();
  CHECK(h.is_finished);
  REQUIRE(h.sent.size() == 2); // rebalance over the sink's two subtasks
  // Batches of 4, 4, 2 rows go round-robin, starting at this subtask (0).
  // Watermarks (event time = the source's value, bound 0) go to both.
  CHECK(h.trace(0) == "b4 w2 w6 b2 w8 w9223372036854775807 e");
  CHECK(h.trace(1) == "w2 b4 w6 w8 w9223372036854775807 e");
  auto all = values_of(h.batches(0));
  auto second = values_of(h.batches(1));
  all.insert(all.end(), second.begin(), second.end());
  std::sort(all.begin(), all.end());
  std::vector<std::int64_t> want;
  for (std::int64_t i = 0; i < 10; ++i)
    want.push_back(i + 101);
  CHECK(all == want);
  CHECK(h.metrics().at(0, 0).records_out == 10);
  CHECK(h.metrics().at(1, 0).records_in == 10);
  CHECK(h.metrics().at(2, 0).records_out == 10);
}

TEST_CASE("chaining: every chained consumer of a stream gets each batch and watermark in turn, "
          "whichever is declared first") {
  std::vector<std::int64_t> want_a, want_b;
  for (std::int64_t i = 0; i < 10; ++i) {
    want_a.push_back(i + 1);
    want_b.push_back(i + 100);
  }
  const std::string inf = std::to_string(max_watermark);
  for (bool b_first : {false, true}) {
    CAPTURE(b_first);
    auto g = fan_out_graph(b_first);
    chain_harness h{g};
    REQUIRE(h.plan().vertices.size() == 3);
    CHECK(h.plan().vertices[0].name == (b_first ? "src -> (b, a)" : "src -> (a, b)"));
    h.open();
    h.run_source();
    CHECK(h.is_finished);
    const auto a = channel_to(h, 3);
    const auto b = channel_to(h, 4);
    CHECK(a == (b_first ? 1u : 0u));
    // Each branch sees the whole stream, batch by batch, and its watermarks.
    CHECK(h.trace(a) == "b4 w2 b4 w6 b2 w8 w" + inf + " e");
    CHECK(h.trace(b) == "b4 w2 b4 w6 b2 w8 w" + inf + " e");
    CHECK(values_of(h.batches(a)) == want_a);
    CHECK(values_of(h.batches(b)) == want_b);
    // Within the subtask the branches take turns, in declaration order: a
    // batch or watermark has gone through both before the next one comes.
    const auto first = std::to_string(b_first ? b : a) + ":";
    const auto second = std::to_string(b_first ? a : b) + ":";
    std::string want;
    for (const char* e : {"b4", "w2", "b4", "w6", "b2", "w8"})
      want += first + e + " " + second + e + " ";
    want += first + "w" + inf + " " + second + "w" + inf + " 0:e 1:e";
    CHECK(h.trace_all() == want);
    CHECK(h.metrics().at(1, 0).records_in == 10);
    CHECK(h.metrics().at(2, 0).records_in == 10);
    CHECK(h.metrics().at(0, 0).records_out == 10);
  }
}

TEST_CASE("chaining: a batch shared by chained consumers is given up to none but the last") {
  // src -> (t1, t2, t3), each to a sink: t1 and t2 must find the batch
  // shared; t3, its last reader, owns it. A straight chain src -> t hands
  // every batch over too.
  std::vector<std::shared_ptr<std::size_t>> taken;
  std::vector<stream_node> nodes{source(0, "src", 10)};
  std::vector<stream_edge> edges;
  for (std::size_t i = 1; i <= 3; ++i) {
    taken.push_back(std::make_shared<std::size_t>(0));
    nodes.push_back(node(i, "t" + std::to_string(i), 1));
    nodes.back().make_operator = [t = taken.back()] {
      return std::make_unique<taking_operator>(t);
    };
    edges.push_back(edge(0, i, partitioning::forward));
  }
  for (std::size_t i = 1; i <= 3; ++i) {
    nodes.push_back(sink(3 + i, "out" + std::to_string(i), 1));
    edges.push_back(edge(i, 3 + i, partitioning::rebalance));
  }
  auto g = graph(std::move(nodes), std::move(edges));
  chain_harness h{g};
  REQUIRE(h.plan().vertices[0].name == "src -> (t1, t2, t3)");
  h.open();
  h.run_source();
  std::vector<std::int64_t> all(10);
  std::iota(all.begin(), all.end(), 0);
  for (std::size_t i = 1; i <= 3; ++i) {
    CAPTURE(i);
    CHECK(values_of(h.batches(channel_to(h, 3 + i))) == all);
  }
  CHECK(*taken[0] == 0);
  CHECK(*taken[1] == 0);
  CHECK(*taken[2] == 3); // three batches

  auto taken_straight = std::make_shared<std::size_t>(0);
  auto straight = graph({source(0, "src", 10), node(1, "t", 1), sink(2, "out", 1)},
                        {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::rebalance)});
  straight->nodes[1].make_operator = [taken_straight] {
    return std::make_unique<taking_operator>(taken_straight);
  };
  chain_harness s{straight};
  s.open();
  s.run_source();
  CHECK(values_of(s.batches(0)) == all);
  CHECK(*taken_straight == 3);
}

TEST_CASE("chaining: a chain tree snapshots every member by name and restores each its own state") {
  // src -> (even -> four, all): after rows 0..5, even kept 0 2 4, four 0 4,
  // all six.
  auto g = graph({source(0, "src", 10), node(1, "even", 1), node(2, "four", 1), node(3, "all", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::forward),
                  edge(0, 3, partitioning::forward)},
                 3);
  g->nodes[1].make_operator = [] { return std::make_unique<sampling_operator>(2); };
  g->nodes[2].make_operator = [] { return std::make_unique<sampling_operator>(4); };
  g->nodes[3].make_operator = [] { return std::make_unique<sampling_operator>(1); };
  chain_harness first{g, {.credits = 100}};
  REQUIRE(first.plan().vertices.size() == 1);
  CHECK(first.plan().vertices[0].name == "src -> (even -> four, all)");
  first.open();
  first.run_source(2); // rows 0..5
  first.trigger(7);
  REQUIRE(first.snapshots.size() == 1);
  const auto& snap = first.snapshots[0];
  REQUIRE(snap.operators.size() == 4);
  std::vector<std::string> uids, states;
  for (const auto& e : snap.operators) {
    uids.push_back(e.operator_uid);
    states.push_back(e.snapshot.operator_state);
  }
  CHECK(uids == std::vector<std::string>{"src", "even", "four", "all"});
  CHECK(std::vector<std::string>(states.begin() + 1, states.end())
        == std::vector<std::string>{"3", "2", "6"});

  // Restored, each member goes on from its own count: rows 6..8 add 6 8 to
  // even, 8 to four, three rows to all.
  chain_harness second{g, {.credits = 100, .restores = chain_harness::restores_of(snap)}};
  second.open();
  second.run_source(1);
  second.trigger(8);
  REQUIRE(second.snapshots.size() == 1);
  states.clear();
  for (const auto& e : second.snapshots[0].operators)
    states.push_back(e.snapshot.operator_state);
  CHECK(std::vector<std::string>(states.begin() + 1, states.end())
        == std::vector<std::string>{"5", "3", "9"});
}

TEST_CASE("chaining: a member's side output goes over its network edge, its main output to "
          "its chained consumers") {
  // src -> parity -> (x, y) chained; parity's side output (odd values) to
  // a sink over a forward edge, which never chains; x and y to sinks.
  auto g = graph({source(0, "src", 10), node(1, "parity", 1), node(2, "x", 1), node(3, "y", 1),
                  sink(4, "odd_out", 1), sink(5, "x_out", 1), sink(6, "y_out", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::forward),
                  edge(1, 3, partitioning::forward), edge(1, 4, partitioning::forward),
                  edge(2, 5, partitioning::rebalance), edge(3, 6, partitioning::rebalance)});
  g->nodes[1].outputs.push_back({"odd", test_schema(), false});
  g->edges[3].port = 1;
  g->nodes[1].make_operator = [] { return std::make_unique<parity_operator>(); };
  chain_harness h{g};
  REQUIRE(h.plan().vertices[0].name == "src -> parity -> (x, y)");
  h.open();
  h.run_source();
  CHECK(values_of(h.batches(channel_to(h, 4))) == std::vector<std::int64_t>{1, 3, 5, 7, 9});
  CHECK(values_of(h.batches(channel_to(h, 5))) == std::vector<std::int64_t>{0, 2, 4, 6, 8});
  CHECK(values_of(h.batches(channel_to(h, 6))) == std::vector<std::int64_t>{0, 2, 4, 6, 8});
  CHECK(h.metrics().at(2, 0).records_in == 5);
  CHECK(h.metrics().at(3, 0).records_in == 5);
}

TEST_CASE("key-group hash partitioning: each row lands on the subtask owning its key group") {
  const std::size_t p = 4;
  auto g = graph({source(0, "src", 500, 37), sink(1, "out", p)},
                 {edge(0, 1, partitioning::hash, {0})}, 64);
  g->options.max_parallelism = 128;
  chain_harness h{g, {.credits = 1000}};
  h.open();
  h.run_source();
  REQUIRE(h.sent.size() == p);
  std::map<std::string, std::size_t> owner;
  std::size_t total = 0;
  for (std::size_t d = 0; d < p; ++d) {
    CHECK(h.targets[d].subtask == d);
    for (const auto& b : h.batches(d)) {
      for (std::size_t r = 0; r < b->num_rows; ++r) {
        std::string key;
        const std::size_t fields[] = {0};
        encode_key(*b, fields, r, key);
        auto group = assign_key_group(key, 128);
        CHECK(group * p / 128 == d);
        auto [it, fresh] = owner.emplace(std::string{b->columns[0].str(r)}, d);
        CHECK(it->second == d);
        ++total;
      }
    }
  }
  CHECK(total == 500);
  CHECK(owner.size() == 37);
  std::set<std::size_t> used;
  for (const auto& [k, d] : owner)
    used.insert(d);
  CHECK(used.size() == p); // 37 keys spread over all four subtasks
}

TEST_CASE("credits and backlog: no credit queues in order, credit releases, a blocked source stops") {
  auto g = graph({source(0, "src", 12), sink(1, "out", 1)},
                 {edge(0, 1, partitioning::rebalance)});
  chain_harness h{g, {.credits = 1}};
  h.open();
  h.run_source();
  // One batch out on the one credit; the second batch and its watermark wait
  // in the backlog, and the source stopped asking to be polled.
  CHECK(h.trace(0) == "b4 w2");
  CHECK(h.task().outputs().blocked());
  CHECK(h.task().outputs().backlog_size(0) == 2);
  CHECK_FALSE(h.poll_requested);
  h.grant(0);
  CHECK(h.trace(0) == "b4 w2 b4 w6");
  CHECK(h.poll_requested); // unblocked: polling resumes
  h.run_source();
  CHECK(h.trace(0) == "b4 w2 b4 w6");
  CHECK(h.task().outputs().backlog_size(0) == 2); // b4 w10
  CHECK_FALSE(h.poll_requested);
  h.grant(0);
  CHECK(h.trace(0) == "b4 w2 b4 w6 b4 w10");
  h.run_source(); // exhausted: the final watermark and the end need no credit
  CHECK(h.trace(0) == "b4 w2 b4 w6 b4 w10 w9223372036854775807 e");
  CHECK(h.is_finished);
  CHECK(values_of(h.batches(0)).size() == 12);
}

TEST_CASE("credits and backlog: a blocked task keeps its input in an inbox") {
  auto g = graph({source(0, "src", 0), node(1, "n", 1), sink(2, "out", 1)},
                 {edge(0, 1, partitioning::rebalance), edge(1, 2, partitioning::rebalance)});
  chain_harness h{g, {.vertex = vertex_of(*g, 1), .credits = 1}};
  h.open();
  h.batch(0, rows({{"a", 1}}));
  h.batch(0, rows({{"a", 2}, {"b", 3}}));
  h.watermark(0, 5);
  h.batch(0, rows({{"c", 4}}));
  CHECK(h.trace(0) == "b1");
  CHECK(h.credits_returned[0] == 2); // the third batch waits unprocessed
  h.grant(0); // b2 goes out; then the inbox: w5, and the last batch waits
  CHECK(h.trace(0) == "b1 b2 w5");
  CHECK(h.credits_returned[0] == 3);
  CHECK(h.task().outputs().backlog_size(0) == 1);
  h.grant(0);
  CHECK(h.trace(0) == "b1 b2 w5 b1");
}

TEST_CASE("barrier alignment on two inputs with one input ending early") {
  auto g = union_graph(checkpointing_mode::exactly_once);
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  REQUIRE(h.plan().input_channels[vertex_of(*g, 2)] == 2);
  h.open();
  h.batch(0, rows({{"a", 1}}));
  h.barrier(0, 1);
  h.batch(0, rows({{"a", 2}, {"a", 3}})); // after barrier 1: held back
  CHECK(h.trace(0) == "b1");
  CHECK(h.credits_returned[0] == 1);
  h.batch(1, rows({{"b", 1}, {"b", 2}, {"b", 3}})); // before barrier 1: processed
  CHECK(h.trace(0) == "b1 b3");
  CHECK(h.snapshots.empty());
  h.end_of_input(1); // input 1 ends without its barrier: counts as aligned
  REQUIRE(h.snapshots.size() == 1);
  CHECK(h.snapshots[0].checkpoint_id == 1);
  REQUIRE(h.snapshots[0].operators.size() == 1);
  CHECK(h.snapshots[0].operators[0].snapshot.operator_state == "4");
  CHECK(h.trace(0) == "b1 b3 |1 b2"); // the held batch follows the barrier
  CHECK(h.credits_returned[0] == 2);
  h.end_of_input(0);
  CHECK(h.trace(0) == "b1 b3 |1 b2 w9223372036854775807 e");
  CHECK_FALSE(h.is_finished); // the snapshot is still being written
  h.complete_writes();
  CHECK(h.is_finished);
  CHECK(h.declines.empty());
}

TEST_CASE("at least once, barriers are tracked, not aligned: nothing is held") {
  auto g = union_graph(checkpointing_mode::at_least_once);
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  h.open();
  h.barrier(0, 1);
  h.batch(0, rows({{"a", 2}}));
  CHECK(h.trace(0) == "b1");
  h.barrier(1, 1);
  CHECK(h.trace(0) == "b1 |1");
  REQUIRE(h.snapshots.size() == 1);
}

TEST_CASE("the minimum watermark of two inputs with one idle") {
  auto g = union_graph(checkpointing_mode::exactly_once);
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  h.open();
  h.watermark(0, 100);
  CHECK(h.watermarks(0).empty()); // input 1 has no watermark yet
  h.watermark(1, 50);
  CHECK(h.watermarks(0) == std::vector<event_time>{50});
  h.idle(1);
  CHECK(h.watermarks(0) == std::vector<event_time>{50, 100}); // input 1 no longer holds back
  h.watermark(0, 120);
  CHECK(h.watermarks(0) == std::vector<event_time>{50, 100, 120});
  h.idle(0);
  CHECK(h.trace(0) == "w50 w100 w120 i"); // every input idle: the output is idle
  h.watermark(1, 110); // active again, behind the current watermark
  CHECK(h.trace(0) == "w50 w100 w120 i a");
  h.watermark(1, 130);
  CHECK(h.watermarks(0) == std::vector<event_time>{50, 100, 120, 130});
  CHECK(h.metrics().at(2, 0).watermark == 130);
}

TEST_CASE("idleness on the replay clock: a silent partition stops holding back the watermark "
          "once the clock passes the timeout, before the batch that brings it back") {
  using row = scripted_reader::row;
  auto run = [](std::vector<std::vector<row>> script) {
    auto g = graph({source(0, "src", 0), sink(1, "out", 1)},
                   {edge(0, 1, partitioning::rebalance)});
    auto& src = g->nodes[0];
    src.outputs[0].schema = scripted_reader::schema();
    src.partition_field = 0;
    src.processing_time_field = 2;
    src.watermark.idle_timeout = std::chrono::milliseconds{100};
    src.make_source = [script](std::size_t, std::size_t, bad_record_handler) {
      return std::make_unique<scripted_reader>(script);
    };
    chain_harness h{g, {.credits = 100}};
    h.open();
    h.run_source();
    return h.trace(0);
  };
  // (p: the replay clock moving, in-band.) b is silent from processing time
  // 1000; at 1150 (past 1000 + 100) it is idle, so a's watermark (20 - 1 =
  // 19) goes out before the batch in which b comes back; then both count.
  CHECK(run({{{"a", 10, 1000}, {"b", 5, 1000}},
             {{"a", 20, 1090}},
             {{"b", 40, 1150}, {"a", 30, 1150}}})
        == "p b2 w4 p b1 p w19 b2 w29 w9223372036854775807 e");
  // Within the timeout (1100 - 1000 is not past 100) b still holds back.
  CHECK(run({{{"a", 10, 1000}, {"b", 5, 1000}},
             {{"a", 20, 1050}},
             {{"b", 40, 1100}, {"a", 30, 1100}}})
        == "p b2 w4 p b1 p b2 w29 w9223372036854775807 e");
  // Every partition silent past the timeout: the output is idle, then active
  // again with the batch.
  CHECK(run({{{"a", 10, 1000}, {"b", 5, 1000}},
             {{"b", 40, 1500}, {"a", 30, 1500}}})
        == "p b2 w4 p i a b2 w29 w9223372036854775807 e");
}

TEST_CASE("split partitions: a file begun holds the watermark back, a finished one no longer") {
  // A reader of two files read in turn, each a watermark partition.
  class two_files final : public source_reader {
  public:
    const schema_ptr& output_schema() const override { return test_schema(); }
    record_batch_ptr poll_next(std::size_t) override {
      ++step_;
      if (step_ == 1)
        return rows({{"x", 100}});
      if (step_ == 2)
        return rows({{"y", 50}});
      if (step_ == 3)
        return rows({{"x", 200}});
      if (step_ == 4)
        return rows({}); // a.log ends
      return nullptr;
    }
    std::optional<std::string> batch_split() const override {
      return step_ == 2 ? "b.log" : "a.log";
    }
    split_changes take_split_changes() override {
      if (step_ == 1)
        return {{"a.log", "b.log"}, {}};
      if (step_ == 2)
        return {{}, {"b.log"}};
      if (step_ == 4)
        return {{}, {"a.log"}};
      return {};
    }
    std::vector<source_position> positions() const override { return {}; }
    bool has_split_partitions() const override { return step_ > 0; }

  private:
    int step_ = 0;
  };
  auto g = graph({source(0, "src", 0), sink(1, "out", 1)}, {edge(0, 1, partitioning::rebalance)});
  g->nodes[0].make_source = [](std::size_t, std::size_t, bad_record_handler) {
    return std::make_unique<two_files>();
  };
  chain_harness h{g, {.credits = 100}};
  h.open();
  h.run_source();
  // b.log (begun, nothing yet) holds back a.log's 99; once read (49) and
  // finished, a.log alone counts; with no split left the subtask is idle.
  CHECK(h.trace(0) == "b1 b1 w99 b1 w199 i w9223372036854775807 e");
}

TEST_CASE("source positions through snapshot and restore") {
  auto g = graph({source(0, "src", 10), node(1, "count", 1), sink(2, "out", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::rebalance)}, 3);
  g->nodes[0].watermark.max_out_of_orderness = std::chrono::milliseconds{2};
  chain_harness first{g, {.credits = 100}};
  first.open();
  first.run_source(2); // 6 rows
  first.trigger(7, 1234);
  REQUIRE(first.snapshots.size() == 1);
  const auto& snap = first.snapshots[0];
  CHECK(snap.checkpoint_id == 7);
  REQUIRE(snap.operators.size() == 2);
  CHECK(snap.operators[0].operator_uid == "src");
  CHECK(snap.operators[0].source_position == "event 6 of rows");
  CHECK(snap.operators[0].snapshot.operator_state
        == "weir-source-state 2\nposition event 6 rows\nclock 0\nwm 2\np 5 1 \n");
  CHECK(snap.operators[1].snapshot.operator_state == "6");
  CHECK(first.trace(0) == "b3 w-1 b3 w2 |7");

  chain_harness second{g, {.credits = 100, .restores = chain_harness::restores_of(snap)}};
  second.open();
  second.run_source();
  CHECK(values_of(second.batches(0)) == std::vector<std::int64_t>{6, 7, 8, 9});
  // The watermark generator resumed too: no watermark below the last one.
  CHECK(second.trace(0) == "b3 w5 b1 w6 w9223372036854775807 e");
  CHECK(second.metrics().at(1, 0).records_in == 4);

  // The counting operator restored its count: the next snapshot adds to it.
  chain_harness third{g, {.credits = 100, .restores = chain_harness::restores_of(snap)}};
  third.open();
  third.run_source(1);
  third.trigger(8);
  REQUIRE(third.snapshots.size() == 1);
  CHECK(third.snapshots[0].operators[1].snapshot.operator_state == "9");
}

TEST_CASE("source state: version 2 keeps one position per split; version 1 still restores") {
  std::vector<source_position> ps{{"a.log", position_unit::byte_offset, 4096},
                                  {"orders/3", position_unit::partition_offset, 17},
                                  {"with space.log", position_unit::byte_offset, 0}};
  auto text = source_driver::encode_state(ps, 1234, "wm 5\n");
  auto d = source_driver::decode_state(text);
  CHECK(d.version == 2);
  CHECK(d.positions == ps);
  CHECK(d.clock == 1234);
  CHECK(d.watermarks == "wm 5\n");
  CHECK(describe(ps[1]) == "offset 17 of orders/3");

  // Version 1 (unversioned): one bare value, then the clock and watermarks.
  auto v1 = source_driver::decode_state("6\nclock 0\nwm 2\np 5 1 \n");
  CHECK(v1.version == 1);
  REQUIRE(v1.positions.size() == 1);
  CHECK(v1.positions[0].value == 6);
  CHECK(v1.positions[0].split.empty());
  CHECK(v1.watermarks == "wm 2\np 5 1 \n");
  CHECK(source_driver::decode_state("42").positions[0].value == 42);

  // Version 3: finished splits (a directory source's files read to the end).
  std::vector<source_position> ps3{{"d/a.log", position_unit::byte_offset, 100, true},
                                   {"d/b.log", position_unit::byte_offset, 40}};
  auto text3 = source_driver::encode_state(ps3, 0, "wm 5\n");
  CHECK(text3 == "weir-source-state 3\nfinished byte 100 d/a.log\nposition byte 40 d/b.log\n"
                 "clock 0\nwm 5\n");
  auto d3 = source_driver::decode_state(text3);
  CHECK(d3.version == 3);
  CHECK(d3.positions == ps3);
  CHECK(text.starts_with("weir-source-state 2\n")); // nothing finished: still version 2

  // Version 4: a reader's own state (the http source's idempotency keys),
  // any bytes, newlines included.
  const std::string own = "3 40 0 t0-b1\n7 40 2 t1-b0\n";
  auto text4 = source_driver::encode_state({{"", position_unit::event_number, 7}}, 0, "wm 5\n",
                                           own);
  CHECK(text4 == "weir-source-state 4\nposition event 7 \nreader 26\n" + own
                   + "\nclock 0\nwm 5\n");
  auto d4 = source_driver::decode_state(text4);
  CHECK(d4.version == 4);
  CHECK(d4.reader_state == own);
  CHECK(d4.positions[0].value == 7);
  CHECK(d4.watermarks == "wm 5\n");
  CHECK(d3.reader_state.empty());
  CHECK_THROWS_WITH(source_driver::decode_state("weir-source-state 4\nreader 99\nab\n"),
                    "cannot read the source state (format version 4): bad reader state");

  CHECK_THROWS_WITH(source_driver::decode_state("weir-source-state 5\nclock 0\n"),
                    "cannot restore source state of format version 5: this weir reads "
                    "versions 1 to 4");
  CHECK_THROWS_WITH(source_driver::decode_state("x\n"),
                    "cannot read the source state (format version 1): 'x' is not a position");
  CHECK_THROWS_WITH(
    source_driver::decode_state("weir-source-state 2\nposition page 3 a\n"),
    "cannot read the source state (format version 2): bad position line 'page 3 a'");

  // A reader picks its split; a sole entry of another name is taken (a file
  // moved); another unit is refused.
  CHECK(select_position(ps, "orders/3", position_unit::partition_offset) == 17);
  CHECK(select_position({ps[0]}, "b.log", position_unit::byte_offset) == 4096);
  CHECK_THROWS_WITH(select_position(ps, "b.log", position_unit::byte_offset),
                    "the checkpoint has no position for split 'b.log'");
  CHECK_THROWS_WITH(select_position({ps[0]}, "a.log", position_unit::event_number),
                    "the checkpoint's position of split 'a.log' counts bytes, this source "
                    "counts events");
}

TEST_CASE("a source restores from a checkpoint of the unversioned format (version 1)") {
  auto g = graph({source(0, "src", 10), node(1, "count", 1), sink(2, "out", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::rebalance)}, 3);
  g->nodes[0].watermark.max_out_of_orderness = std::chrono::milliseconds{2};
  auto r = std::make_shared<operator_restore>();
  r->operator_states.push_back("6\nclock 0\nwm 2\np 5 1 \n");
  chain_harness h{g, {.credits = 100, .restores = {r, nullptr}}};
  h.open();
  h.run_source();
  CHECK(values_of(h.batches(0)) == std::vector<std::int64_t>{6, 7, 8, 9});
  CHECK(h.trace(0) == "b3 w5 b1 w6 w9223372036854775807 e");

  auto bad = std::make_shared<operator_restore>();
  bad->operator_states.push_back("weir-source-state 9\n");
  chain_harness f{g, {.restores = {bad, nullptr}}};
  CHECK_THROWS_WITH(f.open(), "cannot restore source state of format version 9: this weir "
                              "reads versions 1 to 4");
}

TEST_CASE("a finished source leaves its final positions for later checkpoints (FLIP-147); "
          "a failure names the chain member") {
  auto g = graph({source(0, "src", 2), node(1, "boom", 1), sink(2, "out", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::rebalance)});
  g->options.checkpoint.enabled = true;
  chain_harness h{g};
  h.open();
  h.run_source();
  CHECK(h.is_finished);
  // Right before it finished: the source's state, and nothing for 'boom'.
  REQUIRE(h.final_states.size() == 1);
  REQUIRE(h.final_states[0].operators.size() == 1);
  CHECK(h.final_states[0].operators[0].operator_uid == "src");
  CHECK(h.final_states[0].operators[0].source_position.find("2") != std::string::npos);
  // A trigger that reaches it afterwards is answered by that final state:
  // no snapshot, no decline.
  h.trigger(3);
  CHECK(h.declines.empty());
  CHECK(h.snapshots.empty());

  struct failing final : stream_operator {
    void process_batch(const record_batch_ptr&, output_collector&) override {
      throw std::runtime_error("no");
    }
  };
  g->nodes[1].make_operator = [] { return std::make_unique<failing>(); };
  chain_harness f{g};
  f.open();
  try {
    f.run_source();
    FAIL("no exception");
  } catch (const std::exception& e) {
    CHECK(f.task().failure_message(e.what()) == "operator 'boom' (test) subtask 0/1 failed: no");
  }
}

/// A two-phase-commit sink that records its calls.
struct two_phase_recorder final : stream_operator {
  void process_batch(const record_batch_ptr&, output_collector&) override {}
  void snapshot_state(std::uint64_t id, operator_snapshot& out) override {
    log() += "snapshot " + std::to_string(id) + ", ";
    out.operator_state = "pre-committed " + std::to_string(id);
  }
  void notify_checkpoint_complete(std::uint64_t id) override {
    log() += "commit " + std::to_string(id) + ", ";
  }
  void finish(output_collector&) override { log() += "finish, "; }
  bool is_two_phase_commit() const override { return true; }
  void abort_transactions(std::uint64_t keep) override {
    log() += "abort after " + std::to_string(keep) + ", ";
  }
  static std::string& log() {
    static std::string s;
    return s;
  }
};

TEST_CASE("a two-phase-commit sink commits the end of its input only when a checkpoint "
          "holding its final snapshot completes (FLIP-147)") {
  auto g = graph({source(0, "src", 8), sink(1, "tpc", 1)}, {edge(0, 1, partitioning::forward)});
  g->options.checkpoint.enabled = true;
  g->nodes[1].make_operator = [] { return std::make_unique<two_phase_recorder>(); };
  auto& log = two_phase_recorder::log();
  log.clear();
  chain_harness h{g};
  h.open();
  h.run_source(1);
  h.trigger(1);
  h.run_source(); // to the end of the input
  CHECK(log == "snapshot 1, finish, ");
  h.complete_writes();
  // Checkpoint 1 is neither complete nor aborted: no final snapshot yet.
  CHECK(h.final_states.empty());
  h.notify_complete(1);
  CHECK(log == "snapshot 1, finish, commit 1, snapshot 2, ");
  REQUIRE(h.final_states.size() == 1);
  REQUIRE(h.final_states[0].operators.size() == 2);
  CHECK(h.final_states[0].operators[0].operator_uid == "src");
  CHECK(h.final_states[0].operators[1].operator_uid == "tpc");
  CHECK(h.final_states[0].operators[1].snapshot.operator_state == "pre-committed 2");
  // It stays until a checkpoint holding that state completes.
  CHECK_FALSE(h.is_finished);
  h.cancel(2);
  CHECK_FALSE(h.is_finished);
  h.notify_complete(3);
  CHECK(log == "snapshot 1, finish, commit 1, snapshot 2, commit 3, ");
  CHECK(h.is_finished);

  // A job that fails before: the job manager's abort reaches the sink.
  log.clear();
  chain_harness f{g};
  f.open();
  f.run_source();
  CHECK(f.final_states.size() == 1);
  CHECK_FALSE(f.is_finished);
  f.task().on_abort_transactions(0);
  CHECK(log == "finish, snapshot 1, abort after 0, ");
  CHECK_FALSE(f.is_finished);
}

/// Forwards batches; records whether it was finished or stopped.
struct end_recorder final : stream_operator {
  void process_batch(const record_batch_ptr& batch, output_collector& out) override {
    out.collect(batch);
  }
  void finish(output_collector&) override { log() += "finish "; }
  void stop(output_collector&) override { log() += "stop "; }
  static std::string& log() {
    static std::string s;
    return s;
  }
};

TEST_CASE("stop: a stopped source stops its chain and ends its output without a final watermark") {
  auto g = graph({source(0, "src", 100), node(1, "rec", 1), sink(2, "out", 1)},
                 {edge(0, 1, partitioning::forward), edge(1, 2, partitioning::rebalance)});
  g->nodes[1].make_operator = [] { return std::make_unique<end_recorder>(); };
  end_recorder::log().clear();
  chain_harness h{g};
  h.open();
  CHECK(h.run_source(3) == 3);
  h.stop();
  CHECK(h.trace(0) == "b4 w2 b4 w6 b4 w10 s"); // no w+inf before the end
  CHECK(end_recorder::log() == "stop ");
  CHECK(h.is_finished);
  CHECK(h.run_source() <= 1); // a poll already asked for reads nothing
  CHECK(h.batches(0).size() == 3);
  h.stop(); // a second stop does nothing
  CHECK(h.trace(0) == "b4 w2 b4 w6 b4 w10 s");
}

TEST_CASE("stop: a stopped input holds its watermark; the task stops, not finishes") {
  auto g = union_graph(checkpointing_mode::exactly_once);
  g->nodes[2].make_operator = [] { return std::make_unique<end_recorder>(); };
  end_recorder::log().clear();
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  h.open();
  h.watermark(0, 100);
  h.watermark(1, 50);
  h.stopped(1); // input 1 stays at 50: no window may fire up to 100
  h.watermark(0, 200);
  CHECK(h.watermarks(0) == std::vector<event_time>{50});
  CHECK_FALSE(h.is_finished);
  h.stopped(0);
  CHECK(h.trace(0) == "w50 s");
  CHECK(end_recorder::log() == "stop ");
  CHECK(h.is_finished);

  // One input drained, the other stopped: still a stop.
  end_recorder::log().clear();
  chain_harness m{g, {.vertex = vertex_of(*g, 2)}};
  m.open();
  m.watermark(0, 10);
  m.end_of_input(0);
  m.stopped(1);
  CHECK(m.trace(0) == "s");
  CHECK(end_recorder::log() == "stop ");
}

TEST_CASE("stop: with checkpoints a stopped subtask finishes once its final checkpoint is done") {
  auto g = union_graph(checkpointing_mode::exactly_once);
  g->options.checkpoint.enabled = true;
  for (auto resolve : {"notify", "cancel"}) {
    CAPTURE(resolve);
    chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
    h.open();
    h.barrier(0, 7);
    h.barrier(1, 7);
    REQUIRE(h.snapshots.size() == 1);
    h.complete_writes();
    h.stopped(0);
    h.stopped(1);
    CHECK(h.trace(0) == "|7 s");
    CHECK_FALSE(h.is_finished); // its sinks commit on the notification
    if (std::string{resolve} == "notify") {
      h.notify_complete(6); // an older one
      CHECK_FALSE(h.is_finished);
      h.notify_complete(7);
    } else {
      h.cancel(7);
    }
    CHECK(h.is_finished);
  }

  // The source takes the final checkpoint, then stops.
  auto s = graph({source(0, "src", 100), sink(1, "out", 1)},
                 {edge(0, 1, partitioning::rebalance)});
  s->options.checkpoint.enabled = true;
  chain_harness src{s};
  src.open();
  src.run_source(2);
  src.stop(9, 1234);
  CHECK(src.trace(0) == "b4 w2 b4 w6 |9 s");
  REQUIRE(src.snapshots.size() == 1);
  CHECK(src.snapshots[0].checkpoint_id == 9);
  src.complete_writes();
  CHECK_FALSE(src.is_finished);
  src.notify_complete(9);
  CHECK(src.is_finished);
}

TEST_CASE("two inputs: a two-input node is not chained; its channels know their input") {
  auto g = two_input_graph();
  auto plan = build_execution_plan(*g);
  auto v = plan.vertex_of_node[2];
  CHECK(plan.vertices[v].name == "co -> out"); // its forward output chains
  CHECK(plan.channel_input[v] == std::vector<std::size_t>{0, 1});
  CHECK_FALSE(plan.edge_is_chained[0]);
  CHECK_FALSE(plan.edge_is_chained[1]);
}

TEST_CASE("two inputs: each keyed by its own field into the same key groups") {
  auto g = two_input_graph(200, 200);
  std::map<std::string, std::size_t> owner_a, owner_b;
  for (std::size_t n : {0u, 1u}) {
    chain_harness h{g, {.vertex = vertex_of(*g, n), .credits = 1000}};
    h.open();
    h.run_source();
    REQUIRE(h.sent.size() == 2);
    for (std::size_t d = 0; d < 2; ++d)
      for (const auto& b : h.batches(d))
        for (std::size_t r = 0; r < b->num_rows; ++r)
          (n == 0 ? owner_a : owner_b)[std::string{b->columns[n == 0 ? 0 : 1].str(r)}] = d;
  }
  CHECK(owner_a.size() == 5);
  CHECK(owner_a == owner_b); // a key goes to one subtask from either input
}

TEST_CASE("two inputs: the operator's watermark is the minimum of its inputs', an idle one aside") {
  auto g = two_input_graph();
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  h.open();
  REQUIRE(h.sent.size() == 0); // co -> out is one chain: out is a sink
  auto& m = h.metrics().at(2, 0);
  h.watermark(0, 100);
  CHECK(m.watermark == min_watermark); // input 2 has none yet
  h.watermark(1, 50);
  CHECK(m.watermark == 50);
  h.watermark(1, 200);
  CHECK(m.watermark == 100);
  CHECK(h.metrics().at(3, 0).watermark == 100); // forwarded to the chained sink
  h.idle(0);
  CHECK(m.watermark == 200); // an idle input does not hold back the minimum
  h.watermark(0, 150); // active again, behind the combined watermark
  CHECK(m.watermark == 200);
  h.watermark(1, 300);
  CHECK(m.watermark == 200);
  h.watermark(0, 400);
  CHECK(m.watermark == 300);
  h.end_of_input(1); // input 2 ends: only input 1 counts
  CHECK(m.watermark == 400);
}

TEST_CASE("two inputs: barriers align across both inputs, one ending early") {
  auto g = two_input_graph();
  chain_harness h{g, {.vertex = vertex_of(*g, 2)}};
  h.open();
  // Keys k0..k4 of subtask 0 only (the operator checks ownership).
  std::vector<std::string> mine;
  for (int i = 0; i < 40 && mine.size() < 2; ++i) {
    auto k = "k" + std::to_string(i);
    std::string enc = "s";
    auto len = static_cast<std::uint32_t>(k.size());
    enc.append(reinterpret_cast<const char*>(&len), 4);
    enc += k;
    if (operator_index_for_key_group(assign_key_group(enc, 128), 128, 2) == 0)
      mine.push_back(k);
  }
  REQUIRE(mine.size() == 2);
  h.batch(0, rows({{mine[0], 1}}));
  h.barrier(1, 4);
  h.batch(1, swapped_rows({{mine[1], 2}})); // after barrier 4 on input 2: held
  h.batch(0, rows({{mine[1], 3}, {mine[0], 4}}));
  CHECK(h.snapshots.empty());
  CHECK(h.credits_returned == std::vector<std::size_t>{2, 0});
  h.barrier(0, 4);
  REQUIRE(h.snapshots.size() == 1);
  CHECK(h.snapshots[0].operators[0].snapshot.operator_state == "3/0");
  CHECK(h.credits_returned == std::vector<std::size_t>{2, 1}); // released after the snapshot
  // Checkpoint 5: input 1 ends before its barrier; that counts as aligned.
  h.barrier(1, 5);
  h.batch(1, swapped_rows({{mine[0], 5}}));
  CHECK(h.snapshots.size() == 1);
  h.end_of_input(0);
  REQUIRE(h.snapshots.size() == 2);
  CHECK(h.snapshots[1].operators[0].snapshot.operator_state == "3/1");
  CHECK(h.credits_returned == std::vector<std::size_t>{2, 2});
  h.end_of_input(1);
  h.complete_writes();
  CHECK(h.is_finished);
  CHECK(h.metrics().at(3, 0).records_in == 5);
}

} // TEST_SUITE
