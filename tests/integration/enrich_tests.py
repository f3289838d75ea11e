#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The enrich operator end to end: the real `weir` binary, real LMDB
checkpoints, real SIGKILLs.

Transactions (a file) enriched with account rows (a second file: each
account's rows at several times, so the row in effect changes) by a
checkpointed job writing through the two-phase-commit file sink; the
enriched rows then counted per tier by a running_count. Every test compares
the committed output with that of one uninterrupted run, and with what a
plain Python reading of both files predicts.

usage: enrich_tests.py --weir BIN TEST [--kills N] [--seed S]
  crash    SIGKILL at random moments (default 5 kills), restart on the same
           dir until a run completes; the committed output equals the
           uninterrupted run's and the prediction
  rescale  a checkpoint taken at parallelism 4 restored at parallelism 2
"""
import argparse
import bisect
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from checkpoint_tests import (SCALE, Failure, check, committed_parts,  # noqa: E402
                              crash_loop, rescale_4_to_2)

TRANSACTIONS = int(300_000 / SCALE)
ACCOUNTS = 2000
MAX_WAIT = 2000  # ms

# The two file sources and the enrich operator between them, shared with
# join_checkpoint_tests.py's enrich + pattern job (a format template:
# {work} and {max_wait} filled in by the caller's format()).
ENRICH_INPUTS = """
[[source]]
name = "transactions"
type = "file"
path = "{work}/transactions.jsonl"
format = "jsonl"
schema = {{ tx = "int64", account = "int64", amount = "int64", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}

[[source]]
name = "accounts"
type = "file"
path = "{work}/accounts.jsonl"
format = "jsonl"
schema = {{ id = "int64", tier = "string", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "0s" }}

[[operator]]
name = "enriched"
type = "enrich"
inputs = ["transactions", "accounts"]
key_by = ["account"]
table_key = ["id"]
fields = ["tier"]
max_wait = "{max_wait}ms"
"""

PIPELINE = """
[job]
name = "enrich-exactly-once"
parallelism = {parallelism}
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"

{enrich_inputs}
[[operator]]
name = "per_tier"
type = "running_count"
input = "enriched"
key_by = ["tier"]

[[sink]]
name = "enriched_out"
input = "enriched"
type = "file"
path = "{work}/out/enriched"

[[sink]]
name = "per_tier_out"
input = "per_tier"
type = "file"
path = "{work}/out/per_tier"
"""


def generate(work, seed):
    """Transactions roughly in time order (out of order within 1 s); each
    account gets 1-3 rows at random times in account-time order (the table
    file is in time order), its tier changing each time."""
    rnd = random.Random(seed)
    span = TRANSACTIONS * 10
    rows = []
    for a in range(ACCOUNTS):
        for _ in range(rnd.randint(1, 3)):
            rows.append((rnd.randint(0, span), a, rnd.choice(["basic", "gold", "platinum"])))
    rows.sort()
    with open(os.path.join(work, "accounts.jsonl"), "w") as f:
        for ts, a, tier in rows:
            f.write(json.dumps({"id": a, "tier": tier, "ts": ts}) + "\n")
    with open(os.path.join(work, "transactions.jsonl"), "w") as f:
        for i in range(TRANSACTIONS):
            ts = i * 10 + rnd.randint(0, 900)
            f.write(json.dumps({"tx": i, "account": rnd.randrange(ACCOUNTS),
                                "amount": rnd.randint(1, 5000), "ts": ts}) + "\n")
    return rows


def predict(work, rows):
    """The tier each transaction gets: the account's latest row at or before
    its time; else the first row if it comes within MAX_WAIT; else null."""
    by_account = {}
    for ts, a, tier in rows:  # in time order; equal times: file order, the later wins
        by_account.setdefault(a, ([], []))
        by_account[a][0].append(ts)
        by_account[a][1].append(tier)
    want = {}
    with open(os.path.join(work, "transactions.jsonl")) as f:
        for line in f:
            t = json.loads(line)
            times, tiers = by_account.get(t["account"], ([], []))
            want[t["tx"]] = tier_at(times, tiers, t["ts"])
    return want


def tier_at(times, tiers, ts):
    """The tier enrich gives a transaction at `ts` whose account's rows came
    at `times` (ascending) with `tiers`: the latest row at or before `ts`;
    else the first row if it comes within MAX_WAIT; else None."""
    i = bisect.bisect_right(times, ts)
    if i > 0:
        return tiers[i - 1]
    return tiers[0] if times and times[0] <= ts + MAX_WAIT else None


def committed(work):
    return committed_parts(work, ("enriched", "per_tier"))


class Job:
    def __init__(self, args, seed):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="weir-enrich-")
        self.rows = generate(self.work, seed)

    def write(self, parallelism):
        path = os.path.join(self.work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(PIPELINE.format(parallelism=parallelism, work=self.work, max_wait=MAX_WAIT,
                                    enrich_inputs=ENRICH_INPUTS.format(work=self.work,
                                                                       max_wait=MAX_WAIT)))
        return path

    def reset(self):
        for d in ("out", "state"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def run(self, toml, *flags):
        p = subprocess.run([self.args.weir, "run", toml, *flags], capture_output=True, text=True,
                           timeout=600 * SCALE)
        check(p.returncode == 0, f"weir exited {p.returncode}:\n{p.stderr[-3000:]}")
        return p

    def reference(self, parallelism=2):
        self.reset()
        self.run(self.write(parallelism), "--fresh", "-q")
        ref = committed(self.work)
        self.reset()
        want = predict(self.work, self.rows)
        check(len(ref["enriched"]) == TRANSACTIONS,
              f"the reference run wrote {len(ref['enriched'])} rows, not {TRANSACTIONS}")
        wrong = 0
        for line in ref["enriched"]:
            r = json.loads(line)
            wrong += r["tier"] != want[r["tx"]]
        check(wrong == 0, f"{wrong} rows of the reference run differ from the prediction")
        nulls = sum(1 for v in want.values() if v is None)
        check(0 < nulls < TRANSACTIONS // 2, f"{nulls} transactions without a tier: a weak input")
        return ref

    def committed(self):
        """What a reader of the output directories sees (crash_loop compares it)."""
        return committed(self.work)

    def checkpoint_ids(self):
        p = subprocess.run([self.args.weir, "checkpoints", "list", os.path.join(self.work, "state")],
                           capture_output=True, text=True, timeout=60 * SCALE)
        return [int(l.split()[0]) for l in p.stdout.splitlines() if l.split() and l.split()[0].isdigit()]

    def close(self):
        shutil.rmtree(self.work, ignore_errors=True)


def compare(got, want, what):
    for name in ("enriched", "per_tier"):
        g, w = got[name], want[name]
        if g != w:
            missing = sorted(set(w) - set(g))
            extra = len(g) - len(set(g))
            raise Failure(f"{what}: {name}: {len(g)} rows vs {len(w)}, {len(missing)} missing, "
                          f"{extra} duplicated; first missing: {missing[:3]}")


def test_crash(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        # crash_loop's kill window widens on a loaded machine; a completing
        # run on a directory holding a checkpoint must resume from it. The
        # accounts file ends within the first second, so resuming needs
        # checkpoints completed after a source finished (FLIP-147).
        crash_loop(args, seed, job, want, fields=("enriched", "per_tier"))
    finally:
        job.close()


def test_rescale(args, seed):
    job = Job(args, seed)
    try:
        want = job.reference()
        _, ids = rescale_4_to_2(args, job, TRANSACTIONS // 5)
        compare(committed(job.work), want, "after restoring a parallelism-4 checkpoint at 2")
        print(f"ok: checkpoint {max(ids)} taken at parallelism 4 restored at 2, same output")
    finally:
        job.close()


TESTS = {"crash": test_crash, "rescale": test_rescale}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("--kills", type=int, default=5)
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
