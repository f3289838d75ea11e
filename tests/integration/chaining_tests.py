# SPDX-License-Identifier: Apache-2.0
"""Two consumers of one stream, joined again downstream, give the same
output whichever is declared first: the real `weir` binary on two pipeline
files that differ only in the order of the two consumers' blocks.

Both consumers are forward at the source's parallelism, so both are chained
into the source's subtask (Flink's operator chain is a tree): each batch and
each watermark reaches the two branches within the same call, and the node
joining them sees the branches in file order. Each test compares the two
runs' outputs with each other and with what a plain Python reading of the
input predicts.

  test_enrich_order        two filters of one file (account rows,
                           transactions) feed an enrich without event time:
                           each transaction gets the latest account row
                           before it in the file
  test_union_window_order  two filters of one out-of-order file, unioned
                           again, feed an event-time tumbling window with a
                           late output: the windows and the late records the
                           file's batches and watermarks determine
The seed is printed; pass --seed (or WEIR_SEED) to replay a run.
"""
import json
import os
import random

from weirtest import first_difference, read_jsonl, run


def run_both(weir, work, head, first, second, tail):
    """Runs head + first + second + tail and head + second + first + tail
    (the tail writes its outputs under "{out}"); returns both outputs' rows, per file
    name the tail's sinks write."""
    outputs = []
    for order, blocks in (("declared", (first, second)), ("swapped", (second, first))):
        out = os.path.join(work, order)
        os.makedirs(out)
        toml = os.path.join(work, order + ".toml")
        with open(toml, "w", encoding="utf-8") as f:
            f.write(head + "".join(blocks) + tail.replace("{out}", out))
        run([weir, "run", toml, "-q"], what=order)
        outputs.append({name: read_jsonl(os.path.join(out, name)) for name in sorted(os.listdir(out))})
    return outputs


# -- enrich-order ---------------------------------------------------------------

ENRICH_HEAD = """
[job]
name = "chaining-enrich-order"
status_interval = "0s"
batch_size = 1

[[source]]
name = "events"
type = "file"
path = "{work}/events.jsonl"
format = "jsonl"
schema = {{ kind = "string", account = "string", tier = "string", tx = "int64" }}
"""

ENRICH_TX = """
[[operator]]
name = "transactions"
type = "filter"
input = "events"
where = "kind == 'tx'"
"""

ENRICH_ACCOUNTS = """
[[operator]]
name = "accounts"
type = "filter"
input = "events"
where = "kind == 'account'"
"""

ENRICH_TAIL = """
[[operator]]
name = "enriched"
type = "enrich"
inputs = ["transactions", "accounts"]
key_by = ["account"]
table_key = ["account"]
fields = ["tier"]
prefix = "account_"
on_missing = "null"

[[sink]]
name = "out"
input = "enriched"
type = "file"
path = "{out}/enriched.jsonl"
"""


def test_enrich_order(weir, seed, work):
    # Account rows change tiers as the file goes on; transactions in between.
    # Without event time the enrich joins each transaction with the row in
    # effect when it arrives: in file order, the latest row before it.
    rnd = random.Random(seed)
    accounts = [f"a{i}" for i in range(20)]
    rows = []
    for i in range(3000):
        a = rnd.choice(accounts)
        if rnd.random() < 0.2:
            rows.append({"kind": "account", "account": a, "tier": f"tier{i}", "tx": None})
        else:
            rows.append({"kind": "tx", "account": a, "tier": None, "tx": i})
    with open(os.path.join(work, "events.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    latest = {}
    want = []
    for r in rows:
        if r["kind"] == "account":
            latest[r["account"]] = r["tier"]
        else:
            want.append(dict(r, account_tier=latest.get(r["account"])))
    enriched = sum(1 for w in want if w["account_tier"] is not None)
    assert 0 < enriched < len(want), f"{enriched} of {len(want)} transactions have a row: a weak input"

    declared, swapped = run_both(weir, work, ENRICH_HEAD.format(work=work), ENRICH_TX,
                                 ENRICH_ACCOUNTS, ENRICH_TAIL)
    for name, out in (("transactions declared first", declared),
                      ("accounts declared first", swapped)):
        got = out["enriched.jsonl"]
        assert got == want, (f"{name}: not the latest account row before each transaction: "
            + first_difference(got, want))
    print(f"ok: {len(want)} transactions, {enriched} with an account row, "
          "the same in both declaration orders")


# -- union-window-order -------------------------------------------------------------

BATCH = 16
BOUND_MS = 100

UNION_HEAD = """
[job]
name = "chaining-union-window-order"
status_interval = "0s"
batch_size = {batch}

[[source]]
name = "events"
type = "file"
path = "{work}/events.jsonl"
format = "jsonl"
schema = {{ kind = "string", v = "int64", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "{bound}ms" }}
"""

UNION_A = """
[[operator]]
name = "kind_a"
type = "filter"
input = "events"
where = "kind == 'a'"
"""

UNION_B = """
[[operator]]
name = "kind_b"
type = "filter"
input = "events"
where = "kind == 'b'"
"""

UNION_TAIL = """
[[operator]]
name = "both"
type = "union"
inputs = ["kind_a", "kind_b"]

[[operator]]
name = "per_second"
type = "window"
input = "both"
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)", total = "sum(v)" }
late_output = "too_late"

[[sink]]
name = "windows_out"
input = "per_second"
type = "file"
path = "{out}/windows.jsonl"

[[sink]]
name = "late_out"
input = "too_late"
type = "file"
path = "{out}/late.jsonl"
"""


def test_union_window_order(weir, seed, work):
    # Out of order by up to 300 ms against a 100 ms bound: some records come
    # after the watermark passed their window. The source reads batches of
    # BATCH rows and emits max - bound - 1 after each; a record is late when
    # the watermark before its batch reached its window's end - 1.
    rnd = random.Random(seed)
    rows = [{"kind": rnd.choice("ab"), "v": i, "ts": i * 10 + rnd.randint(0, 300)}
            for i in range(4000)]
    with open(os.path.join(work, "events.jsonl"), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    wm = None
    high = None
    windows = {}
    late = []
    for b in range(0, len(rows), BATCH):
        batch = rows[b:b + BATCH]
        for r in batch:
            start = r["ts"] // 1000 * 1000
            if wm is not None and start + 999 <= wm:
                late.append(r)
                continue
            w = windows.setdefault(start, [0, 0])
            w[0] += 1
            w[1] += r["v"]
        high = max([high or 0] + [r["ts"] for r in batch])
        wm = high - BOUND_MS - 1 if wm is None else max(wm, high - BOUND_MS - 1)
    want_windows = [{"window_start": s, "window_end": s + 1000, "n": n, "total": t}
                    for s, (n, t) in sorted(windows.items())]
    assert 0 < len(late) < len(rows) // 10, f"{len(late)} late records: a weak input"

    declared, swapped = run_both(weir, work,
                                 UNION_HEAD.format(work=work, batch=BATCH, bound=BOUND_MS),
                                 UNION_A, UNION_B, UNION_TAIL)
    for name, out in (("kind_a declared first", declared), ("kind_b declared first", swapped)):
        got = sorted(out["windows.jsonl"], key=lambda r: r["window_start"])
        assert got == want_windows, f"{name}: windows: " + first_difference(got, want_windows)
        got_late = sorted(out["late.jsonl"], key=lambda r: r["v"])
        assert got_late == late, f"{name}: late records: " + first_difference(got_late, late)
    # Rows of one batch reach the union branch by branch (the late output
    # keeps that order), so only the windows' order is the same in both.
    assert declared["windows.jsonl"] == swapped["windows.jsonl"], (
        "the two declaration orders fired the windows in a different order")
    print(f"ok: {len(want_windows)} windows, {len(late)} late records, "
          "the same in both declaration orders")
