// SPDX-License-Identifier: Apache-2.0
#pragma once
// The kind interface and the registry (docs/internals/architecture.md,
// "Kinds and the registry").
//
// A kind is a source, operator or sink type ("file", "filter", "window", ...).
// Each lives in its own folder under src/kinds/<category>/<type>/ (or
// bench/kinds/ for the benchmark generators) and describes itself with one
// `kind_descriptor`: its key table, how many inputs it reads, a parse hook
// that reads its keys through the positioned `reader` into its typed spec,
// and a plan hook that builds its node through the public C++ API. The
// loader (src/config/loader.cpp) knows only what is common to every kind:
// [job], [checkpoint], `name`, `type`, `input`/`inputs`, `parallelism`, the
// graph and diagnostics; the key catalogue, the did-you-mean candidates and
// the reference.toml completeness check derive from the key tables here.

#include "reader.hpp"

#include "weir/core/schema.hpp"

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace weir {
class job;
class data_stream;
struct operator_options;
} // namespace weir

namespace weir::config {

/// Key groups at most (job.max_parallelism and any parallelism).
constexpr std::int64_t max_key_groups = 32768;

enum class kind_category { source, operator_, sink };

/// "source", "operator", "sink": the table name in TOML ([[operator]]).
std::string_view category_name(kind_category c) noexcept;

/// One key of a kind's table. Nested keys are written with a dot
/// ("window.size"); a table-valued key is listed itself ("window") and then
/// each of its keys.
struct key_spec {
  std::string name;
  std::string type;          ///< "string", "duration", "table", "array of strings", ...
  bool required = false;
  std::string default_value; ///< as written in TOML; empty: none
  std::string doc;           ///< one line
};

/// A kind's typed spec, as its parse hook read it; owned by the loader and
/// handed back to the kind's plan hook.
struct kind_spec {
  virtual ~kind_spec() = default;
  /// Stream names this element defines besides its own (a window's
  /// `late_output`), with their nodes for diagnostics.
  virtual std::vector<located> side_outputs() const { return {}; }
};

/// What a parse hook gets. `hard` problems change what the element produces:
/// it is not built. `soft` problems (presentation keys, durations) are
/// reported but the element is still built, so that its dependents are
/// checked too.
struct kind_descriptor;

struct parse_context {
  const kind_descriptor& kind;
  reader& hard;
  reader& soft;
  /// False when the element's type was unknown and this kind reads its keys
  /// as a stand-in (a source of unknown type is read as a file source, its
  /// keys not required): required keys are then not reported missing.
  bool keys_required = true;
  std::size_t max_parallelism = 128; ///< job.max_parallelism
  /// The job has a [checkpoint] section (a file sink then writes a
  /// directory of committed parts).
  bool checkpointing = false;
  /// Whether paths the job writes are checked now (output_path.hpp):
  /// `load_options::check_paths`.
  bool check_paths = true;

  /// The keys of the kind's key table directly under `table` ("watermark"):
  /// what a sub-table accepts.
  key_list children(std::string_view table) const;
};

/// What a plan hook gets: where to build and how to report.
class plan_context {
public:
  plan_context(job& j, const std::vector<data_stream>& ins, const operator_options& opts,
               const toml::table& t, const std::vector<std::string>& notes,
               diagnostics& diags, bool& ok)
    : target(j), inputs(ins), options(opts), table(t), notes_(notes), diags_(diags),
      ok_(ok) {}

  job& target;                            ///< sources add themselves here
  const std::vector<data_stream>& inputs; ///< operators and sinks: the resolved inputs
  const operator_options& options;        ///< name; parallelism (0 = the job's)
  const toml::table& table;               ///< the element's table

  /// Reports an error the API returned, at `at` (inside it at the error's
  /// offset when `at` is a one-line string) or at the element's table, its
  /// message prefixed with "key: " unless `key` is empty.
  void report_api(const toml::node* at, std::string_view key, const error& err);

  /// Reports each of `names` that is not a field of `in` ("key: unknown
  /// field ..." with a did-you-mean); false if any.
  bool check_fields_exist(const schema& in, const std::vector<located>& names,
                          std::string_view key);

  diagnostics& diags() noexcept { return diags_; }
  const std::vector<std::string>& notes() const noexcept { return notes_; }

private:
  const std::vector<std::string>& notes_;
  diagnostics& diags_;
  bool& ok_;
};

/// A diagnostic for a key that is not valid here: message and notes.
using misplaced_note = std::pair<std::string, std::vector<std::string>>;

/// Everything the loader, the catalogue and the reference check need of a kind.
struct kind_descriptor {
  kind_category category = kind_category::operator_;
  std::string type;          ///< the `type = "..."` value
  std::vector<key_spec> keys; ///< the kind's own keys (not name/type/input/parallelism)
  /// Inputs an operator or sink reads: one reads `input = "a"`; a kind that
  /// may read more (union) reads `inputs = ["a", "b"]`. Sources read none.
  std::size_t min_inputs = 1;
  std::size_t max_inputs = 1;
  /// False for a kind that is planned but not there yet ("kafka"): its type
  /// is answered with "not supported yet".
  bool available = true;
  /// Non-empty for a kind left out of this build (its library was not
  /// found or its WEIR_WITH_* option is OFF; `available` is false): how to
  /// build it, e.g. "-DWEIR_WITH_KAFKA=ON and librdkafka-dev installed". A
  /// config naming it fails at its type: `source kind "kafka" was not built
  /// into this weir (configure with <not_built>)`.
  std::string not_built;
  /// Reads the kind's keys (the loader has read the common ones and checked
  /// for unknown keys). Null only when `available` is false.
  std::function<std::unique_ptr<kind_spec>(parse_context&)> parse;
  /// Builds the element through the public API; reports what the API
  /// refuses through `plan_context::report_api`.
  std::function<void(plan_context&, const kind_spec&)> plan;
  /// Optional: the diagnostic for `key`, valid for another kind of this
  /// category but not this one. Default: "'key' does not apply to a <type>
  /// <category>" with "hint: 'key' is a key of <kinds> <category>s".
  std::function<std::optional<misplaced_note>(std::string_view key)> misplaced;
};

/// The kinds, in registration order (which is also the order of the type
/// lists in hints: "operator types: "filter", "select", ...").
class kind_registry {
public:
  /// The registry of this process, holding the built-in kinds (the list in
  /// src/kinds/CMakeLists.txt); other libraries add theirs (bench/kinds).
  static kind_registry& instance();

  /// Adds a kind; a kind of the same category and type is replaced.
  void add(kind_descriptor d);
  /// Removes a kind (tests that add one).
  void remove(kind_category c, std::string_view type);

  const kind_descriptor* find(kind_category c, std::string_view type) const;
  std::vector<const kind_descriptor*> kinds(kind_category c) const;
  /// The types of a category (available ones only, unless `all`).
  key_list types(kind_category c, bool all = false) const;
  /// The kinds of category `c` whose key table has `key`, in order.
  key_list kinds_with_key(kind_category c, std::string_view key) const;

private:
  kind_registry() = default;
  std::deque<kind_descriptor> kinds_;
};

/// The stand-in of a kind left out of this build (cmake/kinds.cmake
/// registers it): no keys, not available, `not_built` = `how`.
kind_descriptor not_built_kind(kind_category c, std::string type, std::string how);

/// "a, b" from a list, or "a and b" for two (as in "generator and nexmark").
std::string and_list(const key_list& xs);

template <class T>
const T& spec_cast(const kind_spec& s) {
  return static_cast<const T&>(s);
}

} // namespace weir::config

namespace weir::kinds {
/// Adds the built-in kinds (generated from src/kinds/CMakeLists.txt).
void register_builtin_kinds(config::kind_registry& r);
} // namespace weir::kinds
