#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the real `weir` binary on the real access log.

Each test runs weir in a fresh temporary folder holding a link to the
repository's data/ (so the pipeline's relative paths resolve as from the
repository root) and checks its outputs against an independent recount of
data/apache_access_logs/apache_logs_anon.jsonl.

usage: pipeline_tests.py --weir BIN --repo DIR TEST
"""
import argparse
import collections
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

# How much slower this tree runs weir (WEIR_TEST_TIME_SCALE: 4 under
# ThreadSanitizer): timeouts are multiplied by it.
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))

LOG = "data/apache_access_logs/apache_logs_anon.log"
JSONL = "data/apache_access_logs/apache_logs_anon.jsonl"
DASHBOARD = "examples/access-log-dashboard/pipeline.toml"
OUT = "out/access-log-dashboard"


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def load_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


class Sandbox:
    def __init__(self, args):
        self.args = args
        self.tmp = pathlib.Path(tempfile.mkdtemp(prefix="weir-it-"))
        self.work = self.tmp / "work"
        self.work.mkdir()
        os.symlink(pathlib.Path(args.repo).resolve() / "data", self.work / "data")

    def run(self, *weir_args, expect=0, toml_text=None):
        argv = [self.args.weir, *weir_args]
        if toml_text is not None:
            (self.work / "pipeline.toml").write_text(toml_text)
        proc = subprocess.run(argv, cwd=self.work, capture_output=True, text=True, timeout=300 * SCALE)
        if expect is not None and proc.returncode != expect:
            raise Failure(f"{' '.join(argv)} exited {proc.returncode}, expected {expect}\n"
                          f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}")
        return proc

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


def recount(repo):
    """Per (path, minute) views and bytes, per (status, minute) requests."""
    views = collections.Counter()
    volume = collections.Counter()
    status = collections.Counter()
    for r in load_jsonl(pathlib.Path(repo) / JSONL):
        start = r["ts"] // 60000 * 60000
        views[(r["path"], start)] += 1
        volume[(r["path"], start)] += r["bytes"] or 0
        status[(r["status"], start)] += 1
    return views, volume, status


def run_dashboard(args, parallelism):
    box = Sandbox(args)
    try:
        dashboard = str(pathlib.Path(args.repo) / DASHBOARD)
        proc = box.run("run", dashboard, "--parallelism", str(parallelism))
        outputs = {}
        for name in ["views", "views_late", "status_per_minute", "errors", "bad_records"]:
            path = box.work / OUT / f"{name}.jsonl"
            check(path.exists(), f"the job wrote no {OUT}/{name}.jsonl")
            outputs[name] = load_jsonl(path)
        return proc, outputs
    finally:
        box.close()


def test_dashboard(args):
    proc, out = run_dashboard(args, 2)
    views = out["views"]
    check(sum(r["views"] for r in views) == 9999,
          f"sum of views is {sum(r['views'] for r in views)}, expected 9,999")
    bad = out["bad_records"]
    check(len(bad) == 1, f"dead-letter file holds {len(bad)} records, expected 1")
    check(bad[0]["line"] == 8899, f"dead-lettered line {bad[0]['line']}, expected 8899")
    check(bad[0]["file"].endswith("apache_logs_anon.log"), f"origin file: {bad[0]['file']}")
    check(bad[0]["origin"].endswith("apache_logs_anon.log:8899"), f"origin: {bad[0]['origin']}")
    check(bad[0]["reason"], "the dead-lettered record carries no reason")
    check(out["views_late"] == [], f"{len(out['views_late'])} late records with a 60 s bound")
    check("late records     0" in proc.stderr, "summary does not report 0 late records")
    check("bad records      1" in proc.stderr, "summary does not report 1 bad record")

    want_views, want_bytes, want_status = recount(args.repo)
    got_views = {(r["path"], r["window_start"]): r["views"] for r in views}
    check(len(got_views) == len(views), "a (path, window) appears twice in views")
    check(got_views == dict(want_views),
          f"per-window views differ from the recount: "
          f"{len(set(got_views.items()) ^ set(want_views.items()))} mismatches")
    for r in views:
        check(r["window_end"] - r["window_start"] == 60000, f"window not 1 minute: {r}")
        want = want_bytes[(r["path"], r["window_start"])]
        got = r["bytes"] or 0
        check(got == want, f"bytes of {r['path']} at {r['window_start']}: {got}, expected {want}")
    got_status = {(r["status"], r["window_start"]): r["requests"] for r in out["status_per_minute"]}
    check(got_status == dict(want_status), "per-minute status counts differ from the recount")
    errors = out["errors"]
    want_errors = sum(n for (s, _), n in want_status.items() if s >= 400)
    check(len(errors) == want_errors, f"{len(errors)} error records, expected {want_errors}")
    check(all(r["status"] >= 400 for r in errors), "the errors branch let a status < 400 through")
    # The readable summary on stdout.
    check("Top pages" in proc.stdout, "no 'Top pages' table on stdout")
    check("Requests by status" in proc.stdout, "no 'Requests by status' table on stdout")
    check(proc.stdout.index("Top pages") < proc.stdout.index("Requests by status"),
          "the summary tables are not in the order of their [[sink]]s")
    totals = collections.Counter()
    for (p, _), n in want_views.items():
        totals[p] += n
    top_path, top_views = max(totals.items(), key=lambda x: (x[1], x[0]))
    check(top_path in proc.stdout, f"the busiest page {top_path} is not in the summary")
    check("error rate" in proc.stdout, "no error rate line on stdout")
    # The periodic status line and the final summary on stderr.
    check("records read     9,999" in proc.stderr, "summary does not report 9,999 records read")


def test_parallelism_invariance(args):
    _, one = run_dashboard(args, 1)
    _, two = run_dashboard(args, 2)
    for name in ["views", "views_late", "status_per_minute", "errors", "bad_records"]:
        a = sorted(json.dumps(r, sort_keys=True) for r in one[name])
        b = sorted(json.dumps(r, sort_keys=True) for r in two[name])
        check(a == b, f"{name}: parallelism 1 and 2 differ ({len(a)} vs {len(b)} rows)")
    check(len(one["views"]) > 1000, "suspiciously few view rows")


POLICY_TOML = """
[job]
name = "policy"
parallelism = 2
on_bad_record = "{policy}"
{extra}

[[source]]
name = "logs"
type = "file"
path = "{log}"
format = "apache_combined"
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "60s" }}

[[operator]]
name = "per_status"
type = "window"
input = "logs"
key_by = ["status"]
window = {{ type = "tumbling", size = "1h" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "per_status"
type = "file"
path = "{sink_path}"
"""


def test_bad_record_fail(args):
    box = Sandbox(args)
    try:
        text = POLICY_TOML.format(policy="fail", extra="", log=LOG, sink_path="out/x.jsonl")
        proc = box.run("run", "pipeline.toml", toml_text=text, expect=1)
        check("apache_logs_anon.log:8899" in proc.stderr,
              f"the failure does not name file:line:\n{proc.stderr[-2000:]}")
        check("operator 'logs'" in proc.stderr and "subtask 0/1" in proc.stderr,
              f"the failure does not name the operator and subtask:\n{proc.stderr[-2000:]}")
    finally:
        box.close()


def test_bad_record_skip(args):
    box = Sandbox(args)
    try:
        text = POLICY_TOML.format(policy="skip", extra="", log=LOG, sink_path="out/x.jsonl")
        proc = box.run("run", "pipeline.toml", toml_text=text)
        rows = load_jsonl(box.work / "out/x.jsonl")
        check(sum(r["n"] for r in rows) == 9999, "skip lost or invented records")
        check("bad records      1 (skipped)" in proc.stderr, "the skipped record is not counted")
        check(not (box.work / "out/bad_records.jsonl").exists(), "skip wrote a dead-letter file")
    finally:
        box.close()


def test_subtask_failure(args):
    box = Sandbox(args)
    try:
        # A sink that cannot create its file (a directory of that name
        # exists) is refused at load time now (loss_tests.py
        # load-time-paths); a subtask that fails while running is the sink
        # throwing after its first rows (job.inject_failure, no restarts).
        (box.work / "out" / "blocked.jsonl").mkdir(parents=True)
        text = POLICY_TOML.format(policy="skip", extra="", log=LOG,
                                  sink_path="out/blocked.jsonl")
        proc = box.run("run", "pipeline.toml", toml_text=text, expect=2)
        check("blocked.jsonl\" is a directory" in proc.stderr, proc.stderr[-2000:])
        text = POLICY_TOML.format(
            policy="skip", extra='inject_failure = { operator = "out", after_records = 5 }',
            log=LOG, sink_path="out/x.jsonl")
        proc = box.run("run", "pipeline.toml", toml_text=text, expect=1)
        check("operator 'out'" in proc.stderr, f"no operator named:\n{proc.stderr[-2000:]}")
        check("subtask 0/1" in proc.stderr, f"no subtask named:\n{proc.stderr[-2000:]}")
        check("injected failure" in proc.stderr, f"no reason given:\n{proc.stderr[-2000:]}")
    finally:
        box.close()


def test_embedded_example(args):
    box = Sandbox(args)
    try:
        out = box.work / "bots.jsonl"
        proc = subprocess.run([args.example, str(box.work / LOG), str(out)],
                              capture_output=True, text=True, timeout=300 * SCALE)
        check(proc.returncode == 0, f"example exited {proc.returncode}: {proc.stderr}")
        rows = load_jsonl(out)
        final = {}
        for r in rows:
            final[r["agent"]] = max(final.get(r["agent"], 0), r["requests"])
        want = collections.Counter(
            r["agent"] for r in load_jsonl(pathlib.Path(args.repo) / JSONL)
            if r["agent"] and "bot" in r["agent"].lower())
        check(final == dict(want), f"bot counts differ: {len(final)} agents vs {len(want)}")
        check(len(rows) == sum(want.values()), "one running count per bot request expected")
        check("read 9999 records (1 bad)" in proc.stdout, f"unexpected report: {proc.stdout}")
    finally:
        box.close()


def test_click_counter(args):
    box = Sandbox(args)
    try:
        out = box.work / "clicks.jsonl"
        proc = subprocess.run([args.example, str(box.work / LOG), str(out), "2"],
                              capture_output=True, text=True, timeout=300 * SCALE)
        check(proc.returncode == 0, f"example exited {proc.returncode}: {proc.stderr}")
        rows = load_jsonl(out)
        want = collections.Counter(r["client"] for r in load_jsonl(pathlib.Path(args.repo) / JSONL))
        final = {}
        seen = collections.Counter()
        for r in rows:
            client = r["client"]
            seen[client] += 1
            # Per client the counts arrive in order: 1, 2, 3, ...
            check(r["clicks"] == seen[client],
                  f"client {client}: count {r['clicks']} where {seen[client]} was expected")
            final[client] = r["clicks"]
        check(final == dict(want), f"click counts differ: {len(final)} clients vs {len(want)}")
        check(len(rows) == sum(want.values()), "one running count per request expected")
        check("read 9999 records (1 bad)" in proc.stdout, f"unexpected report: {proc.stdout}")
    finally:
        box.close()


RESTART_TOML = """
[job]
name = "sink-restart"
parallelism = 2
status_interval = "0s"
{extra}

[checkpoint]
interval = "50ms"
dir = "state"

[[source]]
name = "gen"
type = "generator"
count = 300000
rate = 200000
seed = 11
fields = {{ key = "rand_int(seq, 1, 0, 49)", value = "rand_int(seq, 2, 1, 100)", tag = "rand_string(seq, 3, 2)" }}

[[sink]]
name = "top"
input = "gen"
type = "summary"
title = "Top keys"
group_by = ["key"]
aggregate = {{ n = "count(*)", total = "sum(value)", low = "min(value)", tags = "count_distinct(tag)" }}
limit = 100

[sink.highlight]
label = "large values"
where = "value > 90"

[[sink]]
name = "all"
input = "gen"
type = "blackhole"
digest = true
"""


def sink_outputs(box, extra):
    """Runs RESTART_TOML from a fresh checkpoint dir: (summary text, blackhole
    reports, stderr)."""
    shutil.rmtree(box.work / "state", ignore_errors=True)
    proc = box.run("run", "pipeline.toml", "--fresh", toml_text=RESTART_TOML.format(extra=extra))
    lines = proc.stdout.splitlines()
    reports = [json.loads(l) for l in lines if l.startswith("{")]
    table = "\n".join(l for l in lines if not l.startswith("{"))
    return table, reports, proc.stderr


def test_sink_restart(args):
    """The summary and blackhole sinks keep their state across an in-process
    restart from a checkpoint: the same table, rows and digest."""
    box = Sandbox(args)
    try:
        want_table, want_reports, _ = sink_outputs(box, "")
        check("Top keys" in want_table and "large values: " in want_table,
              f"no summary table:\n{want_table}")
        check(sum(r["rows"] for r in want_reports) == 300000,
              f"the blackhole saw {sum(r['rows'] for r in want_reports)} rows, expected 300,000")
        table, reports, err = sink_outputs(
            box, 'restart = { attempts = 3, delay = "50ms" }\n'
                 'inject_failure = { operator = "top", after_records = 200000 }')
        check("injected failure" in err, f"the injected failure did not happen:\n{err[-2000:]}")
        check("1 restart" in err and "restored from #" in err,
              f"no restart from a checkpoint reported:\n{err[-2000:]}")
        check(table == want_table,
              f"the restarted job's summary differs:\n{table}\n--- uninterrupted:\n{want_table}")
        check(len(reports) == len(want_reports) == 2,
              f"{len(reports)} blackhole reports, expected one per subtask (2)")
        check(sum(r["rows"] for r in reports) == 300000,
              f"the restarted blackhole reports {sum(r['rows'] for r in reports)} rows")
        digest = lambda rs: sum(int(r["digest"], 16) for r in rs) % 2**64
        check(digest(reports) == digest(want_reports), "the restarted blackhole's digest differs")
    finally:
        box.close()


TESTS = {
    "dashboard": test_dashboard,
    "parallelism-invariance": test_parallelism_invariance,
    "bad-record-fail": test_bad_record_fail,
    "bad-record-skip": test_bad_record_skip,
    "subtask-failure": test_subtask_failure,
    "embedded-example": test_embedded_example,
    "click-counter": test_click_counter,
    "sink-restart": test_sink_restart,
}


LOCAL_AGG_TOML = """
[job]
name = "two-phase"
parallelism = {parallelism}
on_bad_record = "skip"

[[source]]
name = "logs"
type = "file"
path = "{log}"
format = "apache_combined"
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "60s" }}

[[operator]]
name = "per_status"
type = "window"
input = "logs"
key_by = ["status"]
window = {{ type = "sliding", size = "10m", slide = "5m" }}
aggregate = {{ n = "count(*)", bytes = "sum(bytes)", lo = "min(bytes)", hi = "max(bytes)", paths = "count_distinct(path)" }}
local_aggregation = {local}

[[sink]]
name = "out"
input = "per_status"
type = "file"
path = "out.jsonl"
"""


def test_local_aggregation(args):
    """Two-phase (local/global) window aggregation gives the rows one phase gives."""
    results = {}
    for parallelism in (1, 2):
        for local in ("true", "false"):
            box = Sandbox(args)
            try:
                proc = box.run("run", "pipeline.toml", toml_text=LOCAL_AGG_TOML.format(
                    parallelism=parallelism, log=LOG, local=local))
                check("late records     0" in proc.stderr, "late records with a 60 s bound")
                rows = load_jsonl(box.work / "out.jsonl")
                results[(parallelism, local)] = sorted(json.dumps(r, sort_keys=True) for r in rows)
            finally:
                box.close()
    reference = results[(1, "false")]
    for key, rows in results.items():
        check(rows == reference, f"parallelism {key[0]}, local_aggregation {key[1]}: "
              f"{len(rows)} rows differ from one-phase parallelism 1 ({len(reference)} rows)")
    # Every parsed record lies in two 10-minute windows sliding by 5 minutes.
    total = sum(json.loads(r)["n"] for r in reference)
    good = sum(1 for _ in load_jsonl(pathlib.Path(args.repo) / JSONL))
    check(total == 2 * good, f"window counts sum to {total}, expected 2 x {good}")


TESTS["local-aggregation"] = test_local_aggregation


GENERATED_TOML = """
[job]
name = "generated"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "50ms"
dir = "state"

[[source]]
name = "gen"
type = "generator"
count = 40000
rate = 40000
seed = 7
fields = {{ key = "rand_int(seq, 1, 0, 99)", ts = "to_timestamp(1600000000000 + seq)" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "counts"
type = "window"
input = "gen"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "counts"
type = "file"
path = "out"
"""


def test_cli_overrides(args):
    """Out-of-range --parallelism and --batch-size are usage errors (exit 2),
    and a generated source is not resumed at another parallelism: resuming
    one subtask's position alone would emit records twice."""
    box = Sandbox(args)
    try:
        toml = GENERATED_TOML.format()
        for bad in (["--parallelism", "-1"], ["--parallelism", "0"], ["--batch-size", "0"],
                    ["--parallelism", "40000"]):
            proc = box.run("run", "pipeline.toml", *bad, expect=2, toml_text=toml)
            check(bad[0] in proc.stderr, f"{bad}: the error does not name the option:\n"
                  f"{proc.stderr[-1000:]}")
        proc = box.run("run", "pipeline.toml", "--parallelism", "200", expect=2)
        check("pipeline.toml:2:1: error: --parallelism 200 must lie in 1..job.max_parallelism"
              " (128)" in proc.stderr, f"no config error for --parallelism 200:\n{proc.stderr}")

        box.run("run", "pipeline.toml", "-q")
        listing = box.run("checkpoints", "list", "state").stdout
        check("no checkpoints" not in listing and listing.strip(),
              f"the parallelism-2 run completed no checkpoint:\n{listing}")
        check("gen[0/2]: event " in listing, f"generator positions are not event numbers:\n{listing}")
        proc = box.run("run", "pipeline.toml", "-q", "--parallelism", "1", expect=1)
        check("holds source 'gen' at parallelism 2" in proc.stderr
              and "resumes only at the parallelism it ran with" in proc.stderr,
              f"no clear error restoring at parallelism 1:\n{proc.stderr[-2000:]}")
        # The same parallelism resumes, and --fresh starts over at any. The
        # resume is reported, except with -q.
        proc = box.run("run", "pipeline.toml", "-q")
        check("restoring from checkpoint" not in proc.stderr,
              f"-q printed the restore:\n{proc.stderr[-1000:]}")
        proc = box.run("run", "pipeline.toml")
        check("restoring from checkpoint" in proc.stderr,
              f"a resumed run did not say so:\n{proc.stderr[-1000:]}")
        box.run("run", "pipeline.toml", "-q", "--parallelism", "1", "--fresh")
        rows = [r for f in sorted((box.work / "out").glob("*.jsonl")) for r in load_jsonl(f)]
        # A failure injection that never fires is a warning, not silence.
        text = toml.replace('status_interval = "0s"',
                            'status_interval = "0s"\nrestart = { attempts = 1, delay = "10ms" }\n'
                            'inject_failure = { operator = "counts", after_records = 1000000 }')
        proc = box.run("run", "pipeline.toml", "-q", "--fresh", toml_text=text)
        check("no failure was injected: subtask 0 of operator 'counts' finished before reading "
              "1000000 records" in proc.stderr,
              f"no warning for an injection that never fired:\n{proc.stderr[-1000:]}")
        check(sum(r["n"] for r in rows) == 40000,
              f"after --fresh at parallelism 1 the window counts sum to "
              f"{sum(r['n'] for r in rows)}, expected 40,000")
    finally:
        box.close()


TESTS["cli-overrides"] = test_cli_overrides


def test_log_level(args):
    """--log-level filters weir's log lines, never the summary: warn hides the
    info line "restoring from checkpoint N" and keeps warnings, error hides
    those too; -q leaves the level to an explicit --log-level; an unknown
    level is a usage error."""
    box = Sandbox(args)
    try:
        toml = GENERATED_TOML.format()
        proc = box.run("run", "pipeline.toml", "--log-level", "loud", expect=2, toml_text=toml)
        check("--log-level" in proc.stderr and "loud" in proc.stderr,
              f"the error does not name the option and the value:\n{proc.stderr[-1000:]}")
        box.run("run", "pipeline.toml", "-q")  # leaves checkpoints to resume from
        proc = box.run("run", "pipeline.toml")
        check("[info] weir.checkpoint: job 'generated': restoring from checkpoint " in proc.stderr,
              f"no info line for the restore:\n{proc.stderr[-1000:]}")
        proc = box.run("run", "pipeline.toml", "--log-level", "warn")
        check("restoring from checkpoint" not in proc.stderr,
              f"--log-level warn printed the restore:\n{proc.stderr[-1000:]}")
        check("records read" in proc.stderr, "--log-level warn hid the summary")
        proc = box.run("run", "pipeline.toml", "-q", "--log-level", "info")
        check("restoring from checkpoint" in proc.stderr,
              f"-q --log-level info hid the restore:\n{proc.stderr[-1000:]}")
        check("records read" not in proc.stderr, "-q printed the summary")
        text = toml.replace('status_interval = "0s"',
                            'status_interval = "0s"\nrestart = { attempts = 1, delay = "10ms" }\n'
                            'inject_failure = { operator = "counts", after_records = 1000000 }')
        proc = box.run("run", "pipeline.toml", "--fresh", "--log-level", "warn", toml_text=text)
        check("[warning] weir.runtime: job 'generated': job.inject_failure: no failure was "
              "injected" in proc.stderr, f"--log-level warn hid a warning:\n{proc.stderr[-1000:]}")
        proc = box.run("run", "pipeline.toml", "--fresh", "--log-level", "error")
        check("no failure was injected" not in proc.stderr,
              f"--log-level error printed a warning:\n{proc.stderr[-1000:]}")
        check("records read" in proc.stderr, "--log-level error hid the summary")
    finally:
        box.close()


TESTS["log-level"] = test_log_level


def test_dead_letter_rerun(args):
    """Dead letters of an exactly-once job are committed with its checkpoints:
    a run that fails before any checkpoint completed commits none of them, and
    the rerun that completes writes each bad record once. Each failing run
    fails (an injected failure, no restart) after the malformed line (8,899
    of 10,000) was dead-lettered and before the end of its input, so no
    checkpoint completes: the interval is an hour, and the final checkpoint
    comes only after the end of the input."""
    box = Sandbox(args)
    try:
        text = (pathlib.Path(args.repo) / DASHBOARD).read_text()
        failing = text.replace('dead_letter = {', 'inject_failure = { operator = "errors", '
                               'after_records = 4900 }\ndead_letter = {', 1)
        check(failing != text, "the dashboard has no dead_letter key to put the failure before")
        checkpoint = '\n[checkpoint]\ninterval = "1h"\ndir = "state"\n'
        dead_letters = box.work / OUT / "bad_records.jsonl"
        for attempt in (1, 2):
            proc = box.run("run", "pipeline.toml", "-q", toml_text=failing + checkpoint, expect=1)
            check("injected failure" in proc.stderr,
                  f"run {attempt} did not fail by the injected failure:\n{proc.stderr[-1000:]}")
            listing = box.run("checkpoints", "list", "state").stdout
            check("no checkpoints" in listing, f"a checkpoint completed:\n{listing}")
            bad = load_jsonl(dead_letters) if dead_letters.exists() else []
            check(not bad, f"run {attempt} failed before any checkpoint, yet the dead-letter "
                           f"file holds {len(bad)} records")
        box.run("run", "pipeline.toml", "-q", toml_text=text + checkpoint)
        bad = load_jsonl(dead_letters)
        check(len(bad) == 1 and bad[0].get("line") == 8899,
              f"the completing rerun: the dead-letter file holds {len(bad)} records, expected "
              f"the one of line 8,899: {bad[:2]}")
    finally:
        box.close()


TESTS["dead-letter-rerun"] = test_dead_letter_rerun


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--weir", required=True)
    p.add_argument("--example")
    p.add_argument("--repo", required=True)
    p.add_argument("test", choices=sorted(TESTS))
    args = p.parse_args()
    try:
        TESTS[args.test](args)
    except Failure as e:
        print(f"FAIL {args.test}: {e}")
        sys.exit(1)
    print(f"ok {args.test}")


if __name__ == "__main__":
    main()
