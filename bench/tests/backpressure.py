#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Bounded memory under backpressure (docs/internals/architecture.md), ctest label e2e.

A generator of 2M rows (as fast as possible, 2 subtasks) feeds a blackhole
sink throttled to 200k rows/s (1 subtask, so every batch crosses one of 2
network channels): about 10 s during which the sources could produce ~20x
faster than the sink drains. With credit-based flow control at most
`credits` batches are in flight per channel plus one queued at each sender,
so the weir process's peak resident memory (VmHWM, from wait4's ru_maxrss)
must stay under

    idle + channels x (credits + 1) x batch_bytes x 2 + 24 MiB

where idle is the peak RSS of the same pipeline on 20k rows (the process,
CAF and the allocator's baseline), batch_bytes = 1024 rows x 128 bytes
(id int64, ts int64, a 100-byte string, offsets and validity bytes: 124
bytes, rounded up), the factor 2 covers copies made while a batch is built
and evaluated, and 24 MiB is the fixed margin. Without flow control the
queued batches alone would be ~250 MB. The sink must also receive all 2M rows.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROWS = 2_000_000
SINK_RATE = 200_000
CHANNELS = 2
CREDITS = 8  # batches a receiver grants per input channel (job_context.hpp)
BATCH_ROWS = 1024
ROW_BYTES = 128
MARGIN = 24 * 2**20

PIPELINE = """
[job]
name = "backpressure"
parallelism = 1
batch_size = {batch}
status_interval = "0s"

[[source]]
name = "gen"
type = "generator"
count = {rows}
parallelism = 2
fields = {{ id = "seq", ts = "to_timestamp(1600000000000 + seq)", payload = "rand_string(seq, 1, 100)" }}
event_time = {{ field = "ts" }}

[[sink]]
name = "slow"
input = "gen"
type = "blackhole"
rate = {rate}
report = true
"""


def run(weir, rows, rate):
    with tempfile.TemporaryDirectory(prefix="weir-bp-") as tmp:
        path = Path(tmp) / "backpressure.toml"
        path.write_text(PIPELINE.format(batch=BATCH_ROWS, rows=rows, rate=rate))
        out = Path(tmp) / "stdout"
        start = time.monotonic()
        with open(out, "w") as f:
            proc = subprocess.Popen([weir, "run", str(path), "-q"], stdout=f,
                                    stderr=subprocess.PIPE, text=True)
            _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - start
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.exit(f"weir failed with exit code {code}: {proc.stderr.read()}")
        reports = [json.loads(l) for l in out.read_text().splitlines() if l.startswith("{")]
    return sum(r["rows"] for r in reports), usage.ru_maxrss * 1024, seconds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    args = ap.parse_args()

    idle_rows, idle_rss, _ = run(args.weir, 20_000, 10_000_000)
    if idle_rows != 20_000:
        sys.exit(f"the idle run delivered {idle_rows} rows, not 20000")
    rows, peak, seconds = run(args.weir, ROWS, SINK_RATE)
    in_flight = CHANNELS * (CREDITS + 1) * BATCH_ROWS * ROW_BYTES
    bound = idle_rss + 2 * in_flight + MARGIN
    mib = lambda b: f"{b / 2**20:.1f} MiB"
    print(f"sink received {rows:,} rows in {seconds:.1f} s; peak RSS {mib(peak)}; "
          f"bound {mib(bound)} = idle {mib(idle_rss)} + 2 x in-flight {mib(in_flight)} "
          f"+ margin {mib(MARGIN)}")
    failed = 0
    if rows != ROWS:
        print(f"FAIL: the sink received {rows:,} rows, expected {ROWS:,}")
        failed += 1
    if peak > bound:
        print(f"FAIL: peak RSS {mib(peak)} exceeds the bound {mib(bound)}")
        failed += 1
    print(f"{2 - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
