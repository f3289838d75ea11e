# SPDX-License-Identifier: Apache-2.0
"""HTTP ingest (`bench/run http-ingest`).

  1. The same JSON-lines records (n, user, amount, ts) read by a file source
     into a blackhole sink (`weir run`, wall time of the run) and POSTed to
     an http source into a blackhole sink (`weir serve` on loopback) by 1, 2
     and 4 concurrent clients, each a keep-alive connection sending bodies
     of --batch records (ack = "accepted"); records/s from the first request
     to the sink having counted every record (GET /jobs/{id}).
  2. State-query latency (`GET /jobs/{id}/state/counts?key=u<k>`, a keyed
     running count behind the http source) p50/p99 over one keep-alive
     connection while a paced client ingests at half of the peak rate
     measured in 1 (a query every 5 ms for 10 s).

weir and the clients (this process's threads) run on the same cores (--cores).
"""
import http.client
import json
import pathlib
import re
import shutil
import subprocess
import tempfile
import threading
import time

from . import charts
from .common import (ROOT, add_family_options, log, popen, process_cpu, run, run_header,
                     toml_pipeline, write_results)

SCHEMA = {"n": "int64", "user": "string", "amount": "float64", "ts": "timestamp"}


def record(i):
    return (f'{{"n":{i},"user":"u{i % 1000}","amount":{(i % 997) / 10},'
            f'"ts":{1_600_000_000_000 + i}}}\n')


def pipeline(work, name, source, *rest):
    """Writes work/NAME.toml: a job reading JSON-lines records from a source (its type and
    keys in `source`) into a blackhole sink named hole, and the tables of `rest`."""
    path = work / f"{name}.toml"
    path.write_text(toml_pipeline(
        ("job", {"name": f"{name}-bench", "status_interval": "0s"}),
        ("source", {"name": "events", **source, "format": "jsonl", "schema": SCHEMA}),
        ("sink", {"name": "hole", "input": "events", "type": "blackhole"}), *rest))
    return path


def file_source_rate(weir, work, path, records):
    """records/s (best of 3) and records per CPU second of `weir run` over the file."""
    p = pipeline(work, "file", {"type": "file", "path": str(path)})
    best = min((run([weir, "run", "-q", p], what="weir run (file source)") for _ in range(3)),
               key=lambda r: r.wall_seconds)
    return {"records_per_s": records / best.wall_seconds, "wall_seconds": best.wall_seconds,
            "cpu_seconds": best.cpu_seconds, "records_per_cpu_s": records / best.cpu_seconds}


class Serve:
    def __init__(self, weir, work, pipeline):
        self.log = open(work / "serve.log", "w+")
        self.proc = popen([weir, "serve", "--listen", "127.0.0.1:0", pipeline],
                          stdout=subprocess.DEVNULL, stderr=self.log, cwd=work)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = pathlib.Path(self.log.name).read_text()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", text)
            ids = re.findall(r"job '[^']*' started: ([0-9a-f]{32})", text)
            if m and ids:
                self.port, self.job = int(m.group(1)), ids[0]
                return
            time.sleep(0.05)
        raise SystemExit("weir serve did not start:\n" + pathlib.Path(self.log.name).read_text())

    def get(self, path):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def sink_count(self, sink="hole"):
        st, body = self.get(f"/jobs/{self.job}")
        for v in json.loads(body)["vertices"]:
            if v["name"] == sink:
                return v["metrics"]["read-records"]
        return 0

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=60)


def client(port, bodies, stats, pace=None):
    """Sends `bodies` over one keep-alive connection, retrying 429/503."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    t_next = time.perf_counter()
    for body in bodies:
        if pace:
            t_next += pace
            delay = t_next - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        while True:
            c.request("POST", "/ingest/events", body=body,
                      headers={"Content-Type": "application/x-ndjson"})
            r = c.getresponse()
            r.read()
            if r.status == 202:
                break
            if r.status not in (429, 503):
                raise SystemExit(f"POST /ingest/events: {r.status}")
            stats["retries"] += 1
            time.sleep(0.005)
    c.close()


def http_rate(srv, bodies, batch, clients, already):
    per = [bodies[i::clients] for i in range(clients)]
    stats = {"retries": 0}
    total = len(bodies) * batch
    t0 = time.perf_counter()
    ts = [threading.Thread(target=client, args=(srv.port, b, stats)) for b in per]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    while srv.sink_count() < already + total:
        time.sleep(0.01)
    dt = time.perf_counter() - t0
    return total / dt, stats["retries"]


def state_query_latency(srv, bodies, batch, rate, seconds=10):
    """p50/p99 of GET /jobs/{id}/state/counts?key=u<k> (ms) while one client
    ingests at `rate` records/s; None for a server without the route (404)."""
    st, _ = srv.get(f"/jobs/{srv.job}/state/counts?key=u1")
    if st == 404:
        return None
    senders_n = 2  # one Python client alone may not reach half of a 4-client peak
    pace = batch / (rate / senders_n)
    n = int(seconds / pace) + 1
    work = (bodies * (n // len(bodies) + 1))[:n]
    senders = [threading.Thread(target=client, args=(srv.port, work, {"retries": 0}, pace))
               for _ in range(senders_n)]
    before, t_start = srv.sink_count(), time.perf_counter()
    for t in senders:
        t.start()
    lat = []
    c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
    k = 0
    while any(t.is_alive() for t in senders):
        t0 = time.perf_counter()
        c.request("GET", f"/jobs/{srv.job}/state/counts?key=u{k % 1000}")
        r = c.getresponse()
        r.read()
        lat.append((time.perf_counter() - t0) * 1000)
        if r.status != 200:
            raise SystemExit(f"state query: {r.status}")
        k += 1
        time.sleep(0.005)
    for t in senders:
        t.join()
    achieved = (srv.sink_count() - before) / (time.perf_counter() - t_start)
    lat.sort()
    return {"queries": len(lat), "p50_ms": lat[len(lat) // 2],
            "p99_ms": lat[min(len(lat) - 1, int(len(lat) * 0.99))],
            "target_ingest_rps": rate, "achieved_ingest_rps": achieved}


def cmd_http_ingest(args):
    header = run_header("http-ingest")
    weir = str(pathlib.Path(args.weir).resolve())
    work = pathlib.Path(tempfile.mkdtemp(prefix="weir-http-bench-"))
    records = args.records - args.records % args.batch
    data = work / "records.jsonl"
    with open(data, "w") as f:
        for i in range(records):
            f.write(record(i))
    raw = data.read_bytes().splitlines(keepends=True)
    bodies = [b"".join(raw[i:i + args.batch]) for i in range(0, records, args.batch)]
    report = {**header, "weir": args.weir, "records": records, "batch": args.batch,
              "body_bytes": len(bodies[0])}
    log(f"file source: {records} records ...")
    report["file_source"] = file_source_rate(weir, work, data, records)
    report["file_source_rps"] = report["file_source"]["records_per_s"]
    log(f"  {report['file_source_rps']:,.0f} records/s")

    http_toml = pipeline(
        work, "http", {"type": "http", "max_body": "64MiB", "max_queued_records": 200000},
        ("operator", {"name": "counts", "type": "running_count", "input": "events",
                      "key_by": ["user"]}),
        ("sink", {"name": "counted", "input": "counts", "type": "blackhole"}))
    srv = Serve(weir, work, http_toml)
    try:
        # Wait for the source to take requests (503 before).
        while True:
            c = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
            c.request("POST", "/ingest/events", body=bodies[0])
            st = c.getresponse().status
            c.close()
            if st == 202:
                break
            time.sleep(0.05)
        already = args.batch
        while srv.sink_count() < already:
            time.sleep(0.01)
        report["http"] = []
        for n in [int(x) for x in args.clients.split(",")]:
            cpu0 = process_cpu(srv.proc.pid)
            rps, retries = http_rate(srv, bodies, args.batch, n, already)
            # weir serve's CPU seconds meanwhile (it runs on: from /proc).
            cpu = process_cpu(srv.proc.pid) - cpu0
            already += records
            report["http"].append({"clients": n, "rps": rps, "retries_429_503": retries,
                                   "weir_cpu_seconds": cpu,
                                   "records_per_weir_cpu_s": records / cpu if cpu else None})
            log(f"http source, {n} client(s), bodies of {args.batch}: {rps:,.0f} records/s "
                f"({retries} retries after 429)")
        peak = max(h["rps"] for h in report["http"])
        lat = state_query_latency(srv, bodies, args.batch, peak / 2)
        report["state_query"] = lat if lat else "skipped: no GET /jobs/{id}/state route"
        log(f"state query latency at half of peak: {report['state_query']}")
    finally:
        srv.stop()
        shutil.rmtree(work, ignore_errors=True)
    write_results(args, report, charts.http_ingest_chart)
    if args.json:
        print(json.dumps(report, indent=2))
    return 0


def add_parser(sub):
    h = sub.add_parser("http-ingest", help="records/s POSTed to an http source; state-query "
                                           "latency while ingesting")
    h.add_argument("--weir", default=str(ROOT / "build" / "weir"))
    h.add_argument("--records", type=int, default=1_000_000)
    h.add_argument("--batch", type=int, default=1000)
    h.add_argument("--clients", default="1,2,4")
    add_family_options(h, "http-ingest", cmd_http_ingest, build=False)
