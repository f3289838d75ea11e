# SPDX-License-Identifier: Apache-2.0
"""Stopping a job: the real `weir` binary, real signals.

An unbounded or rate-limited generator job with keyed tumbling windows and
file sinks is stopped with SIGINT or SIGTERM while it runs:

  sigint, sigterm   graceful stop without checkpoints: exit 130 / 143, the
                    files hold every row the summary reports, every window
                    in them is complete (none fired early), no in-progress
                    file is left
  checkpoint-stop   with [checkpoint]: the stop takes a final checkpoint the
                    sinks commit; a rerun resumes from it, and the committed
                    output equals that of an uninterrupted run
  second-signal     a second signal during a slow graceful stop ends weir at
                    once (killed by the signal); the output keeps its
                    in-progress name
  flush-interval    a file sink's output reaches the file within about its
                    flush_interval (1 s) while the job runs
  failed-job        a job that fails on a bad record leaves only the
                    in-progress file (an earlier output is gone), not a
                    final-named file that looks complete

Each is the test function test_<name> with - as _ (test_sigint, ...).

WEIR_TEST_TIME_SCALE (4 in the ThreadSanitizer tree) stretches the waits and
timeouts, not what is measured (the flush interval, the second signal).
"""
import glob
import json
import os
import re
import signal
import subprocess
import time

from weirtest import SCALE, Sandbox, log_text, read_lines, wait_until
from weirtest.savepoint_job import committed, key_of


def summary_count(stderr, label):
    """The number on the summary line `label` ("records written")."""
    m = re.search(r"^\s+" + re.escape(label) + r"\s+([\d,]+)", stderr, re.M)
    assert m is not None, f"no '{label}' line in the summary:\n{stderr[-2000:]}"
    return int(m.group(1).replace(",", ""))


# Event time = seq * 10 ms, in order: 100 rows per second of event time,
# 25 per key and window. A window that fired early (a +inf watermark at the
# stop) would hold fewer.
GENERATOR = """
[[source]]
name = "gen"
type = "generator"
parallelism = 1
{count}
rate = {rate}
fields = {{ seq = "seq", key = "seq % 4", ts = "seq * 10" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)", last = "max(seq)" }}

[[sink]]
name = "raw"
input = "gen"
type = "file"
path = "{out}/raw.jsonl"

[[sink]]
name = "windows"
input = "per_key"
type = "file"
path = "{out}/windows.jsonl"
"""

PER_WINDOW = 25


def pipeline(work, rate, count=None, checkpoint=False, extra_job="", sinks_extra=""):
    text = f"""
[job]
name = "stop-test"
parallelism = 2
status_interval = "0s"
{extra_job}
"""
    if checkpoint:
        text += f"""
[checkpoint]
interval = "300ms"
dir = "{work}/state"
"""
    text += GENERATOR.format(count=f"count = {count}" if count else "", rate=rate,
                             out=f"{work}/out")
    text += sinks_extra
    path = work / "pipeline.toml"
    path.write_text(text)
    return path


def start(procs, weir, toml, *extra):
    return procs.start([weir, "run", toml, *extra], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)


def stop_with(proc, sig, timeout=60):
    timeout *= SCALE
    proc.send_signal(sig)
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"weir did not stop within {timeout} s of {sig.name}:\n{err[-2000:]}")
    return proc.returncode, out, err


def check_windows_complete(rows, what):
    for r in rows:
        assert r["n"] == PER_WINDOW, (
            f"{what}: window {r} holds {r['n']} rows, expected {PER_WINDOW} "
            f"(an unfinished window fired)")


def graceful(weir, work, procs, sig, code):
    box = Sandbox(weir, work)
    toml = pipeline(box.work, rate=20000)
    proc = start(procs, weir, toml)
    # Running for real: some windows have fired and reached the file.
    raw_inprogress = box.work / "out/raw.jsonl.inprogress"
    wait_until(lambda: raw_inprogress.exists() and raw_inprogress.stat().st_size > 100_000, "output in raw.jsonl.inprogress", 20)
    rc, _, err = stop_with(proc, sig)
    assert rc == code, f"exit code {rc} after {sig.name}, expected {code}:\n{err[-2000:]}"
    assert "] stopped in " in err, f"the summary does not say 'stopped':\n{err[-2000:]}"
    assert not glob.glob(str(box.work / "out/*.inprogress")), (
        f"in-progress files left after a graceful stop: {os.listdir(box.work / 'out')}")
    raw = [json.loads(l) for l in read_lines(box.work / "out/raw.jsonl")]
    windows = [json.loads(l) for l in read_lines(box.work / "out/windows.jsonl")]
    written = summary_count(err, "records written")
    read = summary_count(err, "records read")
    assert len(raw) + len(windows) == written, (
        f"the files hold {len(raw)} + {len(windows)} rows, the summary reports "
        f"{written} written")
    assert len(raw) == read, f"raw.jsonl holds {len(raw)} rows, {read} were read"
    assert [r["seq"] for r in raw] == list(range(len(raw))), (
        "raw.jsonl is not seq 0, 1, 2, ... without gaps")
    assert len(windows) > 0, "no window fired before the stop"
    check_windows_complete(windows, "windows.jsonl")
    # Windows fire up to the last watermark, never beyond the rows read.
    assert max(w["last"] for w in windows) < len(raw), "a window holds a row not read"
    print(f"{sig.name}: {len(raw)} rows, {len(windows)} windows, exit {rc}")


def test_sigint(weir, work, procs):
    graceful(weir, work, procs, signal.SIGINT, 130)


def test_sigterm(weir, work, procs):
    graceful(weir, work, procs, signal.SIGTERM, 143)


def test_checkpoint_stop(weir, work, procs):
    box = Sandbox(weir, work)
    count = 150_000
    # The uninterrupted run.
    ref = box.work / "ref"
    ref.mkdir()
    subprocess.run([weir, "run", str(pipeline(ref, rate=1_000_000, count=count,
                                                    checkpoint=True))],
                   check=True, capture_output=True, text=True, timeout=300 * SCALE)
    want_raw, want_windows = committed(ref / "out/raw.jsonl"), committed(
        ref / "out/windows.jsonl")
    assert len(want_raw) == count, f"the uninterrupted run wrote {len(want_raw)} rows"
    check_windows_complete(want_windows, "uninterrupted run")

    run = box.work / "run"
    run.mkdir()
    toml = pipeline(run, rate=40000, count=count, checkpoint=True)
    proc = start(procs, weir, toml)
    # Running for real: a checkpoint has committed output.
    wait_until(lambda: proc.poll() is not None
               or list((run / "out/raw.jsonl").glob("part-*.jsonl")),
               "committed output (a completed checkpoint)")
    assert proc.poll() is None, "the job ended before the signal"
    rc, _, err = stop_with(proc, signal.SIGINT)
    assert rc == 130, f"exit code {rc} after SIGINT, expected 130:\n{err[-2000:]}"
    assert "(final, on stop)" in err, (
        f"the summary does not report a final checkpoint:\n{err[-2000:]}")
    got_raw = committed(run / "out/raw.jsonl")
    read = summary_count(err, "records read")
    assert 0 < read < count, f"{read} records read before the stop"
    # The final checkpoint covers every row read: all of them committed.
    assert [r["seq"] for r in got_raw] == list(range(read)), (
        f"{len(got_raw)} rows committed at the stop, {read} read")
    check_windows_complete(committed(run / "out/windows.jsonl"), "stopped run")

    # The rerun resumes from the final checkpoint.
    proc = subprocess.run([weir, "run", str(toml)], capture_output=True, text=True,
                          timeout=300 * SCALE)
    assert proc.returncode == 0, f"the rerun exited {proc.returncode}:\n{proc.stderr[-2000:]}"
    assert "restored from #" in proc.stderr, f"the rerun did not restore:\n{proc.stderr[-2000:]}"
    got_raw = committed(run / "out/raw.jsonl")
    got_windows = committed(run / "out/windows.jsonl")
    assert sorted(map(key_of, got_raw)) == sorted(map(key_of, want_raw)), (
        f"raw output differs from the uninterrupted run ({len(got_raw)} vs "
        f"{len(want_raw)} rows)")
    assert sorted(map(key_of, got_windows)) == sorted(map(key_of, want_windows)), (
        f"window output differs from the uninterrupted run ({len(got_windows)} vs "
        f"{len(want_windows)} rows)")
    print(f"stopped after {read} of {count} rows; rerun completes to the same "
          f"{len(want_raw)} rows and {len(want_windows)} windows")


def test_second_signal(weir, work, procs):
    box = Sandbox(weir, work)
    # A slow sink: the graceful stop drains the batches in flight into
    # it, many seconds' worth.
    slow = """
[[sink]]
name = "slow"
input = "gen"
type = "blackhole"
rate = 500
"""
    toml = pipeline(box.work, rate=100000, sinks_extra=slow)
    # A status line every 100 ms: "in 0 rec/s (N)" with N > 0 once the
    # source is held back by the slow sink, its queues full: many seconds'
    # worth to drain.
    toml.write_text(toml.read_text().replace('status_interval = "0s"',
                                             'status_interval = "100ms"'))
    proc = procs.start([weir, "run", toml], log="weir.log")
    wait_until(lambda: re.search(r"\| in 0 rec/s \([1-9][\d,]*\)", log_text(proc)),
               "the source held back by the slow sink (status line 'in 0 rec/s')")
    proc.send_signal(signal.SIGINT)
    time.sleep(0.5)  # an observation window: the stop must still be draining
    assert proc.poll() is None, "the graceful stop ended at once; the test needs a slow one"
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        rc = proc.wait(timeout=10 * SCALE)
    except subprocess.TimeoutExpired:
        raise AssertionError("weir did not stop within 10 s of the second SIGINT") from None
    took = time.monotonic() - t0
    err = log_text(proc)
    assert rc == -signal.SIGINT, f"weir ended with {rc}, expected to be killed by SIGINT"
    assert took < 2.0, f"the second signal took {took:.1f} s to stop weir"
    assert "stopping at once" in err, f"no word of the immediate stop:\n{err[-2000:]}"
    assert not (box.work / "out/raw.jsonl").exists(), (
        "an output interrupted at once has its final name")
    print(f"second SIGINT ended weir after {took:.2f} s")


def test_flush_interval(weir, work, procs):
    box = Sandbox(weir, work)
    # 1,000 rows/s: about 40 KB/s, far below the 1 MiB write buffer.
    toml = pipeline(box.work, rate=1000)
    proc = start(procs, weir, toml)
    raw = box.work / "out/raw.jsonl.inprogress"
    t0 = time.monotonic()
    wait_until(lambda: raw.exists() and raw.stat().st_size > 0,
               "the first rows in raw.jsonl.inprogress", 4)
    took = time.monotonic() - t0
    assert proc.poll() is None, "the job ended by itself"
    # Keeps flushing: more rows a second later.
    size = raw.stat().st_size
    wait_until(lambda: raw.stat().st_size > size,
               "more output in the file within 1.5 s (flush_interval 1 s)", 1.5, scaled=False)
    assert proc.poll() is None, "the job ended by itself"
    rc, _, err = stop_with(proc, signal.SIGTERM)
    assert rc == 143, f"exit code {rc}, expected 143:\n{err[-2000:]}"
    rows = read_lines(box.work / "out/raw.jsonl")
    assert len(rows) == summary_count(err, "records read"), "rows lost at the stop"
    print(f"first output after {took:.2f} s; {len(rows)} rows at the stop")


def test_failed_job(weir, work, procs):
    box = Sandbox(weir, work)
    lines = [json.dumps({"seq": i, "ts": i * 10}) for i in range(20000)]
    lines.insert(15000, '{"seq": "not a number", "ts": 1}')
    (box.work / "input.jsonl").write_text("\n".join(lines) + "\n")
    out = box.work / "out"
    out.mkdir()
    (out / "rows.jsonl").write_text('{"seq": -1}\n')  # an earlier run's output
    toml = box.work / "pipeline.toml"
    toml.write_text(f"""
[job]
name = "fails"
status_interval = "0s"
batch_size = 100
on_bad_record = "fail"

[[source]]
name = "input"
type = "file"
path = "{box.work}/input.jsonl"
format = "jsonl"
schema = {{ seq = "int64", ts = "int64" }}

[[sink]]
name = "rows"
input = "input"
type = "file"
path = "{out}/rows.jsonl"
""")
    proc = subprocess.run([weir, "run", str(toml)], capture_output=True, text=True,
                          timeout=120 * SCALE)
    assert proc.returncode == 1, f"exit code {proc.returncode}, expected 1:\n{proc.stderr}"
    assert not (out / "rows.jsonl").exists(), (
        f"a failed job left a final-named output: {os.listdir(out)}")
    assert (out / "rows.jsonl.inprogress").exists(), (
        f"a failed job left no in-progress output: {os.listdir(out)}")
    # And the same job without the bad line ends with the final name only.
    del lines[15000]
    (box.work / "input.jsonl").write_text("\n".join(lines) + "\n")
    proc = subprocess.run([weir, "run", str(toml)], capture_output=True, text=True,
                          timeout=120 * SCALE)
    assert proc.returncode == 0, f"exit code {proc.returncode}:\n{proc.stderr}"
    assert sorted(os.listdir(out)) == ["rows.jsonl"], f"files after success: {os.listdir(out)}"
    assert len(read_lines(out / "rows.jsonl")) == 20000, "rows lost"
