#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exactly-once end to end: the real `weir` binary, real LMDB files, real
SIGKILLs (docs/concepts/checkpoints.md).

A keyed job over 1,000,000 generated records — tumbling windows per key,
sliding windows per int64 value, and a running count per key (keyed value
state) — checkpoints every 100 ms into
LMDB and writes through the two-phase-commit file sink. Every test compares
the committed output (the part files a reader of the output directory sees)
with that of one uninterrupted run: nothing lost, nothing twice.

usage: checkpoint_tests.py --weir BIN TEST [--kills N] [--seed S]
  crash             SIGKILL at random moments, restart on the same dir (default 10 kills);
                    each time a run completes its committed output is compared, and
                    a new cycle (--fresh) starts until enough kills were survived
  failure-injection a subtask throws at record k; the job restarts itself
  rescale           checkpoint taken at parallelism 4, restored at parallelism 2
  directory-crash   400,000 records as a directory of 8 files, read in name order
                    (kills / 2 SIGKILLs) and as partitions at parallelism 2 (kills / 3)
  split-crash       400,000 records in one file read as 2 line splits, then as 1 MiB
                    splits, at source parallelism 2 (kills / 3 SIGKILLs each)
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.

WEIR_TEST_TIME_SCALE (4 in the ThreadSanitizer tree, which runs weir 5-15x
slower) stretches the kill window and the waits; there the input is a quarter
(1,000,000 / scale records) and the crash tests default to fewer kills
(10 / scale, at least 3).
"""
import argparse
import collections
import glob
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# How much slower this tree runs weir (ThreadSanitizer: 4, see the top).
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))
# 1,000,000 records; a slow tree reads fewer (250,000 under ThreadSanitizer,
# where one uninterrupted run of a million takes minutes).
RECORDS = int(1_000_000 / SCALE)

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


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def generate(path, n, seed):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            ts = i * 10 + rnd.randint(0, 500)  # out of order within the 1 s bound
            f.write(json.dumps({"seq": i, "key": "k%d" % rnd.randint(0, 999), "ts": ts,
                                "value": rnd.randint(1, 100)}) + "\n")


def committed(work):
    """What a reader of the output directories sees: committed parts only."""
    return committed_parts(work, ("windows", "sliding", "running"))


def committed_parts(work, names):
    """The committed rows of the exactly-once file sinks `work/out/<name>`,
    sorted, by name: what a reader of those directories sees."""
    out = {}
    for name in names:
        rows = []
        for part in sorted(glob.glob(os.path.join(work, "out", name, "part-*"))):
            with open(part) as f:
                rows += f.read().splitlines()
        out[name] = sorted(rows)
    return out


class Job:
    def __init__(self, args, seed, records=RECORDS):
        self.args = args
        self.records = records
        self.work = tempfile.mkdtemp(prefix="weir-cp-")
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
        path = os.path.join(self.work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(PIPELINE.format(parallelism=parallelism, extra=extra, work=self.work,
                                    local=self.local, input=self.input, files=self.files))
        return path

    def run(self, toml, *flags, expect=0):
        p = subprocess.run([self.args.weir, "run", toml, *flags], capture_output=True,
                           text=True, timeout=600 * SCALE)
        if expect is not None and p.returncode != expect:
            raise Failure(f"weir exited {p.returncode}, expected {expect}:\n{p.stderr[-3000:]}")
        return p

    def reset(self):
        for d in ("out", "state"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def reference(self, parallelism=2):
        self.reset()
        self.run(self.write(parallelism), "--fresh", "-q")
        ref = committed(self.work)
        check(len(ref["running"]) == self.records,
              f"reference run wrote {len(ref['running'])} counts")
        check(len(ref["windows"]) > 1000, "reference run wrote almost no windows")
        check(len(ref["sliding"]) > self.records // 100, "reference run wrote almost no sliding windows")
        self.reset()
        return ref

    def checkpoint_ids(self):
        p = subprocess.run([self.args.weir, "checkpoints", "list", os.path.join(self.work, "state")],
                           capture_output=True, text=True, timeout=60 * SCALE)
        ids = []
        for line in p.stdout.splitlines():
            first = line.split()[0] if line.split() else ""
            if first.isdigit():
                ids.append(int(first))
        return ids

    def committed(self):
        """What a reader of the output directories sees (crash_loop compares it)."""
        return committed(self.work)

    def close(self):
        if os.environ.get("WEIR_KEEP_FAILED") and sys.exc_info()[0] is not None:
            print(f"kept {self.work} (WEIR_KEEP_FAILED)")
            return
        shutil.rmtree(self.work, ignore_errors=True)


def compare(got, want, what, fields=("windows", "sliding", "running")):
    for name in fields:
        g, w = got[name], want[name]
        if g != w:
            missing = sorted(set(w) - set(g))
            unexpected = sorted(set(g) - set(w))
            extra = len(g) - len(set(g))
            raise Failure(f"{what}: {name} differs from the uninterrupted run: {len(g)} rows vs "
                          f"{len(w)}, {len(missing)} missing, {extra} duplicated\n"
                          f"  first missing: {missing[:3]}\n  first unexpected: {unexpected[:3]}")


def test_crash(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        crash_loop(args, seed, job, want)
    finally:
        job.close()


def test_directory_crash(args, seed):
    """The input as 8 files of a directory, read in name order as one stream:
    the same output as the single file, across SIGKILLs mid-directory."""
    job = Job(args, seed, records=int(400_000 / SCALE))  # two kill loops: a smaller input
    try:
        want = job.reference()
        job.input = job.split_input(8)
        crash_loop(args, seed, job, want, fields=("windows", "sliding", "running"),
                   kills=max(1, args.kills // 2))
        # Each file a partition at parallelism 2: no record is late either
        # way, so the windows are the same (running counts follow read order).
        job.files = '\nfiles = "partitioned"\nparallelism = 2'
        crash_loop(args, seed, job, want, fields=("windows", "sliding"),
                   kills=max(1, args.kills // 3))
    finally:
        job.close()


def test_split_crash(args, seed):
    """The input file read as line-boundary splits: two splits at
    source parallelism 2, then 1 MiB splits spread over the two subtasks, each
    across SIGKILLs: the same windows as one uninterrupted reader (no record
    is late either way; running counts follow read order)."""
    job = Job(args, seed, records=int(400_000 / SCALE))  # two kill loops: a smaller input
    try:
        want = job.reference()
        job.files = "\nparallelism = 2"
        crash_loop(args, seed, job, want, fields=("windows", "sliding"),
                   kills=max(1, args.kills // 3))
        ids = job.checkpoint_ids()
        check(ids, "the split run left no checkpoint")
        p = subprocess.run([args.weir, "checkpoints", "show", os.path.join(job.work, "state"),
                            str(max(ids))], capture_output=True, text=True, timeout=60)
        check("input.jsonl@0-" in p.stdout,
              f"the checkpoint holds no split position:\n{p.stdout[-2000:]}{p.stderr[-500:]}")
        job.files = '\nparallelism = 2\nsplit_size = "1MiB"'
        crash_loop(args, seed, job, want, fields=("windows", "sliding"),
                   kills=max(1, args.kills // 3))
    finally:
        job.close()


def crash_loop(args, seed, job, want, fields=("windows", "sliding", "running"), kills=None):
    kills_wanted = args.kills if kills is None else kills
    job.reset()
    job.local = "true"
    toml = job.write(2)
    rnd = random.Random(seed)
    kills = 0
    runs = 0
    restores = 0  # runs started on a directory holding a checkpoint
    fresh = True
    streak = 0  # kills since the last completed run
    while True:
        check(runs < 6 * kills_wanted + 20,
              f"{runs} runs and only {kills} of {kills_wanted} kills: the runs end before "
              f"their kills")
        argv = [args.weir, "run", toml] + (["--fresh"] if fresh else [])
        resumable = not fresh and bool(job.checkpoint_ids())
        fresh = False
        log_path = os.path.join(job.work, f"run-{runs}.log")
        runs += 1
        with open(log_path, "w") as log:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
            # The kill window widens with each kill since the last completed
            # run, so a slow (loaded) machine still lets a run finish.
            # After twice the kills wanted, a run that resumed from a
            # checkpoint is left to complete: on a slow machine the cycle
            # would otherwise go on killing (36 kills for 3 wanted was seen)
            # and the test's time would grow with the machine's load.
            time.sleep(rnd.uniform(0.05, 0.6) * SCALE * (1 + streak / 10))
            if restores == 0 and kills + 1 >= kills_wanted:
                # The last kill wanted, and no run has resumed yet (on a slow
                # machine every kill so far can have come before the first
                # checkpoint): wait for a checkpoint, so that the next run
                # resumes from one.
                deadline = time.monotonic() + 60 * SCALE
                while (p.poll() is None and not job.checkpoint_ids()
                       and time.monotonic() < deadline):
                    time.sleep(0.02)
            if p.poll() is None and (kills < 2 * kills_wanted or not resumable):
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                streak += 1
                log.write("\n[test] SIGKILL\n")
                restores += resumable
                continue
            p.wait()
        with open(log_path) as log:
            err = log.read()
        restores += resumable
        check(p.returncode == 0, f"a run between kills failed:\n{err[-2000:]}")
        # The job completed: what it committed must equal the uninterrupted
        # run. Too few kills yet: the next cycle starts over (--fresh).
        compare(job.committed(), want, f"after {kills} kills ({runs} runs)", fields)
        if resumable:
            check("restored from #" in err,
                  f"the completing run did not resume from a checkpoint:\n{err[-2000:]}")
        if kills >= kills_wanted:
            break
        fresh = True
        streak = 0
    check(restores > 0, "no run ever resumed from a checkpoint")
    print(f"ok: {kills} SIGKILLs in {runs} runs ({restores} resumed), committed output "
          f"equals the uninterrupted run ("
          + ", ".join(f"{len(want[f])} {f} rows" for f in fields) + ")")


def test_failure_injection(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        toml = job.write(2, 'restart = { attempts = 3, delay = "50ms" }\n'
                            'inject_failure = { operator = "running", after_records = '
                            f'{RECORDS * 3 // 10} }}')
        p = job.run(toml, "--fresh")
        check("injected failure" in p.stderr, "the injected failure did not happen")
        check("1 restart" in p.stderr, f"no restart reported:\n{p.stderr[-2000:]}")
        compare(committed(job.work), want, "after an in-process failure")
        print("ok: the job recovered by itself with the same output")
    finally:
        job.close()


def paced(toml, rate):
    """Rewrites `toml` so that each file source reads `rate` rows per second
    (the file source's `rate` key): a run then outlives a few checkpoints on
    any machine, however fast. Returns the path."""
    out, section = [], None
    with open(toml) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped
            out.append(line)
            if section == "[[source]]" and re.fullmatch(r'type\s*=\s*"file"', stripped):
                out.append(f"rate = {rate}\n")
    with open(toml, "w") as f:
        f.writelines(out)
    return toml


def kill_after_checkpoints(args, job, toml, count, seconds, what):
    """Runs `toml` fresh and SIGKILLs it once `count` checkpoints have
    completed and `seconds` have passed (it must still be running then).
    Returns the checkpoint ids it left."""
    p = subprocess.Popen([args.weir, "run", toml, "--fresh", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started = time.time()
    deadline = started + 60 * SCALE
    while time.time() < deadline and p.poll() is None and (
            len(job.checkpoint_ids()) < count or time.time() < started + seconds):
        time.sleep(0.02)
    check(p.poll() is None, f"{what} ended before {count} checkpoints completed")
    p.send_signal(signal.SIGKILL)
    p.wait()
    ids = job.checkpoint_ids()
    check(len(ids) >= count, f"{what} left {len(ids)} checkpoints, expected {count}")
    return ids


def rescale_4_to_2(args, job, rate):
    """Runs `job` at parallelism 4 with its file sources paced at `rate` rows/s,
    SIGKILLs it once two checkpoints have completed and a second has passed,
    then runs it at parallelism 2 to the end, which must restore from the last
    of them. Returns that run and the checkpoint ids the first left."""
    ids = kill_after_checkpoints(args, job, paced(job.write(4), rate), 2, 1,
                                 "the parallelism-4 run")
    r = job.run(job.write(2))
    check("restored from #" in r.stderr,
          f"the parallelism-2 run did not restore:\n{r.stderr[-2000:]}")
    return r, ids


def test_rescale(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        job.local = "true"
        _, ids = rescale_4_to_2(args, job, RECORDS // 5)
        compare(committed(job.work), want, "after restoring a parallelism-4 checkpoint at 2")
        print(f"ok: checkpoint {max(ids)} taken at parallelism 4 restored at 2, same output")
    finally:
        job.close()


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


def test_finished_source(args, seed):
    """Checkpoints after a source finished (Flink's FLIP-147): a 100-row
    source ends at once, a paced one goes on; the job is SIGKILLed once a
    checkpoint completed well after the small source ended, and the rerun
    must resume from it without reading the small file again: every row of
    both files exactly once in the committed output."""
    job = Job(args, seed, records=1)
    try:
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
        ids = kill_after_checkpoints(args, job, toml, 5, 1.5, "the paced run")
        last = max(ids)
        shown = subprocess.run([args.weir, "checkpoints", "show", os.path.join(job.work, "state"),
                                str(last)], capture_output=True, text=True, timeout=60 * SCALE)
        check("small.jsonl" in shown.stdout,
              f"checkpoint {last} does not record the small source:\n{shown.stdout[-2000:]}")
        r = job.run(toml)
        check(f"restored from #{last}" in r.stderr,
              f"the rerun did not resume from checkpoint {last}:\n{r.stderr[-2000:]}")
        rows = []
        for path in sorted(glob.glob(os.path.join(job.work, "out/rows/part-*"))):
            with open(path) as f:
                rows += [json.loads(line)["id"] for line in f]
        twice = sorted(r for r, n in collections.Counter(rows).items() if n > 1)
        missing = set(small + big) - set(rows)
        check(not twice and not missing and len(rows) == len(small) + len(big),
              f"{len(rows)} rows committed for {len(small) + len(big)}: {len(twice)} "
              f"duplicated (first: {twice[:3]}), {len(missing)} missing")
        print(f"ok: {len(ids)} checkpoints, the last (#{last}) taken after the small source "
              f"finished; resumed from it, {len(rows)} rows exactly once")
    finally:
        job.close()


TESTS = {"finished-source": test_finished_source, "crash": test_crash, "failure-injection": test_failure_injection, "rescale": test_rescale,
         "directory-crash": test_directory_crash, "split-crash": test_split_crash}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("--kills", type=int, default=10 if SCALE == 1 else max(3, round(10 / SCALE)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("WEIR_SEED", "0")) or None)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1, 1 << 30)
    print(f"seed {seed} (replay with --seed {seed} or WEIR_SEED={seed})")
    try:
        TESTS[args.test](args, seed)
    except Failure as e:
        print(f"FAIL {args.test}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
