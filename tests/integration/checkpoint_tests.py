# SPDX-License-Identifier: Apache-2.0
"""Exactly-once end to end: the real `weir` binary, real LMDB files, real
SIGKILLs (docs/concepts/checkpoints.md).

A keyed job over 1,000,000 generated records — tumbling windows per key,
sliding windows per int64 value, and a running count per key (keyed value
state) — checkpoints every 100 ms into
LMDB and writes through the two-phase-commit file sink. Every test compares
the committed output (the part files a reader of the output directory sees)
with that of one uninterrupted run: nothing lost, nothing twice.

  test_crash             SIGKILL at random moments, restart on the same dir
                         (--kills, default 10); each time a run completes its
                         committed output is compared, and a new cycle
                         (--fresh) starts until enough kills were survived
  test_failure_injection a subtask throws at record k; the job restarts itself
  test_rescale           checkpoint taken at parallelism 4, restored at 2
  test_directory_crash   400,000 records as a directory of 8 files, read in
                         name order (kills / 2 SIGKILLs) and as partitions at
                         parallelism 2 (kills / 3)
  test_split_crash       400,000 records in one file read as 2 line splits,
                         then as 1 MiB splits, at source parallelism 2 (kills
                         / 3 SIGKILLs each)
  test_finished_source   checkpoints after a source finished (FLIP-147)
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.

WEIR_TEST_TIME_SCALE (4 in the ThreadSanitizer tree, which runs weir 5-15x
slower) stretches the kill window and the waits; there the input is a quarter
(1,000,000 / scale records) and the crash tests default to fewer kills
(10 / scale, at least 3).
"""
import collections
import glob
import json
import os
import random

from weirtest import SCALE, run
from weirtest.exactly_once import (CheckpointedJob, compare, crash_loop, kill_after_checkpoints,
                                   rescale_4_to_2)

# 1,000,000 records; a slow tree reads fewer (250,000 under ThreadSanitizer,
# where one uninterrupted run of a million takes minutes).
RECORDS = int(1_000_000 / SCALE)
# SIGKILLs of the crash tests (--kills): fewer in a slow tree.
KILLS = 10 if SCALE == 1 else max(3, round(10 / SCALE))
ALL = ("windows", "sliding", "running")

PIPELINE = """
[job]
name = "exactly-once"
parallelism = {parallelism}
status_interval = "0s"
{extra}

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 3

[[source]]
name = "input"
type = "file"
path = "{input}"{files}
format = "jsonl"
schema = {{ seq = "int64", key = "string", ts = "timestamp", value = "int64" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}

[[operator]]
name = "per_key"
type = "window"
input = "input"
key_by = ["key"]
window = {{ type = "tumbling", size = "10s" }}
aggregate = {{ n = "count(*)", total = "sum(value)" }}
local_aggregation = {local}

# Sliding windows keyed by an int64 (fired slice by slice; two-phase with the
# local phase's int64 index when local_aggregation is on).
[[operator]]
name = "per_value"
type = "window"
input = "input"
key_by = ["value"]
window = {{ type = "sliding", size = "40s", slide = "20s" }}
aggregate = {{ n = "count(*)", total = "sum(seq)" }}
local_aggregation = {local}

[[operator]]
name = "running"
type = "running_count"
input = "input"
key_by = ["key"]

[[sink]]
name = "windows_out"
input = "per_key"
type = "file"
path = "{work}/out/windows"

[[sink]]
name = "sliding_out"
input = "per_value"
type = "file"
path = "{work}/out/sliding"

[[sink]]
name = "running_out"
input = "running"
type = "file"
path = "{work}/out/running"
"""


def generate(path, n, seed):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            ts = i * 10 + rnd.randint(0, 500)  # out of order within the 1 s bound
            f.write(json.dumps({"seq": i, "key": "k%d" % rnd.randint(0, 999), "ts": ts,
                                "value": rnd.randint(1, 100)}) + "\n")


class Job(CheckpointedJob):
    OUTPUTS = ALL

    def __init__(self, weir, work, seed, records=RECORDS):
        super().__init__(weir, work)
        self.records = records
        generate(os.path.join(self.work, "input.jsonl"), records, seed)
        # Two-phase window aggregation (its partials flush at each barrier);
        # the crash and rescale tests turn it on.
        self.local = "false"
        # The source's path (a file, or a directory of its pieces) and its
        # extra keys.
        self.input = os.path.join(self.work, "input.jsonl")
        self.files = ""

    def split_input(self, pieces):
        """The input cut into `pieces` files of a directory, in name order."""
        with open(self.input) as f:
            lines = f.readlines()
        d = os.path.join(self.work, "input")
        os.makedirs(d)
        per = (len(lines) + pieces - 1) // pieces
        for k in range(pieces):
            with open(os.path.join(d, "part-%02d.jsonl" % k), "w") as f:
                f.writelines(lines[k * per:(k + 1) * per])
        return d

    def write(self, parallelism, extra=""):
        return self.write_toml(PIPELINE.format(
            parallelism=parallelism, extra=extra, work=self.work, local=self.local,
            input=self.input, files=self.files))

    def reference(self, parallelism=2):
        self.reset()
        self.run(self.write(parallelism), "--fresh", "-q")
        ref = self.committed()
        assert len(ref["running"]) == self.records, (
            f"reference run wrote {len(ref['running'])} counts")
        assert len(ref["windows"]) > 1000, "reference run wrote almost no windows"
        assert len(ref["sliding"]) > self.records // 100, (
            "reference run wrote almost no sliding windows")
        self.reset()
        return ref


def test_crash(weir, work, seed, kills):
    job = Job(weir, work, seed)
    want = job.reference()
    crash_loop(job, want, seed, kills, ALL)


def test_directory_crash(weir, work, seed, kills):
    """The input as 8 files of a directory, read in name order as one stream:
    the same output as the single file, across SIGKILLs mid-directory."""
    job = Job(weir, work, seed, records=int(400_000 / SCALE))  # two kill loops: a smaller input
    want = job.reference()
    job.input = job.split_input(8)
    crash_loop(job, want, seed, max(1, kills // 2), ALL)
    # Each file a partition at parallelism 2: no record is late either
    # way, so the windows are the same (running counts follow read order).
    job.files = '\nfiles = "partitioned"\nparallelism = 2'
    crash_loop(job, want, seed, max(1, kills // 3), ("windows", "sliding"))


def test_split_crash(weir, work, seed, kills):
    """The input file read as line-boundary splits: two splits at
    source parallelism 2, then 1 MiB splits spread over the two subtasks, each
    across SIGKILLs: the same windows as one uninterrupted reader (no record
    is late either way; running counts follow read order)."""
    job = Job(weir, work, seed, records=int(400_000 / SCALE))  # two kill loops: a smaller input
    want = job.reference()
    job.files = "\nparallelism = 2"
    crash_loop(job, want, seed, max(1, kills // 3), ("windows", "sliding"))
    ids = job.checkpoint_ids()
    assert ids, "the split run left no checkpoint"
    p = run([weir, "checkpoints", "show", os.path.join(job.work, "state"), max(ids)],
            timeout=60, expect=None)
    assert "input.jsonl@0-" in p.stdout, (
        f"the checkpoint holds no split position:\n{p.stdout[-2000:]}{p.stderr[-500:]}")
    job.files = '\nparallelism = 2\nsplit_size = "1MiB"'
    crash_loop(job, want, seed, max(1, kills // 3), ("windows", "sliding"))


def test_failure_injection(weir, work, seed):
    job = Job(weir, work, seed)
    want = job.reference()
    toml = job.write(2, 'restart = { attempts = 3, delay = "50ms" }\n'
                        'inject_failure = { operator = "running", after_records = '
                        f'{RECORDS * 3 // 10} }}')
    p = job.run(toml, "--fresh")
    assert "injected failure" in p.stderr, "the injected failure did not happen"
    assert "1 restart" in p.stderr, f"no restart reported:\n{p.stderr[-2000:]}"
    compare(job.committed(), want, "after an in-process failure", ALL)


def test_rescale(weir, work, seed):
    job = Job(weir, work, seed)
    want = job.reference()
    job.local = "true"
    _, ids = rescale_4_to_2(job, RECORDS // 5)
    compare(job.committed(), want, "after restoring a parallelism-4 checkpoint at 2", ALL)
    print(f"ok: checkpoint {max(ids)} taken at parallelism 4 restored at 2, same output")


FINISHED_SOURCE = """
[job]
name = "finished-source"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 100

[[source]]
name = "small"
type = "file"
path = "{work}/small.jsonl"
format = "jsonl"
schema = {{ id = "string" }}

[[source]]
name = "big"
type = "file"
path = "{work}/big.jsonl"
format = "jsonl"
schema = {{ id = "string" }}
rate = {rate}

[[operator]]
name = "both"
type = "union"
inputs = ["small", "big"]

[[sink]]
name = "out"
input = "both"
type = "file"
path = "{work}/out/rows"
"""


def test_finished_source(weir, work, seed):
    """Checkpoints after a source finished (Flink's FLIP-147): a 100-row
    source ends at once, a paced one goes on; the job is SIGKILLed once a
    checkpoint completed well after the small source ended, and the rerun
    must resume from it without reading the small file again: every row of
    both files exactly once in the committed output."""
    job = Job(weir, work, seed, records=1)
    small = [f"s{i}" for i in range(100)]
    big = [f"b{i}" for i in range(int(40_000 / SCALE))]
    for name, ids in (("small", small), ("big", big)):
        with open(os.path.join(job.work, name + ".jsonl"), "w") as f:
            f.writelines(json.dumps({"id": i}) + "\n" for i in ids)
    toml = os.path.join(job.work, "finished.toml")
    with open(toml, "w") as f:
        f.write(FINISHED_SOURCE.format(work=job.work, rate=len(big) // 8))
    # The small source ends within a few ms; before FLIP-147 no
    # checkpoint completed after that, so ids stopped at 0 or 1.
    ids = kill_after_checkpoints(job, toml, 5, 1.5, "the paced run")
    last = max(ids)
    shown = run([weir, "checkpoints", "show", os.path.join(job.work, "state"), last],
                timeout=60, expect=None)
    assert "small.jsonl" in shown.stdout, (
        f"checkpoint {last} does not record the small source:\n{shown.stdout[-2000:]}")
    r = job.run(toml)
    assert f"restored from #{last}" in r.stderr, (
        f"the rerun did not resume from checkpoint {last}:\n{r.stderr[-2000:]}")
    rows = []
    for path in sorted(glob.glob(os.path.join(job.work, "out/rows/part-*"))):
        with open(path) as f:
            rows += [json.loads(line)["id"] for line in f]
    twice = sorted(r for r, n in collections.Counter(rows).items() if n > 1)
    missing = set(small + big) - set(rows)
    assert not twice and not missing and len(rows) == len(small) + len(big), (
        f"{len(rows)} rows committed for {len(small) + len(big)}: {len(twice)} "
        f"duplicated (first: {twice[:3]}), {len(missing)} missing")
    print(f"ok: {len(ids)} checkpoints, the last (#{last}) taken after the small source "
          f"finished; resumed from it, {len(rows)} rows exactly once")
