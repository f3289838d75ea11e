// SPDX-License-Identifier: Apache-2.0
// The `weir` executable: load a TOML pipeline, run it, report, exit.
//   exit 0: the job finished; 1: the job failed; 2: the configuration is bad.
// What this file prints on stderr itself (configuration errors, the
// end-of-job summary, why the job failed, `validate`'s verdict) is the CLI's
// user interface, in a fixed form tests and scripts read, printed at every log
// level; everything else weir says goes through its loggers
// (weir/core/log.hpp), filtered by --log-level.
#include "weir/api/job.hpp"
#include "weir/checkpoint/checkpoint_report.hpp"
#include "weir/config/loader.hpp"
#include "weir/core/log_level.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <malloc.h>
#include <optional>
#include <string>

namespace {

std::string with_commas(std::uint64_t n) {
  auto s = std::to_string(n);
  for (auto i = static_cast<int>(s.size()) - 3; i > 0; i -= 3)
    s.insert(static_cast<std::size_t>(i), ",");
  return s;
}

/// The end-of-job summary: user interface, not a log message (see the top).
void print_summary(const weir::job& j, const weir::job_result& r) {
  const auto& o = j.options();
  std::fprintf(stderr, "\n[%s] %s in %.2f s\n", o.name.c_str(),
               r.ok ? "finished" : "FAILED",
               static_cast<double>(r.duration.count()) / 1000.0);
  std::fprintf(stderr, "  records read     %s\n", with_commas(r.records_read).c_str());
  std::fprintf(stderr, "  records written  %s\n", with_commas(r.records_written).c_str());
  std::string bad = with_commas(r.bad_records);
  if (r.bad_records > 0) {
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
    if (r.restored_checkpoint_id > 0)
      cp += ", restored from #" + std::to_string(r.restored_checkpoint_id);
    if (r.restarts > 0)
      cp += ", " + std::to_string(r.restarts) + " restart" + (r.restarts == 1 ? "" : "s");
    std::fprintf(stderr, "  checkpoints      %s\n", cp.c_str());
  } else {
    std::fprintf(stderr, "  checkpoints      off\n");
  }
}

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
  run->add_option("pipeline", path, "Pipeline TOML file")->required();
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
  bool fresh = false;
  run->add_flag("--fresh", fresh,
                "Start over: discard the checkpoints in [checkpoint] dir instead of resuming");

  auto* validate = app.add_subcommand("validate", "Check a pipeline and exit");
  validate->add_option("pipeline", path, "Pipeline TOML file")->required();

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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
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

  auto loaded = weir::config::load_pipeline_file(path, load);
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
  if (auto level = weir::parse_log_level(log_level))
    job.options().log_level = *level;
  if (quiet) {
    job.options().status_interval = std::chrono::milliseconds{0};
    // -q logs at warn at least, unless --log-level says which level.
    job.options().quiet = log_level.empty();
  }
  if (fresh)
    job.options().checkpoint.fresh = true;
  auto result = job.execute();
  if (!quiet)
    print_summary(job, result);
  if (!result.ok) {
    std::fprintf(stderr, "weir: job failed: %s\n", result.error.c_str());
    return 1;
  }
  return 0;
}
