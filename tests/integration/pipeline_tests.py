# SPDX-License-Identifier: Apache-2.0
"""End-to-end tests of the real `weir` binary on the real access log.

Each test runs weir in a fresh temporary folder holding a link to the
repository's data/ (so the pipeline's relative paths resolve as from the
repository root) and checks its outputs against an independent recount of
data/apache_access_logs/apache_logs_anon.jsonl.

The tests of the examples take their binaries with --example (the
embedded_bot_counter and click_counter targets).
"""
import collections
import json
import os
import pathlib
import shutil
import tempfile

from weirtest import Sandbox, read_jsonl
from weirtest.click_counter import check_click_counter, check_embedded_bot_counter

LOG = "data/apache_access_logs/apache_logs_anon.log"
JSONL = "data/apache_access_logs/apache_logs_anon.jsonl"
DASHBOARD = "examples/access-log-dashboard/pipeline.toml"
OUT = "out/access-log-dashboard"


def data_sandbox(weir, work, repo):
    """A fresh folder under `work` holding a link to the repository's data/
    (the pipelines' relative paths resolve as from the repository root)."""
    box = Sandbox(weir, tempfile.mkdtemp(dir=work))
    os.symlink(pathlib.Path(repo).resolve() / "data", box.work / "data")
    return box


def recount(repo):
    """Per (path, minute) views and bytes, per (status, minute) requests."""
    views = collections.Counter()
    volume = collections.Counter()
    status = collections.Counter()
    for r in read_jsonl(pathlib.Path(repo) / JSONL):
        start = r["ts"] // 60000 * 60000
        views[(r["path"], start)] += 1
        volume[(r["path"], start)] += r["bytes"] or 0
        status[(r["status"], start)] += 1
    return views, volume, status


def run_dashboard(weir, work, repo, parallelism):
    box = data_sandbox(weir, work, repo)
    dashboard = str(pathlib.Path(repo) / DASHBOARD)
    proc = box.run("run", dashboard, "--parallelism", str(parallelism))
    outputs = {}
    for name in ["views", "views_late", "status_per_minute", "errors", "bad_records"]:
        path = box.work / OUT / f"{name}.jsonl"
        assert path.exists(), f"the job wrote no {OUT}/{name}.jsonl"
        outputs[name] = read_jsonl(path)
    return proc, outputs


def test_dashboard(weir, work, repo):
    proc, out = run_dashboard(weir, work, repo, 2)
    views = out["views"]
    assert sum(r["views"] for r in views) == 9999, (
        f"sum of views is {sum(r['views'] for r in views)}, expected 9,999")
    bad = out["bad_records"]
    assert len(bad) == 1, f"dead-letter file holds {len(bad)} records, expected 1"
    assert bad[0]["line"] == 8899, f"dead-lettered line {bad[0]['line']}, expected 8899"
    assert bad[0]["file"].endswith("apache_logs_anon.log"), f"origin file: {bad[0]['file']}"
    assert bad[0]["origin"].endswith("apache_logs_anon.log:8899"), f"origin: {bad[0]['origin']}"
    assert bad[0]["reason"], "the dead-lettered record carries no reason"
    assert out["views_late"] == [], f"{len(out['views_late'])} late records with a 60 s bound"
    assert "late records     0" in proc.stderr, "summary does not report 0 late records"
    assert "bad records      1" in proc.stderr, "summary does not report 1 bad record"

    want_views, want_bytes, want_status = recount(repo)
    got_views = {(r["path"], r["window_start"]): r["views"] for r in views}
    assert len(got_views) == len(views), "a (path, window) appears twice in views"
    assert got_views == dict(want_views), (
        f"per-window views differ from the recount: "
        f"{len(set(got_views.items()) ^ set(want_views.items()))} mismatches")
    for r in views:
        assert r["window_end"] - r["window_start"] == 60000, f"window not 1 minute: {r}"
        want = want_bytes[(r["path"], r["window_start"])]
        got = r["bytes"] or 0
        assert got == want, f"bytes of {r['path']} at {r['window_start']}: {got}, expected {want}"
    got_status = {(r["status"], r["window_start"]): r["requests"] for r in out["status_per_minute"]}
    assert got_status == dict(want_status), "per-minute status counts differ from the recount"
    errors = out["errors"]
    want_errors = sum(n for (s, _), n in want_status.items() if s >= 400)
    assert len(errors) == want_errors, f"{len(errors)} error records, expected {want_errors}"
    assert all(r["status"] >= 400 for r in errors), "the errors branch let a status < 400 through"
    # The readable summary on stdout.
    assert "Top pages" in proc.stdout, "no 'Top pages' table on stdout"
    assert "Requests by status" in proc.stdout, "no 'Requests by status' table on stdout"
    assert proc.stdout.index("Top pages") < proc.stdout.index("Requests by status"), (
        "the summary tables are not in the order of their [[sink]]s")
    totals = collections.Counter()
    for (p, _), n in want_views.items():
        totals[p] += n
    top_path, top_views = max(totals.items(), key=lambda x: (x[1], x[0]))
    assert top_path in proc.stdout, f"the busiest page {top_path} is not in the summary"
    assert "error rate" in proc.stdout, "no error rate line on stdout"
    # The periodic status line and the final summary on stderr.
    assert "records read     9,999" in proc.stderr, "summary does not report 9,999 records read"


def test_parallelism_invariance(weir, work, repo):
    _, one = run_dashboard(weir, work, repo, 1)
    _, two = run_dashboard(weir, work, repo, 2)
    for name in ["views", "views_late", "status_per_minute", "errors", "bad_records"]:
        a = sorted(json.dumps(r, sort_keys=True) for r in one[name])
        b = sorted(json.dumps(r, sort_keys=True) for r in two[name])
        assert a == b, f"{name}: parallelism 1 and 2 differ ({len(a)} vs {len(b)} rows)"
    assert len(one["views"]) > 1000, "suspiciously few view rows"


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


def test_bad_record_fail(weir, work, repo):
    box = data_sandbox(weir, work, repo)
    text = POLICY_TOML.format(policy="fail", extra="", log=LOG, sink_path="out/x.jsonl")
    proc = box.run("run", "pipeline.toml", toml_text=text, expect=1)
    assert "apache_logs_anon.log:8899" in proc.stderr, (
        f"the failure does not name file:line:\n{proc.stderr[-2000:]}")
    assert "operator 'logs'" in proc.stderr and "subtask 0/1" in proc.stderr, (
        f"the failure does not name the operator and subtask:\n{proc.stderr[-2000:]}")


def test_bad_record_skip(weir, work, repo):
    box = data_sandbox(weir, work, repo)
    text = POLICY_TOML.format(policy="skip", extra="", log=LOG, sink_path="out/x.jsonl")
    proc = box.run("run", "pipeline.toml", toml_text=text)
    rows = read_jsonl(box.work / "out/x.jsonl")
    assert sum(r["n"] for r in rows) == 9999, "skip lost or invented records"
    assert "bad records      1 (skipped)" in proc.stderr, "the skipped record is not counted"
    assert not (box.work / "out/bad_records.jsonl").exists(), "skip wrote a dead-letter file"


def test_subtask_failure(weir, work, repo):
    box = data_sandbox(weir, work, repo)
    # A sink that cannot create its file (a directory of that name
    # exists) is refused at load time now (loss_tests.py
    # load-time-paths); a subtask that fails while running is the sink
    # throwing after its first rows (job.inject_failure, no restarts).
    (box.work / "out" / "blocked.jsonl").mkdir(parents=True)
    text = POLICY_TOML.format(policy="skip", extra="", log=LOG,
                              sink_path="out/blocked.jsonl")
    proc = box.run("run", "pipeline.toml", toml_text=text, expect=2)
    assert "blocked.jsonl\" is a directory" in proc.stderr, proc.stderr[-2000:]
    text = POLICY_TOML.format(
        policy="skip", extra='inject_failure = { operator = "out", after_records = 5 }',
        log=LOG, sink_path="out/x.jsonl")
    proc = box.run("run", "pipeline.toml", toml_text=text, expect=1)
    assert "operator 'out'" in proc.stderr, f"no operator named:\n{proc.stderr[-2000:]}"
    assert "subtask 0/1" in proc.stderr, f"no subtask named:\n{proc.stderr[-2000:]}"
    assert "injected failure" in proc.stderr, f"no reason given:\n{proc.stderr[-2000:]}"


def test_embedded_example(work, repo, example):
    check_embedded_bot_counter(example("embedded_bot_counter"), repo, work)


def test_click_counter(work, repo, example):
    check_click_counter(example("click_counter"), repo, work)


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


def test_sink_restart(weir, work, repo):
    """The summary and blackhole sinks keep their state across an in-process
    restart from a checkpoint: the same table, rows and digest."""
    box = data_sandbox(weir, work, repo)
    want_table, want_reports, _ = sink_outputs(box, "")
    assert "Top keys" in want_table and "large values: " in want_table, (
        f"no summary table:\n{want_table}")
    assert sum(r["rows"] for r in want_reports) == 300000, (
        f"the blackhole saw {sum(r['rows'] for r in want_reports)} rows, expected 300,000")
    table, reports, err = sink_outputs(
        box, 'restart = { attempts = 3, delay = "50ms" }\n'
             'inject_failure = { operator = "top", after_records = 200000 }')
    assert "injected failure" in err, f"the injected failure did not happen:\n{err[-2000:]}"
    assert "1 restart" in err and "restored from #" in err, (
        f"no restart from a checkpoint reported:\n{err[-2000:]}")
    assert table == want_table, (
        f"the restarted job's summary differs:\n{table}\n--- uninterrupted:\n{want_table}")
    assert len(reports) == len(want_reports) == 2, (
        f"{len(reports)} blackhole reports, expected one per subtask (2)")
    assert sum(r["rows"] for r in reports) == 300000, (
        f"the restarted blackhole reports {sum(r['rows'] for r in reports)} rows")
    digest = lambda rs: sum(int(r["digest"], 16) for r in rs) % 2**64
    assert digest(reports) == digest(want_reports), "the restarted blackhole's digest differs"


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


def test_local_aggregation(weir, work, repo):
    """Two-phase (local/global) window aggregation gives the rows one phase gives."""
    results = {}
    for parallelism in (1, 2):
        for local in ("true", "false"):
            box = data_sandbox(weir, work, repo)
            proc = box.run("run", "pipeline.toml", toml_text=LOCAL_AGG_TOML.format(
                parallelism=parallelism, log=LOG, local=local))
            assert "late records     0" in proc.stderr, "late records with a 60 s bound"
            rows = read_jsonl(box.work / "out.jsonl")
            results[(parallelism, local)] = sorted(json.dumps(r, sort_keys=True) for r in rows)
    reference = results[(1, "false")]
    for key, rows in results.items():
        assert rows == reference, (f"parallelism {key[0]}, local_aggregation {key[1]}: "
            f"{len(rows)} rows differ from one-phase parallelism 1 ({len(reference)} rows)")
    # Every parsed record lies in two 10-minute windows sliding by 5 minutes.
    total = sum(json.loads(r)["n"] for r in reference)
    good = sum(1 for _ in read_jsonl(pathlib.Path(repo) / JSONL))
    assert total == 2 * good, f"window counts sum to {total}, expected 2 x {good}"


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


def test_cli_overrides(weir, work, repo):
    """Out-of-range --parallelism and --batch-size are usage errors (exit 2),
    and a generated source is not resumed at another parallelism: resuming
    one subtask's position alone would emit records twice."""
    box = data_sandbox(weir, work, repo)
    toml = GENERATED_TOML.format()
    for bad in (["--parallelism", "-1"], ["--parallelism", "0"], ["--batch-size", "0"],
                ["--parallelism", "40000"]):
        proc = box.run("run", "pipeline.toml", *bad, expect=2, toml_text=toml)
        assert bad[0] in proc.stderr, (f"{bad}: the error does not name the option:\n"
            f"{proc.stderr[-1000:]}")
    proc = box.run("run", "pipeline.toml", "--parallelism", "200", expect=2)
    assert ("pipeline.toml:2:1: error: --parallelism 200 must lie in 1..job.max_parallelism"
        " (128)" in proc.stderr), f"no config error for --parallelism 200:\n{proc.stderr}"

    box.run("run", "pipeline.toml", "-q")
    listing = box.run("checkpoints", "list", "state").stdout
    assert "no checkpoints" not in listing and listing.strip(), (
        f"the parallelism-2 run completed no checkpoint:\n{listing}")
    assert "gen[0/2]: event " in listing, f"generator positions are not event numbers:\n{listing}"
    proc = box.run("run", "pipeline.toml", "-q", "--parallelism", "1", expect=1)
    assert ("holds source 'gen' at parallelism 2" in proc.stderr
        and "resumes only at the parallelism it ran with" in proc.stderr), (
        f"no clear error restoring at parallelism 1:\n{proc.stderr[-2000:]}")
    # The same parallelism resumes, and --fresh starts over at any. The
    # resume is reported, except with -q.
    proc = box.run("run", "pipeline.toml", "-q")
    assert "restoring from checkpoint" not in proc.stderr, (
        f"-q printed the restore:\n{proc.stderr[-1000:]}")
    proc = box.run("run", "pipeline.toml")
    assert "restoring from checkpoint" in proc.stderr, (
        f"a resumed run did not say so:\n{proc.stderr[-1000:]}")
    box.run("run", "pipeline.toml", "-q", "--parallelism", "1", "--fresh")
    rows = [r for f in sorted((box.work / "out").glob("*.jsonl")) for r in read_jsonl(f)]
    # A failure injection that never fires is a warning, not silence.
    text = toml.replace('status_interval = "0s"',
                        'status_interval = "0s"\nrestart = { attempts = 1, delay = "10ms" }\n'
                        'inject_failure = { operator = "counts", after_records = 1000000 }')
    proc = box.run("run", "pipeline.toml", "-q", "--fresh", toml_text=text)
    assert ("no failure was injected: subtask 0 of operator 'counts' finished before reading "
        "1000000 records" in proc.stderr), (
        f"no warning for an injection that never fired:\n{proc.stderr[-1000:]}")
    assert sum(r["n"] for r in rows) == 40000, (
        f"after --fresh at parallelism 1 the window counts sum to "
        f"{sum(r['n'] for r in rows)}, expected 40,000")


def test_log_level(weir, work, repo):
    """--log-level filters weir's log lines, never the summary: warn hides the
    info line "restoring from checkpoint N" and keeps warnings, error hides
    those too; -q leaves the level to an explicit --log-level; an unknown
    level is a usage error."""
    box = data_sandbox(weir, work, repo)
    toml = GENERATED_TOML.format()
    proc = box.run("run", "pipeline.toml", "--log-level", "loud", expect=2, toml_text=toml)
    assert "--log-level" in proc.stderr and "loud" in proc.stderr, (
        f"the error does not name the option and the value:\n{proc.stderr[-1000:]}")
    box.run("run", "pipeline.toml", "-q")  # leaves checkpoints to resume from
    proc = box.run("run", "pipeline.toml")
    assert "[info] weir.checkpoint: job 'generated': restoring from checkpoint " in proc.stderr, (
        f"no info line for the restore:\n{proc.stderr[-1000:]}")
    proc = box.run("run", "pipeline.toml", "--log-level", "warn")
    assert "restoring from checkpoint" not in proc.stderr, (
        f"--log-level warn printed the restore:\n{proc.stderr[-1000:]}")
    assert "records read" in proc.stderr, "--log-level warn hid the summary"
    proc = box.run("run", "pipeline.toml", "-q", "--log-level", "info")
    assert "restoring from checkpoint" in proc.stderr, (
        f"-q --log-level info hid the restore:\n{proc.stderr[-1000:]}")
    assert "records read" not in proc.stderr, "-q printed the summary"
    text = toml.replace('status_interval = "0s"',
                        'status_interval = "0s"\nrestart = { attempts = 1, delay = "10ms" }\n'
                        'inject_failure = { operator = "counts", after_records = 1000000 }')
    proc = box.run("run", "pipeline.toml", "--fresh", "--log-level", "warn", toml_text=text)
    assert ("[warning] weir.runtime: job 'generated': job.inject_failure: no failure was "
        "injected" in proc.stderr), f"--log-level warn hid a warning:\n{proc.stderr[-1000:]}"
    proc = box.run("run", "pipeline.toml", "--fresh", "--log-level", "error")
    assert "no failure was injected" not in proc.stderr, (
        f"--log-level error printed a warning:\n{proc.stderr[-1000:]}")
    assert "records read" in proc.stderr, "--log-level error hid the summary"


def test_dead_letter_rerun(weir, work, repo):
    """Dead letters of an exactly-once job are committed with its checkpoints:
    a run that fails before any checkpoint completed commits none of them, and
    the rerun that completes writes each bad record once. Each failing run
    fails (an injected failure, no restart) after the malformed line (8,899
    of 10,000) was dead-lettered and before the end of its input, so no
    checkpoint completes: the interval is an hour, and the final checkpoint
    comes only after the end of the input."""
    box = data_sandbox(weir, work, repo)
    text = (pathlib.Path(repo) / DASHBOARD).read_text()
    failing = text.replace('dead_letter = {', 'inject_failure = { operator = "errors", '
                           'after_records = 4900 }\ndead_letter = {', 1)
    assert failing != text, "the dashboard has no dead_letter key to put the failure before"
    checkpoint = '\n[checkpoint]\ninterval = "1h"\ndir = "state"\n'
    dead_letters = box.work / OUT / "bad_records.jsonl"
    for attempt in (1, 2):
        proc = box.run("run", "pipeline.toml", "-q", toml_text=failing + checkpoint, expect=1)
        assert "injected failure" in proc.stderr, (
            f"run {attempt} did not fail by the injected failure:\n{proc.stderr[-1000:]}")
        listing = box.run("checkpoints", "list", "state").stdout
        assert "no checkpoints" in listing, f"a checkpoint completed:\n{listing}"
        bad = read_jsonl(dead_letters) if dead_letters.exists() else []
        assert not bad, (f"run {attempt} failed before any checkpoint, yet the dead-letter "
            f"file holds {len(bad)} records")
    box.run("run", "pipeline.toml", "-q", toml_text=text + checkpoint)
    bad = read_jsonl(dead_letters)
    assert len(bad) == 1 and bad[0].get("line") == 8899, (
        f"the completing rerun: the dead-letter file holds {len(bad)} records, expected "
        f"the one of line 8,899: {bad[:2]}")


