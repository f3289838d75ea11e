# SPDX-License-Identifier: Apache-2.0
"""Nothing lost silently, nothing refused late: end-to-end tests of the real
`weir` binary.

- test_load_time_paths: output paths that cannot be written (a sink's file or
  directory of parts, the dead-letter file, checkpoint.dir) are errors at
  load time, file:line:col and exit 2, from `weir validate` and from `weir
  run` before any input is read. Everything here runs as root, for whom
  permission bits do not count (chmod 0555 would not refuse anything), so
  the unwritable places are a path under a regular file and /proc (procfs
  refuses new files even to root).
- test_loss_warnings: bad records of a source and late records of an operator
  above [job] warn_ratio are named in the summary (and with -q alone); the
  summary shows lines read, records decoded and bad records per source.
- test_loss_strict: max_bad_ratio, max_late_ratio and --strict fail the job
  (exit 1) naming the source or operator and the share; at the end of a
  bounded job and, for a job that never ends, at the status interval.
- test_large_pipeline: a chain of 20,000 operators validates and runs.
"""
import json
import shutil
import time


def position(text, needle):
    """"line:col" (1-based) of the first double quote of `needle` in `text`:
    where a diagnostic about that string value points."""
    for i, line in enumerate(text.splitlines(), 1):
        k = line.find(needle)
        if k >= 0:
            return f"{i}:{k + needle.index(chr(34)) + 1}"
    raise AssertionError(f"{needle!r} not in the pipeline")


# -- load-time-paths ----------------------------------------------------------

PATHS_TOML = """\
[job]
name = "paths"
on_bad_record = "dead_letter"
dead_letter = {{ path = "{dead_letter}" }}
{checkpoint}
[[source]]
name = "in"
type = "file"
path = "input.jsonl"
format = "jsonl"
schema = {{ v = "int64" }}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{sink}"
"""


def paths_toml(sink="out/rows.jsonl", dead_letter="out/bad.jsonl", checkpoint_dir=None):
    cp = f'\n[checkpoint]\ninterval = "1s"\ndir = "{checkpoint_dir}"\n' if checkpoint_dir else ""
    return PATHS_TOML.format(sink=sink, dead_letter=dead_letter, checkpoint=cp)


def test_load_time_paths(sandbox):
    box = sandbox
    box.write("input.jsonl", '{"v": 1}\n{"v": 2}\n')
    box.write("a-file", "not a directory\n")
    # Control: writable paths (missing directories are created) run.
    good = paths_toml()
    box.run("validate", "pipeline.toml", toml_text=good)
    box.run("run", "pipeline.toml", "-q")
    assert len((box.work / "out/rows.jsonl").read_text().splitlines()) == 2, (
        "the control job did not write its rows")
    shutil.rmtree(box.work / "out")

    cases = [
        # (toml, needle before the value, expected message)
        (paths_toml(sink="a-file/rows.jsonl"), 'path = "a-file/rows',
         'error: path: cannot create "a-file/rows.jsonl": "a-file" is not a directory'),
        (paths_toml(sink="/proc/weir-loss-test/rows.jsonl"), 'path = "/proc/weir',
         'error: path: cannot create "/proc/weir-loss-test/rows.jsonl": directory "/proc" '
         'is not writable'),
        (paths_toml(sink="."), 'path = ".', 'error: path: "." is a directory'),
        (paths_toml(dead_letter="a-file/bad.jsonl"), 'dead_letter = { path = "a-file',
         'error: job.dead_letter.path: cannot create "a-file/bad.jsonl": '
         '"a-file" is not a directory'),
        (paths_toml(checkpoint_dir="a-file/state"), 'dir = "a-file',
         'error: checkpoint.dir: cannot create "a-file/state": "a-file" is not a directory'),
        (paths_toml(checkpoint_dir="a-file"), 'dir = "a-file',
         'error: checkpoint.dir: "a-file" is not a directory'),
        # With checkpoints a file sink writes a directory of parts.
        (paths_toml(sink="a-file", checkpoint_dir="state"), 'path = "a-file',
         'error: path: "a-file" is not a directory'),
    ]
    for toml, needle, message in cases:
        want = f"pipeline.toml:{position(toml, needle)}: {message}"
        for cmd in (["validate", "pipeline.toml"], ["run", "pipeline.toml"]):
            proc = box.run(*cmd, toml_text=toml, expect=2)
            assert want in proc.stderr, (
                f"weir {cmd[0]}: expected\n  {want}\ngot:\n{proc.stderr}")
            assert "nothing was started" in proc.stderr, proc.stderr
            # Nothing was read or written: no output, no dead letters,
            # no status line or summary.
            assert not (box.work / "out").exists(), f"weir {cmd[0]} created out/"
            assert not (box.work / "state").exists(), f"weir {cmd[0]} created state/"
            assert "records read" not in proc.stderr, "a summary was printed"
    # validate probes, but leaves nothing behind.
    left = sorted(p.name for p in box.work.iterdir())
    assert left == ["a-file", "input.jsonl", "pipeline.toml"], f"left behind: {left}"


# -- loss-warnings and loss-strict --------------------------------------------

def bad_input(good, bad):
    """`good` good and `bad` bad jsonl lines, the bad ones first."""
    lines = ['{"v": "not a number"}'] * bad + [json.dumps({"v": i}) for i in range(good)]
    return "\n".join(lines) + "\n"


BAD_TOML = """\
[job]
name = "bad"
on_bad_record = "skip"
status_interval = "0s"
{extra}
[[source]]
name = "clicks"
type = "file"
path = "input.jsonl"
format = "jsonl"
schema = {{ v = "int64" }}

[[sink]]
name = "out"
input = "clicks"
type = "file"
path = "out/rows.jsonl"
"""

# Event time 0, 1000, 2000, ...: every third record jumps back to 0 s and is
# late (the watermark has passed the first window); 0-bounded watermarks.
LATE_TOML = """\
[job]
name = "late"
status_interval = "0s"
batch_size = 1
{extra}
[[source]]
name = "events"
type = "file"
path = "events.jsonl"
format = "jsonl"
schema = {{ k = "string", ts = "timestamp" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_second"
type = "window"
input = "events"
key_by = ["k"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "per_second"
type = "file"
path = "out/rows.jsonl"
"""


def late_input(n):
    rows = []
    for i in range(1, n + 1):
        ts = 0 if i % 3 == 0 else i * 1000
        rows.append(json.dumps({"k": "a", "ts": ts}))
    return "\n".join(rows) + "\n"


def test_loss_warnings(sandbox):
    box = sandbox
    box.write("input.jsonl", bad_input(90, 10))
    proc = box.run("run", "pipeline.toml", toml_text=BAD_TOML.format(extra=""))
    want = "warning: source 'clicks': 10 of 100 records bad (10.0%), above job.warn_ratio 1%"
    assert want in proc.stderr, f"no warning naming the source:\n{proc.stderr}"
    assert "source 'clicks'  100 lines read, 90 records decoded, 10 bad" in proc.stderr, (
        f"the summary does not show lines read, decoded and bad:\n{proc.stderr}")
    # -q: no summary, the warning still.
    proc = box.run("run", "pipeline.toml", "-q")
    assert "weir: " + want in proc.stderr, f"-q hid the warning:\n{proc.stderr}"
    assert "records read" not in proc.stderr, "-q printed the summary"
    # Under warn_ratio: no warning (10% <= 20%).
    proc = box.run("run", "pipeline.toml",
                   toml_text=BAD_TOML.format(extra="warn_ratio = 0.2"))
    assert "warning" not in proc.stderr, f"a warning under warn_ratio:\n{proc.stderr}"
    # Nothing bad: none either, and the counts still show.
    box.write("input.jsonl", bad_input(100, 0))
    proc = box.run("run", "pipeline.toml", toml_text=BAD_TOML.format(extra=""))
    assert "warning" not in proc.stderr, proc.stderr
    assert "source 'clicks'  100 lines read, 100 records decoded, 0 bad" in proc.stderr, (
        proc.stderr)

    # Late records name the operator.
    box.write("events.jsonl", late_input(300))
    proc = box.run("run", "pipeline.toml", toml_text=LATE_TOML.format(extra=""))
    want = ("warning: operator 'per_second': 100 of 300 records late (33.3%), above "
            "job.warn_ratio 1%")
    assert want in proc.stderr, f"no warning naming the operator:\n{proc.stderr}"
    assert "operator 'per_second' 300 records in, 100 late" in proc.stderr, proc.stderr
    assert "late records     100" in proc.stderr, proc.stderr

    # The status line warns too, naming the source, while the job runs:
    # a slow job (one record per batch, a replay of 3,000 bad lines
    # behind a throttled generator is not needed: a big file with a
    # short status interval and batch size 1 suffices).
    box.write("input.jsonl", bad_input(20000, 20000))
    text = BAD_TOML.format(extra="batch_size = 1").replace('status_interval = "0s"',
                                                           'status_interval = "1ms"')
    proc = box.run("run", "pipeline.toml", toml_text=text)
    status = [l for l in proc.stderr.splitlines() if l.startswith("[bad] ")
              and "| in " in l]
    assert status, f"no status line:\n{proc.stderr[-2000:]}"
    assert any("| WARNING source 'clicks' " in l and "% bad" in l for l in status), (
        "no status line names the source:\n" + "\n".join(status[-5:]))


def test_loss_strict(sandbox):
    box = sandbox
    box.write("input.jsonl", bad_input(90, 10))
    # --strict: any bad record fails the job, naming the source.
    proc = box.run("run", "pipeline.toml", "--strict",
                   toml_text=BAD_TOML.format(extra=""), expect=1)
    want = ("weir: job failed: source 'clicks': 10 of 100 records bad (10.0%), above 0% "
            "(--strict)")
    assert want in proc.stderr, f"expected\n  {want}\ngot:\n{proc.stderr}"
    # max_bad_ratio below the share fails, above it passes (with a warning).
    proc = box.run("run", "pipeline.toml",
                   toml_text=BAD_TOML.format(extra="max_bad_ratio = 0.05"), expect=1)
    want = ("weir: job failed: source 'clicks': 10 of 100 records bad (10.0%), above "
            "job.max_bad_ratio 5%")
    assert want in proc.stderr, f"expected\n  {want}\ngot:\n{proc.stderr}"
    proc = box.run("run", "pipeline.toml", "-q",
                   toml_text=BAD_TOML.format(extra="max_bad_ratio = 0.5"))
    assert "above job.warn_ratio" in proc.stderr, proc.stderr
    # A ratio outside 0..1 is a configuration error.
    proc = box.run("validate", "pipeline.toml",
                   toml_text=BAD_TOML.format(extra="max_bad_ratio = 5"), expect=2)
    assert ("pipeline.toml:5:17: error: job.max_bad_ratio must be between 0 and 1, got 5"
        in proc.stderr), proc.stderr

    # Late records: max_late_ratio and --strict name the operator.
    box.write("events.jsonl", late_input(300))
    proc = box.run("run", "pipeline.toml",
                   toml_text=LATE_TOML.format(extra="max_late_ratio = 0.25"), expect=1)
    want = ("weir: job failed: operator 'per_second': 100 of 300 records late (33.3%), "
            "above job.max_late_ratio 25%")
    assert want in proc.stderr, f"expected\n  {want}\ngot:\n{proc.stderr}"
    box.run("run", "pipeline.toml", "--strict", toml_text=LATE_TOML.format(extra=""),
            expect=1)
    box.run("run", "pipeline.toml", toml_text=LATE_TOML.format(extra="max_late_ratio = 0.5"))

    # A job that never ends fails at the status interval once the
    # operator has seen enough records (an unbounded generator: only the
    # periodic check can stop it).
    endless = """\
[job]
name = "endless"
status_interval = "200ms"
max_late_ratio = 0.1

[[source]]
name = "gen"
type = "generator"
rate = 5000
fields = { k = "seq % 3", ts = "to_timestamp(seq * 1000 * (seq % 2))" }
event_time = { field = "ts" }

[[operator]]
name = "per_second"
type = "window"
input = "gen"
key_by = ["k"]
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)" }

[[sink]]
name = "out"
input = "per_second"
type = "blackhole"
"""
    started = time.monotonic()
    proc = box.run("run", "pipeline.toml", toml_text=endless, expect=1, timeout=60)
    took = time.monotonic() - started
    assert ("weir: job failed: operator 'per_second': " in proc.stderr
        and "above job.max_late_ratio 10%" in proc.stderr), (
        f"the periodic check did not fail the job:\n{proc.stderr[-2000:]}")
    print(f"the endless job failed after {took:.1f} s")


# -- large-pipeline -----------------------------------------------------------

def large_toml(n):
    parts = ["""\
[job]
name = "large"
status_interval = "0s"

[[source]]
name = "in"
type = "file"
path = "input.jsonl"
format = "jsonl"
schema = { v = "int64", s = "string" }
"""]
    prev = "in"
    for i in range(n):
        name = f"op{i}"
        if i % 2 == 0:
            parts.append(f'[[operator]]\nname = "{name}"\ntype = "filter"\ninput = "{prev}"\n'
                         f'where = "v >= {i // 1000}"\n')
        else:
            parts.append(f'[[operator]]\nname = "{name}"\ntype = "select"\ninput = "{prev}"\n'
                         'fields = { v = "v", s = "s" }\n')
        prev = name
    parts.append(f'[[sink]]\nname = "out"\ninput = "{prev}"\ntype = "file"\n'
                 'path = "out/rows.jsonl"\n')
    return "\n".join(parts)


def test_large_pipeline(sandbox):
    box = sandbox
    n = 20000
    box.write("input.jsonl",
              "".join(json.dumps({"v": i, "s": f"row{i}"}) + "\n" for i in range(100)))
    box.write("pipeline.toml", large_toml(n))
    for cmd in (["validate", "pipeline.toml"], ["run", "pipeline.toml"]):
        started = time.monotonic()
        proc = box.run(*cmd, timeout=300)
        print(f"weir {cmd[0]} on {n} operators: {time.monotonic() - started:.1f} s")
    rows = [json.loads(l) for l in (box.work / "out/rows.jsonl").read_text().splitlines()]
    # The last filter keeps v >= 19 (op19998: 19998 // 1000).
    assert [r["v"] for r in rows] == list(range(19, 100)), (
        f"{len(rows)} rows, expected v = 19..99")
    assert "records written  81" in proc.stderr, proc.stderr[-2000:]
