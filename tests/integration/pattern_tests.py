#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The pattern operator (Flink CEP) through the real `weir` binary: its
partial matches in checkpointed keyed state across real SIGKILLs and a
change of parallelism, and the max_partial_matches cap in the job summary.

Input: generated card transactions (amounts 1..1000, event time out of
order within the 1 s bound); pattern: a small transaction (< 10) followed by
a large one (> 900) on the same card within 5 s, skip past last event, with
timed-out partial matches on a side stream. Output through the
two-phase-commit file sink; a reader sees committed parts only.

usage: pattern_tests.py --weir BIN TEST [--kills N] [--seed S]
  crash    SIGKILL at random moments, restart on the same checkpoint dir, until
           N kills (default 5) were survived and a run completed: the committed
           matches and timeouts equal one uninterrupted run's
  rescale  a checkpoint taken at parallelism 4 restored at parallelism 2: the
           same committed output
  cap      max_partial_matches = 2, followed_by_any, small < 500: the summary counts
           the partial matches dropped, and fewer matches come out
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.
"""
import argparse
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_tests import (SCALE, Failure, check, committed_parts,  # noqa: E402
                              rescale_4_to_2)

RECORDS = int(200_000 / SCALE)

PIPELINE = """
[job]
name = "pattern-exactly-once"
parallelism = {parallelism}
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 3

[[source]]
name = "tx"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
schema = {{ seq = "int64", card = "string", amount = "int64", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}
parallelism = 1

[[operator]]
name = "fraud"
type = "pattern"
input = "tx"
key_by = ["card"]
steps = [
  {{ name = "small", where = "amount < {small}" }},
  {{ name = "large", where = "amount > 900", contiguity = "{contiguity}" }},
]
within = "5s"
skip = "skip_past_last_event"
select = {{ small_seq = "small.seq", large_seq = "large.seq", amount = "large.amount" }}
timeout_output = "fraud_timeouts"
max_partial_matches = {cap}

[[sink]]
name = "matches"
input = "fraud"
type = "file"
path = "{work}/out/matches"

[[sink]]
name = "timeouts"
input = "fraud_timeouts"
type = "file"
path = "{work}/out/timeouts"
"""


def generate(path, n, seed):
    rnd = random.Random(seed)
    with open(path, "w") as f:
        for i in range(n):
            ts = i * 5 + rnd.randint(0, 500)
            f.write(json.dumps({"seq": i, "card": "c%d" % rnd.randint(0, 499), "ts": ts,
                                "amount": rnd.randint(1, 1000)}) + "\n")


def committed(work):
    return committed_parts(work, ("matches", "timeouts"))


class Job:
    def __init__(self, args, seed):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="weir-pattern-")
        generate(os.path.join(self.work, "input.jsonl"), RECORDS, seed)

    def write(self, parallelism, cap=10000, contiguity="followed_by", small=10):
        path = os.path.join(self.work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(PIPELINE.format(parallelism=parallelism, work=self.work, cap=cap,
                                    contiguity=contiguity, small=small))
        return path

    def run(self, toml, *flags):
        p = subprocess.run([self.args.weir, "run", toml, *flags], capture_output=True,
                           text=True, timeout=600 * SCALE)
        check(p.returncode == 0, f"weir exited {p.returncode}:\n{p.stderr[-3000:]}")
        return p

    def reset(self):
        for d in ("out", "state"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def reference(self):
        self.reset()
        self.run(self.write(2), "--fresh", "-q")
        ref = committed(self.work)
        # (The input shrinks with SCALE, and so do the matches: 86 at SCALE 4.)
        least = 100 / SCALE
        check(len(ref["matches"]) > least, f"reference run found {len(ref['matches'])} matches")
        check(len(ref["timeouts"]) > least, f"reference run found {len(ref['timeouts'])} timeouts")
        self.reset()
        return ref

    def checkpoint_ids(self):
        p = subprocess.run([self.args.weir, "checkpoints", "list", os.path.join(self.work, "state")],
                           capture_output=True, text=True, timeout=60 * SCALE)
        return [int(l.split()[0]) for l in p.stdout.splitlines() if l.split() and l.split()[0].isdigit()]

    def close(self):
        if os.environ.get("WEIR_KEEP_FAILED") and sys.exc_info()[0] is not None:
            print(f"kept {self.work} (WEIR_KEEP_FAILED)")
            return
        shutil.rmtree(self.work, ignore_errors=True)


def compare(got, want, what):
    for name in ("matches", "timeouts"):
        g, w = got[name], want[name]
        if g != w:
            missing = sorted(set(w) - set(g))
            unexpected = sorted(set(g) - set(w))
            raise Failure(f"{what}: {name} differ from the uninterrupted run: {len(g)} rows vs "
                          f"{len(w)}, {len(missing)} missing, {len(g) - len(set(g))} duplicated\n"
                          f"  first missing: {missing[:3]}\n  first unexpected: {unexpected[:3]}")


def test_crash(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        toml = job.write(2)
        rnd = random.Random(seed)
        kills = runs = restores = streak = 0
        fresh = True
        while True:
            check(runs < 6 * args.kills + 20,
                  f"{runs} runs and only {kills} of {args.kills} kills: the runs end before "
                  f"their kills")
            argv = [args.weir, "run", toml] + (["--fresh"] if fresh else [])
            resumable = not fresh and bool(job.checkpoint_ids())
            fresh = False
            log_path = os.path.join(job.work, f"run-{runs}.log")
            runs += 1
            with open(log_path, "w") as log:
                p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
                time.sleep(rnd.uniform(0.05, 0.5) * SCALE * (1 + streak / 10))
                # As checkpoint_tests.crash_loop: the last kill wanted waits
                # for a checkpoint while no run has resumed yet, and after
                # twice the kills wanted, a resumed run is left to complete.
                if restores == 0 and kills + 1 >= args.kills:
                    deadline = time.monotonic() + 60 * SCALE
                    while (p.poll() is None and not job.checkpoint_ids()
                           and time.monotonic() < deadline):
                        time.sleep(0.02)
                if p.poll() is None and (kills < 2 * args.kills or not resumable):
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                    kills += 1
                    streak += 1
                    restores += resumable
                    continue
                p.wait()
            with open(log_path) as log:
                err = log.read()
            restores += resumable
            check(p.returncode == 0, f"a run between kills failed:\n{err[-2000:]}")
            compare(committed(job.work), want, f"after {kills} kills ({runs} runs)")
            if kills >= args.kills:
                break
            job.reset()
            fresh = True
            streak = 0
        check(restores > 0, "no run ever resumed from a checkpoint")
        print(f"ok: {kills} SIGKILLs in {runs} runs ({restores} resumed): "
              f"{len(want['matches'])} matches and {len(want['timeouts'])} timeouts as uninterrupted")
    finally:
        job.close()


def test_rescale(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        rescale_4_to_2(args, job, RECORDS // 5)
        compare(committed(job.work), want, "after restoring a parallelism-4 checkpoint at 2")
        print("ok: a parallelism-4 checkpoint restored at 2 gives the same matches and timeouts")
    finally:
        job.close()


def test_cap(args, seed):
    job = Job(args, seed)
    try:
        job.reset()
        full = job.run(job.write(2, cap=10000, contiguity="followed_by_any", small=500), "--fresh")
        check(" partial matches dropped" not in full.stderr,
              f"the uncapped run dropped partial matches:\n{full.stderr[-1500:]}")
        uncapped = committed(job.work)
        job.reset()
        capped = job.run(job.write(2, cap=2, contiguity="followed_by_any", small=500), "--fresh")
        m = re.search(r"operator 'fraud'.*?([\d,]+) partial matches dropped", capped.stderr)
        check(m, f"the summary does not count dropped partial matches:\n{capped.stderr[-1500:]}")
        dropped = int(m.group(1).replace(",", ""))
        check(dropped > 0, "no partial match dropped at max_partial_matches = 2")
        got = committed(job.work)
        # (Not a subset: with skip past last event, which partial matches
        # are left decides which match comes out first.)
        check(len(got["matches"]) < len(uncapped["matches"]),
              "the cap changed nothing: as many matches as without it")
        print(f"ok: {dropped} partial matches dropped at the cap; {len(got['matches'])} "
              f"matches, {len(uncapped['matches'])} without it")
    finally:
        job.close()


TESTS = {"crash": test_crash, "rescale": test_rescale, "cap": test_cap}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("--kills", type=int, default=5 if SCALE == 1 else 3)
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
