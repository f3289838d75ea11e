# SPDX-License-Identifier: Apache-2.0
"""HTTP ingest: `weir serve` with `type = "http"` sources, the real binary on a
free loopback port, driven over HTTP.

  basics        POST /ingest/{source}: 202 with the counts; a body with bad
                records: 202, their lines in bad_examples and in the dead
                letter file (origin = the request id); a body of nothing but
                bad records 400; over max_body 413; an unknown source 404; a
                repeated Idempotency-Key 200 "duplicate" and queued once; a
                source behind a throttled blackhole sink answers 429 with
                Retry-After once its queue is full; at the end the file sink
                holds exactly the accepted records
  config        ack = "checkpoint" without [checkpoint]: exit 2 with
                file:line:col; `weir run` of an http source fails at start
                (exit 1) naming `weir serve`
  exactly-once  http source -> keyed running count, both to exactly-once
                file sinks, checkpoints every 300 ms, ack = "checkpoint"; 4
                client threads send 50 batches of 40 numbered records, each
                request retried with the same Idempotency-Key on any error or
                lost connection until acknowledged, while the test SIGKILLs
                the server 4 times and restarts it on the same checkpoint
                dir; after each restart a request acknowledged before the
                kill is sent again and answered 200 "duplicate" (its key
                is in the restored checkpoint). At the end every record is
                in the committed records
                output exactly once, and each key's committed counts are
                exactly 1..N for its N records (no record counted twice,
                none lost)
Each is the test function test_<name> (test_basics, test_config,
test_exactly_once).
"""
import http.client
import json
import pathlib
import random
import subprocess
import threading
import time

from weirtest import SCALE, read_jsonl, wait_until
from weirtest.server import post_ingest


def lines(records):
    return "".join(json.dumps(r) + "\n" for r in records)


def committed_rows(directory):
    rows = []
    for f in sorted(pathlib.Path(directory).glob("part-*.jsonl")):
        rows += read_jsonl(missing_ok=True, path=f)
    return rows


BASICS = """
[job]
name = "ingest"
on_bad_record = "dead_letter"
dead_letter = {{ path = "{out}/dead.jsonl" }}

[[source]]
name = "events"
type = "http"
format = "jsonl"
schema = {{ n = "int64", k = "string" }}
max_body = "4KiB"

[[sink]]
name = "out"
input = "events"
type = "file"
path = "{out}/events.jsonl"
"""

THROTTLED = """
[job]
name = "throttled"

[[source]]
name = "slow"
type = "http"
format = "csv"
schema = {{ n = "int64", k = "string" }}
max_queued_records = 200
retry_after = "2s"

[[sink]]
name = "hole"
input = "slow"
type = "blackhole"
rate = 100
"""


def test_basics(weir, work, serve):
    out = work / "out"
    out.mkdir()
    p1 = work / "ingest.toml"
    p1.write_text(BASICS.format(out=out))
    p2 = work / "throttled.toml"
    p2.write_text(THROTTLED.format())
    srv = serve([p1, p2])
    try:
        port = srv.port
        # The source answers once its subtask reads (503 before).
        wait_until(lambda: post_ingest(port, "events", lines([{"n": 0, "k": "a"}]))[0] == 202,
                   "the http source to accept a request")
        accepted = [{"n": 0, "k": "a"}]
        batch = [{"n": i, "k": "ab"[i % 2]} for i in range(1, 6)]
        st, _, body = post_ingest(port, "events", lines(batch))
        assert st == 202, f"good body: {st} {body}"
        assert body["accepted"] == 5 and body["bad"] == 0 and body["bad_examples"] == [], (
            f"good body summary {body}")
        assert body["ack"] == "accepted" and body["request_id"], f"summary {body}"
        accepted += batch
        mixed = ('{"n": 6, "k": "a"}\n{"n": "six", "k": "a"}\n{"n": 7, "k": "b"}\n'
                 'not json\n{"n": 8, "k": "a"}\n')
        st, _, body = post_ingest(port, "events", mixed)
        assert st == 202, f"mixed body: {st} {body}"
        assert body["accepted"] == 3 and body["bad"] == 2, f"mixed summary {body}"
        assert [b["line"] for b in body["bad_examples"]] == [2, 4], (
            f"bad lines {body['bad_examples']}")
        mixed_id = body["request_id"]
        accepted += [{"n": 6, "k": "a"}, {"n": 7, "k": "b"}, {"n": 8, "k": "a"}]
        st, _, body = post_ingest(port, "events", "nothing,like,json\nat all\n")
        assert st == 400 and body["accepted"] == 0 and body["bad"] == 2 and body["errors"], (
            f"not the format: {st} {body}")
        st, _, body = post_ingest(port, "events", lines([{"n": 1000 + i, "k": "x" * 40}
                                                  for i in range(100)]))
        assert st == 413 and body["errors"], f"over max_body: {st} {body}"
        st, _, body = post_ingest(port, "nope", lines(batch))
        assert st == 404 and "nope" in body["errors"][0], f"unknown source: {st} {body}"
        # The same Idempotency-Key twice: queued once.
        again = [{"n": 9, "k": "b"}, {"n": 10, "k": "a"}]
        st, _, body = post_ingest(port, "events", lines(again), key="req-9")
        assert st == 202 and body["request_id"] == "req-9", f"keyed: {st} {body}"
        st, _, body = post_ingest(port, "events", lines(again), key="req-9")
        assert st == 200 and body.get("duplicate") is True and body["accepted"] == 2, (
            f"repeated key: {st} {body}")
        accepted += again
        st, _, body = post_ingest(port, "events", lines(again), key="bad key")
        assert st == 400, f"a key with a space: {st} {body}"

        # Backpressure: a blackhole at 100 rows/s behind a queue of 200.
        got_429 = None
        deadline = time.monotonic() + 30 * SCALE
        n = 0
        while got_429 is None and time.monotonic() < deadline:
            csv = "".join(f"{n + i},k\n" for i in range(100))
            n += 100
            st, headers, body = post_ingest(port, "slow", csv)
            assert st in (202, 429), f"throttled source: {st} {body}"
            if st == 429:
                got_429 = (headers, body)
        assert got_429 is not None, "no 429 from a source behind a sink at 100 rows/s"
        headers, body = got_429
        assert headers.get("Retry-After") == "2", f"Retry-After {headers}"
        assert body["accepted"] == 0 and "queued" in body["errors"][0], f"429 body {body}"

        # The throttled job would drain slowly: cancelled. The other one
        # stops gracefully (its sink flushes): everything accepted is there.
        srv.json("DELETE", f"/jobs/{srv.ids[1]}", expect=202)
    finally:
        srv.stop()
    rows = read_jsonl(missing_ok=True, path=out / "events.jsonl")
    assert sorted(r["n"] for r in rows) == sorted(r["n"] for r in accepted), (
        f"sink rows {sorted(r['n'] for r in rows)}, accepted "
        f"{sorted(r['n'] for r in accepted)}")
    dead = read_jsonl(missing_ok=True, path=out / "dead.jsonl")
    assert len(dead) == 2, f"dead letters {dead}"
    for d, line in zip(dead, (2, 4)):
        text = json.dumps(d)
        assert mixed_id in text and f"request {mixed_id}" in text, (
            f"dead letter without the request id {mixed_id}: {d}")
        assert d.get("line") == line, f"dead letter line {d}, expected {line}"


def test_config(weir, work):
    bad = work / "bad.toml"
    bad.write_text('[job]\nname = "x"\n\n[[source]]\nname = "events"\ntype = "http"\n'
                   'format = "jsonl"\nschema = { n = "int64" }\nack = "checkpoint"\n\n'
                   '[[sink]]\nname = "s"\ninput = "events"\ntype = "blackhole"\n')
    r = subprocess.run([weir, "run", str(bad)], capture_output=True, text=True, cwd=work,
                       timeout=60 * SCALE)
    assert r.returncode == 2, f"ack = checkpoint without checkpoints: exit {r.returncode}"
    assert f"{bad}:9:7: error: ack = \"checkpoint\"" in r.stderr, (
        f"diagnostic at bad.toml:9:7: {r.stderr}")
    r = subprocess.run([weir, "serve", "--listen", "127.0.0.1:0", str(bad)],
                       capture_output=True, text=True, cwd=work, timeout=60 * SCALE)
    assert r.returncode == 2 and ":9:7:" in r.stderr, f"serve: {r.returncode} {r.stderr}"
    ok = work / "ok.toml"
    ok.write_text(bad.read_text().replace('ack = "checkpoint"\n', ""))
    r = subprocess.run([weir, "run", str(ok)], capture_output=True, text=True, cwd=work,
                       timeout=60 * SCALE)
    assert r.returncode == 1, f"weir run of an http source: exit {r.returncode}: {r.stderr}"
    assert "weir serve" in r.stderr and "POST /ingest/events" in r.stderr, (
        f"weir run's message: {r.stderr}")


EXACTLY_ONCE = """
[job]
name = "eo"
parallelism = 2

[checkpoint]
interval = "300ms"
dir = "{work}/state"

[[source]]
name = "events"
type = "http"
format = "jsonl"
schema = {{ n = "int64", k = "string" }}
ack = "checkpoint"
ack_timeout = "10s"
max_queued_records = 2000

[[operator]]
name = "counts"
type = "running_count"
input = "events"
key_by = ["k"]

[[sink]]
name = "records"
input = "events"
type = "file"
path = "{out}/records"

[[sink]]
name = "counted"
input = "counts"
type = "file"
path = "{out}/counts"
"""


def test_exactly_once(weir, work, serve):
    out = work / "out"
    out.mkdir()
    pipeline = work / "eo.toml"
    pipeline.write_text(EXACTLY_ONCE.format(work=work, out=out))
    threads, batches, batch = 4, 50, 40
    keys = [f"k{i}" for i in range(7)]
    current = {"port": None}
    lock = threading.Lock()
    stats = {"acked": 0, "dup": 0, "errors": 0}
    failures = []
    acked = []  # (key, body) in acknowledgement order

    def client(t):
        rnd = random.Random(t)
        try:
            for b in range(batches):
                recs = [{"n": (t * batches + b) * batch + i, "k": rnd.choice(keys)}
                        for i in range(batch)]
                body = lines(recs)
                key = f"t{t}-b{b}"
                deadline = time.monotonic() + 120 * SCALE
                while True:
                    assert time.monotonic() < deadline, f"request {key} never acknowledged"
                    port = current["port"]
                    try:
                        st, _, res = post_ingest(port, "events", body, key=key, timeout=15)
                    except (OSError, http.client.HTTPException, ValueError, TypeError):
                        with lock:
                            stats["errors"] += 1
                        time.sleep(0.1)
                        continue
                    if st in (200, 202):
                        assert res["accepted"] == batch, f"{key}: {res}"
                        with lock:
                            stats["acked"] += 1
                            stats["dup"] += st == 200
                            acked.append((key, body))
                        break
                    assert st in (429, 503), f"{key}: unexpected {st} {res}"
                    with lock:
                        stats["errors"] += 1
                    time.sleep(0.1)
        except Exception as e:  # noqa: BLE001
            failures.append(f"client {t}: {e}")

    srv = serve([pipeline])
    current["port"] = srv.port
    workers = [threading.Thread(target=client, args=(t,)) for t in range(threads)]
    for w in workers:
        w.start()
    kills = 0
    resent_after_restart = []
    try:
        for _ in range(4):
            time.sleep(random.uniform(1.0, 2.0))
            if all(not w.is_alive() for w in workers):
                break
            srv.kill()
            kills += 1
            srv.log.close()
            (work / "serve.log").rename(work / f"serve-{kills}.log")
            with lock:
                before = acked[-1] if acked else None
            srv = serve([pipeline])
            current["port"] = srv.port
            if before:
                # A request acknowledged before the kill, sent again: its key
                # is in the restored checkpoint, so it is not ingested again.
                key, body = before

                def resent():
                    st, _, res = post_ingest(srv.port, "events", body, key=key)
                    return (st, res) if st != 503 else None
                st, res = wait_until(resent, f"an answer to the resent {key}")
                assert st == 200 and res.get("duplicate") is True and res["accepted"] == batch, (
                    f"resent {key} after a restart: {st} {res}")
                resent_after_restart.append(key)
        for w in workers:
            w.join(timeout=150 * SCALE)
        assert not failures, "; ".join(failures)
        assert all(not w.is_alive() for w in workers), "clients still running"
    finally:
        srv.stop()
    assert kills >= 3, f"only {kills} kills: the clients finished too soon"
    assert stats["acked"] == threads * batches, f"acknowledged {stats}"
    assert resent_after_restart, "no acknowledged request was resent after a restart"
    print(f"exactly-once: {kills} kills, {stats}, resent after restarts: {resent_after_restart}")

    rows = committed_rows(out / "records")
    ns = sorted(r["n"] for r in rows)
    expected = list(range(threads * batches * batch))
    dups = sorted({n for n in ns if ns.count(n) > 1}) if len(ns) != len(set(ns)) else []
    assert not dups, f"records committed twice: {dups[:20]} ({len(dups)})"
    missing = sorted(set(expected) - set(ns))
    assert not missing, f"acknowledged records missing: {missing[:20]} ({len(missing)})"
    assert ns == expected, "committed records differ from those sent"
    per_key = {}
    for r in rows:
        per_key[r["k"]] = per_key.get(r["k"], 0) + 1
    counts = {}
    for r in committed_rows(out / "counts"):
        counts.setdefault(r["k"], []).append(r["count"])
    for k, n in per_key.items():
        got = sorted(counts.get(k, []))
        assert got == list(range(1, n + 1)), (
            f"key {k}: {n} records, committed counts {got[:10]}... ({len(got)})")
