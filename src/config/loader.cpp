// SPDX-License-Identifier: Apache-2.0
// The TOML loader: what is common to every pipeline ([job], [checkpoint],
// element names and types, inputs, the graph) and diagnostics. Everything
// particular to a source, operator or sink type is its kind's
// (src/config/kind.hpp, src/kinds/): its keys, their parsing and planning.
#include "weir/config/loader.hpp"
#include "weir/checkpoint/object_store.hpp"
#include "weir/runtime/job_graph.hpp"

#include "byte_size.hpp"
#include "kind.hpp"
#include "output_path.hpp"
#include "reader.hpp"

#include <toml++/toml.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <utility>

namespace weir::config {

namespace {

using std::chrono::milliseconds;

// -- key catalogue -----------------------------------------------------------

/// The keys of [job] and [checkpoint]; the keys of sources, operators and
/// sinks come from their kinds' key tables (see `catalogue`).
const std::vector<std::string> job_keys = {
  "job.name",
  "job.parallelism",
  "job.max_parallelism",
  "job.batch_size",
  "job.buffer_timeout",
  "job.on_bad_record",
  "job.dead_letter",
  "job.dead_letter.path",
  "job.status_interval",
  "job.log_level",
  "job.worker_threads",
  "job.restart",
  "job.restart.attempts",
  "job.restart.delay",
  "job.inject_failure",
  "job.inject_failure.operator",
  "job.inject_failure.after_records",
  "job.warn_ratio",
  "job.max_bad_ratio",
  "job.max_late_ratio",
  "checkpoint",
  "checkpoint.interval",
  "checkpoint.mode",
  "checkpoint.dir",
  "checkpoint.retain",
  "checkpoint.timeout",
  "checkpoint.min_pause",
  "checkpoint.tolerable_failures",
  "checkpoint.max_size",
  "checkpoint.remote",
  "checkpoint.endpoint",
  "checkpoint.region",
};

/// The keys every element of a category takes besides its kind's.
key_list common_keys(kind_category c) {
  switch (c) {
    case kind_category::source: return {"name", "type", "parallelism"};
    case kind_category::operator_: return {"name", "type", "input", "inputs", "parallelism"};
    case kind_category::sink: return {"name", "input", "type"};
  }
  return {};
}

/// Every key path the loader accepts: [job] and [checkpoint], then each
/// category's common keys and its kinds' keys in registry order.
std::vector<std::string> catalogue() {
  std::vector<std::string> out = job_keys;
  const auto& reg = kind_registry::instance();
  for (auto c : {kind_category::source, kind_category::operator_, kind_category::sink}) {
    const std::string prefix = std::string(category_name(c)) + "[].";
    key_list keys = common_keys(c);
    for (const auto* k : reg.kinds(c))
      for (const auto& key : k->keys)
        if (!contains(keys, key.name))
          keys.push_back(key.name);
    for (const auto& k : keys)
      out.push_back(prefix + k);
  }
  return out;
}

/// The direct children of `prefix` ("job.", "operator[].") in the catalogue.
std::vector<std::string> children(std::string_view prefix) {
  std::vector<std::string> out;
  for (const auto& k : catalogue()) {
    if (k.size() <= prefix.size() || k.compare(0, prefix.size(), prefix) != 0)
      continue;
    auto rest = std::string_view{k}.substr(prefix.size());
    if (rest.find('.') == std::string_view::npos)
      out.emplace_back(rest);
  }
  return out;
}

/// The kind's own top-level keys, in its key table's order.
key_list top_level_keys(const kind_descriptor& k) {
  key_list out;
  for (const auto& key : k.keys)
    if (key.name.find('.') == std::string::npos)
      out.push_back(key.name);
  return out;
}

const key_list bad_record_policies = {"fail", "skip", "dead_letter"};

/// A share between 0 and 1 (`job.warn_ratio`): a float or an integer (0, 1).
std::optional<double> ratio(reader& r, std::string_view key) {
  auto* n = r.get(key);
  if (!n)
    return std::nullopt;
  std::optional<double> v;
  if (auto* f = n->as_floating_point())
    v = f->get();
  else if (auto* i = n->as_integer())
    v = static_cast<double>(i->get());
  if (!v) {
    r.wrong_type(*n, key, "a number between 0 and 1", {"hint: 0.01 is 1%"});
    return std::nullopt;
  }
  if (!(*v >= 0.0 && *v <= 1.0)) {
    char text[64];
    std::snprintf(text, sizeof text, "%g", *v);
    r.fail(pos_of(*n), r.path(key) + " must be between 0 and 1, got " + text,
           {"hint: a share of the records: 0.01 is 1%"});
    return std::nullopt;
  }
  return v;
}

/// Rows per batch at most: a batch is built in memory whole.
constexpr std::int64_t max_batch_size = 1 << 20;

// -- the model read from the file ---------------------------------------------

/// A [[source]], [[operator]] or [[sink]].
struct element {
  kind_category category = kind_category::source;
  std::size_t index = 0; ///< 1-based within its category
  const toml::table* table = nullptr;
  std::vector<std::string> notes;
  bool ok = true;
  std::string name;
  const toml::node* name_node = nullptr;
  const kind_descriptor* kind = nullptr; ///< null: unknown type
  std::unique_ptr<kind_spec> spec;
  std::vector<located> inputs; ///< `input`, or each of `inputs`
  std::size_t parallelism = 0; ///< operators; 0 = the job's
};

std::string context_note(std::string_view kind, std::size_t index,
                         const toml::table& t) {
  std::string note = "in [[" + std::string(kind) + "]] #" + std::to_string(index);
  if (auto n = t.get_as<std::string>("name"))
    note += " (name = " + quote(n->get()) + ")";
  return note;
}

// -- the loader --------------------------------------------------------------

class loader {
public:
  loader(std::string_view text, std::string file, const load_options& opts)
    : text_(text), file_(file), opts_(opts), diags_(text, std::move(file)) {}

  expected<std::unique_ptr<job>, std::vector<diagnostic>> run();

  void report(pos p, std::string message, std::vector<std::string> notes) {
    diags_.report(p, std::move(message), std::move(notes));
  }

private:
  void parse_top(const toml::table& root);
  void parse_job(const toml::table& root);
  void parse_checkpoint(const toml::table& root);
  void parse_element(kind_category category, const toml::table& t, std::size_t index);
  std::optional<misplaced_note> misplaced(const element& e, std::string_view key) const;
  template <class F>
  void for_each_element(const toml::table& root, std::string_view key, F&& f);
  void check_names();
  void resolve_inputs();
  std::vector<std::size_t> order_operators();
  void build();
  void build_element(job& j, element& e);

  std::string_view text_;
  std::string file_;
  load_options opts_;
  diagnostics diags_;

  job_options job_opts_;
  bool job_ok_ = true;
  const toml::node* inject_failure_node_ = nullptr;
  std::vector<element> sources_;
  std::vector<element> operators_;
  std::vector<element> sinks_;

  struct name_entry {
    std::string name;
    pos at;
    char kind; ///< 's'ource, 'o'perator, 'l'ate output, 'k' sink
    std::size_t index;
  };
  std::map<std::string, name_entry, std::less<>> names_; ///< first definition
  key_list stream_names_;
  std::unique_ptr<job> job_;
};

expected<std::unique_ptr<job>, std::vector<diagnostic>> loader::run() {
  // Debian's toml++ is a shared library built with exceptions: its
  // parse_error is caught here, at the boundary, and becomes a diagnostic.
  toml::table root;
  try {
    root = toml::parse(text_, std::string_view{file_});
  } catch (const toml::parse_error& e) {
    report(pos_of(e.source()), std::string(e.description()), {});
    return diags_.list();
  }
  parse_top(root);
  check_names();
  resolve_inputs();
  try {
    build();
  } catch (const std::exception& e) {
    // The API throws only where its contract says so (never for inputs the
    // loader has checked); should it happen, it is a diagnostic, not a crash.
    report({}, std::string("cannot build the job: ") + e.what(), {});
  }
  if (!diags_.list().empty()) {
    sort_diagnostics(diags_.list());
    return diags_.list();
  }
  return std::move(job_);
}

template <class F>
void loader::for_each_element(const toml::table& root, std::string_view key, F&& f) {
  auto* n = root.get(key);
  if (!n)
    return;
  auto* a = n->as_array();
  if (!a) {
    report(pos_of(*n),
          std::string(key) + " must be an array of tables, got " + std::string(type_name(*n)),
          {"hint: write each one under a [[" + std::string(key) + "]] header"});
    return;
  }
  if (a->empty()) {
    report(pos_of(*n), "a pipeline needs at least one [[" + std::string(key) + "]]", {});
    return;
  }
  std::size_t index = 0;
  for (const auto& e : *a) {
    ++index;
    auto* t = e.as_table();
    if (!t) {
      report(pos_of(e),
            "each " + std::string(key) + " must be a table, got " + std::string(type_name(e)),
            {"hint: write each one under a [[" + std::string(key) + "]] header"});
      continue;
    }
    f(*t, index);
  }
}

void loader::parse_top(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  bool ok = true;
  reader r(diags_, root, "", no_notes, ok);
  r.check_keys({"job", "checkpoint", "source", "operator", "sink"});
  parse_job(root);
  parse_checkpoint(root);
  if (const auto* job = root["job"].as_table(); job && !root.get("checkpoint")) {
    if (const auto* restart = job->get("restart"))
      report(pos_of(*restart), "job.restart needs a [checkpoint] section",
             {"hint: a restart resumes from the latest completed checkpoint; add "
              "[checkpoint] with a dir, or remove job.restart"});
  }
  for_each_element(root, "source", [this](const toml::table& t, std::size_t i) {
    parse_element(kind_category::source, t, i);
  });
  for_each_element(root, "operator", [this](const toml::table& t, std::size_t i) {
    parse_element(kind_category::operator_, t, i);
  });
  for_each_element(root, "sink", [this](const toml::table& t, std::size_t i) {
    parse_element(kind_category::sink, t, i);
  });
  if (!root.get("source"))
    report({}, "a pipeline needs at least one [[source]]", {});
  if (!root.get("sink"))
    report({}, "a pipeline needs at least one [[sink]]", {});
}

void loader::parse_checkpoint(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  auto* n = root.get("checkpoint");
  if (!n)
    return;
  auto* t = n->as_table();
  if (!t) {
    report(pos_of(*n), "checkpoint must be a table, got " + std::string(type_name(*n)),
           {"hint: write the checkpoint settings under a [checkpoint] header"});
    job_ok_ = false;
    return;
  }
  reader r(diags_, *t, "checkpoint.", no_notes, job_ok_);
  r.check_keys(children("checkpoint."));
  auto& cp = job_opts_.checkpoint;
  cp.enabled = true;
  if (auto v = r.duration("interval")) {
    if (v->count() <= 0)
      r.fail(pos_of(*r.get("interval")), "checkpoint.interval must be positive, got \"0s\"");
    else
      cp.interval = *v;
  }
  if (auto m = r.choice("mode", {"exactly_once", "at_least_once"}))
    cp.mode = m->value == "exactly_once" ? checkpointing_mode::exactly_once
                                         : checkpointing_mode::at_least_once;
  if (auto d = r.string("dir", true, true)) {
    cp.dir = d->value;
    if (opts_.check_paths)
      check_output_path(r, "dir", *d, output_path_kind::directory);
  }
  if (auto v = r.integer("retain", 1, 1000000))
    cp.retain = static_cast<std::size_t>(*v);
  if (auto v = r.duration("timeout"))
    cp.timeout = *v;
  if (auto v = r.duration("min_pause"))
    cp.min_pause = *v;
  if (auto v = r.integer("tolerable_failures", 0, std::numeric_limits<std::int64_t>::max()))
    cp.tolerable_failures = static_cast<std::size_t>(*v);
  if (auto v = byte_size(r, "max_size", std::uint64_t{1} << 20, "1MiB"))
    cp.max_size = static_cast<std::size_t>(*v);
  auto remote = r.string("remote", false, true);
  if (remote) {
    if (auto loc = checkpoint::parse_s3_uri(remote->value); !loc)
      r.fail(pos_of(*remote->node), "checkpoint.remote: " + loc.error().message,
             {"hint: remote = \"s3://bucket/prefix\"; dir stays the local working copy"});
    else
      cp.remote = remote->value;
  }
  for (const char* key : {"endpoint", "region"}) {
    auto v = r.string(key, false, true);
    if (!v)
      continue;
    if (!remote) {
      r.fail(pos_of(*v->node), "checkpoint." + std::string{key} + " needs checkpoint.remote",
             {"hint: add remote = \"s3://bucket/prefix\", or remove " + std::string{key}});
      continue;
    }
    if (std::string_view{key} == "endpoint") {
      if (v->value.rfind("http://", 0) != 0 && v->value.rfind("https://", 0) != 0)
        r.fail(pos_of(*v->node), "checkpoint.endpoint must start with http:// or https://, "
                                 "got \"" + v->value + "\"");
      else if (v->value.find('@') != std::string::npos)
        r.fail(pos_of(*v->node), "checkpoint.endpoint must not hold credentials",
               {"hint: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or use "
                "~/.aws/credentials"});
      else
        cp.remote_endpoint = v->value;
    } else {
      cp.remote_region = v->value;
    }
  }
}

void loader::parse_job(const toml::table& root) {
  static const std::vector<std::string> no_notes;
  job_opts_.name = std::filesystem::path(file_).stem().string();
  if (job_opts_.name.empty())
    job_opts_.name = "weir-job";
  if (auto* n = root.get("job")) {
    auto* t = n->as_table();
    if (!t) {
      report(pos_of(*n), "job must be a table, got " + std::string(type_name(*n)),
            {"hint: write the job settings under a [job] header"});
      job_ok_ = false;
    } else {
      constexpr auto unbounded = std::numeric_limits<std::int64_t>::max();
      reader r(diags_, *t, "job.", no_notes, job_ok_);
      r.check_keys(children("job."));
      if (auto v = r.string("name", false, true))
        job_opts_.name = v->value;
      auto parallelism = r.integer("parallelism", 1, unbounded);
      if (parallelism)
        job_opts_.parallelism = static_cast<std::size_t>(*parallelism);
      auto max_par = r.integer("max_parallelism", 1, max_key_groups);
      if (max_par)
        job_opts_.max_parallelism = static_cast<std::size_t>(*max_par);
      // Checked here unless --parallelism overrides it (checked below).
      if (parallelism && !opts_.parallelism &&
          static_cast<std::size_t>(*parallelism) > job_opts_.max_parallelism)
        r.fail(pos_of(*r.get("parallelism")),
               "job.parallelism must not exceed job.max_parallelism (" +
                 std::to_string(job_opts_.max_parallelism) + "), got " +
                 std::to_string(*parallelism));
      if (auto v = r.integer("batch_size", 1, max_batch_size))
        job_opts_.batch_size = static_cast<std::size_t>(*v);
      if (auto v = r.duration("buffer_timeout"))
        job_opts_.buffer_timeout = *v;
      auto policy = r.choice("on_bad_record", bad_record_policies);
      if (policy) {
        if (policy->value == "fail")
          job_opts_.on_bad_record = bad_record_policy::fail;
        else if (policy->value == "skip")
          job_opts_.on_bad_record = bad_record_policy::skip;
        else
          job_opts_.on_bad_record = bad_record_policy::dead_letter;
      }
      if (auto* dl = r.subtable("dead_letter")) {
        auto dr = r.sub(*dl, "dead_letter");
        dr.check_keys(children("job.dead_letter."));
        if (auto p = dr.string("path", true, true)) {
          job_opts_.dead_letter_path = p->value;
          if (opts_.check_paths && policy && policy->value == "dead_letter")
            check_output_path(dr, "path", *p, output_path_kind::file);
        }
      } else if (policy && policy->value == "dead_letter" && !r.get("dead_letter")) {
        r.missing("dead_letter", {"hint: on_bad_record = \"dead_letter\" needs "
                                  "dead_letter = { path = \"bad_records.jsonl\" }"});
      }
      if (auto v = r.duration("status_interval"))
        job_opts_.status_interval = *v;
      if (auto v = r.integer("worker_threads", 0, unbounded))
        job_opts_.worker_threads = static_cast<std::size_t>(*v);
      if (auto v = r.choice("log_level", {"trace", "debug", "info", "warn", "error", "off"}))
        job_opts_.log_level = *parse_log_level(v->value);
      if (auto v = ratio(r, "warn_ratio"))
        job_opts_.warn_ratio = *v;
      if (auto v = ratio(r, "max_bad_ratio"))
        job_opts_.max_bad_ratio = *v;
      if (auto v = ratio(r, "max_late_ratio"))
        job_opts_.max_late_ratio = *v;
      if (auto* rs = r.subtable("restart")) {
        auto rr = r.sub(*rs, "restart");
        rr.check_keys(children("job.restart."));
        if (auto v = rr.integer("attempts", 0, 1000000))
          job_opts_.restart.attempts = static_cast<std::size_t>(*v);
        if (auto v = rr.duration("delay"))
          job_opts_.restart.delay = *v;
      }
      if (auto* fi = r.subtable("inject_failure")) {
        auto fr = r.sub(*fi, "inject_failure");
        fr.check_keys(children("job.inject_failure."));
        failure_injection inj;
        if (auto v = fr.string("operator", true, true)) {
          inj.operator_name = v->value;
          inject_failure_node_ = v->node;
        }
        if (auto v = fr.integer("after_records", 0, unbounded))
          inj.after_records = static_cast<std::uint64_t>(*v);
        job_opts_.inject_failure = inj;
      }
    }
  }
  if (opts_.batch_size) {
    job_opts_.batch_size = *opts_.batch_size;
    if (*opts_.batch_size < 1 || *opts_.batch_size > static_cast<std::size_t>(max_batch_size)) {
      const auto* job = root.get("job");
      report(job ? pos_of(*job) : pos{},
             "--batch-size " + std::to_string(*opts_.batch_size) + " must lie in 1.."
               + std::to_string(max_batch_size),
             {});
      job_ok_ = false;
    }
  }
  if (opts_.parallelism) {
    job_opts_.parallelism = *opts_.parallelism;
    if (*opts_.parallelism < 1 || *opts_.parallelism > job_opts_.max_parallelism) {
      const auto* job = root.get("job");
      report(job ? pos_of(*job) : pos{},
             "--parallelism " + std::to_string(*opts_.parallelism) +
               " must lie in 1..job.max_parallelism (" +
               std::to_string(job_opts_.max_parallelism) + ")",
             {"hint: raise job.max_parallelism (at most 32768) to run more subtasks"});
      job_ok_ = false;
    }
  }
}

void loader::parse_element(kind_category category, const toml::table& t,
                           std::size_t index) {
  const auto& reg = kind_registry::instance();
  const std::string cat{category_name(category)};
  auto& list = category == kind_category::source     ? sources_
               : category == kind_category::operator_ ? operators_
                                                      : sinks_;
  auto& e = list.emplace_back();
  e.category = category;
  e.index = index;
  e.table = &t;
  e.notes = {context_note(cat, index, t)};
  reader r(diags_, t, "", e.notes, e.ok);
  // Problems that do not change what the element produces are reported but
  // do not stop it from being built, so that its dependents are checked too.
  bool soft_ok = true;
  reader soft(diags_, t, "", e.notes, soft_ok);

  auto type_of = [&](const located& ty) -> const kind_descriptor* {
    const auto* k = reg.find(category, ty.value);
    if (k && k->available)
      return k;
    const auto types = reg.types(category);
    if (k && !k->not_built.empty()) {
      r.fail(pos_of(*ty.node), cat + " kind \"" + ty.value +
                                 "\" was not built into this weir (configure with " +
                                 k->not_built + ")");
      return nullptr;
    }
    if (k) {
      r.fail(pos_of(*ty.node), cat + " type '" + ty.value + "' is not supported yet",
             {"hint: supported " + cat + " types: " + quoted_list(types)});
      return nullptr;
    }
    std::vector<std::string> extra;
    if (auto c = closest(ty.value, types))
      extra.push_back("hint: did you mean " + quote(*c) + "?");
    extra.push_back(category == kind_category::source
                      ? "hint: supported source types: " + quoted_list(types)
                      : "hint: " + cat + " types: " + quoted_list(types));
    r.fail(pos_of(*ty.node), "unknown " + cat + " type '" + ty.value + "'", std::move(extra));
    return nullptr;
  };
  auto allowed_keys = [&](const kind_descriptor* k) {
    if (!k)
      return children(cat + "[].");
    key_list allowed;
    if (category == kind_category::operator_)
      allowed = {"name", "type", "parallelism", k->max_inputs > 1 ? "inputs" : "input"};
    else
      allowed = common_keys(category);
    for (const auto& key : top_level_keys(*k))
      allowed.push_back(key);
    return allowed;
  };
  auto check_keys = [&](const key_list& allowed) {
    r.check_keys(allowed, [&](std::string_view key) { return misplaced(e, key); });
  };

  // A source's keys are checked before its name is read; an operator's and
  // a sink's after its type. (Diagnostics are sorted by position, and the
  // order of those at one position is the order in which they are found.)
  parse_context ctx{*reg.kinds(category).front(), r, soft, true, job_opts_.max_parallelism};
  const kind_descriptor* stand_in = nullptr;
  if (category == kind_category::source) {
    // A source of unknown type is read as the first source kind (file), its
    // keys not required unless the type is missing altogether.
    const auto* peek = t.get_as<std::string>("type");
    e.kind = peek ? reg.find(category, peek->get()) : nullptr;
    // A kind left out of this build: only its type is reported (its keys
    // are unknown to this weir).
    const bool not_built = e.kind && !e.kind->not_built.empty();
    if (e.kind && !e.kind->available)
      e.kind = nullptr;
    stand_in = e.kind ? e.kind : not_built ? nullptr : reg.kinds(category).front();
    if (stand_in) {
      element probe;
      probe.kind = stand_in;
      probe.category = category;
      r.check_keys(allowed_keys(stand_in),
                   [&](std::string_view key) { return misplaced(probe, key); });
    }
    if (auto v = r.string("name", true, true)) {
      e.name = v->value;
      e.name_node = v->node;
    }
    auto type = r.string("type", true);
    if (type)
      type_of(*type);
    if (!e.kind)
      ctx.keys_required = !type;
  } else {
    if (auto v = r.string("name", true, true)) {
      e.name = v->value;
      e.name_node = v->node;
    }
    bool not_built = false;
    if (auto ty = r.string("type", true)) {
      e.kind = type_of(*ty);
      const auto* k = reg.find(category, ty->value);
      not_built = k && !k->not_built.empty();
    }
    // A kind left out of this build: only its type is reported.
    if (!not_built)
      check_keys(allowed_keys(e.kind));
  }

  if (category == kind_category::operator_) {
    const bool many = e.kind && e.kind->max_inputs > 1;
    if (!e.kind || !many) {
      if (auto in = r.string("input", e.kind != nullptr, true))
        e.inputs.push_back(*in);
    }
    if (!e.kind || many) {
      if (auto ins = r.string_array("inputs", e.kind != nullptr, e.kind ? e.kind->min_inputs : 0)) {
        if (e.kind && ins->size() > e.kind->max_inputs)
          // A two-input kind (a join) reads exactly two: input 1 and input 2.
          r.fail(pos_of(*r.get("inputs")),
                 "inputs must list at most " + std::to_string(e.kind->max_inputs) +
                   " names, got " + std::to_string(ins->size()));
        else
          e.inputs.insert(e.inputs.end(), ins->begin(), ins->end());
      }
    }
    if (auto v = soft.integer("parallelism", 1, max_key_groups)) {
      if (static_cast<std::size_t>(*v) > job_opts_.max_parallelism)
        soft.fail(pos_of(*soft.get("parallelism")),
                  "parallelism must not exceed job.max_parallelism (" +
                    std::to_string(job_opts_.max_parallelism) + "), got " +
                    std::to_string(*v));
      else
        e.parallelism = static_cast<std::size_t>(*v);
    }
  } else if (category == kind_category::sink) {
    if (auto v = r.string("input", true, true))
      e.inputs.push_back(*v);
  }

  const kind_descriptor* reads = e.kind ? e.kind : stand_in;
  if (!reads)
    return;
  parse_context pc{*reads, r, soft, ctx.keys_required, job_opts_.max_parallelism,
                   job_opts_.checkpoint.enabled, opts_.check_paths};
  e.spec = reads->parse(pc);
}

/// The diagnostic for `key`, not valid in `e` (a key of another kind, or an
/// input key of the wrong arity); nullopt: an unknown key.
std::optional<misplaced_note> loader::misplaced(const element& e, std::string_view key) const {
  if (!e.kind)
    return std::nullopt;
  if (e.kind->misplaced)
    return e.kind->misplaced(key);
  const auto& reg = kind_registry::instance();
  const std::string cat{category_name(e.category)};
  std::string message =
    "'" + std::string(key) + "' does not apply to a " + e.kind->type + " " + cat;
  if (e.category == kind_category::operator_ && (key == "input" || key == "inputs")) {
    if (key == "input")
      return misplaced_note{message, {"hint: a " + e.kind->type + " reads inputs = [\"a\", \"b\"]"}};
    key_list many;
    for (const auto* k : reg.kinds(e.category))
      if (k->max_inputs > 1)
        many.push_back(k->type);
    return misplaced_note{message, {"hint: only a " + and_list(many) +
                                    " reads several inputs; write input = \"name\""}};
  }
  auto users = reg.kinds_with_key(e.category, key);
  if (users.empty())
    return std::nullopt;
  return misplaced_note{message, {"hint: '" + std::string(key) + "' is a key of " +
                                  plain_list(users) + " " + cat + "s"}};
}

void loader::check_names() {
  struct def {
    std::string name;
    pos at;
    char kind;
    std::size_t index;
    element* owner;
  };
  std::vector<def> defs;
  for (std::size_t i = 0; i < sources_.size(); ++i)
    if (sources_[i].name_node)
      defs.push_back({sources_[i].name, pos_of(*sources_[i].name_node), 's', i, &sources_[i]});
  for (std::size_t i = 0; i < operators_.size(); ++i) {
    auto& op = operators_[i];
    if (op.name_node)
      defs.push_back({op.name, pos_of(*op.name_node), 'o', i, &op});
    if (op.spec)
      for (const auto& side : op.spec->side_outputs())
        defs.push_back({side.value, pos_of(*side.node), 'l', i, &op});
  }
  for (std::size_t i = 0; i < sinks_.size(); ++i)
    if (sinks_[i].name_node)
      defs.push_back({sinks_[i].name, pos_of(*sinks_[i].name_node), 'k', i, &sinks_[i]});
  std::stable_sort(defs.begin(), defs.end(),
                   [](const def& a, const def& b) { return a.at < b.at; });
  for (const auto& d : defs) {
    auto it = names_.find(d.name);
    if (it != names_.end()) {
      auto notes = d.owner->notes;
      notes.push_back("note: first defined at " + diags_.location(it->second.at));
      report(d.at, "duplicate name " + quote(d.name), std::move(notes));
      d.owner->ok = false;
      continue;
    }
    names_.emplace(d.name, name_entry{d.name, d.at, d.kind, d.index});
    if (d.kind != 'k')
      stream_names_.push_back(d.name);
  }
}

void loader::resolve_inputs() {
  auto check = [this](element& e, const located& in) {
    auto it = names_.find(in.value);
    if (it == names_.end()) {
      auto notes = e.notes;
      if (auto c = closest(in.value, stream_names_))
        notes.push_back("hint: did you mean " + quote(*c) + "?");
      report(pos_of(*in.node), "input " + quote(in.value) + " names no stream",
            std::move(notes));
      e.ok = false;
    } else if (it->second.kind == 'k') {
      report(pos_of(*in.node), "input " + quote(in.value) + " names a sink, not a stream",
            e.notes);
      e.ok = false;
    }
  };
  for (auto& op : operators_)
    for (const auto& in : op.inputs)
      check(op, in);
  for (auto& s : sinks_)
    for (const auto& in : s.inputs)
      check(s, in);
}

std::vector<std::size_t> loader::order_operators() {
  const std::size_t n = operators_.size();
  // deps[i]: (operator index producing an input of i, that input)
  std::vector<std::vector<std::pair<std::size_t, const located*>>> deps(n);
  for (std::size_t i = 0; i < n; ++i) {
    for (const auto& in : operators_[i].inputs) {
      auto it = names_.find(in.value);
      if (it != names_.end() && (it->second.kind == 'o' || it->second.kind == 'l'))
        deps[i].emplace_back(it->second.index, &in);
    }
  }
  enum class mark { fresh, active, done };
  std::vector<mark> marks(n, mark::fresh);
  // Depth-first, with an explicit stack (a chain of 20,000 operators is as
  // deep): frame = (operator, next dependency to look at); the operators
  // of the frames are the path from the root, each reading the next.
  std::vector<std::pair<std::size_t, std::size_t>> frames;
  std::vector<std::size_t> order;
  auto report_cycle = [&](std::size_t j) {
    // path = [..., j, a, ..., i] (i on top): each reads the next and i reads j, so
    // data flows j -> i -> ... -> a -> j.
    auto it = std::find_if(frames.begin(), frames.end(),
                           [j](const auto& f) { return f.first == j; });
    std::vector<std::size_t> flow;
    for (; it != frames.end(); ++it)
      flow.push_back(it->first);
    std::reverse(flow.begin() + 1, flow.end());
    auto first = std::min_element(flow.begin(), flow.end());
    std::rotate(flow.begin(), first, flow.end());
    std::string text = "cycle: ";
    for (auto k : flow)
      text += operators_[k].name + " -> ";
    text += operators_[flow.front()].name;
    // Point at the input of the first operator that closes the cycle.
    const std::size_t start = flow.front();
    const std::size_t prev = flow.back();
    const located* at = nullptr;
    for (auto [p, pin] : deps[start])
      if (p == prev && !at)
        at = pin;
    report(at ? pos_of(*at->node) : pos_of(*operators_[start].table), text,
           operators_[start].notes);
    for (auto k : flow)
      operators_[k].ok = false;
  };
  for (std::size_t root = 0; root < n; ++root) {
    if (marks[root] != mark::fresh)
      continue;
    marks[root] = mark::active;
    frames.emplace_back(root, 0);
    while (!frames.empty()) {
      auto& [i, next] = frames.back();
      if (next == deps[i].size()) {
        marks[i] = mark::done;
        order.push_back(i);
        frames.pop_back();
        continue;
      }
      const std::size_t cur = i;
      const std::size_t j = deps[cur][next++].first;
      if (marks[j] == mark::fresh) {
        marks[j] = mark::active;
        frames.emplace_back(j, 0); // invalidates i and next
      } else if (marks[j] == mark::active) {
        report_cycle(j);
      }
    }
  }
  return order;
}

void loader::build_element(job& j, element& e) {
  if (!e.ok || !e.kind || !e.spec)
    return;
  std::vector<data_stream> ins;
  for (const auto& in : e.inputs) {
    auto s = j.stream(in.value);
    if (!s)
      return; // its producer is broken and already reported
    ins.push_back(*s);
  }
  if (e.category != kind_category::source && ins.empty())
    return;
  const operator_options oo{e.name, e.parallelism};
  plan_context ctx(j, ins, oo, *e.table, e.notes, diags_, e.ok);
  e.kind->plan(ctx, *e.spec);
}

void loader::build() {
  job_ = std::make_unique<job>(job_opts_);
  auto order = order_operators();
  for (auto& s : sources_)
    build_element(*job_, s);
  for (auto i : order)
    build_element(*job_, operators_[i]);
  for (auto& s : sinks_)
    build_element(*job_, s);
  if (const auto& inj = job_opts_.inject_failure; inj && inject_failure_node_) {
    bool found = false;
    for (const auto& n : job_->graph()->nodes)
      found = found || n.name == inj->operator_name;
    if (!found)
      report(pos_of(*inject_failure_node_),
             "job.inject_failure.operator " + quote(inj->operator_name) +
               " names no operator, source or sink",
             {});
  }
}

} // namespace

expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline(std::string_view toml_text, const std::string& path,
              const load_options& opts) {
  loader l(toml_text, path, opts);
  return l.run();
}

// Besides what loader.hpp lists, output paths the job could not write (a
// file sink's path or, with [checkpoint], its directory of parts; the
// dead-letter file; checkpoint.dir) are errors at their value
// (output_path.hpp, load_options::check_paths).
expected<std::unique_ptr<job>, std::vector<diagnostic>>
load_pipeline_file(const std::string& path, const load_options& opts) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return std::vector<diagnostic>{
      diagnostic{path, 0, 0, "cannot read pipeline file: it is a directory", {}}};
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int e = errno;
    return std::vector<diagnostic>{
      diagnostic{path, 0, 0, "cannot read pipeline file: " + std::string(std::strerror(e)),
                 {}}};
  }
  std::ostringstream text;
  text << in.rdbuf();
  return load_pipeline(text.str(), path, opts);
}

const std::vector<std::string>& known_keys() {
  // Derived from the key tables each time: a kind may have been registered
  // since the last call.
  // The reference stays valid (and unchanged) while no kind is added.
  static thread_local std::vector<std::string> keys;
  if (auto fresh = catalogue(); fresh != keys)
    keys = std::move(fresh);
  return keys;
}

namespace {

/// A table cell: pipes escaped, so a doc line cannot break the table.
std::string cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|')
      out += "\\|";
    else
      out += c;
  }
  return out;
}

} // namespace

std::string key_reference_markdown() {
  std::string out;
  out += "# Key reference\n\n"
         "Generated by `weir docs` from the key tables of the kinds built into this weir; "
         "do not edit by hand. Every key with an example value and its full explanation: "
         "[`config/reference.toml`](../../config/reference.toml). Pages per kind: "
         "[docs/kinds](../kinds/).\n\n";
  out += "## `[job]` and `[checkpoint]`\n\n";
  for (const auto& k : job_keys)
    out += "- `" + k + "`\n";
  const auto& reg = kind_registry::instance();
  for (auto c : {kind_category::source, kind_category::operator_, kind_category::sink}) {
    const std::string cat{category_name(c)};
    out += "\n## `[[" + cat + "]]`\n\n";
    out += "Every " + cat + " takes:";
    for (const auto& k : common_keys(c))
      out += " `" + k + "`";
    out += ".\n";
    for (const auto* kind : reg.kinds(c)) {
      out += "\n### `type = \"" + kind->type + "\"`";
      if (!kind->available)
        out += " (not built into this weir)";
      out += "\n\n";
      if (kind->keys.empty()) {
        out += "No keys of its own.\n";
        continue;
      }
      out += "| key | type | required | default | meaning |\n|---|---|---|---|---|\n";
      for (const auto& k : kind->keys)
        out += "| `" + k.name + "` | " + cell(k.type) + " | " + (k.required ? "yes" : "") + " | "
               + (k.default_value.empty() ? "" : "`" + cell(k.default_value) + "`") + " | "
               + cell(k.doc) + " |\n";
    }
  }
  return out;
}

} // namespace weir::config
