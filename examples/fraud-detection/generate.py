#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Transactions and account updates for the fraud-detection example, with
known frauds planted among ordinary traffic (deterministic for a seed).

Writes into --out:
  accounts.jsonl      {account_id, card, owner, country, ts}: one row per
                      account an hour before the first transaction, and
                      later updates (a new country or owner) for some
  transactions.jsonl  {txn_id, ts, card, account_id, amount, merchant},
                      ascending ts (ms), amounts in dollars
  planted.jsonl       the alerts the job must raise, each exactly once:
                      {alert_id, kind, card, account_id, owner}

Ordinary traffic: every account buys something every 4-40 minutes for
$1.00-$300.00; a few ordinary accounts make one purchase of $1,000-$3,000.
No ordinary amount is below $1.00.

Planted frauds (the cards are disjoint, and never an ordinary large purchase):
  velocity  3 purchases over $1,000 within 12 minutes: a 30-minute window
            (sliding by 5) sees 3 or more. alert_id = "<card>:velocity:<ts of
            the first of them>"
  pattern   a purchase under $1.00, then one over $500 0.5-4 minutes later
            (Flink CEP's "small then large within 5 minutes"). alert_id =
            "<card>:pattern:<txn_id of the small one>"
Decoys that must raise nothing: 2 purchases over $1,000 within 12 minutes
(not 3); 3 of them spread over 50 minutes (never 3 in one 30-minute
window); a small purchase then a large one 6-9 minutes later (outside 5).

usage: generate.py [--out DIR] [--seed N] [--accounts N] [--hours H]
"""
import argparse
import json
import pathlib
import random

T0 = 1_700_000_400_000  # 2023-11-14T22:20:00Z, a 5-minute boundary (ms)
MIN = 60_000


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="out/fraud-detection/input")
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--accounts", type=int, default=300)
    ap.add_argument("--hours", type=float, default=6.0)
    ap.add_argument("--frauds", type=int, default=8, help="planted frauds of each kind")
    a = ap.parse_args(argv)
    rnd = random.Random(a.seed)
    end = T0 + int(a.hours * 60 * MIN)
    first_names = ["Ana", "Ben", "Chen", "Dara", "Eli", "Fatima", "Goran", "Hana", "Ivo",
                   "Jun", "Kemal", "Lena", "Mia", "Noor", "Omar", "Pia", "Rui", "Sofia"]
    countries = ["DE", "FR", "NL", "PL", "ES", "IT", "SE", "US", "JP", "BR"]
    accounts = []
    for i in range(a.accounts):
        accounts.append({"account_id": f"A{i:05d}", "card": f"4000-{rnd.randrange(10**4):04d}-"
                         f"{rnd.randrange(10**4):04d}-{i:04d}",
                         "owner": f"{rnd.choice(first_names)} {chr(65 + rnd.randrange(26))}.",
                         "country": rnd.choice(countries)})
    updates = [dict(acc, ts=T0 - 60 * MIN) for acc in accounts]
    # Later updates: the latest row before a transaction is what it is
    # enriched with.
    for acc in rnd.sample(accounts, len(accounts) // 5):
        acc_ts = rnd.randrange(T0 + 10 * MIN, end - 10 * MIN)
        changed = dict(acc, country=rnd.choice(countries))
        if rnd.random() < 0.3:
            changed["owner"] = changed["owner"] + " (joint)"
        updates.append(dict(changed, ts=acc_ts))
    updates.sort(key=lambda r: (r["ts"], r["account_id"]))

    roles = list(range(a.accounts))
    rnd.shuffle(roles)
    n = a.frauds
    velocity = roles[0:n]
    pattern = roles[n:2 * n]
    decoy_two = roles[2 * n:3 * n]
    decoy_spread = roles[3 * n:4 * n]
    decoy_slow = roles[4 * n:5 * n]
    special = set(roles[:5 * n])
    ordinary_large = set(rnd.sample(roles[5 * n:], max(1, a.accounts // 10)))

    txns = []  # (ts, account index, amount)

    def add(ts, i, amount):
        txns.append((ts, i, round(amount, 2)))

    for i in range(a.accounts):
        t = T0 + rnd.randrange(0, 20 * MIN)
        while t < end:
            add(t, i, rnd.uniform(1.0, 300.0))
            t += rnd.randrange(4 * MIN, 40 * MIN)
        if i in ordinary_large:
            add(rnd.randrange(T0, end), i, rnd.uniform(1000.0, 3000.0))

    def window_start():
        return rnd.randrange(T0 + 40 * MIN, end - 60 * MIN)

    planted = []
    for i in velocity:
        t = window_start()
        times = sorted([t] + [t + rnd.randrange(MIN // 2, 12 * MIN) for _ in range(2)])
        for ts in times:
            add(ts, i, rnd.uniform(1000.5, 4999.0))
        planted.append(("velocity", i, times[0]))
    for i in pattern:
        t = window_start()
        add(t, i, rnd.uniform(0.01, 0.99))
        add(t + rnd.randrange(MIN // 2, 4 * MIN), i, rnd.uniform(500.5, 999.0))
        planted.append(("pattern", i, t))
    for i in decoy_two:
        t = window_start()
        add(t, i, rnd.uniform(1000.5, 4999.0))
        add(t + rnd.randrange(MIN, 12 * MIN), i, rnd.uniform(1000.5, 4999.0))
    for i in decoy_spread:
        t = window_start()
        for k in range(3):
            add(t + k * 25 * MIN + rnd.randrange(0, MIN), i, rnd.uniform(1000.5, 4999.0))
    for i in decoy_slow:
        t = window_start()
        add(t, i, rnd.uniform(0.01, 0.99))
        add(t + rnd.randrange(6 * MIN, 9 * MIN), i, rnd.uniform(500.5, 999.0))

    # Distinct timestamps per card (the pattern's order is the event-time
    # order), ascending overall.
    txns.sort()
    seen = set()
    rows = []
    for k, (ts, i, amount) in enumerate(txns):
        while (ts, i) in seen:
            ts += 1
        seen.add((ts, i))
        acc = accounts[i]
        rows.append({"txn_id": f"T{k:07d}", "ts": ts, "card": acc["card"],
                     "account_id": acc["account_id"], "amount": amount,
                     "merchant": f"M{rnd.randrange(500):03d}"})
    rows.sort(key=lambda r: (r["ts"], r["txn_id"]))

    def owner_at(i, ts):
        owner = None
        for u in updates:
            if u["account_id"] == accounts[i]["account_id"] and u["ts"] <= ts:
                owner = u["owner"]
        return owner

    expected = []
    for kind, i, t in planted:
        acc = accounts[i]
        mine = [r for r in rows if r["card"] == acc["card"]]
        if kind == "velocity":
            first = min(r["ts"] for r in mine if r["amount"] > 1000)
            alert_id = f"{acc['card']}:velocity:{first}"
        else:
            small = next(r for r in mine if r["amount"] < 1.0)
            first = small["ts"]
            alert_id = f"{acc['card']}:pattern:{small['txn_id']}"
        expected.append({"alert_id": alert_id, "kind": kind, "card": acc["card"],
                         "account_id": acc["account_id"], "owner": owner_at(i, first)})
    expected.sort(key=lambda r: r["alert_id"])

    out = pathlib.Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "accounts.jsonl").write_text("".join(json.dumps(u) + "\n" for u in updates))
    (out / "transactions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (out / "planted.jsonl").write_text("".join(json.dumps(e) + "\n" for e in expected))
    print(f"{len(rows)} transactions, {len(updates)} account updates, {len(expected)} planted "
          f"frauds ({n} velocity, {n} pattern) and {3 * n} decoys in {out}")


if __name__ == "__main__":
    main()
