# SPDX-License-Identifier: Apache-2.0
"""The Elasticsearch sink's retries end to end: the real `weir` binary
against bulk_receiver.py, a `_bulk`-compatible receiver that fails chosen
items (a real node cannot be told to reject item k on attempt n).

  retries  every document is rejected with a per-item 429 on its first two
           attempts and every third bulk request fails as a whole with 503:
           with backoff.max_retries = 10 the job succeeds and the receiver
           holds exactly the input, each document once
  bound    one id is always rejected with 429: with max_retries = 3 the job
           fails (exit 1) after the first attempt and three retries, with a
           message naming the sink, the index, the id and the server's reason
  reject   ids rejected with 400 under on_bad_record = "fail" (the default)
           fail the job at once, naming the document; under "skip" they are
           counted and the others indexed

The tests are test_retries, test_bound and test_reject.
"""
import json
import urllib.request

from bulk_receiver import BulkReceiver

from weirtest import run


PIPELINE = """
[job]
name = "es-retries"
parallelism = 2
status_interval = "0s"
{job_extra}

[[source]]
name = "events"
type = "file"
path = "{work}/events.jsonl"
format = "jsonl"
schema = {{ id = "int64", card = "string", amount = "int64" }}

[[sink]]
name = "es"
input = "events"
type = "elasticsearch"
hosts = ["{url}"]
index = "events"
document_id = "id"
bulk_flush = {{ max_actions = 50 }}
backoff = {{ max_retries = {retries}, delay = "5ms", max_delay = "40ms" }}
"""


def write_events(work, n=600):
    rows = [{"id": i, "card": f"c{i % 17}", "amount": (i * 37) % 2000} for i in range(n)]
    (work / "events.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return rows


def run_job(weir, work, url, retries, job_extra=""):
    toml = work / "job.toml"
    toml.write_text(PIPELINE.format(work=work, url=url, retries=retries, job_extra=job_extra))
    return run([weir, "run", toml], timeout=120, expect=None)


def state(url):
    with urllib.request.urlopen(f"{url}/_weir/state", timeout=10) as r:
        return json.loads(r.read())


def test_retries(weir, work):
    rows = write_events(work)
    with BulkReceiver({"item_429_first": 2, "request_503_every": 3}) as rc:
        p = run_job(weir, work, rc.url, retries=10)
        assert p.returncode == 0, f"weir exited {p.returncode}:\n{p.stderr[-3000:]}"
        s = state(rc.url)
    docs = s["documents"].get("events", {})
    assert docs == {str(r["id"]): r for r in rows}, (
        f"{len(docs)} documents for {len(rows)} rows")
    attempts = s["attempts"]
    assert all(attempts[f"events/{r['id']}"] >= 3 for r in rows), (
        "a document was indexed before its third attempt")
    assert "retry 1 of 10" in p.stderr, f"no retry warning:\n{p.stderr[-2000:]}"
    print(f"retries: ok, {len(docs)} documents after {s['requests']} bulk requests "
          f"(at most {max(attempts.values())} attempts per document)")


def test_bound(weir, work):
    write_events(work)
    with BulkReceiver({"always_429_ids": ["77"]}) as rc:
        p = run_job(weir, work, rc.url, retries=3)
        s = state(rc.url)
    assert p.returncode == 1, f"weir exited {p.returncode}, expected 1:\n{p.stderr[-3000:]}"
    msg = p.stderr
    for part in ("Elasticsearch sink 'es' subtask", "still failed after 3 retries",
                 "index 'events' id '77': status 429 es_rejected_execution_exception"):
        assert part in msg, f"the failure does not say {part!r}:\n{msg[-3000:]}"
    assert s["attempts"]["events/77"] == 4, (
        f"id 77 was sent {s['attempts']['events/77']} times, expected 1 + 3 retries")
    print("bound: ok, exit 1 after 1 + 3 attempts: "
          + next(l for l in msg.splitlines() if "still failed" in l)[:200])


def test_reject(weir, work):
    rows = write_events(work)
    with BulkReceiver({"reject_400_ids": ["5", "250"]}) as rc:
        p = run_job(weir, work, rc.url, retries=3)
        assert p.returncode == 1, (f"on_bad_record = fail: weir exited {p.returncode}:\n"
            f"{p.stderr[-3000:]}")
        assert "bad record at events/" in p.stderr and "mapper_parsing_exception" in p.stderr, (
            f"the failure does not name the document:\n{p.stderr[-3000:]}")
    with BulkReceiver({"reject_400_ids": ["5", "250"]}) as rc:
        p = run_job(weir, work, rc.url, retries=3,
                job_extra='on_bad_record = "skip"\nmax_bad_ratio = 0.5')
        assert p.returncode == 0, (f"on_bad_record = skip: weir exited {p.returncode}:\n"
            f"{p.stderr[-3000:]}")
        docs = state(rc.url)["documents"].get("events", {})
    assert set(docs) == {str(r["id"]) for r in rows} - {"5", "250"}, (
        f"{len(docs)} documents indexed")
    print("reject: ok, 400s fail the job under \"fail\" and are skipped under \"skip\"")
