# SPDX-License-Identifier: Apache-2.0
"""The enrich operator end to end: the real `weir` binary, real LMDB
checkpoints, real SIGKILLs.

Transactions (a file) enriched with account rows (a second file: each
account's rows at several times, so the row in effect changes) by a
checkpointed job writing through the two-phase-commit file sink; the
enriched rows then counted per tier by a running_count. Every test compares
the committed output with that of one uninterrupted run, and with what a
plain Python reading of both files predicts.

  test_crash    SIGKILL at random moments (--kills, default 5), restart on
                the same dir until a run completes; the committed output
                equals the uninterrupted run's and the prediction
  test_rescale  a checkpoint taken at parallelism 4 restored at parallelism 2
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.
"""
import json
import os
import random

from weirtest import SCALE
from weirtest.enrich import ENRICH_INPUTS, MAX_WAIT, tier_at
from weirtest.exactly_once import CheckpointedJob, compare, crash_loop, rescale_4_to_2

KILLS = 5
TRANSACTIONS = int(300_000 / SCALE)
ACCOUNTS = 2000

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


class Job(CheckpointedJob):
    OUTPUTS = ("enriched", "per_tier")

    def __init__(self, weir, work, seed):
        super().__init__(weir, work)
        self.rows = generate(self.work, seed)

    def write(self, parallelism):
        return self.write_toml(PIPELINE.format(
            parallelism=parallelism, work=self.work, max_wait=MAX_WAIT,
            enrich_inputs=ENRICH_INPUTS.format(work=self.work, max_wait=MAX_WAIT)))

    def reference(self, parallelism=2):
        self.reset()
        self.run(self.write(parallelism), "--fresh", "-q")
        ref = self.committed()
        self.reset()
        want = predict(self.work, self.rows)
        assert len(ref["enriched"]) == TRANSACTIONS, (
            f"the reference run wrote {len(ref['enriched'])} rows, not {TRANSACTIONS}")
        wrong = 0
        for line in ref["enriched"]:
            r = json.loads(line)
            wrong += r["tier"] != want[r["tx"]]
        assert wrong == 0, f"{wrong} rows of the reference run differ from the prediction"
        nulls = sum(1 for v in want.values() if v is None)
        assert 0 < nulls < TRANSACTIONS // 2, (
            f"{nulls} transactions without a tier: a weak input")
        return ref


def test_crash(weir, work, seed, kills):
    job = Job(weir, work, seed)
    want = job.reference()
    # crash_loop's kill window widens on a loaded machine; a completing
    # run on a directory holding a checkpoint must resume from it. The
    # accounts file ends within the first second, so resuming needs
    # checkpoints completed after a source finished (FLIP-147).
    crash_loop(job, want, seed, kills, Job.OUTPUTS)


def test_rescale(weir, work, seed):
    job = Job(weir, work, seed)
    want = job.reference()
    _, ids = rescale_4_to_2(job, TRANSACTIONS // 5)
    compare(job.committed(), want, "after restoring a parallelism-4 checkpoint at 2", Job.OUTPUTS)
    print(f"ok: checkpoint {max(ids)} taken at parallelism 4 restored at 2, same output")
