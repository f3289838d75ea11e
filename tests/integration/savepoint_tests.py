# SPDX-License-Identifier: Apache-2.0
"""Savepoints through the real `weir` binary.

A rate-limited generator job with keyed tumbling windows and file sinks is
stopped with SIGTERM under `--savepoint-on-stop DIR`: the stop's final
checkpoint is copied into DIR, its own LMDB environment. The savepoint is
then copied elsewhere (it is self-contained) and restored with
`--from-savepoint`:

  test_rescale           resumed at parallelism 3 (it ran at 2), the committed
                    output equals that of an uninterrupted run
  added-operator    the pipeline gained an operator and a sink: it restores
                    (state is matched by operator name), and the windows
                    equal the uninterrupted run's
  removed-operator  the pipeline lost the window operator and its sink: the
                    restore fails naming them, and works with
                    --allow-non-restored-state

WEIR_TEST_TIME_SCALE stretches the waits and timeouts.
"""
import signal

from weirtest import log_text, wait_until
from weirtest.savepoint_job import (COUNT, committed, moved, pipeline, run_job, same,
                                    uninterrupted)


def take_savepoint(weir, procs, work, savepoint):
    """Runs the job slowly, stops it with SIGTERM under --savepoint-on-stop,
    and returns its pipeline's path."""
    toml = pipeline(work, rate=40000)
    proc = procs.start([weir, "run", toml, "--savepoint-on-stop", savepoint], log="stop.log")
    raw = work / "out/raw.jsonl"
    # Running for real: a checkpoint has committed output.
    wait_until(lambda: proc.poll() is not None or list(raw.glob("part-*.jsonl")),
               "committed output (a completed checkpoint)")
    assert proc.poll() is None, "the job ended before the signal"
    rc = procs.kill(proc, signal.SIGTERM)
    err = log_text(proc)
    assert rc == 143, f"exit code {rc} after SIGTERM:\n{err[-2000:]}"
    assert "savepoint of checkpoint" in err and str(savepoint) in err, (
        f"no word of the savepoint:\n{err[-2000:]}")
    assert (savepoint / "data.mdb").exists(), f"no LMDB environment in {savepoint}"
    rows = committed(raw)
    assert 0 < len(rows) < COUNT, f"{len(rows)} rows committed before the stop"
    return toml


def test_rescale(weir, procs, work):
    want_raw, want_windows = uninterrupted(weir, work)
    run_dir = work / "run"
    run_dir.mkdir()
    toml = take_savepoint(weir, procs, run_dir, work / "savepoint")
    sp = moved(work / "savepoint", work)
    proc = run_job(weir, toml, "--from-savepoint", str(sp), "--parallelism", "3")
    assert "restoring from savepoint" in proc.stderr, (
        f"the resumed run did not say it restored the savepoint:\n{proc.stderr[-2000:]}")
    same(committed(run_dir / "out/raw.jsonl"), want_raw, "raw output")
    same(committed(run_dir / "out/windows.jsonl"), want_windows, "window output")
    print(f"resumed at parallelism 3: {len(want_raw)} rows, {len(want_windows)} windows")


def test_added_operator(weir, procs, work):
    _, want_windows = uninterrupted(weir, work)
    run_dir = work / "run"
    run_dir.mkdir()
    take_savepoint(weir, procs, run_dir, work / "savepoint")
    sp = moved(work / "savepoint", work)
    toml = pipeline(run_dir, rate=1_000_000, parts=("window", "raw", "added"))
    proc = run_job(weir, toml, "--from-savepoint", str(sp), expect=None)
    assert proc.returncode == 0, (
        f"the pipeline with an added operator did not restore:\n{proc.stderr[-2000:]}")
    same(committed(run_dir / "out/windows.jsonl"), want_windows, "window output")
    counts = committed(run_dir / "out/counts.jsonl")
    assert len(counts) > 0, "the added operator emitted nothing"
    print(f"restored with an added operator: {len(want_windows)} windows, "
          f"{len(counts)} counts")


def test_removed_operator(weir, procs, work):
    run_dir = work / "run"
    run_dir.mkdir()
    take_savepoint(weir, procs, run_dir, work / "savepoint")
    sp = moved(work / "savepoint", work)
    toml = pipeline(run_dir, rate=1_000_000, parts=("raw",))
    proc = run_job(weir, toml, "--from-savepoint", str(sp), expect=None)
    assert proc.returncode == 1, f"exit code {proc.returncode} without the flag, expected 1"
    assert ("'per_key'" in proc.stderr and "'windows'" in proc.stderr
        and "--allow-non-restored-state" in proc.stderr), (
        f"the error does not name the operators and the flag:\n{proc.stderr[-2000:]}")
    proc = run_job(weir, toml, "--from-savepoint", str(sp), "--allow-non-restored-state",
                   expect=None)
    assert proc.returncode == 0, f"exit code {proc.returncode} with the flag:\n{proc.stderr[-2000:]}"
    raw = committed(run_dir / "out/raw.jsonl")
    assert [r["seq"] for r in raw] == list(range(COUNT)), (
        f"raw output is not seq 0..{COUNT - 1} exactly once ({len(raw)} rows)")
    print("a removed operator fails the restore without the flag and is skipped with it")
