#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Savepoints through the real `weir` binary.

A rate-limited generator job with keyed tumbling windows and file sinks is
stopped with SIGTERM under `--savepoint-on-stop DIR`: the stop's final
checkpoint is copied into DIR, its own LMDB environment. The savepoint is
then copied elsewhere (it is self-contained) and restored with
`--from-savepoint`:

  rescale           resumed at parallelism 3 (it ran at 2), the committed
                    output equals that of an uninterrupted run
  added-operator    the pipeline gained an operator and a sink: it restores
                    (state is matched by operator name), and the windows
                    equal the uninterrupted run's
  removed-operator  the pipeline lost the window operator and its sink: the
                    restore fails naming them, and works with
                    --allow-non-restored-state

usage: savepoint_tests.py --weir BIN TEST

WEIR_TEST_TIME_SCALE stretches the waits and timeouts.
"""
import argparse
import glob
import json
import os
import pathlib
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))
COUNT = 150_000


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


SOURCE = """
[[source]]
name = "gen"
type = "generator"
parallelism = 1
count = {count}
rate = {rate}
fields = {{ seq = "seq", key = "seq % 4", ts = "seq * 10" }}
event_time = {{ field = "ts" }}
"""

WINDOW = """
[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)", last = "max(seq)" }}

[[sink]]
name = "windows"
input = "per_key"
type = "file"
path = "{out}/windows.jsonl"
"""

RAW = """
[[sink]]
name = "raw"
input = "gen"
type = "file"
path = "{out}/raw.jsonl"
"""

# An operator the first run did not have (a running count and its sink).
ADDED = """
[[operator]]
name = "per_key_count"
type = "running_count"
input = "gen"
key_by = ["key"]

[[sink]]
name = "counts"
input = "per_key_count"
type = "file"
path = "{out}/counts.jsonl"
"""


def pipeline(work, rate, parts=("window", "raw")):
    text = f"""
[job]
name = "savepoint-test"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "300ms"
dir = "{work}/state"
"""
    text += SOURCE.format(count=COUNT, rate=rate)
    out = f"{work}/out"
    if "window" in parts:
        text += WINDOW.format(out=out)
    if "raw" in parts:
        text += RAW.format(out=out)
    if "added" in parts:
        text += ADDED.format(out=out)
    path = work / "pipeline.toml"
    path.write_text(text)
    return path


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return [line for line in f.read().splitlines() if line]


def committed(dir_):
    """Every row of the committed parts of a transactional file sink."""
    rows = []
    for p in sorted(glob.glob(str(dir_ / "part-*.jsonl"))):
        rows += [json.loads(l) for l in read_lines(p)]
    return rows


def key_of(r):
    return json.dumps(r, sort_keys=True)


def run(args, toml, *extra):
    return subprocess.run([args.weir, "run", str(toml), *extra], capture_output=True,
                          text=True, timeout=300 * SCALE)


def uninterrupted(args, root):
    ref = root / "ref"
    ref.mkdir()
    proc = run(args, pipeline(ref, rate=1_000_000))
    check(proc.returncode == 0, f"the uninterrupted run failed:\n{proc.stderr[-2000:]}")
    return committed(ref / "out/raw.jsonl"), committed(ref / "out/windows.jsonl")


def take_savepoint(args, work, savepoint):
    """Runs the job slowly, stops it with SIGTERM under --savepoint-on-stop,
    and returns the rows read before the stop."""
    toml = pipeline(work, rate=40000)
    proc = subprocess.Popen([args.weir, "run", str(toml), "--savepoint-on-stop", str(savepoint)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30 * SCALE
    raw = work / "out/raw.jsonl"
    # Running for real: a checkpoint has committed output.
    while time.monotonic() < deadline and not glob.glob(str(raw / "part-*.jsonl")):
        time.sleep(0.05)
    check(proc.poll() is None, "the job ended before the signal")
    proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60 * SCALE)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise Failure(f"weir did not stop within 60 s of SIGTERM:\n{err[-2000:]}")
    check(proc.returncode == 143, f"exit code {proc.returncode} after SIGTERM:\n{err[-2000:]}")
    check("savepoint of checkpoint" in err and str(savepoint) in err,
          f"no word of the savepoint:\n{err[-2000:]}")
    check((savepoint / "data.mdb").exists(), f"no LMDB environment in {savepoint}")
    rows = committed(raw)
    check(0 < len(rows) < COUNT, f"{len(rows)} rows committed before the stop")
    return toml


def moved(savepoint, root):
    """The savepoint copied elsewhere and the original deleted: it must be
    self-contained."""
    copy = root / "copied-savepoint"
    shutil.copytree(savepoint, copy)
    shutil.rmtree(savepoint)
    return copy


def same(got, want, what):
    check(sorted(map(key_of, got)) == sorted(map(key_of, want)),
          f"{what} differs from the uninterrupted run ({len(got)} vs {len(want)} rows)")


def test_rescale(args, root):
    want_raw, want_windows = uninterrupted(args, root)
    work = root / "run"
    work.mkdir()
    toml = take_savepoint(args, work, root / "savepoint")
    sp = moved(root / "savepoint", root)
    proc = run(args, toml, "--from-savepoint", str(sp), "--parallelism", "3")
    check(proc.returncode == 0, f"the resumed run exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    check("restoring from savepoint" in proc.stderr,
          f"the resumed run did not say it restored the savepoint:\n{proc.stderr[-2000:]}")
    same(committed(work / "out/raw.jsonl"), want_raw, "raw output")
    same(committed(work / "out/windows.jsonl"), want_windows, "window output")
    print(f"resumed at parallelism 3: {len(want_raw)} rows, {len(want_windows)} windows")


def test_added_operator(args, root):
    _, want_windows = uninterrupted(args, root)
    work = root / "run"
    work.mkdir()
    take_savepoint(args, work, root / "savepoint")
    sp = moved(root / "savepoint", root)
    toml = pipeline(work, rate=1_000_000, parts=("window", "raw", "added"))
    proc = run(args, toml, "--from-savepoint", str(sp))
    check(proc.returncode == 0,
          f"the pipeline with an added operator did not restore:\n{proc.stderr[-2000:]}")
    same(committed(work / "out/windows.jsonl"), want_windows, "window output")
    counts = committed(work / "out/counts.jsonl")
    check(len(counts) > 0, "the added operator emitted nothing")
    print(f"restored with an added operator: {len(want_windows)} windows, "
          f"{len(counts)} counts")


def test_removed_operator(args, root):
    work = root / "run"
    work.mkdir()
    take_savepoint(args, work, root / "savepoint")
    sp = moved(root / "savepoint", root)
    toml = pipeline(work, rate=1_000_000, parts=("raw",))
    proc = run(args, toml, "--from-savepoint", str(sp))
    check(proc.returncode == 1, f"exit code {proc.returncode} without the flag, expected 1")
    check("'per_key'" in proc.stderr and "'windows'" in proc.stderr
          and "--allow-non-restored-state" in proc.stderr,
          f"the error does not name the operators and the flag:\n{proc.stderr[-2000:]}")
    proc = run(args, toml, "--from-savepoint", str(sp), "--allow-non-restored-state")
    check(proc.returncode == 0, f"exit code {proc.returncode} with the flag:\n{proc.stderr[-2000:]}")
    raw = committed(work / "out/raw.jsonl")
    check([r["seq"] for r in raw] == list(range(COUNT)),
          f"raw output is not seq 0..{COUNT - 1} exactly once ({len(raw)} rows)")
    print("a removed operator fails the restore without the flag and is skipped with it")


TESTS = {
    "rescale": test_rescale,
    "added-operator": test_added_operator,
    "removed-operator": test_removed_operator,
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    root = pathlib.Path(tempfile.mkdtemp(prefix="weir-savepoint-"))
    try:
        TESTS[args.test](args, root)
    except Failure as e:
        print(f"FAIL {args.test}: {e}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
