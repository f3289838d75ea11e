#!/usr/bin/env python3
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

usage: bulk_retry_tests.py --weir BIN TEST...|all
"""
import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bulk_receiver import BulkReceiver  # noqa: E402

SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


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


def run(args, work, url, retries, job_extra=""):
    toml = work / "job.toml"
    toml.write_text(PIPELINE.format(work=work, url=url, retries=retries, job_extra=job_extra))
    return subprocess.run([args.weir, "run", str(toml)], capture_output=True, text=True,
                          timeout=120 * SCALE)


def state(url):
    with urllib.request.urlopen(f"{url}/_weir/state", timeout=10) as r:
        return json.loads(r.read())


def test_retries(args, work):
    rows = write_events(work)
    with BulkReceiver({"item_429_first": 2, "request_503_every": 3}) as rc:
        p = run(args, work, rc.url, retries=10)
        check(p.returncode == 0, f"weir exited {p.returncode}:\n{p.stderr[-3000:]}")
        s = state(rc.url)
    docs = s["documents"].get("events", {})
    check(docs == {str(r["id"]): r for r in rows},
          f"{len(docs)} documents for {len(rows)} rows")
    attempts = s["attempts"]
    check(all(attempts[f"events/{r['id']}"] >= 3 for r in rows),
          "a document was indexed before its third attempt")
    check("retry 1 of 10" in p.stderr, f"no retry warning:\n{p.stderr[-2000:]}")
    print(f"retries: ok, {len(docs)} documents after {s['requests']} bulk requests "
          f"(at most {max(attempts.values())} attempts per document)")


def test_bound(args, work):
    write_events(work)
    with BulkReceiver({"always_429_ids": ["77"]}) as rc:
        p = run(args, work, rc.url, retries=3)
        s = state(rc.url)
    check(p.returncode == 1, f"weir exited {p.returncode}, expected 1:\n{p.stderr[-3000:]}")
    msg = p.stderr
    for part in ("Elasticsearch sink 'es' subtask", "still failed after 3 retries",
                 "index 'events' id '77': status 429 es_rejected_execution_exception"):
        check(part in msg, f"the failure does not say {part!r}:\n{msg[-3000:]}")
    check(s["attempts"]["events/77"] == 4,
          f"id 77 was sent {s['attempts']['events/77']} times, expected 1 + 3 retries")
    print("bound: ok, exit 1 after 1 + 3 attempts: "
          + next(l for l in msg.splitlines() if "still failed" in l)[:200])


def test_reject(args, work):
    rows = write_events(work)
    with BulkReceiver({"reject_400_ids": ["5", "250"]}) as rc:
        p = run(args, work, rc.url, retries=3)
        check(p.returncode == 1, f"on_bad_record = fail: weir exited {p.returncode}:\n"
                                 f"{p.stderr[-3000:]}")
        check("bad record at events/" in p.stderr and "mapper_parsing_exception" in p.stderr,
              f"the failure does not name the document:\n{p.stderr[-3000:]}")
    with BulkReceiver({"reject_400_ids": ["5", "250"]}) as rc:
        p = run(args, work, rc.url, retries=3,
                job_extra='on_bad_record = "skip"\nmax_bad_ratio = 0.5')
        check(p.returncode == 0, f"on_bad_record = skip: weir exited {p.returncode}:\n"
                                 f"{p.stderr[-3000:]}")
        docs = state(rc.url)["documents"].get("events", {})
    check(set(docs) == {str(r["id"]) for r in rows} - {"5", "250"},
          f"{len(docs)} documents indexed")
    print("reject: ok, 400s fail the job under \"fail\" and are skipped under \"skip\"")


TESTS = {"retries": test_retries, "bound": test_bound, "reject": test_reject}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weir", required=True)
    ap.add_argument("tests", nargs="+", choices=[*TESTS, "all"])
    args = ap.parse_args()
    args.weir = os.path.abspath(args.weir)
    names = list(TESTS) if "all" in args.tests else args.tests
    work = pathlib.Path(tempfile.mkdtemp(prefix="weir-es-retry-"))
    failed = False
    try:
        for name in names:
            d = work / name
            d.mkdir()
            try:
                TESTS[name](args, d)
            except Failure as e:
                failed = True
                print(f"{name}: FAILED: {e}")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
