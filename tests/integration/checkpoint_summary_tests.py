#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The `checkpoints` line of `weir run`'s summary against what the checkpoint
directory holds. The real `weir` binary, real LMDB files.

A paced generator (parallelism 2, about 0.6 s of input) feeds a keyed window
and an exactly-once file sink, with checkpoints every 40 ms: each run takes
a few periodic checkpoints and ends with the final checkpoint that commits
the sink's last transaction (FLIP-147). The job runs RUNS times with --fresh
on the same [checkpoint] dir. After each run:

- `last #L` is the newest complete checkpoint that `weir checkpoints list`
  shows: no checkpoint completed unseen by the summary (one triggered after
  the final one and committed while the job ended);
- from the second run on the summary says that its ids continue after the
  highest id the directory held, which is at least the previous run's
  `last #`, and every id the previous run handed out is accounted for:
  the next run continues after at most the previous one's
  `#after + completed + aborted`;
- at least one checkpoint completed, the window rows are all committed once.

usage: checkpoint_summary_tests.py --weir BIN
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))
RUNS = 4
RECORDS = 6000
KEYS = 50

PIPELINE = """
[job]
name = "summary"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "40ms"
dir = "{work}/state"

[[source]]
name = "gen"
type = "generator"
count = {records}
rate = 10000
seed = 3
fields = {{ id = "seq", k = "seq % {keys}", ts = "to_timestamp(1600000000000 + seq)" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["k"]
window = {{ type = "tumbling", size = "1d" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "per_key"
type = "file"
path = "{work}/out"
"""

SUMMARY = re.compile(
    r"^  checkpoints +(?P<completed>[\d,]+) completed"
    r"(?:, (?P<aborted>[\d,]+) aborted)?(?: \((?P<failed>[\d,]+) failed\))?"
    r"(?:, last #(?P<last>\d+))?"
    r"(?:; ids continue after #(?P<after>\d+), the highest in (?P<dir>\S+))?$",
    re.M)


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def stored(weir, state):
    """Ids of the complete checkpoints `weir checkpoints list` shows."""
    p = subprocess.run([weir, "checkpoints", "list", state], capture_output=True, text=True,
                       timeout=60 * SCALE)
    check(p.returncode == 0, f"weir checkpoints list failed:\n{p.stdout}{p.stderr}")
    ids = []
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) > 1 and words[0].isdigit() and words[1] == "complete":
            ids.append(int(words[0]))
    return ids


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="weir-cp-summary-")
    ok = False
    try:
        toml = os.path.join(work, "pipeline.toml")
        with open(toml, "w") as f:
            f.write(PIPELINE.format(work=work, records=RECORDS, keys=KEYS))
        state = os.path.join(work, "state")
        previous = None  # (after, completed, aborted, last) of the run before
        for run in range(1, RUNS + 1):
            shutil.rmtree(os.path.join(work, "out"), ignore_errors=True)
            p = subprocess.run([args.weir, "run", toml, "--fresh"], capture_output=True,
                               text=True, timeout=120 * SCALE)
            check(p.returncode == 0, f"run {run} failed:\n{p.stderr[-3000:]}")
            m = SUMMARY.search(p.stderr)
            check(m, f"run {run}: no checkpoints line of the expected form:\n{p.stderr[-2000:]}")
            line = m.group(0).strip()
            completed = int(m.group("completed").replace(",", ""))
            aborted = int((m.group("aborted") or "0").replace(",", ""))
            last = int(m.group("last") or 0)
            after = int(m.group("after") or 0)
            check(completed >= 1 and last > after,
                  f"run {run}: '{line}': no checkpoint of this run completed")
            ids = stored(args.weir, state)
            check(ids and max(ids) == last,
                  f"run {run}: '{line}', but the directory's newest complete checkpoint is "
                  f"#{max(ids) if ids else 0} (complete: {ids})")
            check(last <= after + completed + aborted,
                  f"run {run}: '{line}': last #{last} beyond the {completed + aborted} ids "
                  f"completed or aborted after #{after}")
            if previous is None:
                check(after == 0, f"run {run}: '{line}': a fresh directory, yet ids continue")
            else:
                p_after, p_completed, p_aborted, p_last = previous
                check(m.group("dir") == state,
                      f"run {run}: '{line}': ids continue, but not said after which of {state}")
                check(p_last <= after <= p_after + p_completed + p_aborted,
                      f"run {run}: '{line}': continues after #{after}; the run before ended "
                      f"at #{p_last} and accounted for ids up to "
                      f"#{p_after + p_completed + p_aborted}")
            rows = []
            for part in glob.glob(os.path.join(work, "out", "part-*")):
                with open(part) as f:
                    rows += [line for line in f.read().splitlines() if line.strip()]
            check(len(rows) == KEYS, f"run {run}: {len(rows)} window rows committed, not {KEYS}")
            print(f"run {run}: {line}; complete in the directory: {ids}")
            previous = (after, completed, aborted, last)
        ok = True
        print(f"ok: {RUNS} runs, each summary's last checkpoint is the directory's newest, "
              "ids continue across --fresh runs as said")
    except Failure as e:
        print(f"FAIL: {e}", file=sys.stderr)
        if os.environ.get("WEIR_KEEP_FAILED"):
            print(f"kept {work} (WEIR_KEEP_FAILED)")
            return 1
        return 1
    finally:
        if ok or not os.environ.get("WEIR_KEEP_FAILED"):
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
