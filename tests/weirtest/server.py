# SPDX-License-Identifier: Apache-2.0
"""`weir serve` for the server, HTTP ingest, abuse and recovery tests: the
real binary on a free loopback port (port 0, read back from its log), its
HTTP API as JSON, and the generator job they run behind it."""
import http.client
import json
import re
import signal
import subprocess

from weirtest import SCALE, wait_until

# A generator job: seq 0.., 4 keys, event time seq * 10 ms; a keyed tumbling
# window (state) and two file sinks. {count} empty = unbounded.
PIPELINE = """
[job]
name = "{name}"
parallelism = {parallelism}
{extra_job}

[[source]]
name = "gen"
type = "generator"
{count}
{rate}
fields = {{ seq = "seq", key = "seq % 4", ts = "seq * 10" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)", last = "max(seq)" }}

[[sink]]
name = "raw"
input = "gen"
type = "file"
path = "{out}/raw.jsonl"

[[sink]]
name = "windows"
input = "per_key"
type = "file"
path = "{out}/windows.jsonl"
"""


def pipeline_text(work, name, rate, count=None, parallelism=1, checkpoint=False):
    extra = ""
    if checkpoint:
        extra = f'\n[checkpoint]\ninterval = "200ms"\ndir = "{work}/state-{name}"\n'
    out = work / f"out-{name}"
    out.mkdir(exist_ok=True)
    text = PIPELINE.format(name=name, parallelism=parallelism, extra_job="",
                           count=f"count = {count}" if count else "",
                           rate=f"rate = {rate}" if rate else "", out=out)
    return text.replace("\n[[source]]", extra + "\n[[source]]", 1), out


# A file source whose second line is not JSON: the job fails on it.
FAILING = """[job]
name = "failing"

[[source]]
name = "in"
type = "file"
path = "{input}"
format = "jsonl"
schema = {{ n = "int64" }}

[[sink]]
name = "out"
input = "in"
type = "file"
path = "{out}/out.jsonl"
"""


def submit_failing_job(server, work):
    """Submits FAILING (its input and output in `work`) to `server` and
    waits until it has FAILED; its job id."""
    (work / "bad.jsonl").write_text('{"n": 1}\nnot json\n{"n": 3}\n')
    out = work / "out-failing"
    out.mkdir(exist_ok=True)
    fid = server.json("POST", "/jobs?file=failing.toml", expect=202, body=FAILING.format(
        input=work / "bad.jsonl", out=out).encode())["jobid"]
    wait_until(lambda: job_state(server, fid) == "FAILED", "the failing job FAILED")
    return fid

class Server:
    """`weir serve` on a free loopback port, stopped by the test."""

    def __init__(self, weir, work, pipelines=(), args=(), token=None):
        self.token = token
        cmd = [weir, "serve", "--listen", "127.0.0.1:0", *args, *map(str, pipelines)]
        self.log = open(work / "serve.log", "w+")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.log, cwd=work)
        self.port = None
        self.ids = []

        def started():
            text = self.log_text()
            m = re.search(r"serving on http://127\.0\.0\.1:(\d+)/", text)
            ids = re.findall(r"job '[^']*' started: ([0-9a-f]{32})", text)
            if m and len(ids) == len(pipelines):
                self.port = int(m.group(1))
                self.ids = ids
                return True
            return self.proc.poll() is not None
        try:
            wait_until(started, "weir serve to listen and start its jobs", 20)
        except AssertionError:
            self.kill()
            raise
        assert self.port is not None, (
            f"weir serve exited {self.proc.returncode} at start:\n{self.stderr()}")

    def log_text(self):
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def request(self, method, path, body=None, headers=None, token=True):
        h = dict(headers or {})
        if token and self.token:
            h["Authorization"] = f"Bearer {self.token}"
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30 * SCALE)
        try:
            c.request(method, path, body=body, headers=h)
            r = c.getresponse()
            data = r.read()
            return r.status, r.getheader("Content-Type") or "", data
        finally:
            c.close()

    def json(self, method, path, body=None, expect=200, **kw):
        status, ctype, data = self.request(method, path, body, **kw)
        assert status == expect, f"{method} {path}: {status}, expected {expect}: {data[:500]!r}"
        assert ctype.startswith("application/json"), f"{method} {path}: content type {ctype}"
        return json.loads(data)

    def get(self, path, **kw):
        return self.json("GET", path, **kw)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                rc = self.proc.wait(timeout=60 * SCALE)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError("weir serve did not stop on SIGTERM:\n" + self.stderr())
            assert rc == 0, f"weir serve exited {rc} on SIGTERM:\n" + self.stderr()
        return self.proc.returncode

    def stderr(self):
        return self.log_text()[-4000:]

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def job_state(server, jid):
    """The state of job `jid` on `server` (RUNNING, FINISHED, ...)."""
    return server.get(f"/jobs/{jid}")["state"]


def post_ingest(port, source, body, key=None, timeout=30):
    """(status, headers, json) of POST /ingest/{source}."""
    h = {"Content-Type": "application/x-ndjson"}
    if key:
        h["Idempotency-Key"] = key
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout * SCALE)
    try:
        c.request("POST", f"/ingest/{source}", body=body.encode(), headers=h)
        r = c.getresponse()
        data = r.read()
        return r.status, dict(r.getheaders()), json.loads(data) if data else None
    finally:
        c.close()
