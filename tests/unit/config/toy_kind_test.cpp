// SPDX-License-Identifier: Apache-2.0
// A kind added through the registry, in this test only, without touching the
// loader: its keys are checked (unknown key with a did-you-mean from its key
// table, a misplaced key named as another kind's), it appears in the key
// catalogue, and its plan hook builds a node through the public API.
#include "config/kind.hpp"

#include "weir/api/job.hpp"
#include "weir/config/loader.hpp"
#include "weir/operators/two_input_stream_operator.hpp"
#include "weir/runtime/job_graph.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

namespace {

using namespace weir::config;

/// `type = "toy_scale"`: multiplies an int64 field by `factor` (through the
/// API's map), keeping the other fields.
struct toy_spec : kind_spec {
  located field;
  std::int64_t factor = 1;
};

kind_descriptor toy_kind() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "toy_scale";
  d.keys = {
    {"field", "string", true, "", "the int64 field to scale"},
    {"factor", "integer", false, "1", "what it is multiplied by"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<toy_spec>();
    if (auto f = c.hard.string("field", true, true))
      s->field = *f;
    if (auto v = c.soft.integer("factor", 1, 1000))
      s->factor = *v;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<toy_spec>(ks);
    auto r = c.inputs.front().map(
      {{s.field.value, s.field.value + " * " + std::to_string(s.factor)}}, c.options);
    if (!r)
      c.report_api(s.field.node, "field", r.error());
  };
  return d;
}

/// Registers the toy kind for one test case (other tests in this binary
/// see only the real kinds: their hints list the types).
struct scoped_toy_kind {
  scoped_toy_kind() { kind_registry::instance().add(toy_kind()); }
  ~scoped_toy_kind() { kind_registry::instance().remove(kind_category::operator_, "toy_scale"); }
};

std::string input_file() {
  auto path = std::filesystem::temp_directory_path() / "weir_toy_kind_input.jsonl";
  std::ofstream(path) << "{\"id\": 1, \"name\": \"a\"}\n";
  return path.string();
}

const std::string head = R"~([[source]]
name = "in"
type = "file"
path = ")~" + input_file() + R"~("
format = "jsonl"
schema = { id = "int64", name = "string" }

)~";

const std::string tail = R"~(
[[sink]]
name = "out"
input = "scaled"
type = "stdout"
)~";

/// `type = "toy_pair"`: a two-input kind (as a join is), keyed on each
/// input by its own field, that passes input 1's rows on and counts input
/// 2's. It reads `inputs = ["first", "second"]` through the loader's generic
/// input handling, and plans through `data_stream::connect`.
struct toy_pair_spec : kind_spec {
  located first_key;
  located second_key;
};

class toy_pair_operator final : public weir::two_input_stream_operator {
public:
  void process_batch1(const weir::record_batch_ptr& batch, weir::output_collector& out) override {
    out.collect(batch);
  }
  void process_batch2(const weir::record_batch_ptr& batch, weir::output_collector&) override {
    seen_ += batch->num_rows;
  }

private:
  std::size_t seen_ = 0;
};

kind_descriptor toy_pair_kind() {
  kind_descriptor d;
  d.category = kind_category::operator_;
  d.type = "toy_pair";
  d.min_inputs = 2;
  d.max_inputs = 2;
  d.keys = {
    {"first_key", "string", true, "", "the key field of input 1"},
    {"second_key", "string", true, "", "the key field of input 2"},
  };
  d.parse = [](parse_context& c) {
    auto s = std::make_unique<toy_pair_spec>();
    if (auto f = c.hard.string("first_key", true, true))
      s->first_key = *f;
    if (auto f = c.hard.string("second_key", true, true))
      s->second_key = *f;
    return s;
  };
  d.plan = [](plan_context& c, const kind_spec& ks) {
    const auto& s = spec_cast<toy_pair_spec>(ks);
    auto keyed = c.inputs[0].connect(c.inputs[1]).key_by({s.first_key.value},
                                                           {s.second_key.value});
    if (!keyed) {
      c.report_api(s.first_key.node, "first_key", keyed.error());
      return;
    }
    auto r = keyed->transform(
      "toy_pair", c.inputs[0].output_schema(),
      [] { return std::make_unique<toy_pair_operator>(); }, c.options);
    if (!r)
      c.report_api(nullptr, "", r.error());
  };
  return d;
}

struct scoped_toy_pair_kind {
  scoped_toy_pair_kind() { kind_registry::instance().add(toy_pair_kind()); }
  ~scoped_toy_pair_kind() {
    kind_registry::instance().remove(kind_category::operator_, "toy_pair");
  }
};

const std::string two_sources = head + R"~([[source]]
name = "other"
type = "file"
path = ")~" + input_file() + R"~("
format = "jsonl"
schema = { id = "int64", name = "string" }

)~";

} // namespace

TEST_SUITE("config") {

TEST_CASE("a kind registered outside the loader is loaded, checked and planned") {
  scoped_toy_kind toy;
  auto r = load_pipeline(head + R"~([[operator]]
name = "scaled"
type = "toy_scale"
input = "in"
field = "id"
factor = 3
)~" + tail, "toy.toml");
  REQUIRE_MESSAGE(r, (r ? "" : to_string(r.error())));
  const auto& nodes = (*r)->graph()->nodes;
  auto it = std::find_if(nodes.begin(), nodes.end(),
                         [](const auto& n) { return n.name == "scaled"; });
  REQUIRE(it != nodes.end());
  auto schema = (*r)->stream("scaled")->output_schema();
  CHECK(schema->to_string() == (*r)->stream("in")->output_schema()->to_string());
}

TEST_CASE("a registered kind's keys give did-you-mean hints and misplaced-key notes") {
  scoped_toy_kind toy;
  auto r = load_pipeline(head + R"~([[operator]]
name = "scaled"
type = "toy_scale"
input = "in"
field = "id"
factr = 3
where = "id > 1"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(r);
  CHECK(to_string(r.error()) ==
        "toy.toml:13:1: error: unknown key 'factr'\n"
        "  in [[operator]] #1 (name = \"scaled\")\n"
        "  hint: did you mean 'factor'?\n"
        "toy.toml:14:1: error: 'where' does not apply to a toy_scale operator\n"
        "  in [[operator]] #1 (name = \"scaled\")\n"
        "  hint: 'where' is a key of filter operators\n");
}

TEST_CASE("a registered kind's type and keys are in the type hints and the catalogue") {
  scoped_toy_kind toy;
  auto r = load_pipeline(head + R"~([[operator]]
name = "scaled"
type = "toy_scal"
input = "in"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(r);
  const auto text = to_string(r.error());
  CHECK(text.find("hint: did you mean \"toy_scale\"?") != std::string::npos);
  CHECK(text.find("\"pattern\", \"toy_scale\"") != std::string::npos);
  const auto& keys = known_keys();
  CHECK(std::find(keys.begin(), keys.end(), "operator[].factor") != keys.end());
}

TEST_CASE("a registered kind's plan errors point into its keys") {
  scoped_toy_kind toy;
  auto r = load_pipeline(head + R"~([[operator]]
name = "scaled"
type = "toy_scale"
input = "in"
field = "name"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(r);
  const auto text = to_string(r.error());
  INFO(text);
  CHECK(text.rfind("toy.toml:12:9: error: field: ", 0) == 0);
}

} // TEST_SUITE

TEST_SUITE("config") {

TEST_CASE("every kind's key table gives each key a type and a one-line doc, parents first") {
  const auto& reg = kind_registry::instance();
  for (auto c : {kind_category::source, kind_category::operator_, kind_category::sink}) {
    for (const auto* k : reg.kinds(c)) {
      std::vector<std::string> seen;
      for (const auto& key : k->keys) {
        INFO(std::string(category_name(c)) << " " << k->type << ": " << key.name);
        CHECK_FALSE(key.type.empty());
        CHECK_FALSE(key.doc.empty());
        CHECK(key.doc.find('\n') == std::string::npos);
        CHECK_FALSE((key.required && !key.default_value.empty()));
        if (auto dot = key.name.rfind('.'); dot != std::string::npos) {
          // The keys of an array of tables' entries ("steps[].name") are
          // children of the array ("steps").
          auto parent = key.name.substr(0, dot);
          if (parent.ends_with("[]"))
            parent.resize(parent.size() - 2);
          CHECK(std::find(seen.begin(), seen.end(), parent) != seen.end());
        }
        CHECK(std::find(seen.begin(), seen.end(), key.name) == seen.end());
        seen.push_back(key.name);
      }
      if (k->available) {
        CHECK(static_cast<bool>(k->parse));
        CHECK(static_cast<bool>(k->plan));
      }
    }
  }
}

TEST_CASE("a registered two-input kind reads inputs = [first, second], each keyed by its own field") {
  scoped_toy_pair_kind toy;
  auto r = load_pipeline(two_sources + R"~([[operator]]
name = "scaled"
type = "toy_pair"
inputs = ["in", "other"]
first_key = "id"
second_key = "id"
parallelism = 2
)~" + tail, "toy.toml");
  REQUIRE_MESSAGE(r, (r ? "" : to_string(r.error())));
  const auto& g = *(*r)->graph();
  auto it = std::find_if(g.nodes.begin(), g.nodes.end(),
                         [](const auto& n) { return n.name == "scaled"; });
  REQUIRE(it != g.nodes.end());
  CHECK(it->num_inputs == 2);
  std::vector<std::size_t> inputs_seen;
  for (const auto& e : g.edges) {
    if (e.target != it->id)
      continue;
    inputs_seen.push_back(e.target_input);
    CHECK(e.mode == weir::runtime::partitioning::hash);
    CHECK(e.key_fields == std::vector<std::size_t>{0});
    // Input 1 comes from "in", input 2 from "other", in the order listed.
    CHECK(g.nodes[e.source].name == (e.target_input == 0 ? "in" : "other"));
  }
  std::sort(inputs_seen.begin(), inputs_seen.end());
  CHECK(inputs_seen == std::vector<std::size_t>{0, 1});
}

TEST_CASE("a two-input kind given one or three inputs is refused at the inputs key") {
  scoped_toy_pair_kind toy;
  auto one = load_pipeline(two_sources + R"~([[operator]]
name = "scaled"
type = "toy_pair"
inputs = ["in"]
first_key = "id"
second_key = "id"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(one);
  CHECK(to_string(one.error()) ==
        "toy.toml:18:10: error: inputs must list at least 2 names, got 1\n"
        "  in [[operator]] #1 (name = \"scaled\")\n");
  auto three = load_pipeline(two_sources + R"~([[operator]]
name = "scaled"
type = "toy_pair"
inputs = ["in", "other", "in"]
first_key = "id"
second_key = "id"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(three);
  CHECK(to_string(three.error()) ==
        "toy.toml:18:10: error: inputs must list at most 2 names, got 3\n"
        "  in [[operator]] #1 (name = \"scaled\")\n");
}

TEST_CASE("a two-input kind's key mismatch is reported at its key") {
  scoped_toy_pair_kind toy;
  auto r = load_pipeline(two_sources + R"~([[operator]]
name = "scaled"
type = "toy_pair"
inputs = ["in", "other"]
first_key = "id"
second_key = "name"
)~" + tail, "toy.toml");
  REQUIRE_FALSE(r);
  const auto text = to_string(r.error());
  INFO(text);
  CHECK(text.rfind("toy.toml:19:13: error: first_key: ", 0) == 0);
}

} // TEST_SUITE
