# SPDX-License-Identifier: Apache-2.0
"""`weir serve`: the real binary answering HTTP on a free loopback port.

  api        every endpoint against a running server: status codes and JSON
             shape (overview, jobs, job detail with per operator and subtask
             metrics and rates, a vertex's subtasks, the job's TOML config,
             checkpoints with their summary, exceptions, submit with a config
             error answered 400 with file:line:col, submit, stop, cancel,
             healthz, 404s); at the end /metrics parsed as Prometheus text,
             its counters equal to the job's result and to `weir run`'s
             summary of the same pipeline
  history    the metric history of a running job's vertex and subtasks
             (GET .../metrics/history): one value per sample time, the
             vertex's values the subtasks' sums, get= filters, 400 and 404;
             once the job stopped its rates 0, its throughput and metric
             history ending at 0 and growing no more; a failed job's
             exception naming its operator, subtask (0-based) and location
  sse        a Server-Sent Events client on a sink of a running job: its rows
             equal the file sink's output from the first row it saw (event
             ids number the sink's rows), with no row skipped
  security   a non-loopback --listen without --token refused at start (exit
             2); without or with a bad token 401 (healthz open, the state and
             savepoint routes not); an oversized body 413; path traversal 400
             (URLs, savepoint targets: '..', absolute outside the root, a
             symbolic link out of it); malformed requests 4xx JSON, and the
             running job untouched by all of it
  dashboard  GET / in headless Chromium (Debian's chromium, --dump-dom and
             --screenshot): the DOM shows the job's operators and a non-zero
             rate; the screenshot is kept in the build directory
  kafka-lag  a Kafka source (a real broker the test starts) behind a
             throttled sink: weir_source_lag_records above 0 and at most
             what was produced
  load       a bounded load test: 6 clients, 300 requests scraping /metrics,
             reading the API, querying keyed state and ingesting 100-record
             bodies into a second job's http source while a job runs: no
             failed request, the job keeps running, every accepted record
             written once
  state      queryable state: a keyed window's open windows and a running
             count queried while a monitored directory's first file is in,
             stamped with watermark and checkpoint; a later file closes the
             windows and the sink's rows equal the answers; 4xx errors; 409
             once the job has stopped
  savepoint  POST /jobs/{id}/savepoints polled to COMPLETED; POST
             /jobs?savepointPath= restoring it (latest.restored), its 400s
             (outside the root, missing, a removed operator) and
             allowNonRestoredState; POST
             /jobs/{id}/stop with a targetDirectory; both listed by GET
             /jobs/{id}/savepoints, newest first; the stopped job's
             checkpoints served again (latest.restored from them); then `weir run
             --from-savepoint` at parallelism 3: the output equals the
             uninterrupted run's
Each is the test function test_<name> (kafka-lag: test_kafka_lag); the
dashboard test takes --build-dir (where the screenshot is kept).
"""
import collections
import concurrent.futures
import http.client
import json
import os
import pathlib
import re
import shutil
import socket
import subprocess

from weirtest import SCALE, wait_until
from weirtest.server import job_state, pipeline_text, submit_failing_job
from weirtest import savepoint_job as sp


METRIC_KEYS = {"read-records", "write-records", "read-bytes", "write-bytes", "late-records",
               "bad-records", "backpressured-ms", "watermark", "state-size"}


SUBTASK_KEYS = METRIC_KEYS | {"subtask", "source-lag", "read-records-per-second",
                              "write-records-per-second", "backpressure-ratio"}


def check_checkpoint_summary(cps):
    """Flink's summary: min <= avg <= max over the completed checkpoints,
    bracketing every completed entry of the history."""
    done = [c for c in cps["history"] if c["status"] == "COMPLETED"]
    for k in ("end_to_end_duration", "state_size", "alignment_duration"):
        v = cps["summary"][k]
        assert set(v) == {"min", "avg", "max"}, f"summary {k}: {v}"
        assert 0 <= v["min"] <= v["avg"] <= v["max"], f"summary {k}: {v}"
        for c in done:
            assert v["min"] <= c[k] <= v["max"], f"summary {k} {v} does not bracket {c}"


def check_job_shape(job, names):
    for k in ("jid", "name", "state", "start-time", "end-time", "duration", "now", "restarts",
              "vertices", "throughput", "result"):
        assert k in job, f"job detail without '{k}': {sorted(job)}"
    got = [v["name"] for v in job["vertices"]]
    assert got == names, f"vertices {got}, expected {names}"
    for v in job["vertices"]:
        for k in ("id", "name", "kind", "parallelism", "is-source", "is-sink", "inputs",
                  "metrics", "subtasks"):
            assert k in v, f"vertex without '{k}': {v}"
        m = v["metrics"]
        missing = (METRIC_KEYS | {"read-records-per-second", "write-records-per-second",
                                  "backpressure-ratio"}) - set(m)
        assert not missing, f"vertex {v['name']} metrics lack {missing}"
        assert len(v["subtasks"]) == v["parallelism"], (
            f"vertex {v['name']}: {len(v['subtasks'])} subtasks, parallelism {v['parallelism']}")
        for i, s in enumerate(v["subtasks"]):
            assert SUBTASK_KEYS <= set(s), f"subtask metrics lack {SUBTASK_KEYS - set(s)}"
            assert s["subtask"] == i, f"vertex {v['name']}: subtask {s['subtask']} at {i}"
            assert 0 <= s["backpressure-ratio"] <= 1, f"backpressure ratio {s}"
    by = {v["name"]: v for v in job["vertices"]}
    assert by["per_key"]["inputs"] == ["gen"], f"per_key inputs {by['per_key']['inputs']}"
    assert by["gen"]["is-source"] and by["raw"]["is-sink"], "source / sink flags"


# -- Prometheus text exposition format ------------------------------------------------

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')


def parse_prometheus(text):
    """{(name, frozenset(labels)): value}, checking the format as it goes:
    HELP and TYPE before a family's samples, counters named *_total, every
    sample of a declared family, labels well formed, values numbers."""
    types = {}
    samples = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line:
            continue
        if line.startswith("# HELP "):
            continue
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            assert kind in ("counter", "gauge"), f"line {n}: type {kind}"
            assert name not in types, f"line {n}: {name} declared twice"
            if kind == "counter":
                assert name.endswith("_total"), f"line {n}: counter {name} not *_total"
            types[name] = kind
            continue
        assert not line.startswith("#"), f"line {n}: unknown comment {line}"
        m = SAMPLE.match(line)
        assert m is not None, f"line {n}: not a sample: {line!r}"
        name, labels_text, value = m.groups()
        assert name in types, f"line {n}: {name} has no TYPE before it"
        labels = {}
        pos = 0
        labels_text = labels_text or ""
        while pos < len(labels_text):
            lm = LABEL.match(labels_text, pos)
            assert lm is not None, f"line {n}: bad labels {labels_text!r}"
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        v = float(value)
        key = (name, frozenset(labels.items()))
        assert key not in samples, f"line {n}: duplicate sample {line}"
        samples[key] = v
    return types, samples


def metric_sum(samples, name, **want):
    total = 0.0
    found = False
    for (n, labels), v in samples.items():
        d = dict(labels)
        if n == name and all(d.get(k) == str(x) for k, x in want.items()):
            total += v
            found = True
    assert found, f"no sample {name} {want}"
    return total


def summary_count(stderr, label):
    m = re.search(r"^\s+" + re.escape(label) + r"\s+([\d,]+)", stderr, re.M)
    assert m is not None, f"no '{label}' line in the summary:\n{stderr[-2000:]}"
    return int(m.group(1).replace(",", ""))


# -- tests --------------------------------------------------------------------------------


def test_api(weir, work, serve):
    count = 20000
    text, _ = pipeline_text(work, "bounded", rate=5000, count=count, parallelism=2,
                            checkpoint=True)
    (work / "bounded.toml").write_text(text)
    s = serve([work / "bounded.toml"])
    jid = s.ids[0]
    assert s.get("/healthz") == {"status": "ok"}, "healthz body"
    cfg = s.get(f"/jobs/{jid}/config")
    assert cfg == {"jid": jid, "name": "bounded", "file": str(work / "bounded.toml"),
                   "toml": text}, f"config of the started job: {cfg}"
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the job running")
    ov = s.get("/overview")
    for k in ("taskmanagers", "slots-total", "jobs-running", "jobs-finished",
              "jobs-cancelled", "jobs-failed", "weir-version"):
        assert k in ov, f"overview without {k}: {ov}"
    assert ov["jobs-running"] == 1, f"overview: {ov}"
    jobs = s.get("/jobs")["jobs"]
    assert [j["id"] for j in jobs] == [jid], f"/jobs: {jobs}"
    assert jobs[0]["name"] == "bounded" and jobs[0]["status"] == "RUNNING", f"/jobs: {jobs}"

    names = ["gen", "per_key", "raw", "windows"]
    job = s.get(f"/jobs/{jid}")
    check_job_shape(job, names)
    # Rates come from the server's once-a-second samples.
    job = wait_until(lambda: (lambda j: j if j["vertices"][0]["metrics"]
                              ["write-records-per-second"] > 0 else None)(
                                  s.get(f"/jobs/{jid}")), "a non-zero source rate")
    assert job["state"] == "RUNNING", f"state {job['state']}"
    assert job["result"] is None, "a running job has no result"
    assert len(job["throughput"]) >= 1, "throughput samples"
    # Per subtask: rates from the same samples, and the vertex's own route.
    gen = job["vertices"][0]
    assert sum(x["write-records-per-second"] for x in gen["subtasks"]) > 0, (
        f"per-subtask source rates: {gen['subtasks']}")
    for vertex in ("1", "per_key"):
        sub = s.get(f"/jobs/{jid}/vertices/{vertex}/subtasks")
        assert (sub["jid"] == jid and sub["id"] == 1 and sub["name"] == "per_key"
                and sub["parallelism"] == 2), f"vertex subtasks: {sub}"
        assert [x["subtask"] for x in sub["subtasks"]] == [0, 1], f"subtasks {sub}"
        for x in sub["subtasks"]:
            assert SUBTASK_KEYS <= set(x), f"subtask lacks {SUBTASK_KEYS - set(x)}"
    s.json("GET", f"/jobs/{jid}/vertices/nosuchvertex/subtasks", expect=404)
    s.json("GET", f"/jobs/{jid}/vertices/4/subtasks", expect=404)

    cps = wait_until(lambda: (lambda c: c if c["counts"]["completed"] >= 1 else None)(
        s.get(f"/jobs/{jid}/checkpoints")), "a completed checkpoint")
    assert cps["enabled"] is True, "checkpoints enabled"
    for k in ("total", "in_progress", "completed", "failed", "restored"):
        assert k in cps["counts"], f"checkpoint counts without {k}"
    done = [c for c in cps["history"] if c["status"] == "COMPLETED"]
    assert done, f"no completed checkpoint in history: {cps['history'][:3]}"
    for k in ("id", "status", "trigger_timestamp", "end_to_end_duration", "state_size",
              "alignment_duration", "failure_message"):
        assert k in done[0], f"checkpoint entry without {k}"
    assert cps["latest"]["completed"]["id"] == done[0]["id"], "latest completed"
    check_checkpoint_summary(cps)
    assert cps["summary"]["state_size"]["max"] > 0, f"summary: {cps['summary']}"
    assert cps["latest"]["restored"] is None and cps["counts"]["restored"] == 0, (
        f"a fresh job restored nothing: {cps['latest']}, {cps['counts']}")
    ex = s.get(f"/jobs/{jid}/exceptions")
    assert ex["entries"] == [] and ex["root-exception"] is None, f"exceptions: {ex}"

    # 404s, JSON.
    e = s.json("GET", "/jobs/0123456789abcdef0123456789abcdef", expect=404)
    assert isinstance(e.get("errors"), list) and e["errors"], f"404 body {e}"
    s.json("GET", "/nowhere", expect=404)
    s.json("GET", f"/jobs/{jid}/sinks/nosuchsink/stream", expect=404)

    # A config error: 400 with the loader's file:line:col diagnostics.
    bad = text.replace('rate = 5000', 'rate = 5000\nbogus_key = 1')
    e = s.json("POST", "/jobs?file=bad.toml", body=bad.encode(), expect=400)
    assert any(re.match(r"^bad\.toml:\d+:\d+: error: .*bogus_key", x) for x in e["errors"]), (
        f"400 errors: {e['errors']}")
    d = e["diagnostics"][0]
    assert d["file"] == "bad.toml" and d["line"] > 0 and d["column"] > 0, f"diagnostic {d}"

    # Submit two unbounded jobs: cancel one, stop the other.
    t2, _ = pipeline_text(work, "to-cancel", rate=200)
    c_id = s.json("POST", "/jobs?file=cancel.toml", body=t2.encode(), expect=202)["jobid"]
    t3, out3 = pipeline_text(work, "to-stop", rate=200)
    p_id = s.json("POST", "/jobs", body=t3.encode(), expect=202)["jobid"]
    assert len(c_id) == 32 and c_id != p_id, f"job ids {c_id} {p_id}"
    cfg = s.get(f"/jobs/{c_id}/config")
    assert cfg == {"jid": c_id, "name": "to-cancel", "file": "cancel.toml", "toml": t2}, (
        f"config of a submitted job: {cfg}")
    assert s.get(f"/jobs/{p_id}/config")["file"] == "submitted.toml", "default file name"
    s.json("GET", "/jobs/0123456789abcdef0123456789abcdef/config", expect=404)
    wait_until(lambda: job_state(s, c_id) == "RUNNING", "the submitted job running")
    wait_until(lambda: job_state(s, p_id) == "RUNNING", "the second job running")
    assert s.json("DELETE", f"/jobs/{c_id}", expect=202)["status"] == "CANCELING", "cancel"
    wait_until(lambda: job_state(s, c_id) == "CANCELED", "CANCELED")
    wait_until(lambda: s.get(f"/jobs/{p_id}")["vertices"][2]["metrics"]["read-records"] > 0,
               "rows at the stopped job's sink")
    assert s.json("POST", f"/jobs/{p_id}/stop", expect=202)["status"] == "STOPPING", "stop"
    wait_until(lambda: job_state(s, p_id) == "STOPPED", "STOPPED")
    stopped = s.get(f"/jobs/{p_id}")
    assert stopped["result"]["ok"] and stopped["result"]["stopped"], f"{stopped['result']}"
    rows = (out3 / "raw.jsonl").read_text().splitlines()
    assert (len(rows) == stopped["result"]["records-written"]
        - stopped["vertices"][3]["metrics"]["read-records"]), (
        "the stopped job's raw file holds what its sink received")
    ov = s.get("/overview")
    assert ov["jobs-cancelled"] == 1 and ov["jobs-finished"] >= 1, f"overview {ov}"

    # The bounded job ends; its final counters stay readable.
    wait_until(lambda: job_state(s, jid) == "FINISHED", "the bounded job to finish", 60)
    job = s.get(f"/jobs/{jid}")
    r = job["result"]
    assert r["ok"] and r["records-read"] == count, f"result {r}"
    assert job["end-time"] >= job["start-time"], "end-time"
    status, ctype, data = s.request("GET", "/metrics")
    assert status == 200 and ctype.startswith("text/plain"), f"/metrics {status} {ctype}"
    types, samples = parse_prometheus(data.decode())
    for name in ("weir_records_in_total", "weir_records_out_total", "weir_bytes_in_total",
                 "weir_bytes_out_total", "weir_late_records_total", "weir_bad_records_total",
                 "weir_backpressured_seconds_total", "weir_watermark_seconds",
                 "weir_watermark_lag_seconds", "weir_state_size_bytes",
                 "weir_checkpoints_completed_total", "weir_checkpoints_failed_total",
                 "weir_last_checkpoint_duration_seconds", "weir_last_checkpoint_size_bytes"):
        assert name in types, f"/metrics without {name}"
    read = metric_sum(samples, "weir_records_out_total", job="bounded", operator="gen")
    written = (metric_sum(samples, "weir_records_in_total", job="bounded", operator="raw")
               + metric_sum(samples, "weir_records_in_total", job="bounded",
                            operator="windows"))
    assert read == r["records-read"], f"metrics records read {read} != result {r}"
    assert written == r["records-written"], f"metrics records written {written} != {r}"
    assert (metric_sum(samples, "weir_records_in_total", job="bounded", operator="per_key",
        subtask=0) > 0), "per subtask labels"
    assert (metric_sum(samples, "weir_checkpoints_completed_total", job="bounded")
        == r["checkpoints-completed"]), "checkpoints completed"
    assert metric_sum(samples, "weir_bytes_out_total", job="bounded", operator="gen") > 0, (
        "bytes out")
    assert metric_sum(samples, "weir_late_records_total", job="bounded") == r["late-records"], (
        "late records")
    # The same pipeline through `weir run`: the same summary.
    run_text, _ = pipeline_text(work, "bounded-run", rate=0, count=count, parallelism=2,
                                checkpoint=True)
    (work / "run.toml").write_text(run_text)
    p = subprocess.run([weir, "run", str(work / "run.toml")], capture_output=True,
                       text=True, timeout=120 * SCALE)
    assert p.returncode == 0, f"weir run: {p.stderr[-2000:]}"
    assert summary_count(p.stderr, "records read") == read, "weir run's records read"
    assert summary_count(p.stderr, "records written") == written, (
        f"weir run's records written {summary_count(p.stderr, 'records written')} "
        f"!= {written}")
    assert s.stop() == 0, "exit 0"


HISTORY_METRICS = ["read-records-per-second", "write-records-per-second", "backpressure-ratio",
                   "watermark", "state-size", "read-records", "write-records", "source-lag"]


def test_history(weir, work, serve):
    """The server's metric history per vertex and subtask (GET
    .../metrics/history): aligned arrays, sums, filters and refusals; a
    stopped job's rates 0 and its histories closed by one point at 0; an
    exception entry naming its operator, subtask and location."""
    text, _ = pipeline_text(work, "history", rate=1000, parallelism=2, checkpoint=True)
    (work / "history.toml").write_text(text)
    s = serve([work / "history.toml"])
    jid = s.ids[0]
    url = f"/jobs/{jid}/vertices/per_key/metrics/history"
    # Sampled by the server from the start, whoever asks.
    h = wait_until(lambda: (lambda h: h if len(h["times"]) >= 4 and
                            h["metrics"]["read-records-per-second"][-1] > 0 else None)(
                                s.get(url)), "4 samples with records flowing")
    assert (h["jid"] == jid and h["id"] == 1 and h["name"] == "per_key"
            and h["parallelism"] == 2), f"history header {sorted(h)}"
    times = h["times"]
    assert all(0 < b - a < 3000 * SCALE for a, b in zip(times, times[1:])), (
        f"samples about a second apart: {times}")
    assert times[-1] <= h["now"], f"times {times[-1]} after now {h['now']}"
    assert sorted(h["metrics"]) == sorted(HISTORY_METRICS), f"metrics {sorted(h['metrics'])}"
    assert [x["subtask"] for x in h["subtasks"]] == [0, 1], f"subtasks {h['subtasks']}"
    for m in HISTORY_METRICS:
        assert len(h["metrics"][m]) == len(times), f"vertex {m}: {len(h['metrics'][m])} values"
        for x in h["subtasks"]:
            assert len(x["metrics"][m]) == len(times), f"subtask {x['subtask']} {m}"
    for m in ("read-records-per-second", "write-records-per-second", "read-records",
              "write-records", "state-size"):
        for t in range(len(times)):
            total = sum(x["metrics"][m][t] for x in h["subtasks"])
            assert abs(h["metrics"][m][t] - total) < 1e-6 * max(1, total), (
                f"vertex {m} at {t}: {h['metrics'][m][t]} != subtasks' {total}")
    counts = h["metrics"]["read-records"]
    assert counts == sorted(counts) and counts[-1] > 0, f"records in grow: {counts}"
    assert all(v is None for v in h["metrics"]["source-lag"]), "a window has no source lag"
    live = s.get(f"/jobs/{jid}")["vertices"][1]
    assert live["metrics"]["read-records"] >= counts[-1], "history ahead of the job's counters"
    # get= picks metrics; by id too; unknown metric 400, vertex 404.
    g = s.get(f"/jobs/{jid}/vertices/0/metrics/history?get=write-records,watermark")
    assert (g["name"] == "gen" and sorted(g["metrics"]) == ["watermark", "write-records"]
            and sorted(g["subtasks"][1]["metrics"]) == ["watermark", "write-records"]), (
        f"get= filter: {sorted(g['metrics'])}")
    assert any(v is not None for v in g["metrics"]["watermark"]), "the source's watermark"
    e = s.json("GET", f"/jobs/{jid}/vertices/0/metrics/history?get=bogus", expect=400)
    assert "bogus" in e["errors"][0] and "write-records" in e["errors"][0], f"400 {e}"
    s.json("GET", f"/jobs/{jid}/vertices/nosuch/metrics/history", expect=404)
    s.json("GET", "/jobs/0123456789abcdef0123456789abcdef/vertices/0/metrics/history",
           expect=404)

    # A stopped job's rates are 0 and its histories end with a point at 0.
    assert s.json("POST", f"/jobs/{jid}/stop", expect=202)["status"] == "STOPPING", "stop"
    wait_until(lambda: job_state(s, jid) == "STOPPED", "STOPPED")
    last = len(s.get(url)["times"])
    h = wait_until(lambda: (lambda h: h if len(h["times"]) > last else None)(s.get(url)),
                   "the sample after the stop")
    job = s.get(f"/jobs/{jid}")
    assert job["throughput"][-1]["in"] == 0 and job["throughput"][-1]["out"] == 0, (
        f"a stopped job's throughput ends at {job['throughput'][-2:]}")
    assert max(p["out"] for p in job["throughput"][:-1]) > 0, (
        f"throughput before the stop {job['throughput'][-3:]}")
    for v in job["vertices"]:
        for k in ("read-records-per-second", "write-records-per-second", "backpressure-ratio"):
            assert v["metrics"][k] == 0, f"stopped {v['name']} {k} = {v['metrics'][k]}"
            assert all(x[k] == 0 for x in v["subtasks"]), f"stopped {v['name']} subtask {k}"
    assert (h["metrics"]["read-records-per-second"][-1] == 0
            and all(x["metrics"]["read-records-per-second"][-1] == 0 for x in h["subtasks"])), (
        f"history ends at {h['metrics']['read-records-per-second'][-3:]}")
    n = len(h["times"])
    # Two more rounds of the sampler (a running job's throughput grows by
    # two points) add nothing to the stopped job's histories.
    t2, _ = pipeline_text(work, "ticker", rate=10)
    tid = s.json("POST", "/jobs", body=t2.encode(), expect=202)["jobid"]
    wait_until(lambda: len(s.get(f"/jobs/{tid}")["throughput"]) >= 3, "two sampler rounds")
    assert (len(s.get(url)["times"]) == n and len(s.get(f"/jobs/{jid}")["throughput"])
            == len(job["throughput"])), "a stopped job's histories stopped growing"

    # An exception names its operator, subtask (0-based) and location.
    fid = submit_failing_job(s, work)
    ex = s.get(f"/jobs/{fid}/exceptions")
    assert ex["exceptionHistory"]["entries"] == ex["entries"] and ex["truncated"] is False, (
        f"exceptionHistory {ex}")
    e = ex["entries"][0]
    assert e["taskName"] == "in" and e["subtaskIndex"] == 0 and e["restarted"] is False, (
        f"exception entry {e}")
    assert e["location"] == f"{socket.gethostname()}:{s.proc.pid}", f"location {e['location']}"
    assert e["stacktrace"] == e["message"] and "bad.jsonl:2" in e["message"], f"entry {e}"
    print(f"history: {n} samples of per_key; exception at {e['taskName']} "
          f"subtask {e['subtaskIndex']} on {e['location']}")
    assert s.stop() == 0, "exit 0"


def test_sse(weir, work, serve):
    count = 6000
    text, out = pipeline_text(work, "sse", rate=2000, count=count)
    (work / "sse.toml").write_text(text)
    s = serve([work / "sse.toml"])
    jid = s.ids[0]
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30 * SCALE)
    c.request("GET", f"/jobs/{jid}/sinks/raw/stream")
    r = c.getresponse()
    assert r.status == 200, f"stream: {r.status}"
    assert r.getheader("Content-Type").startswith("text/event-stream"), "event-stream type"
    events = []
    ev = {}
    while True:
        line = r.readline()
        assert line, "the stream ended without an end event"
        line = line.decode().rstrip("\n")
        if line == "":
            if ev:
                events.append(ev)
                if ev.get("event") == "end":
                    break
            ev = {}
            continue
        if line.startswith(":"):
            continue
        k, _, v = line.partition(": ")
        ev[k] = v
    c.close()
    assert events[0].get("event") == "subscribed", f"first event {events[0]}"
    assert json.loads(events[-1]["data"])["state"] == "FINISHED", f"end {events[-1]}"
    assert not [e for e in events if e.get("event") == "skipped"], "rows were skipped"
    rows = [e for e in events if "event" not in e]
    assert len(rows) > 0, "no row streamed"
    ids = [e["id"] for e in rows]
    first = int(ids[0].split(":")[1])
    assert ids == [f"0:{first + k}" for k in range(len(ids))], "ids not consecutive"
    assert first < count // 2, f"subscribed late: first row {first}"
    file_rows = [json.loads(l) for l in (out / "raw.jsonl").read_text().splitlines()]
    assert len(file_rows) == count, f"file sink rows {len(file_rows)}"
    got = [json.loads(e["data"]) for e in rows]
    assert got == file_rows[first:], (f"SSE rows differ from the file from row {first}: "
        f"{got[:2]} vs {file_rows[first:first + 2]}")
    assert s.stop() == 0, "exit 0"


def test_security(weir, work, serve):
    # Non-loopback without a token: refused before anything starts.
    p = subprocess.run([weir, "serve", "--listen", "0.0.0.0:0"], capture_output=True, text=True,
                       timeout=30 * SCALE)
    assert p.returncode == 2 and "--token" in p.stderr, (f"0.0.0.0 without token: {p.returncode} "
        f"{p.stderr}")
    text, _ = pipeline_text(work, "secure", rate=500, checkpoint=True)
    (work / "secure.toml").write_text(text)
    # A symbolic link inside the savepoint root that leads out of it.
    (work / "savepoints").mkdir()
    (work / "outside").mkdir()
    os.symlink(work / "outside", work / "savepoints" / "escape")
    s = serve([work / "secure.toml"],
               args=["--token", "s3cret", "--max-body-bytes", "4096"], token="s3cret")
    jid = s.ids[0]
    assert s.request("GET", "/healthz", token=False)[0] == 200, "healthz open"
    for path in ("/jobs", "/overview", "/metrics", "/", f"/jobs/{jid}"):
        st, ct, body = s.request("GET", path, token=False)
        assert st == 401 and ct.startswith("application/json"), f"{path} no token: {st}"
        st, _, _ = s.request("GET", path, token=False,
                             headers={"Authorization": "Bearer wrong"})
        assert st == 401, f"{path} bad token: {st}"
    assert (s.request("GET", "/jobs", token=False,
        headers={"Authorization": "Bearer s3cre"})[0] == 401), "prefix token"
    assert s.request("GET", "/jobs")[0] == 200, "good token"
    assert s.request("GET", "/jobs?access_token=s3cret", token=False)[0] == 200, (
        "access_token query")
    assert s.request("DELETE", f"/jobs/{jid}", token=False)[0] == 401, "cancel without token"
    for method, path in (("GET", f"/jobs/{jid}/state/per_key?key=1"),
                         ("POST", f"/jobs/{jid}/savepoints"),
                         ("GET", f"/jobs/{jid}/savepoints/0123"),
                         ("POST", f"/jobs/{jid}/stop")):
        st, ct, _ = s.request(method, path, body=b"{}" if method == "POST" else None,
                              token=False)
        assert st == 401 and ct.startswith("application/json"), f"{method} {path}: {st}"
    # Savepoint targets outside the savepoint root: 400, nothing written.
    for target in ("../x", "a/../../x", "/etc/weir-sp", str(work / "outside" / "sp"),
                   "a\\..\\b", "escape/sp", str(work / "savepoints" / ".." / "x")):
        for path, field in ((f"/jobs/{jid}/savepoints", "target-directory"),
                            (f"/jobs/{jid}/stop", "targetDirectory")):
            e = s.json("POST", path, body=json.dumps({field: target}), expect=400)
            assert "refused" in e["errors"][0], f"{path} {target!r}: {e}"
    assert not list((work / "outside").iterdir()), "something was written outside"
    # Malformed savepoint and state requests: 400 / 404 JSON.
    for path in (f"/jobs/{jid}/savepoints", f"/jobs/{jid}/stop"):
        s.json("POST", path, body=b"not json", expect=400)
        s.json("POST", path, body=b"[1, 2]", expect=400)
    s.json("POST", f"/jobs/{jid}/savepoints", body=b'{"target-directory": 5}', expect=400)
    s.json("POST", f"/jobs/{jid}/savepoints", body=b'{"cancel-job": "yes"}', expect=400)
    s.json("POST", f"/jobs/{jid}/stop", body=b'{"drain": true}', expect=400)
    s.json("POST", "/jobs/0123456789abcdef0123456789abcdef/savepoints", body=b"{}",
           expect=404)
    s.json("GET", f"/jobs/{jid}/savepoints/0123456789abcdef0123456789abcdef", expect=404)
    s.json("GET", f"/jobs/{jid}/state/per_key", expect=400)
    s.json("GET", f"/jobs/{jid}/state/per_key?key=notanumber", expect=400)
    s.json("GET", f"/jobs/{jid}/state/per_key?key=1&key=2", expect=400)
    s.json("GET", f"/jobs/{jid}/state/gen?key=1", expect=400)
    s.json("GET", f"/jobs/{jid}/state/nosuch?key=1", expect=404)
    s.json("GET", "/jobs/0123456789abcdef0123456789abcdef/state/per_key?key=1", expect=404)
    assert s.request("GET", f"/jobs/{jid}/state/..%2f..%2fetc?key=1")[0] == 400, (
        "traversal in the operator name")
    assert s.get(f"/jobs/{jid}/state/per_key?key=1")["found"] in (True, False), (
        "a good state query")
    # Oversized body: 413.
    e = s.json("POST", "/jobs", body=b"#" * 10000, expect=413)
    assert e["errors"], "413 body"
    # Traversal: 400, whatever the encoding.
    for path in ("/../etc/passwd", "/static/../../etc/passwd", "/%2e%2e/etc/passwd",
                 "/a/%2E%2E/%2e%2e/etc/passwd", "/..%2fetc%2fpasswd", "/app.js/.."):
        st, ct, body = s.request("GET", path)
        assert st == 400 and ct.startswith("application/json"), (
            f"traversal {path}: {st} {body[:200]!r}")
    # Malformed requests: 4xx JSON.
    st, _, _ = s.request("POST", "/jobs", body=b"\xff\xfe\x00garbage")
    assert st == 400, f"binary body: {st}"
    st, _, _ = s.request("POST", "/jobs", body=b"")
    assert st == 400, f"empty body: {st}"
    st, _, _ = s.request("GET", "/jobs/ZZZ")
    assert 400 <= st < 500, f"bad id: {st}"
    st, _, _ = s.request("PUT", "/jobs")
    assert 400 <= st < 500, f"PUT: {st}"
    for raw in (b"GARBAGE\r\n\r\n", b"GET /jobs HTTP/9.9\r\n\r\n",
                b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n", b"\x00\x01\x02\r\n\r\n"):
        with socket.create_connection(("127.0.0.1", s.port), timeout=10) as sock:
            sock.sendall(raw)
            reply = sock.recv(4096)
            if reply:
                m = re.match(rb"HTTP/1\.[01] (\d+)", reply)
                assert m and 400 <= int(m.group(1)) < 500, f"raw {raw[:20]!r}: {reply[:80]!r}"
    # The job never noticed.
    assert job_state(s, jid) == "RUNNING", "the job keeps running"
    before = s.get(f"/jobs/{jid}")["vertices"][0]["metrics"]["write-records"]
    wait_until(lambda: s.get(f"/jobs/{jid}")["vertices"][0]["metrics"]["write-records"]
               > before, "the job still making progress")
    assert s.stop() == 0, "exit 0"


def test_dashboard(weir, work, build_dir, serve):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium is not None, "chromium not installed"
    text, _ = pipeline_text(work, "dash", rate=3000, parallelism=1, checkpoint=True)
    (work / "dash.toml").write_text(text)
    s = serve([work / "dash.toml"])
    jid = s.ids[0]
    wait_until(lambda: s.get(f"/jobs/{jid}")["vertices"][0]["metrics"]
               ["write-records-per-second"] > 0, "a non-zero rate")
    url = f"http://127.0.0.1:{s.port}/"
    status, ctype, body = s.request("GET", "/")
    assert status == 200 and ctype.startswith("text/html") and b"app.js" in body, "GET /"
    for f, t in (("/app.js", "text/javascript"), ("/style.css", "text/css")):
        st, ct, _ = s.request("GET", f)
        assert st == 200 and ct.startswith(t), f"{f}: {st} {ct}"
    profile = work / "chromium-profile"
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-dev-shm-usage", f"--user-data-dir={profile}",
            "--virtual-time-budget=4000"]
    dom = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True,
                         timeout=90 * SCALE)
    assert dom.returncode == 0, f"chromium --dump-dom: {dom.stderr[-1500:]}"
    html = dom.stdout
    for name in ("gen", "per_key", "raw", "windows"):
        assert f'data-operator="{name}"' in html, f"operator {name} not in the DOM"
    rates = re.findall(r'<td class="rate-out">([^<]*)</td>', html)
    assert rates, "no rate cells in the DOM:\n" + html[-2000:]
    def value(t):
        return float(t[:-1]) * 1000 if t.endswith("k") else float(t)
    assert any(value(r) > 0 for r in rates), f"no non-zero rate in the DOM: {rates}"
    assert "RUNNING" in html, "the job's state in the DOM"
    shot = pathlib.Path(build_dir) / "server-dashboard.png"
    if shot.exists():
        shot.unlink()
    p = subprocess.run(base + ["--window-size=1280,1100", f"--screenshot={shot}", url],
                       capture_output=True, text=True, timeout=90 * SCALE)
    assert p.returncode == 0 and shot.exists() and shot.stat().st_size > 10000, (
        f"screenshot {shot}: {p.stderr[-1500:]}")
    print(f"screenshot: {shot}")
    assert s.stop() == 0, "exit 0"


INGEST_LOAD = """
[job]
name = "ingest"

[[source]]
name = "clicks"
type = "http"
format = "jsonl"
schema = {{ client = "int64", n = "int64" }}

[[sink]]
name = "out"
input = "clicks"
type = "file"
path = "{out}"
"""


def test_load(weir, work, serve):
    text, _ = pipeline_text(work, "load", rate=2000, parallelism=2, checkpoint=True)
    (work / "load.toml").write_text(text)
    ingested = work / "ingested.jsonl"
    (work / "ingest.toml").write_text(INGEST_LOAD.format(out=ingested))
    s = serve([work / "load.toml", work / "ingest.toml"])
    jid = s.ids[0]
    # State queries and ingest answer 503 until their job runs.
    for j in s.ids:
        wait_until(lambda: job_state(s, j) == "RUNNING", f"job {j} running")
    paths = ["/metrics", f"/jobs/{jid}", "/jobs", "/overview", f"/jobs/{jid}/checkpoints",
             f"/jobs/{jid}/exceptions", "/healthz"]
    # Queryable state of every key, as often as the rest together; and
    # HTTP ingest into the second job, one request in five.
    paths += [f"/jobs/{jid}/state/per_key?key={k % 4}" for k in range(len(paths))]
    paths += ["/ingest/clicks"] * (len(paths) // 4)
    failures = []
    state_answers = [0]
    accepted = [0] * 6

    def client(k):
        conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30 * SCALE)
        done = 0
        for i in range(50):
            path = paths[(k + i) % len(paths)]
            try:
                if path.startswith("/ingest/"):
                    rows = "".join(json.dumps({"client": k, "n": i * 100 + j}) + "\n"
                                   for j in range(100))
                    conn.request("POST", path, body=rows.encode())
                else:
                    conn.request("GET", path)
                r = conn.getresponse()
                body = r.read()
                if path.startswith("/ingest/"):
                    a = json.loads(body) if body else {}
                    if r.status != 202 or a.get("accepted") != 100:
                        failures.append((path, r.status, a))
                    else:
                        accepted[k] += 100
                elif r.status != 200 or not body:
                    failures.append((path, r.status))
                elif "/state/" in path:
                    a = json.loads(body)
                    if a["operator"] != "per_key" or "watermark" not in a:
                        failures.append((path, a))
                    elif a["found"]:
                        state_answers[0] += 1
                done += 1
            except Exception as e:  # noqa: BLE001 - every failure counts
                failures.append((path, repr(e)))
                conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30 * SCALE)
        conn.close()
        return done

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        done = sum(pool.map(client, range(6)))
    assert not failures, f"failed requests: {failures[:10]}"
    assert state_answers[0] > 0, "no state query answered with state"
    assert done == 300, f"{done} requests answered"
    job = s.get(f"/jobs/{jid}")
    assert job["state"] == "RUNNING", f"state after the load: {job['state']}"
    before = job["vertices"][0]["metrics"]["write-records"]
    wait_until(lambda: s.get(f"/jobs/{jid}")["vertices"][0]["metrics"]["write-records"]
               > before, "progress after the load")
    assert s.stop() == 0, "exit 0"
    # Every record an ingest request was answered 202 for, once.
    rows = [json.loads(line) for line in ingested.read_text().splitlines()]
    got = collections.Counter((r["client"], r["n"]) for r in rows)
    assert sum(accepted) > 0, "no ingest request was made"
    assert len(rows) == sum(accepted) and all(c == 1 for c in got.values()), (
        f"{len(rows)} ingested rows written for {sum(accepted)} accepted "
        f"({sum(1 for c in got.values() if c > 1)} twice)")


def test_kafka_lag(weir, work, kafka_broker, serve):
    """A Kafka source behind a throttled sink: /metrics shows its consumer
    lag (weir_source_lag_records) above 0 while it reads, never above what
    was produced, and the JSON API the same per subtask."""
    n = 20000
    broker = kafka_broker
    broker.create_topic("events", partitions=1)
    broker.produce("events", [json.dumps({"seq": i}) for i in range(n)], partition=0)
    (work / "lag.toml").write_text(f"""
[job]
name = "lag"

[[source]]
name = "events"
type = "kafka"
topics = ["events"]
bootstrap_servers = "{broker.bootstrap}"
format = "jsonl"
bounded = "latest"
schema = {{ seq = "int64" }}

[[sink]]
name = "slow"
input = "events"
type = "blackhole"
rate = 2000
""")
    s = serve([work / "lag.toml"])
    jid = s.ids[0]

    def lag():
        _, _, data = s.request("GET", "/metrics")
        _, samples = parse_prometheus(data.decode())
        vals = [v for (name, labels), v in samples.items()
                if name == "weir_source_lag_records" and dict(labels).get("job") == "lag"]
        return vals[0] if vals and vals[0] > 0 else None

    v = wait_until(lag, "a positive consumer lag in /metrics", 60)
    assert v <= n, f"lag {v} above the {n} records produced"
    sub = s.get(f"/jobs/{jid}")["vertices"][0]["subtasks"][0]
    assert sub["source-lag"] is not None and 0 <= sub["source-lag"] <= n, (
        f"source-lag in the API: {sub}")
    s.json("DELETE", f"/jobs/{jid}", expect=202)
    wait_until(lambda: job_state(s, jid) == "CANCELED", "CANCELED")
    assert s.stop() == 0, "exit 0"


# -- queryable state and savepoints ------------------------------------------------------

STATE_PIPELINE = """
[job]
name = "state"
parallelism = 2

[checkpoint]
interval = "200ms"
dir = "{work}/state-cp"

[[source]]
name = "events"
type = "file"
path = "{work}/in"
format = "jsonl"
monitor_interval = "100ms"
schema = {{ user = "string", ts = "int64", amount = "int64" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_user"
type = "window"
input = "events"
key_by = ["user"]
window = {{ type = "tumbling", size = "10s" }}
aggregate = {{ n = "count(*)", total = "sum(amount)" }}

[[operator]]
name = "counts"
type = "running_count"
input = "events"
key_by = ["user"]

[[sink]]
name = "windows"
input = "per_user"
type = "file"
path = "{work}/out/windows.jsonl"

[[sink]]
name = "counts_out"
input = "counts"
type = "blackhole"
"""


def drop_file(directory, name, rows):
    """Writes a JSONL file under a hidden name and renames it into place
    (a monitored directory's files are immutable once seen)."""
    tmp = directory / f".{name}.tmp"
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.rename(tmp, directory / name)


def committed_rows(directory):
    rows = []
    for p in sorted(directory.glob("part-*")):
        rows += [json.loads(l) for l in p.read_text().splitlines() if l]
    return rows


def test_state(weir, work, serve):
    """Queryable state: the open window of a key answered while the window
    is open equals the row the sink emits once the watermark closes it; a
    running count equals the records sent; the answer is stamped with the
    watermark and the last completed checkpoint."""
    (work / "in").mkdir()
    (work / "state.toml").write_text(STATE_PIPELINE.format(work=work))
    users = ["ada", "grace", "alan", "edsger", "barbara"]
    # Window [0, 10 s): user k sends k + 2 records with amounts 1..k+2.
    first = []
    for k, u in enumerate(users):
        for i in range(k + 2):
            first.append({"user": u, "ts": 1000 * i + 17 * k, "amount": i + 1})
    first.sort(key=lambda r: r["ts"])
    drop_file(work / "in", "0001.jsonl", first)
    s = serve([work / "state.toml"])
    jid = s.ids[0]
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the job running")

    def vertex(name):
        return next(v for v in s.get(f"/jobs/{jid}")["vertices"] if v["name"] == name)

    wait_until(lambda: vertex("per_user")["metrics"]["read-records"] == len(first)
               and vertex("counts")["metrics"]["read-records"] == len(first),
               "the first file's records at both keyed operators")
    wait_until(lambda: s.get(f"/jobs/{jid}/checkpoints")["counts"]["completed"] >= 1,
               "a completed checkpoint")
    answers = {}
    for k, u in enumerate(users):
        a = s.get(f"/jobs/{jid}/state/per_user?key={u}")
        for f in ("operator", "key", "subtask", "parallelism", "key_group", "watermark",
                  "checkpoint_id", "found", "state"):
            assert f in a, f"state answer without '{f}': {a}"
        assert a["operator"] == "per_user" and a["key"] == [u], f"answer {a}"
        assert a["parallelism"] == 2 and 0 <= a["subtask"] < 2, f"answer {a}"
        assert a["found"] is True, f"no state for {u}: {a}"
        assert a["watermark"] is not None and a["watermark"] < 10000, (
            f"watermark stamp {a['watermark']} (the window is still open)")
        assert a["checkpoint_id"] >= 1, f"checkpoint stamp {a['checkpoint_id']}"
        wins = a["state"]["windows"]
        assert len(wins) == 1, f"{u}: open windows {wins}"
        w = wins[0]
        assert w["window_start"] == 0 and w["window_end"] == 10000, f"{u}: window {w}"
        assert w["n"] == k + 2 and w["total"] == sum(range(1, k + 3)), f"{u}: window {w}"
        answers[u] = w
        c = s.get(f"/jobs/{jid}/state/counts?key={u}")
        assert c["found"] and c["state"] == {"count": k + 2}, f"{u}: running count {c}"
    none = s.get(f"/jobs/{jid}/state/per_user?key=nobody")
    assert none["found"] is False and none["state"] is None, f"unknown key: {none}"
    # Errors: 4xx JSON, the job untouched.
    s.json("GET", f"/jobs/{jid}/state/nosuchop?key=ada", expect=404)
    s.json("GET", f"/jobs/{jid}/state/per_user", expect=400)
    s.json("GET", f"/jobs/{jid}/state/per_user?key=ada&key=2", expect=400)
    e = s.json("GET", f"/jobs/{jid}/state/events?key=ada", expect=400)
    assert "not keyed" in e["errors"][0], f"source queried: {e}"
    s.json("GET", "/jobs/0123456789abcdef0123456789abcdef/state/per_user?key=ada",
           expect=404)

    # A later event closes [0, 10 s): the sink's rows equal the answers.
    drop_file(work / "in", "0002.jsonl", [{"user": "zed", "ts": 25000, "amount": 1}])
    out = work / "out" / "windows.jsonl"
    rows = wait_until(lambda: (lambda r: r if len(r) >= len(users) else None)(
        committed_rows(out)), "the closed windows committed by the sink")
    by_user = {r["user"]: r for r in rows}
    assert len(rows) == len(users), f"sink rows {rows}"
    for u in users:
        assert by_user.get(u) == answers[u], (
            f"{u}: the sink emitted {by_user.get(u)}, the query said {answers[u]}")
    after = s.get(f"/jobs/{jid}/state/per_user?key=ada")
    assert after["state"] is None and after["watermark"] >= 10000, (
        f"ada's window is closed, its state gone: {after}")
    c = s.get(f"/jobs/{jid}/state/counts?key=zed")
    assert c["state"] == {"count": 1}, f"zed's running count {c}"
    assert s.json("POST", f"/jobs/{jid}/stop", expect=202)["status"] == "STOPPING", "stop"
    wait_until(lambda: job_state(s, jid) == "STOPPED", "STOPPED")
    e = s.json("GET", f"/jobs/{jid}/state/per_user?key=ada", expect=409)
    assert "STOPPED" in e["errors"][0], f"a stopped job's query: {e}"
    assert s.stop() == 0, "exit 0"
    print(f"{len(users)} keys: open windows queried = the sink's rows")


def poll_savepoint(s, jid, trigger):
    def done():
        r = s.get(f"/jobs/{jid}/savepoints/{trigger}")
        assert r["status"]["id"] in ("IN_PROGRESS", "COMPLETED", "FAILED"), f"status {r}"
        return r if r["status"]["id"] != "IN_PROGRESS" else None
    r = wait_until(done, f"savepoint {trigger} done", 60)
    assert r["status"]["id"] == "COMPLETED", f"savepoint failed: {r}"
    return r["operation"]


def restore_through_http(s, work, root, op):
    """POST /jobs?savepointPath= with savepoint `op` (at root/first): the
    job restored from it reports it as latest.restored; paths outside the
    root, a missing savepoint, a bad flag and a removed operator are 400s
    that leave no job behind; allowNonRestoredState=true skips the state."""
    def toml(name, parts=("window", "raw")):
        d = work / name
        d.mkdir()
        return sp.pipeline(d, rate=1000, parts=parts).read_text()

    jobs_before = len(s.get("/jobs")["jobs"])
    body = toml("restored")
    rid = s.json("POST", "/jobs?file=restored.toml&savepointPath=first", body=body.encode(),
                 expect=202)["jobid"]
    cps = s.get(f"/jobs/{rid}/checkpoints")
    r = cps["latest"]["restored"]
    assert (r is not None and r["id"] == op["checkpoint-id"] and r["is_savepoint"] is True
            and r["external_path"] == str(root / "first") and r["restore_timestamp"] > 0), (
        f"latest.restored {r}, savepoint {op}")
    assert cps["counts"]["restored"] == 1, f"counts {cps['counts']}"
    assert s.get(f"/jobs/{rid}/config")["toml"] == body, "config of the restored job"
    assert s.json("DELETE", f"/jobs/{rid}", expect=202)["status"] == "CANCELING", "cancel"
    wait_until(lambda: job_state(s, rid) == "CANCELED", "the restored job CANCELED")

    refused = toml("refused")
    for path, words in (("../first", "'..'"), ("/tmp", "outside the savepoint directory"),
                        ("nothing-here", "no savepoint at"), ("", "must name")):
        e = s.json("POST", f"/jobs?savepointPath={path}", body=refused.encode(), expect=400)
        assert words in e["errors"][0], f"savepointPath={path!r}: {e}"
    e = s.json("POST", "/jobs?savepointPath=first&allowNonRestoredState=maybe",
               body=refused.encode(), expect=400)
    assert "allowNonRestoredState" in e["errors"][0], f"a bad flag: {e}"
    removed = toml("removed", parts=("raw",))
    e = s.json("POST", "/jobs?savepointPath=first", body=removed.encode(), expect=400)
    assert "'per_key'" in e["errors"][0] and "does not have" in e["errors"][0], (
        f"a removed operator's state: {e}")
    assert len(s.get("/jobs")["jobs"]) == jobs_before + 1, "a refused restore left a job"
    rid = s.json("POST", "/jobs?savepointPath=first&allowNonRestoredState=true",
                 body=removed.encode(), expect=202)["jobid"]
    r = s.get(f"/jobs/{rid}/checkpoints")["latest"]["restored"]
    assert r is not None and r["id"] == op["checkpoint-id"], f"restored without per_key: {r}"
    s.json("DELETE", f"/jobs/{rid}", expect=202)
    wait_until(lambda: job_state(s, rid) == "CANCELED", "the second restored job CANCELED")


def test_savepoint(weir, work, serve):
    """Savepoint through HTTP (polled to COMPLETED), stop with a savepoint
    through HTTP, resume with `weir run --from-savepoint` at parallelism 3:
    the output equals the uninterrupted run's."""
    want_raw, want_windows = sp.uninterrupted(weir, work)
    run_dir = work / "run"
    run_dir.mkdir()
    toml = sp.pipeline(run_dir, rate=5000)
    root = work / "savepoints"
    s = serve([toml], args=["--savepoint-dir", str(root)])
    jid = s.ids[0]
    wait_until(lambda: list((run_dir / "out/raw.jsonl").glob("part-*")),
               "committed output (a completed checkpoint)")
    trig = s.json("POST", f"/jobs/{jid}/savepoints",
                  body=json.dumps({"target-directory": "first", "cancel-job": False}),
                  expect=202)["request-id"]
    first = trig
    op = poll_savepoint(s, jid, trig)
    assert op["location"] == str(root / "first") and (root / "first/data.mdb").exists(), (
        f"savepoint location {op}")
    assert op["checkpoint-id"] >= 1, f"savepoint checkpoint {op}"
    assert job_state(s, jid) == "RUNNING", "a savepoint leaves the job running"
    restore_through_http(s, work, root, op)
    s.json("GET", f"/jobs/{jid}/savepoints/0123456789abcdef", expect=404)
    e = s.json("POST", f"/jobs/{jid}/savepoints",
               body=json.dumps({"target-directory": "first"}), expect=409)
    assert "not empty" in e["errors"][0], f"a second savepoint into 'first': {e}"
    trig = s.json("POST", f"/jobs/{jid}/stop",
                  body=json.dumps({"targetDirectory": "final", "drain": False}),
                  expect=202)["request-id"]
    op = poll_savepoint(s, jid, trig)
    assert op["location"] == str(root / "final") and op["stop"] is True, f"stop {op}"
    # Both listed by the server, newest first, whoever asked.
    sps = s.get(f"/jobs/{jid}/savepoints")["savepoints"]
    assert ([(x["request-id"], x["stop"], x["location"]) for x in sps]
            == [(trig, True, str(root / "final")), (first, False, str(root / "first"))]), (
        f"savepoint list {sps}")
    for x in sps:
        assert (x["status"]["id"] == "COMPLETED" and x["operation"]["location"] == x["location"]
                and x["operation"]["checkpoint-id"] >= 1 and x["operation"]["size"] > 0
                and 0 < x["trigger-timestamp"] <= x["end-timestamp"]), f"listed {x}"
    assert sps[0]["trigger-timestamp"] >= sps[1]["trigger-timestamp"], f"order {sps}"
    wait_until(lambda: job_state(s, jid) == "STOPPED", "STOPPED after the savepoint")
    raw_before = len(sp.committed(run_dir / "out/raw.jsonl"))
    assert 0 < raw_before < sp.COUNT, f"{raw_before} rows before the stop"
    assert s.stop() == 0, "exit 0"
    # A copy of the stopped job's checkpoints, served again: restored from
    # its own checkpoint directory, not a savepoint.
    again = work / "again"
    again.mkdir()
    shutil.copytree(run_dir / "state", again / "state")
    s = serve([sp.pipeline(again, rate=1000)])
    r = wait_until(lambda: s.get(f"/jobs/{s.ids[0]}/checkpoints")["latest"]["restored"],
                   "the restore read")
    assert (r["id"] >= 1 and r["is_savepoint"] is False
            and r["external_path"] == str(again / "state")), f"restored from its checkpoints: {r}"
    assert s.stop() == 0, "exit 0"
    # Moved elsewhere (self-contained), resumed at another parallelism.
    moved = sp.moved(root / "final", work)
    toml = sp.pipeline(run_dir, rate=1_000_000)
    p = subprocess.run([weir, "run", str(toml), "--from-savepoint", str(moved),
                        "--parallelism", "3"], capture_output=True, text=True,
                       timeout=300 * SCALE)
    assert p.returncode == 0, f"the resumed run exited {p.returncode}:\n{p.stderr[-2000:]}"
    sp.same(sp.committed(run_dir / "out/raw.jsonl"), want_raw, "raw output")
    sp.same(sp.committed(run_dir / "out/windows.jsonl"), want_windows, "window output")
    print(f"savepoint, stop with savepoint, resume at parallelism 3: {len(want_raw)} rows, "
          f"{len(want_windows)} windows as uninterrupted")
