#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The Elasticsearch sink end to end: the real `weir` binary against a real
OpenSearch 2.19 node (single-node, started here: opensearch_node.py).

One node serves every scenario of a run (its JVM start costs 15-20 s):
  index     a keyed window job at parallelism 2 writes the same rows to a file
            and to the index (document_id = key and window start), and every
            event to an index per region (index_expression): the documents
            equal the file's rows and the input
  crash     a checkpointed job (every event by id, and a running count per
            card by card) SIGKILLed at random moments and resumed on its
            checkpoint directory: no duplicate document (the ids overwrite),
            every event present once, each card's document its final count
  mapping   an index whose mapping makes `amount` a long: rows whose amount is
            not a number are rejected by OpenSearch (400
            mapper_parsing_exception) and dead-lettered with the server's
            reason; the others are indexed; the job exits 0
Failure injection (429, 503, the retry bound) is in bulk_retry_tests.py, on a
receiver that can fail a chosen item.

usage: bulk_sink_tests.py --weir BIN [--kills N] [--seed S] TEST...|all
"""
import argparse
import datetime
import json
import os
import pathlib
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from opensearch_node import OpenSearchNode, http  # noqa: E402

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run_weir(args, toml_path, *flags, timeout=120 * SCALE, expect=0):
    p = subprocess.run([args.weir, "run", str(toml_path), *flags], capture_output=True,
                       text=True, timeout=timeout)
    if expect is not None and p.returncode != expect:
        raise Failure(f"weir exited {p.returncode}, expected {expect}:\n"
                      f"stdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}")
    return p


def write_events(path, n, seed, bad_every=0):
    """n events {id, ts, card, region, amount}; with bad_every, every k-th
    amount is not a number (amount is a string field here)."""
    rnd = random.Random(seed)
    t0 = 1_700_000_000_000
    rows = []
    with open(path, "w") as f:
        for i in range(n):
            amount = rnd.randrange(1, 5000)
            if bad_every:  # amount is a string field
                amount = f"n/a-{i}" if i % bad_every == bad_every - 1 else str(amount)
            r = {"id": i, "ts": t0 + i * 997, "card": f"c{rnd.randrange(40):02d}",
                 "region": rnd.choice(["EU", "US", "APAC"]), "amount": amount}
            rows.append(r)
            f.write(json.dumps(r) + "\n")
    return rows


def iso(ms):
    t = datetime.datetime.fromtimestamp(ms // 1000, datetime.timezone.utc)
    return t.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


def read_jsonl(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.strip()]


SOURCE = """
[[source]]
name = "events"
type = "file"
path = "{work}/events.jsonl"
format = "jsonl"
schema = {{ id = "int64", ts = "timestamp", card = "string", region = "string", amount = "{amount_type}" }}
event_time = {{ field = "ts" }}
"""

# --- index -------------------------------------------------------------------

INDEX = """
[job]
name = "es-index"
parallelism = 2
status_interval = "0s"
""" + SOURCE + """
[[operator]]
name = "per_card"
type = "window"
input = "events"
key_by = ["card"]
window = {{ type = "tumbling", size = "1m" }}
aggregate = {{ n = "count(*)", total = "sum(amount)" }}

[[sink]]
name = "per_card_file"
input = "per_card"
type = "file"
path = "{work}/per_card.jsonl"

[[sink]]
name = "per_card_index"
input = "per_card"
type = "elasticsearch"
hosts = ["{url}"]
index = "{prefix}per-card"
document_id = "concat(card, '@', window_start)"
bulk_flush = {{ max_actions = 100 }}

[[sink]]
name = "events_index"
input = "events"
type = "elasticsearch"
hosts = ["{url}"]
index_expression = "concat('{prefix}events-', lower(region))"
document_id = "id"
"""


def test_index(args, node, work):
    rows = write_events(work / "events.jsonl", 5000, args.seed)
    toml = work / "index.toml"
    toml.write_text(INDEX.format(work=work, url=node.url, prefix="t1-", amount_type="int64"))
    run_weir(args, toml)
    # concat() writes a timestamp as ISO-8601 UTC text with milliseconds.
    want = {f"{r['card']}@{iso(r['window_start'])}": r for r in read_jsonl(work / "per_card.jsonl")}
    check(len(want) > 100, f"only {len(want)} windows: the input is too small to say much")
    got = node.documents("t1-per-card")
    check(got == want, f"the index holds {len(got)} documents, the file {len(want)} rows; "
                       f"first differences: "
                       f"{[k for k in set(got) | set(want) if got.get(k) != want.get(k)][:5]}")
    for region in ("EU", "US", "APAC"):
        want_events = {str(r["id"]): r
                       for r in rows if r["region"] == region}
        got_events = node.documents(f"t1-events-{region.lower()}")
        check(got_events == want_events,
              f"index t1-events-{region.lower()}: {len(got_events)} documents, "
              f"{len(want_events)} events")
    print(f"index: ok, {len(got)} window documents equal the file sink's rows; "
          f"{len(rows)} events in 3 indexes by region")


# --- crash -------------------------------------------------------------------

CRASH = """
[job]
name = "es-crash"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "200ms"
dir = "{work}/state"
""" + SOURCE + """
[[operator]]
name = "seen"
type = "running_count"
input = "events"
key_by = ["card"]
output = "seen"

[[sink]]
name = "events_index"
input = "events"
type = "elasticsearch"
hosts = ["{url}"]
index = "{prefix}events"
document_id = "id"
bulk_flush = {{ max_actions = 40 }}

[[sink]]
name = "seen_index"
input = "seen"
type = "elasticsearch"
hosts = ["{url}"]
index = "{prefix}seen"
document_id = "card"
bulk_flush = {{ max_actions = 40 }}
"""


def test_crash(args, node, work):
    rows = write_events(work / "events.jsonl", 20000, args.seed)
    toml = work / "crash.toml"
    toml.write_text(CRASH.format(work=work, url=node.url, prefix="t2-", amount_type="int64"))
    rnd = random.Random(args.seed)
    kills = runs = 0
    while True:
        runs += 1
        check(runs <= 4 * args.kills + 4, f"{runs} runs without finishing")
        p = subprocess.Popen([args.weir, "run", str(toml)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        if kills < args.kills:
            try:
                p.wait(timeout=rnd.uniform(0.4, 1.5) * SCALE)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.communicate()
                kills += 1
                continue
        out, err = p.communicate(timeout=120 * SCALE)
        check(p.returncode == 0, f"run {runs} exited {p.returncode}:\n{err[-3000:]}")
        if kills >= args.kills:
            break
        # Finished before the kill: start over on an empty index and state.
        shutil.rmtree(work / "state", ignore_errors=True)
        node.delete_index("t2-events")
        node.delete_index("t2-seen")
    check(kills == args.kills, f"{kills} kills")
    got = node.documents("t2-events")
    want = {str(r["id"]): r for r in rows}
    # The count is the number of documents: a replayed row without its id
    # would be a second document.
    check(node.count("t2-events") == len(want),
          f"{node.count('t2-events')} documents for {len(want)} events")
    check(got == want, f"the events differ: {[k for k in want if got.get(k) != want[k]][:5]}")
    totals = {}
    for r in rows:
        totals[r["card"]] = totals.get(r["card"], 0) + 1
    seen = node.documents("t2-seen")
    check({k: v["seen"] for k, v in seen.items()} == totals,
          f"the running counts differ from the totals per card: "
          f"{sorted((k, v['seen'], totals.get(k)) for k, v in seen.items() if v['seen'] != totals.get(k))[:5]}")
    print(f"crash: ok, {kills} SIGKILLs in {runs} runs; {len(got)} event documents, "
          f"each once; {len(seen)} cards at their final counts")


# --- mapping -----------------------------------------------------------------

MAPPING = """
[job]
name = "es-mapping"
parallelism = 1
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "{work}/bad.jsonl" }}
max_bad_ratio = 0.5
""" + SOURCE + """
[[sink]]
name = "typed_index"
input = "events"
type = "elasticsearch"
hosts = ["{url}"]
index = "{prefix}typed"
document_id = "id"
"""


def test_mapping(args, node, work):
    rows = write_events(work / "events.jsonl", 1000, args.seed, bad_every=97)
    status, body = http("PUT", f"{node.url}/t3-typed", json.dumps(
        {"mappings": {"properties": {"amount": {"type": "long"}}}}).encode())
    check(status == 200, f"creating the index: {status} {body}")
    toml = work / "mapping.toml"
    toml.write_text(MAPPING.format(work=work, url=node.url, prefix="t3-", amount_type="string"))
    p = run_weir(args, toml)
    bad_ids = {str(r["id"]) for r in rows if not r["amount"].isdigit()}
    check(len(bad_ids) == 10, f"{len(bad_ids)} bad rows planted")
    dead = read_jsonl(work / "bad.jsonl")
    check(sorted(d["origin"] for d in dead) == sorted(f"t3-typed/{i}:0" for i in bad_ids),
          f"dead letters: {[d['origin'] for d in dead]}")
    for d in dead:
        check("status 400 mapper_parsing_exception" in d["reason"]
              and "Elasticsearch sink 'typed_index'" in d["reason"],
              f"dead letter reason: {d['reason']}")
        check(json.loads(d["raw"])["id"] == int(d["file"].split("/")[1]),
              f"dead letter document: {d['raw']}")
    got = node.documents("t3-typed")
    check(set(got) == {str(r["id"]) for r in rows} - bad_ids,
          f"{len(got)} documents indexed for {len(rows) - len(bad_ids)} good rows")
    check(re.search(r"operator 'typed_index'\s+1,000 records in, 10 bad", p.stderr)
          and re.search(r"bad records\s+10 \(dead-lettered", p.stderr),
          f"the summary does not count the sink's bad records:\n{p.stderr[-2000:]}")
    print(f"mapping: ok, {len(got)} documents indexed, {len(dead)} rejected by the mapping "
          "and dead-lettered")


TESTS = {"index": test_index, "crash": test_crash, "mapping": test_mapping}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("--kills", type=int, default=3)
    ap.add_argument("--seed", type=int,
                    default=int(os.environ.get("WEIR_SEED", random.randrange(1 << 30))))
    ap.add_argument("tests", nargs="+", choices=[*TESTS, "all"])
    args = ap.parse_args()
    args.weir = os.path.abspath(args.weir)
    print(f"seed {args.seed} (WEIR_SEED replays it)")
    names = list(TESTS) if "all" in args.tests else args.tests
    work = pathlib.Path(tempfile.mkdtemp(prefix="weir-es-it-"))
    failed = False
    try:
        started = time.monotonic()
        with OpenSearchNode() as node:
            print(f"OpenSearch at {node.url} ({time.monotonic() - started:.1f} s to start)")
            for name in names:
                d = work / name
                d.mkdir()
                try:
                    TESTS[name](args, node, d)
                except Failure as e:
                    failed = True
                    print(f"{name}: FAILED: {e}")
    finally:
        if failed and os.environ.get("WEIR_KEEP_FAILED"):
            print(f"kept {work} (WEIR_KEEP_FAILED)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
