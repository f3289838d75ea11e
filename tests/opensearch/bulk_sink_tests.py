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

The tests (test_index, test_crash, test_mapping) share one node (the
opensearch_node fixture); --kills sets test_crash's SIGKILLs (default 3).
"""
import datetime
import json
import random
import re
import shutil
import signal
import subprocess

from opensearch_node import http

from weirtest import SCALE, read_jsonl, run

KILLS = 3


def run_weir(weir, toml_path, *flags, timeout=120, expect=0):
    return run([weir, "run", toml_path, *flags], timeout=timeout, expect=expect)


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


def test_index(weir, opensearch_node, work, seed):
    node = opensearch_node
    rows = write_events(work / "events.jsonl", 5000, seed)
    toml = work / "index.toml"
    toml.write_text(INDEX.format(work=work, url=node.url, prefix="t1-", amount_type="int64"))
    run_weir(weir, toml)
    # concat() writes a timestamp as ISO-8601 UTC text with milliseconds.
    want = {f"{r['card']}@{iso(r['window_start'])}": r for r in read_jsonl(work / "per_card.jsonl")}
    assert len(want) > 100, f"only {len(want)} windows: the input is too small to say much"
    got = node.documents("t1-per-card")
    assert got == want, (f"the index holds {len(got)} documents, the file {len(want)} rows; "
        f"first differences: "
        f"{[k for k in set(got) | set(want) if got.get(k) != want.get(k)][:5]}")
    for region in ("EU", "US", "APAC"):
        want_events = {str(r["id"]): r
                       for r in rows if r["region"] == region}
        got_events = node.documents(f"t1-events-{region.lower()}")
        assert got_events == want_events, (
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


def test_crash(weir, opensearch_node, work, seed, kills, procs):
    node = opensearch_node
    rows = write_events(work / "events.jsonl", 20000, seed)
    toml = work / "crash.toml"
    toml.write_text(CRASH.format(work=work, url=node.url, prefix="t2-", amount_type="int64"))
    rnd = random.Random(seed)
    kills = runs = 0
    while True:
        runs += 1
        assert runs <= 4 * kills + 4, f"{runs} runs without finishing"
        p = procs.start([weir, "run", toml], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        text=True)
        if kills < kills:
            try:
                p.wait(timeout=rnd.uniform(0.4, 1.5) * SCALE)
            except subprocess.TimeoutExpired:
                p.send_signal(signal.SIGKILL)
                p.communicate()
                kills += 1
                continue
        out, err = p.communicate(timeout=120 * SCALE)
        assert p.returncode == 0, f"run {runs} exited {p.returncode}:\n{err[-3000:]}"
        if kills >= kills:
            break
        # Finished before the kill: start over on an empty index and state.
        shutil.rmtree(work / "state", ignore_errors=True)
        node.delete_index("t2-events")
        node.delete_index("t2-seen")
    assert kills == kills, f"{kills} kills"
    got = node.documents("t2-events")
    want = {str(r["id"]): r for r in rows}
    # The count is the number of documents: a replayed row without its id
    # would be a second document.
    assert node.count("t2-events") == len(want), (
        f"{node.count('t2-events')} documents for {len(want)} events")
    assert got == want, f"the events differ: {[k for k in want if got.get(k) != want[k]][:5]}"
    totals = {}
    for r in rows:
        totals[r["card"]] = totals.get(r["card"], 0) + 1
    seen = node.documents("t2-seen")
    assert {k: v["seen"] for k, v in seen.items()} == totals, (
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


def test_mapping(weir, opensearch_node, work, seed):
    node = opensearch_node
    rows = write_events(work / "events.jsonl", 1000, seed, bad_every=97)
    status, body = http("PUT", f"{node.url}/t3-typed", json.dumps(
        {"mappings": {"properties": {"amount": {"type": "long"}}}}).encode())
    assert status == 200, f"creating the index: {status} {body}"
    toml = work / "mapping.toml"
    toml.write_text(MAPPING.format(work=work, url=node.url, prefix="t3-", amount_type="string"))
    p = run_weir(weir, toml)
    bad_ids = {str(r["id"]) for r in rows if not r["amount"].isdigit()}
    assert len(bad_ids) == 10, f"{len(bad_ids)} bad rows planted"
    dead = read_jsonl(work / "bad.jsonl")
    assert sorted(d["origin"] for d in dead) == sorted(f"t3-typed/{i}:0" for i in bad_ids), (
        f"dead letters: {[d['origin'] for d in dead]}")
    for d in dead:
        assert ("status 400 mapper_parsing_exception" in d["reason"]
            and "Elasticsearch sink 'typed_index'" in d["reason"]), (
            f"dead letter reason: {d['reason']}")
        assert json.loads(d["raw"])["id"] == int(d["file"].split("/")[1]), (
            f"dead letter document: {d['raw']}")
    got = node.documents("t3-typed")
    assert set(got) == {str(r["id"]) for r in rows} - bad_ids, (
        f"{len(got)} documents indexed for {len(rows) - len(bad_ids)} good rows")
    assert (re.search(r"operator 'typed_index'\s+1,000 records in, 10 bad", p.stderr)
        and re.search(r"bad records\s+10 \(dead-lettered", p.stderr)), (
        f"the summary does not count the sink's bad records:\n{p.stderr[-2000:]}")
    print(f"mapping: ok, {len(got)} documents indexed, {len(dead)} rejected by the mapping "
          "and dead-lettered")
