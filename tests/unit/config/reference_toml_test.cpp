// SPDX-License-Identifier: Apache-2.0
#include "weir/config/loader.hpp"

#include "weir/runtime/job_graph.hpp"
#include "source_dir.hpp"

#include <doctest/doctest.h>
#include <toml++/toml.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <string_view>

namespace {

constexpr const char* reference_path = "config/reference.toml";

std::string read_reference() {
  std::filesystem::current_path(weir::test::source_dir());
  std::ifstream in(reference_path);
  REQUIRE(in);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

bool is_array_of_tables_name(std::string_view name) {
  return name == "source" || name == "operator" || name == "sink";
}

/// Adds every key path under `t` in known_keys() form ("source[].csv.header").
void collect(const toml::table& t, const std::string& prefix, std::set<std::string>& out) {
  for (auto&& [k, v] : t) {
    std::string path = prefix + std::string(k.str());
    out.insert(path);
    if (auto* sub = v.as_table()) {
      collect(*sub, path + ".", out);
    } else if (auto* arr = v.as_array(); arr && arr->is_array_of_tables()) {
      for (const auto& e : *arr)
        collect(*e.as_table(), path + "[].", out);
    }
  }
}

/// The known_keys() prefix of a table header: "[[source]]" -> "source[].",
/// "[operator.window]" -> "operator[].window.".
std::string prefix_of_header(std::string_view line) {
  auto end = line.find(']');
  auto name = line.substr(0, end);
  while (!name.empty() && name.front() == '[')
    name.remove_prefix(1);
  name = trim(name);
  std::string out;
  std::size_t start = 0;
  bool first = true;
  while (start <= name.size()) {
    auto dot = name.find('.', start);
    auto part = name.substr(start, dot == std::string_view::npos ? dot : dot - start);
    out += std::string(trim(part));
    if (first && is_array_of_tables_name(trim(part)))
      out += "[]";
    out += '.';
    first = false;
    if (dot == std::string_view::npos)
      break;
    start = dot + 1;
  }
  return out;
}

/// True for a comment line that holds a commented-out key: `# key = value`.
bool is_commented_key(std::string_view body) {
  std::size_t i = 0;
  if (i >= body.size() || !(std::isalpha(static_cast<unsigned char>(body[i])) || body[i] == '_'))
    return false;
  while (i < body.size() &&
         (std::isalnum(static_cast<unsigned char>(body[i])) || body[i] == '_'))
    ++i;
  while (i < body.size() && body[i] == ' ')
    ++i;
  return i < body.size() && body[i] == '=';
}

/// Every key path of the reference: the live ones, and those of commented
/// `# key = value` lines, placed under the table header they follow.
std::set<std::string> documented_keys(const std::string& text) {
  std::set<std::string> out;
  auto root = toml::parse(std::string_view{text}, std::string_view{reference_path});
  collect(root, "", out);

  std::istringstream lines(text);
  std::string line;
  std::string prefix;
  int number = 0;
  while (std::getline(lines, line)) {
    ++number;
    auto t = trim(line);
    if (t.empty())
      continue;
    if (t.front() == '[') {
      prefix = prefix_of_header(t);
      continue;
    }
    if (t.front() != '#')
      continue;
    auto body = trim(t.substr(1));
    if (!is_commented_key(body))
      continue;
    try {
      auto commented = toml::parse(body);
      collect(commented, prefix, out);
    } catch (const toml::parse_error& e) {
      FAIL_CHECK("line " << number << ": the commented key is not valid TOML: "
                         << e.description());
    }
  }
  return out;
}

} // namespace

TEST_SUITE("config") {

TEST_CASE("config/reference.toml loads without a diagnostic") {
  std::filesystem::current_path(weir::test::source_dir());
  auto r = weir::config::load_pipeline_file(reference_path);
  REQUIRE_MESSAGE(r, (r ? "" : weir::config::to_string(r.error())));
  const auto& j = **r;
  CHECK(j.options().name == "reference");
  for (const char* name : {"readings", "replay", "all_readings", "positive", "enriched",
                           "projected", "per_key", "per_key_late", "readings_per_key"})
    CHECK_MESSAGE(j.stream(name), name);
  std::multiset<std::string> kinds;
  for (const auto& n : j.graph()->nodes)
    kinds.insert(n.kind);
  CHECK(kinds == std::multiset<std::string>{"file_source", "file_source", "generator_source",
                                            "nexmark_source", "union", "count", "split", "filter", "map",
                                            "select", "window", "interval_join", "window_join",
                                            "file_sink", "stdout_sink",
                                            "summary_sink", "blackhole_sink",
                                            "blackhole_sink"});
}

TEST_CASE("config/reference.toml documents every key the loader accepts") {
  auto documented = documented_keys(read_reference());
  for (const auto& key : weir::config::known_keys())
    CHECK_MESSAGE(documented.count(key) == 1, "not in config/reference.toml: " << key);
}

// config/reference.toml documents every connector's keys: the check needs them
// all built (WEIR_WITH_KAFKA, _REDIS, _POSTGRES, _HTTP).
#if defined(WEIR_HAVE_KAFKA) && defined(WEIR_HAVE_REDIS) && defined(WEIR_HAVE_POSTGRES) && \
  defined(WEIR_HAVE_HTTP)
TEST_CASE("config/reference.toml documents no key the loader rejects") {
  auto documented = documented_keys(read_reference());
  const auto& known = weir::config::known_keys();
  for (const auto& key : documented) {
    // Tables whose keys the user names: fields, aggregates, schema fields.
    bool user_named = false;
    for (std::string_view p : {"source[].schema.", "source[].fields.", "source[].properties.",
                               "operator[].fields.", "operator[].aggregate.", "operator[].select.",
                               "sink[].aggregate.",
                               "sink[].properties.", "sink[].headers.", "sink[].columns."})
      user_named = user_named || key.rfind(p, 0) == 0;
    if (user_named || key == "job" || key == "source" || key == "operator" || key == "sink")
      continue;
    CHECK_MESSAGE(std::find(known.begin(), known.end(), key) != known.end(),
                  "not a known key: " << key);
  }
}
#endif

TEST_CASE("the completeness check sees commented keys under their table") {
  CHECK(prefix_of_header("[[source]]") == "source[].");
  CHECK(prefix_of_header("[operator.window]   # comment") == "operator[].window.");
  CHECK(prefix_of_header("[job]") == "job.");
  CHECK(is_commented_key("csv = { header = true }"));
  CHECK_FALSE(is_commented_key("Durations are strings: \"5m\" = five minutes"));
  CHECK_FALSE(is_commented_key("integer >= 1"));
}
}
