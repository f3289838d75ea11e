// SPDX-License-Identifier: Apache-2.0
// The `weir` executable: load a TOML pipeline, run it, report, exit.
//   exit 0: the job finished; 1: the job failed; 2: the configuration is bad;
//   130 / 143 (128 + the signal): `run` was stopped gracefully by SIGINT /
//   SIGTERM (`job::stop`); a second signal ends it at once, killed by that
//   signal (the default action).
// What this file prints on stderr itself (configuration errors, the
// end-of-job summary, why the job failed, `validate`'s verdict) is the CLI's
// user interface, in a fixed form tests and scripts read, printed at every log
// level; everything else weir says goes through its loggers
// (weir/core/log.hpp), filtered by --log-level.
#include "weir/api/job.hpp"
#include "weir/checkpoint/checkpoint_report.hpp"
#include "weir/config/loader.hpp"
#include "weir/core/log_level.hpp"
#include "weir/runtime/job_graph.hpp"
#include "weir/runtime/loss_check.hpp"
#include "weir/sql/sql.hpp"
#include "weir/server/http_server.hpp"

#include <CLI/CLI.hpp>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <memory>
#include <vector>
#include <cstdio>
#include <malloc.h>
#include <optional>
#include <string>
#include <thread>

#include <fcntl.h>
#include <unistd.h>

namespace {

using weir::runtime::with_commas;

/// Where the records went, per source and per operator that lost some: a
/// file source's lines read, records decoded and bad records.
void print_counts(const weir::job_result& r) {
  for (const auto& c : r.counts) {
    std::string text;
    if (c.is_source) {
      if (c.lines_read)
        text = with_commas(*c.lines_read) + " lines read, ";
      text += with_commas(c.records_out) + " records decoded, " + with_commas(c.bad_records) +
              " bad";
    } else {
      text = with_commas(c.records_in) + " records in";
      if (c.bad_records > 0)
        text += ", " + with_commas(c.bad_records) + " bad";
      if (c.late_records > 0)
        text += ", " + with_commas(c.late_records) + " late";
      if (c.partial_matches_dropped > 0)
        text += ", " + with_commas(c.partial_matches_dropped) + " partial matches dropped";
    }
    const std::string label = (c.is_source ? "source '" : "operator '") + c.name + "'";
    std::fprintf(stderr, "  %-16s %s\n", label.c_str(), text.c_str());
  }
}

/// Loss above job.warn_ratio: at the end of the summary ("  warning: ..."),
/// or alone with -q ("weir: warning: ...").
void print_loss_warnings(const weir::job_result& r, const char* prefix) {
  for (const auto& w : r.loss_warnings)
    std::fprintf(stderr, "%swarning: %s\n", prefix, w.c_str());
}

// -- SIGINT / SIGTERM: graceful stop, then stop at once ---------------------------
//
// The handler only does what is async-signal-safe: an atomic counter, write(2)
// to a self-pipe, signal(2) and raise(3). A thread reading the pipe does the
// rest (job::stop takes a lock and sends a message).

int stop_pipe[2] = {-1, -1};
std::atomic<int> stop_signals{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void on_stop_signal(int signo) {
  const int saved = errno;
  if (stop_signals.fetch_add(1) == 0) {
    const auto b = static_cast<unsigned char>(signo);
    [[maybe_unused]] auto n = ::write(stop_pipe[1], &b, 1);
  } else {
    // The second signal: end at once, killed by it (its default action runs
    // as soon as this handler returns). Buffered output is not flushed; a
    // file sink's output stays under its in-progress name.
    static const char msg[] = "weir: second signal: stopping at once\n";
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, msg, sizeof msg - 1);
    std::signal(signo, SIG_DFL);
    std::raise(signo);
  }
  errno = saved;
}

/// While `job.execute()` runs: the first SIGINT or SIGTERM stops the job
/// gracefully (`job::stop`), a second one ends the process.
class stop_on_signals {
public:
  /// `savepoint_path`: a stop signal stops with a savepoint there
  /// (`job::stop_with_savepoint`) instead of a plain stop.
  stop_on_signals(weir::job& j, bool quiet, std::string savepoint_path = {}) {
    if (::pipe2(stop_pipe, O_CLOEXEC) != 0) {
      std::perror("weir: pipe");
      return;
    }
    watcher_ = std::thread{[&j, quiet, savepoint_path] {
      unsigned char b = 0;
      int seen = 0;
      for (;;) {
        auto n = ::read(stop_pipe[0], &b, 1);
        if (n < 0 && errno == EINTR)
          continue;
        if (n <= 0 || b == 0)
          return;
        signal_ = b;
        if (!quiet)
          std::fprintf(stderr,
                       "\nweir: %s: stopping (sources stop, sinks flush); "
                       "send it again to stop at once\n",
                       b == SIGINT ? "SIGINT" : "SIGTERM");
        if (savepoint_path.empty() || ++seen > 1) {
          j.stop();
          continue;
        }
        // The first signal: stop with a savepoint, and say how it went.
        auto r = j.stop_with_savepoint(savepoint_path).get();
        if (!r) {
          std::fprintf(stderr, "weir: savepoint to %s failed: %s; stopping without it\n",
                       savepoint_path.c_str(), r.error().message.c_str());
          j.stop();
        } else if (!quiet) {
          std::fprintf(stderr, "weir: savepoint of checkpoint %llu written to %s\n",
                       static_cast<unsigned long long>(r->checkpoint_id), r->path.c_str());
        }
      }
    }};
    struct sigaction sa = {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
  }

  ~stop_on_signals() {
    if (!watcher_.joinable())
      return;
    // From now on a signal has its default action: nothing is left to flush.
    struct sigaction sa = {};
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
    const unsigned char quit = 0;
    [[maybe_unused]] auto n = ::write(stop_pipe[1], &quit, 1);
    watcher_.join();
  }

  stop_on_signals(const stop_on_signals&) = delete;
  stop_on_signals& operator=(const stop_on_signals&) = delete;

  /// The signal that stopped the job; 0 if none did.
  static int signal() { return signal_; }

private:
  std::thread watcher_;
  static inline std::atomic<int> signal_{0};
};

/// The end-of-job summary: user interface, not a log message (see the top).
void print_summary(const weir::job& j, const weir::job_result& r) {
  const auto& o = j.options();
  std::fprintf(stderr, "\n[%s] %s in %.2f s\n", o.name.c_str(),
               !r.ok ? "FAILED" : r.stopped ? "stopped" : "finished",
               static_cast<double>(r.duration.count()) / 1000.0);
  std::fprintf(stderr, "  records read     %s\n", with_commas(r.records_read).c_str());
  std::fprintf(stderr, "  records written  %s\n", with_commas(r.records_written).c_str());
  // After a restore this process saw only part of the job's bad records:
  // the job's total where it is known (exactly-once dead letters), else
  // say that the count is this run's.
  std::string bad;
  if (r.job_bad_records) {
    bad = with_commas(*r.job_bad_records);
    if (r.restored_checkpoint_id > 0 || r.restarts > 0)
      bad += " since the job's fresh start (" + with_commas(r.bad_records) + " in this run)";
  } else {
    bad = with_commas(r.bad_records);
    if (r.restored_checkpoint_id > 0 || r.restarts > 0)
      bad += " in this run only ("
             + (r.restored_checkpoint_id > 0
                  ? "since checkpoint #" + std::to_string(r.restored_checkpoint_id)
                  : std::string{"since its start"})
             + (r.restarts > 0 ? "; records read again after a restart count again" : "")
             + ")";
  }
  if (r.bad_records > 0 || r.job_bad_records.value_or(0) > 0) {
    switch (o.on_bad_record) {
      case weir::bad_record_policy::dead_letter:
        bad += " (dead-lettered to " + o.dead_letter_path + ")";
        break;
      case weir::bad_record_policy::skip:
        bad += " (skipped)";
        break;
      case weir::bad_record_policy::fail:
        break;
    }
  }
  std::fprintf(stderr, "  bad records      %s\n", bad.c_str());
  std::fprintf(stderr, "  late records     %s\n", with_commas(r.late_records).c_str());
  if (o.checkpoint.enabled) {
    std::string cp = with_commas(r.checkpoints_completed) + " completed";
    if (r.checkpoints_aborted > 0)
      cp += ", " + with_commas(r.checkpoints_aborted) + " aborted";
    if (r.checkpoints_failed > 0)
      cp += " (" + with_commas(r.checkpoints_failed) + " failed)";
    if (r.last_checkpoint_id > 0)
      cp += ", last #" + std::to_string(r.last_checkpoint_id);
    if (r.stopped)
      cp += r.stop_checkpoint_id > 0 && r.stop_checkpoint_id == r.last_checkpoint_id
              ? " (final, on stop)"
              : ", no final checkpoint on stop";
    if (r.restored_checkpoint_id > 0)
      cp += ", restored from #" + std::to_string(r.restored_checkpoint_id);
    if (r.restarts > 0)
      cp += ", " + std::to_string(r.restarts) + " restart" + (r.restarts == 1 ? "" : "s");
    // Ids are never reused: after --fresh too, they continue after those
    // already in the checkpoint dir (docs/concepts/checkpoints.md).
    if (r.checkpoint_ids_after > r.restored_checkpoint_id)
      cp += "; ids continue after #" + std::to_string(r.checkpoint_ids_after)
            + ", the highest in " + o.checkpoint.dir;
    std::fprintf(stderr, "  checkpoints      %s\n", cp.c_str());
  } else {
    std::fprintf(stderr, "  checkpoints      off\n");
  }
  print_counts(r);
  print_loss_warnings(r, "  ");
}

/// Whether `path` names a SQL script (".sql"), run through the SQL front end.
bool is_sql(const std::string& path) {
  return path.size() > 4 && path.compare(path.size() - 4, 4, ".sql") == 0;
}

/// Loads a TOML pipeline or a SQL script; `toml_out` receives the TOML a
/// script compiles to.
weir::expected<std::unique_ptr<weir::job>, std::vector<weir::config::diagnostic>>
load_any(const std::string& path, const weir::config::load_options& opts,
         std::string* toml_out = nullptr) {
  if (is_sql(path))
    return weir::sql::load_sql_file(path, opts, toml_out);
  return weir::config::load_pipeline_file(path, opts);
}

/// `weir explain`: the logical graph, one node a paragraph in id order
/// (sources first, then operators in topological order, then sinks, as the
/// loader builds them): name, kind, parallelism, inputs with their
/// partitioning and key fields, outputs with their schemas. The same text
/// for a SQL script and its TOML twin when they plan the same job.
std::string explain_graph(const weir::job& j) {
  const auto& g = *j.graph();
  std::ostringstream out;
  out << "job " << j.options().name << ": parallelism " << j.options().parallelism
      << ", max_parallelism " << j.options().max_parallelism << "\n";
  for (const auto& n : g.nodes) {
    out << "\n#" << n.id << " " << n.name << " (" << n.kind << ", parallelism "
        << n.parallelism << ")\n";
    for (const auto& e : g.edges) {
      if (e.target != n.id)
        continue;
      const auto& from = g.nodes.at(e.source);
      const auto& port = from.outputs.at(e.port);
      out << "  in";
      if (n.num_inputs > 1)
        out << "[" << e.target_input << "]";
      out << " " << port.name << " from #" << from.id << ": ";
      switch (e.mode) {
        case weir::runtime::partitioning::forward: out << "forward"; break;
        case weir::runtime::partitioning::rebalance: out << "rebalance"; break;
        case weir::runtime::partitioning::hash: {
          out << "hash(";
          for (std::size_t i = 0; i < e.key_fields.size(); ++i)
            out << (i ? ", " : "") << port.schema->at(e.key_fields[i]).name;
          out << ")";
          break;
        }
      }
      out << "\n";
    }
    for (const auto& o : n.outputs)
      out << "  out " << (o.name.empty() ? std::string{"(unnamed side output)"} : o.name) << ": "
          << (o.schema ? o.schema->to_string() : "") << "\n";
    if (n.is_source)
      out << "  watermark: max_out_of_orderness " << n.watermark.max_out_of_orderness.count()
          << " ms, idle_timeout " << n.watermark.idle_timeout.count() << " ms\n";
    if (!n.state_descriptor.empty())
      out << "  state: " << n.state_descriptor << "\n";
  }
  return out.str();
}

#ifdef WEIR_HAVE_SERVER
/// `weir serve`: loads every pipeline first (a bad one: exit 2, nothing
/// started), starts the server and the jobs, and serves until SIGINT or
/// SIGTERM, which stops the jobs gracefully and ends with exit 0.
/// `so` holds the options given on the command line but the address;
/// `header_timeout` is a duration ("10s", "500ms"), empty for the default.
int serve(const std::vector<std::string>& pipelines, const std::string& listen,
          const std::string& log_level, weir::server::server_options so,
          const std::string& header_timeout, bool allow_rollback, bool fresh) {
  if (!header_timeout.empty()) {
    auto d = weir::config::parse_duration(header_timeout);
    if (!d || d->count() <= 0) {
      std::fprintf(stderr, "weir: --header-timeout must be a positive duration such as "
                           "\"10s\" or \"500ms\", got '%s'\n", header_timeout.c_str());
      return 2;
    }
    so.header_timeout = *d;
  }
  auto colon = listen.rfind(':');
  if (colon == std::string::npos) {
    std::fprintf(stderr, "weir: --listen must be ADDR:PORT, got '%s'\n", listen.c_str());
    return 2;
  }
  so.host = listen.substr(0, colon);
  if (so.host.size() >= 2 && so.host.front() == '[' && so.host.back() == ']')
    so.host = so.host.substr(1, so.host.size() - 2);
  try {
    std::size_t used = 0;
    so.port = std::stoi(listen.substr(colon + 1), &used);
    if (used != listen.size() - colon - 1 || so.port < 0 || so.port > 65535)
      throw std::out_of_range{"port"};
  } catch (const std::exception&) {
    std::fprintf(stderr, "weir: --listen: bad port in '%s'\n", listen.c_str());
    return 2;
  }
  if (so.token.empty())
    if (const char* env = std::getenv("WEIR_SERVER_TOKEN"))
      so.token = env;
  if (!weir::server::is_loopback(so.host) && so.token.empty()) {
    std::fprintf(stderr,
                 "weir: --listen %s is not a loopback address: it needs --token (or "
                 "WEIR_SERVER_TOKEN), a bearer token every request must carry\n",
                 listen.c_str());
    return 2;
  }
  std::vector<std::unique_ptr<weir::job>> jobs;
  std::vector<weir::server::pipeline_source> sources;
  std::size_t errors = 0;
  for (const auto& path : pipelines) {
    auto loaded = load_any(path, {});
    if (!loaded) {
      std::fprintf(stderr, "%s\n", weir::config::to_string(loaded.error()).c_str());
      errors += loaded.error().size();
      continue;
    }
    if (auto level = weir::parse_log_level(log_level))
      (*loaded)->options().log_level = *level;
    (*loaded)->options().checkpoint.allow_rollback = allow_rollback;
    (*loaded)->options().checkpoint.fresh = fresh;
    jobs.push_back(std::move(*loaded));
    // The text as read a moment ago, for GET /jobs/{id}/config.
    std::ifstream in{path, std::ios::binary};
    sources.push_back({path, std::string{std::istreambuf_iterator<char>{in}, {}}});
  }
  if (errors > 0) {
    std::fprintf(stderr, "%zu error%s; nothing was started\n", errors, errors == 1 ? "" : "s");
    return 2;
  }
  // SIGINT / SIGTERM are taken by sigwait below: blocked before any thread
  // starts, so every thread inherits the mask.
  sigset_t stop_set;
  sigemptyset(&stop_set);
  sigaddset(&stop_set, SIGINT);
  sigaddset(&stop_set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_set, nullptr);
  weir::server::http_server server{so};
  if (auto started = server.start(); !started) {
    std::fprintf(stderr, "weir: %s\n", started.error().message.c_str());
    return started.error().code == weir::errc::invalid_argument ? 2 : 1;
  }
  const bool v6 = so.host.find(':') != std::string::npos;
  std::fprintf(stderr, "weir: serving on http://%s%s%s:%d/\n", v6 ? "[" : "", so.host.c_str(),
               v6 ? "]" : "", server.port());
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    auto name = jobs[i]->options().name;
    auto id = server.submit(std::move(jobs[i]), std::move(sources[i]));
    std::fprintf(stderr, "weir: job '%s' started: %s\n", name.c_str(), id.c_str());
  }
  std::fflush(stderr);
  int sig = 0;
  sigwait(&stop_set, &sig);
  std::fprintf(stderr, "weir: %s: stopping the jobs and the server\n",
               sig == SIGINT ? "SIGINT" : "SIGTERM");
  // A second signal ends weir at once.
  std::thread{[stop_set] {
    int again = 0;
    sigwait(&stop_set, &again);
    std::_Exit(128 + again);
  }}.detach();
  server.shutdown();
  return 0;
}
#else
/// `weir serve` in a weir built without its HTTP server (cpp-httplib).
int serve(const std::vector<std::string>&, const std::string&, const std::string&,
          const weir::server::server_options&, const std::string&, bool, bool) {
  std::fprintf(stderr, "weir: error: weir serve was not built into this weir (configure with "
                       "-DWEIR_WITH_HTTP=ON and libcpp-httplib-dev installed)\n");
  return 2;
}
#endif

} // namespace

int main(int argc, char** argv) {
  // Batches are allocated and freed at a high rate; without these glibc
  // hands their pages back to the kernel and refaults them (about 20% of a
  // pass-through query's time in bench/README.md's profile).
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_MMAP_THRESHOLD, 64 << 20);

  CLI::App app{"weir: a single-node stream processor with Flink's model"};
  app.set_version_flag("--version", "weir 0.1.0");
  app.require_subcommand(1);

  std::string path;
  weir::config::load_options load;
  std::size_t batch_size = 0;
  std::size_t parallelism = 0;
  bool quiet = false;

  auto* run = app.add_subcommand("run", "Run a pipeline to completion");
  run->footer(
    "Stopping: the first SIGINT (Ctrl-C) or SIGTERM stops the job gracefully: the\n"
    "sources stop reading, every operator hands on what it has emitted and the sinks\n"
    "flush and close (unfinished windows do not fire); with [checkpoint] the sources\n"
    "first take a final checkpoint that the sinks commit, so a rerun resumes exactly.\n"
    "A second signal ends weir at once, killed by that signal.\n"
    "Restoring: a run resumes from the newest checkpoint in [checkpoint] dir. If that\n"
    "one is damaged (or the store is), weir refuses to start (exit 1) and says which\n"
    "flag proceeds: --allow-rollback (an older checkpoint) or --fresh (no state).\n"
    "Exit codes: 0 finished; 1 failed or refused to restore; 2 bad configuration;\n"
    "130 / 143 stopped by SIGINT / SIGTERM (128 + the signal).");
  run->add_option("pipeline", path, "Pipeline TOML file or SQL script (.sql)")->required();
  run->add_option("--batch-size", batch_size,
                  "Override [job] batch_size (1 = a watermark after every record)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 20));
  run->add_option("--parallelism", parallelism,
                  "Override [job] parallelism (at most [job] max_parallelism)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{32768}));
  run->add_flag("-q,--quiet", quiet, "No status line, no progress messages and no summary (warnings and errors still print)");
  std::string log_level;
  run->add_option("--log-level", log_level,
                  "trace, debug, info, warn, error or off; overrides [job] log_level "
                  "(default info; warn with -q)")
    ->check([](const std::string& text) -> std::string {
      if (weir::parse_log_level(text))
        return {};
      return "must be one of trace, debug, info, warn, error, off; got '" + text + "'";
    });
  bool strict = false;
  run->add_flag("--strict", strict,
                "Fail the job on any bad or late record (job.max_bad_ratio and "
                "job.max_late_ratio 0)");
  bool fresh = false;
  run->add_flag("--fresh", fresh,
                "Start over from no state instead of resuming; the checkpoints in "
                "[checkpoint] dir are deleted once the new run's first checkpoint completes");
  bool allow_rollback = false;
  run->add_flag("--allow-rollback", allow_rollback,
                "When the newest checkpoint cannot be restored, restore the newest older one "
                "that can (output committed and input acknowledged after it are taken back)");
  std::string from_savepoint;
  run->add_option("--from-savepoint", from_savepoint,
                  "Restore from this savepoint directory (at any parallelism); the "
                  "checkpoints in [checkpoint] dir are deleted once the restored job's first "
                  "checkpoint completes");
  bool allow_non_restored = false;
  run->add_flag("--allow-non-restored-state", allow_non_restored,
                "With --from-savepoint: skip the state of operators the pipeline no longer has");
  std::string savepoint_on_stop;
  run->add_option("--savepoint-on-stop", savepoint_on_stop,
                  "On SIGINT/SIGTERM stop with a savepoint written to this directory "
                  "(needs [checkpoint])");

  auto* validate = app.add_subcommand("validate", "Check a pipeline and exit");
  validate->add_option("pipeline", path, "Pipeline TOML file or SQL script (.sql)")->required();

  // `weir explain`: the logical graph (and for SQL the equivalent TOML).
  auto* explain = app.add_subcommand(
    "explain", "Print the logical graph a pipeline plans to (for SQL also its TOML)");
  explain->add_option("pipeline", path, "Pipeline TOML file or SQL script (.sql)")->required();

  // `weir docs`: the key reference (docs/reference/keys.md) from the kinds'
  // key tables.
  auto* docs = app.add_subcommand(
    "docs", "Print the key reference (Markdown) generated from the kinds' key tables");

  // `weir checkpoints list DIR` / `show DIR [ID]`: read-only, no pipeline.
  auto* checkpoints = app.add_subcommand("checkpoints", "Inspect a checkpoint directory");
  checkpoints->require_subcommand(1);
  std::string checkpoint_dir;
  std::uint64_t checkpoint_id = 0;
  auto* cp_list = checkpoints->add_subcommand("list", "One line per stored checkpoint");
  cp_list->add_option("dir", checkpoint_dir, "checkpoint.dir of a job")->required();
  auto* cp_show = checkpoints->add_subcommand("show", "Details of one checkpoint");
  cp_show->add_option("dir", checkpoint_dir, "checkpoint.dir of a job")->required();
  auto* cp_id = cp_show->add_option("id", checkpoint_id,
                                    "Checkpoint id (default: the newest restorable)");

  auto* serve_cmd = app.add_subcommand(
    "serve", "Run pipelines and answer HTTP: JSON API, /metrics, live results, dashboard");
  serve_cmd->footer(
    "Listens on 127.0.0.1:8081 by default; any non-loopback address needs --token (or\n"
    "WEIR_SERVER_TOKEN): every request but GET /healthz must then carry\n"
    "'Authorization: Bearer <token>'. Port 0 picks a free port (printed on stderr).\n"
    "SIGINT / SIGTERM stop every job gracefully, then the server (exit 0).\n"
    "Exit codes: 0 stopped; 1 cannot listen; 2 bad configuration or options.");
  std::vector<std::string> serve_pipelines;
  std::string listen = "127.0.0.1:8081";
  weir::server::server_options serve_options;
  std::string header_timeout;
  serve_cmd->add_option("pipeline", serve_pipelines,
                        "Pipeline TOML files or SQL scripts (.sql) to run at start");
  serve_cmd->add_option("--listen", listen, "ADDR:PORT to listen on (default 127.0.0.1:8081)");
  serve_cmd->add_option("--token", serve_options.token,
                        "Bearer token required on every endpoint but /healthz");
  serve_cmd->add_option("--max-body-bytes", serve_options.max_body_bytes,
                        "Largest body of POST /jobs, savepoints and stop, counted as read and "
                        "as decompressed (default 1 MiB; larger gets 413)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
  serve_cmd->add_option("--max-body-bytes-in-flight", serve_options.max_body_bytes_in_flight,
                        "Request body bytes held at once over all connections (default 64 MiB; "
                        "a body past it gets 503 unless it is the only one)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 40));
  serve_cmd->add_option("--header-timeout", header_timeout,
                        "Longest a request's line and headers may take from its first byte "
                        "(default 10s; later gets 408 and the connection closes)");
  serve_cmd->add_option("--max-connections", serve_options.max_connections,
                        "Connections open at once, a thread each (default 512; more get 503)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{100'000}));
  serve_cmd->add_option("--max-connections-per-client", serve_options.max_connections_per_client,
                        "Connections open at once from one client address (default 32; more "
                        "get 429)")
    ->check(CLI::Range(std::size_t{1}, std::size_t{100'000}));
  std::string serve_log_level;
  serve_cmd->add_option("--log-level", serve_log_level,
                        "trace, debug, info, warn, error or off (default: each job's)");
  bool serve_allow_rollback = false;
  serve_cmd->add_flag("--allow-rollback", serve_allow_rollback,
                      "For the pipelines given here: as weir run --allow-rollback");
  bool serve_fresh = false;
  serve_cmd->add_flag("--fresh", serve_fresh,
                      "For the pipelines given here: as weir run --fresh");
  serve_cmd->add_option("--savepoint-dir", serve_options.savepoint_dir,
                        "Root of savepoints taken over HTTP; request targets resolve inside it "
                        "(default: ./savepoints)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }

  if (serve_cmd->parsed())
    return serve(serve_pipelines, listen, serve_log_level, serve_options, header_timeout,
                 serve_allow_rollback, serve_fresh);

  if (docs->parsed()) {
    std::fputs(weir::config::key_reference_markdown().c_str(), stdout);
    return 0;
  }

  if (checkpoints->parsed()) {
    std::string out, err;
    auto id = cp_id->count() > 0 ? std::optional<std::uint64_t>{checkpoint_id} : std::nullopt;
    int rc = weir::checkpoint::run_checkpoints_command(cp_list->parsed() ? "list" : "show",
                                                       checkpoint_dir, id, out, err);
    std::fputs(out.c_str(), stdout);
    std::fputs(err.c_str(), stderr);
    return rc;
  }

  if (batch_size > 0)
    load.batch_size = batch_size;
  if (parallelism > 0)
    load.parallelism = parallelism;

  std::string compiled_toml;
  auto loaded = load_any(path, load, &compiled_toml);
  if (!loaded) {
    std::fprintf(stderr, "%s\n", weir::config::to_string(loaded.error()).c_str());
    auto n = loaded.error().size();
    std::fprintf(stderr, "%zu error%s; nothing was started\n", n, n == 1 ? "" : "s");
    return 2;
  }
  auto& job = **loaded;
  if (validate->parsed()) {
    std::fprintf(stderr, "%s: ok\n", path.c_str());
    return 0;
  }
  if (explain->parsed()) {
    std::fputs(explain_graph(job).c_str(), stdout);
    if (is_sql(path))
      std::printf("\n-- the equivalent TOML pipeline:\n%s", compiled_toml.c_str());
    return 0;
  }
  if (auto level = weir::parse_log_level(log_level))
    job.options().log_level = *level;
  if (quiet) {
    job.options().status_interval = std::chrono::milliseconds{0};
    // -q logs at warn at least, unless --log-level says which level.
    job.options().quiet = log_level.empty();
  }
  if (fresh)
    job.options().checkpoint.fresh = true;
  job.options().checkpoint.from_savepoint = from_savepoint;
  job.options().checkpoint.allow_rollback = allow_rollback;
  job.options().checkpoint.allow_non_restored_state = allow_non_restored;
  if (strict) {
    job.options().max_bad_ratio = 0.0;
    job.options().max_late_ratio = 0.0;
    job.options().strict = true;
  }
  weir::job_result result;
  {
    stop_on_signals guard{job, quiet, savepoint_on_stop};
    result = job.execute();
  }
  if (!quiet)
    print_summary(job, result);
  else
    print_loss_warnings(result, "weir: ");
  if (!result.ok) {
    std::fprintf(stderr, "weir: job failed: %s\n", result.error.c_str());
    return 1;
  }
  if (result.stopped && stop_on_signals::signal() != 0)
    return 128 + stop_on_signals::signal();
  return 0;
}
