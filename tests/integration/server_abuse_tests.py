# SPDX-License-Identifier: Apache-2.0
"""`weir serve` against hostile clients: the real binary on a free loopback
port, with its default limits, attacked by the test over raw sockets. In
every test the server's peak RSS (VmHWM in /proc/PID/status) must stay within
the body limit plus a constant above its RSS before the attack.

  slow-clients  200 slowloris clients (a header byte every 0.5 s, from 10
                loopback addresses) and 10 clients stalled in a request body:
                /healthz and the REST routes answer within 1 s throughout;
                every slowloris client gets 408 and is closed by the header
                deadline, every stalled body by the read timeout; then 40
                connections from one address: the 8 over the per-client cap
                get 429 at once; a server with --max-connections 20 answers
                the 21st 503 with Retry-After, and serves again once they go
  bombs         bodies larger than their route takes however they are
                framed or encoded, each on a server of its own: 100 MiB
                chunked (POST /jobs, POST /ingest, an unknown route), 100 MiB
                gzip and deflate bombs under 1 MiB on the wire (plain and
                chunked), a Content-Length of 200 MiB: 413 (404 for the
                unknown route) with the body unread; truncated or corrupt
                gzip 400; an unknown Content-Encoding 415; an unknown
                Transfer-Encoding 501; conflicting or malformed framing 400;
                gzip, chunked gzip and deflate bodies within the limit read
  content-type  bodies as curl sends them (`--data-binary @file`: Content-Type
                application/x-www-form-urlencoded, Expect: 100-continue):
                a 20 KiB and a 600 KiB ingest body accepted, an unknown
                source 404, a 12 KiB pipeline submitted; multipart 415
  savepoint     POST /jobs/{id}/savepoints with no body (no Content-Length,
                as `curl -X POST` sends it) and with an empty one: 202 with
                a generated directory under the savepoint root, COMPLETED;
                a form-encoded JSON body read as JSON; POST /jobs/{id}/stop
                with no body: 202 STOPPING
  routes        with a token: unknown routes 404 JSON for every method,
                known paths with another method 405 with Allow, a 7,000
                character id 404; missing, wrong, empty or non-Bearer tokens
                401 (also on a 100 MiB chunked body, left unread and the
                connection closed), the scheme case-insensitive; path
                traversal 400 in every route taking a path or id, nothing
                written outside; oversized request line and headers 431,
                closed; 300 pipelined requests (bodies of both framings
                among them) all answered in order on one connection

Each is the test function test_<name> with - as _ (test_slow_clients, ...).
"""
import json
import pathlib
import select
import socket
import subprocess
import threading
import time
import zlib

from weirtest import SCALE, wait_until
from weirtest.server import job_state, pipeline_text

MIB = 1 << 20
# The defaults these tests rely on (server_options, include/weir/server/http_server.hpp).
MAX_BODY = 1 * MIB               # --max-body-bytes
BODY_BUDGET = 64 * MIB           # body bytes held at once over all connections
HEADER_TIMEOUT = 10.0            # --header-timeout
READ_TIMEOUT = 10.0              # a request body's pause between bytes
PER_CLIENT = 32                  # --max-connections-per-client
# Peak RSS allowed above the level before an attack, beyond the body limit:
# threads' stacks, allocator slack, the job's own growth.
RSS_SLACK_KIB = 48 * 1024


def status_kib(pid, field):
    for line in pathlib.Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} in /proc/{pid}/status")


class Memory:
    """The server's peak RSS during an attack against its RSS before it:
    `begin` resets the peak (VmHWM, writing 5 to /proc/PID/clear_refs) and
    takes VmRSS; `check` compares VmHWM with it."""

    def __init__(self, server, limit_bytes):
        self.pid = server.proc.pid
        self.allowed = limit_bytes // 1024 + RSS_SLACK_KIB
        self.worst = (0, None)
        self.begin()

    def begin(self):
        pathlib.Path(f"/proc/{self.pid}/clear_refs").write_text("5")
        self.base = status_kib(self.pid, "VmRSS")

    def check(self, what):
        growth = status_kib(self.pid, "VmHWM") - self.base
        if growth > self.worst[0]:
            self.worst = (growth, what)
        assert growth <= self.allowed, (
            f"{what}: peak RSS grew by {growth} KiB (from {self.base} KiB), more than "
            f"the body limit plus {RSS_SLACK_KIB} KiB ({self.allowed} KiB)")

    def __str__(self):
        return (f"peak RSS growth at most {self.worst[0]} KiB ({self.worst[1]}), "
                f"allowed {self.allowed} KiB")


# -- raw HTTP ------------------------------------------------------------------------


class Reply:
    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body) if self.body else None

    def __repr__(self):
        return f"{self.status} {self.headers} {self.body[:300]!r}"


def parse_replies(data, count=None, head_only=False):
    """The complete responses at the start of `data` (at most `count`), and
    the bytes left over."""
    out = []
    while count is None or len(out) < count:
        end = data.find(b"\r\n\r\n")
        if end < 0:
            break
        lines = data[:end].decode("latin-1").split("\r\n")
        parts = lines[0].split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1."):
            raise AssertionError(f"not an HTTP response: {data[:200]!r}")
        status = int(parts[1])
        headers = {}
        for h in lines[1:]:
            k, _, v = h.partition(":")
            headers[k.strip().lower()] = v.strip()
        if status == 100:
            data = data[end + 4:]
            continue
        n = 0 if head_only else int(headers.get("content-length", "0"))
        if len(data) < end + 4 + n:
            break
        out.append(Reply(status, headers, data[end + 4:end + 4 + n]))
        data = data[end + 4 + n:]
    return out, data


def exchange(port, head, pieces=(), timeout=15.0, wait_continue=False, head_only=False):
    """Sends `head`, then the byte strings of `pieces` while no response has
    come (after a 100 Continue when `wait_continue`), and returns (the first
    final response or None, bytes of `pieces` sent, whether the server
    closed the connection). Stops sending at the first response byte, as
    curl does."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout * SCALE)
    s.connect(("127.0.0.1", port))
    s.setblocking(False)
    deadline = time.monotonic() + timeout * SCALE
    got = b""
    sent = 0
    closed = False
    pieces = iter(pieces)
    pending = memoryview(head)
    phase = "head"  # then "continue" (waiting for 100 Continue), "body", "done"
    while time.monotonic() < deadline:
        if not pending and phase == "head":
            phase = "continue" if wait_continue else "body"
        if not pending and phase == "body":
            nxt = next(pieces, None)
            if nxt is None:
                phase = "done"
            else:
                pending = memoryview(nxt)
        sending = phase in ("head", "body") and len(pending) > 0
        wr = [s] if sending and pending else []
        r, w, _ = select.select([s], wr, [], 0.05)
        if r:
            try:
                chunk = s.recv(1 << 16)
            except OSError:
                closed = True
                break
            if not chunk:
                closed = True
                break
            got += chunk
            if phase == "continue" and got.startswith(b"HTTP/1.1 100"):
                end = got.find(b"\r\n\r\n")
                if end >= 0:
                    got = got[end + 4:]
                    phase = "body"
                continue
            phase = "done"  # a response: stop sending, like curl
            replies, _ = parse_replies(got, 1, head_only)
            if replies:
                if replies[0].headers.get("connection", "").lower() == "close":
                    closed = wait_closed(s, 3.0)
                return replies[0], sent, closed
        if w:
            try:
                n = s.send(pending)
            except OSError:
                phase = "done"
                continue
            if phase == "body":
                sent += n
            pending = pending[n:]
    replies, _ = parse_replies(got, 1, head_only)
    return (replies[0] if replies else None), sent, closed


def wait_closed(s, timeout):
    deadline = time.monotonic() + timeout * SCALE
    while time.monotonic() < deadline:
        r, _, _ = select.select([s], [], [], 0.05)
        if r:
            try:
                if not s.recv(1 << 16):
                    return True
            except (ConnectionResetError, BrokenPipeError):
                return True
    return False


def request(port, method, path, body=b"", headers=None, timeout=15.0, **kw):
    """One request on its own connection: (Reply or None, closed)."""
    h = {"Host": "127.0.0.1"}
    h.update(headers or {})
    if body is not None and "Transfer-Encoding" not in h:
        h.setdefault("Content-Length", str(len(body)))
    head = f"{method} {path} HTTP/1.1\r\n".encode() + b"".join(
        f"{k}: {v}\r\n".encode() for k, v in h.items()) + b"\r\n"
    reply, _, closed = exchange(port, head, [body] if body else [], timeout,
                                head_only=method == "HEAD", **kw)
    assert reply is not None, f"{method} {path}: no response"
    return reply or Reply(0, {}, b""), closed


def chunked(total, piece=64 * 1024, fill=b"#"):
    """`total` bytes as chunks of `piece`, then the last chunk."""
    data = fill * piece
    sent = 0
    while sent < total:
        n = min(piece, total - sent)
        yield b"%x\r\n" % n + data[:n] + b"\r\n"
        sent += n
    yield b"0\r\n\r\n"


def rechunk(data, piece=64 * 1024):
    for i in range(0, len(data), piece):
        part = data[i:i + piece]
        yield b"%x\r\n" % len(part) + part + b"\r\n"
    yield b"0\r\n\r\n"


def bomb(total, wbits, line=b"#" * 63 + b"\n"):
    """`total` bytes of `line` compressed (wbits 31: gzip, 15: zlib)."""
    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = line * (MIB // len(line))
    out = []
    done = 0
    while done < total:
        out.append(c.compress(block))
        done += len(block)
    out.append(c.flush())
    return b"".join(out)


def head_for(method, path, headers):
    h = {"Host": "127.0.0.1"}
    h.update(headers)
    return f"{method} {path} HTTP/1.1\r\n".encode() + b"".join(
        f"{k}: {v}\r\n".encode() for k, v in h.items()) + b"\r\n"


def field(reply, *path):
    """reply's JSON body at `path` (keys and indexes), or None."""
    try:
        v = reply.json()
        for k in path:
            v = v[k]
        return v
    except (KeyError, IndexError, TypeError, ValueError):
        return None


def expect(reply, status, what):
    assert reply is not None, f"{what}: no response"
    if reply is None:
        return None
    assert reply.status == status, f"{what}: {reply!r}, expected {status}"
    if status >= 400 and reply.body:
        assert reply.headers.get("content-type", "").startswith("application/json"), (
            f"{what}: content type {reply.headers}")
        assert field(reply, "errors"), f"{what}: no errors in {reply!r}"
    return reply


# -- pipelines -------------------------------------------------------------------------

INGEST = """
[job]
name = "ingest"

[[source]]
name = "events"
type = "http"
format = "jsonl"
schema = {{ n = "int64", k = "string" }}
max_body = "1MiB"

[[sink]]
name = "out"
input = "events"
type = "file"
path = "{out}/events.jsonl"
"""


def ingest_server(serve, work, args=()):
    out = work / "out"
    out.mkdir(exist_ok=True)
    p = work / "ingest.toml"
    p.write_text(INGEST.format(out=out))
    s = serve([p], args=args, home=work)

    def ready():
        r, _ = request(s.port, "POST", "/ingest/events", b'{"n": -1, "k": "warm"}\n')
        return r.status == 202
    wait_until(ready, "the http source to accept a request")
    return s, out


def jsonl(first, n, pad=""):
    return "".join(json.dumps({"n": i, "k": "k" + pad}) + "\n"
                   for i in range(first, first + n)).encode()


def accepted_ns(out):
    path = out / "events.jsonl"
    if not path.exists():
        return []
    return sorted(json.loads(x)["n"] for x in path.read_text().splitlines() if x.strip())


# -- slow-clients ------------------------------------------------------------------------


class Prober(threading.Thread):
    """GETs /healthz and REST routes back to back, each on a new connection
    with a 1 s timeout; keeps the slowest answer and every failure."""

    def __init__(self, port, paths):
        super().__init__(daemon=True)
        self.port, self.paths = port, paths
        self.stop_flag = threading.Event()
        self.failures = []
        self.slowest = (0.0, None)
        self.count = 0

    def run(self):
        while not self.stop_flag.is_set():
            for path in self.paths:
                t0 = time.monotonic()
                try:
                    with socket.create_connection(("127.0.0.1", self.port),
                                                  timeout=1.0 * SCALE) as s:
                        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\n"
                                  "Connection: close\r\n\r\n".encode())
                        data = b""
                        while True:
                            chunk = s.recv(65536)
                            if not chunk:
                                break
                            data += chunk
                    took = time.monotonic() - t0
                    if not data.startswith(b"HTTP/1.1 200"):
                        self.failures.append(f"{path}: {data[:120]!r}")
                    if took > self.slowest[0]:
                        self.slowest = (took, path)
                    if took > 1.0 * SCALE:
                        self.failures.append(f"{path} took {took:.2f} s")
                except OSError as e:
                    self.failures.append(f"{path}: {e!r} after "
                                         f"{time.monotonic() - t0:.2f} s")
                self.count += 1
            self.stop_flag.wait(0.1)


class Clients:
    """Non-blocking client sockets, each with what it received and when the
    server closed it."""

    def __init__(self):
        self.all = []

    def open(self, port, source, first=b""):
        c = socket.socket()
        c.bind((source, 0))
        c.settimeout(5 * SCALE)
        c.connect(("127.0.0.1", port))
        if first:
            c.sendall(first)
        c.setblocking(False)
        self.all.append({"sock": c, "opened": time.monotonic(), "closed": None, "got": b""})

    def poll(self):
        for c in self.all:
            if c["closed"] is not None:
                continue
            try:
                chunk = c["sock"].recv(4096)
                if chunk:
                    c["got"] += chunk
                    continue
            except BlockingIOError:
                continue
            except OSError:
                pass
            c["closed"] = time.monotonic()

    def send(self, data):
        for c in self.all:
            if c["closed"] is None:
                try:
                    c["sock"].send(data)
                except BlockingIOError:
                    pass
                except OSError:
                    c["closed"] = time.monotonic()

    def still_open(self):
        return sum(c["closed"] is None for c in self.all)

    def answered(self, status):
        return sum(c["got"].startswith(b"HTTP/1.1 %d" % status) for c in self.all)

    def close(self):
        for c in self.all:
            c["sock"].close()


def test_slow_clients(weir, work, serve):
    text, _ = pipeline_text(work, "steady", rate=200, checkpoint=True)
    (work / "steady.toml").write_text(text)
    s = serve([work / "steady.toml"])
    jid = s.ids[0]
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the job running")
    mem = Memory(s, 0)
    prober = Prober(s.port, ["/healthz", "/jobs", f"/jobs/{jid}", "/overview",
                             f"/jobs/{jid}/checkpoints"])
    prober.start()
    start = time.monotonic()
    # 200 slowloris clients from 10 addresses (20 each, under the cap):
    # a request line, then a header byte every 0.5 s.
    slow = Clients()
    for i in range(200):
        slow.open(s.port, f"127.0.1.{1 + i % 10}", b"GET /jobs HTTP/1.1\r\nX-Slow: ")
    # 10 clients stalled in a body: 10 of 100 bytes, then nothing.
    stalled = Clients()
    for i in range(10):
        stalled.open(s.port, "127.0.1.20", b"POST /jobs HTTP/1.1\r\nHost: x\r\n"
                     b"Content-Length: 100\r\n\r\n" + b"#" * 10)
    deadline = start + (HEADER_TIMEOUT + READ_TIMEOUT + 10) * SCALE
    last_byte = time.monotonic()
    mid_attack = False
    while time.monotonic() < deadline:
        now = time.monotonic()
        if now - last_byte >= 0.5:
            last_byte = now
            slow.send(b"a")
        slow.poll()
        stalled.poll()
        if not mid_attack and now - start > HEADER_TIMEOUT * 0.6 * SCALE:
            # Every slow client open, the server answering and small.
            mid_attack = True
            assert slow.still_open() == 200, (
                f"only {slow.still_open()} of 200 slow clients open mid-attack")
            assert prober.count >= 20 and not prober.failures, (
                f"with 200 slow clients open, {len(prober.failures)} of {prober.count} "
                "probes failed: " + "; ".join(prober.failures[:8]))
            mem.check("200 slow clients")
        if not slow.still_open() and not stalled.still_open():
            break
        time.sleep(0.02)
    prober.stop_flag.set()
    prober.join()
    assert not prober.failures, (f"{len(prober.failures)} of {prober.count} probes failed: "
        + "; ".join(prober.failures[:8]))
    print(f"slow-clients: {prober.count} probes, slowest {prober.slowest[0]:.3f} s "
          f"({prober.slowest[1]})")
    # The header deadline and the read timeout closed them, with 408.
    for what, group, limit in (("slowloris client", slow, HEADER_TIMEOUT),
                               ("client stalled in a body", stalled, READ_TIMEOUT)):
        assert not group.still_open(), (f"{group.still_open()} of {len(group.all)} "
            f"connections still open after {time.monotonic() - start:.1f} s: {what}")
        for c in group.all:
            if c["closed"] is None:
                continue
            took = c["closed"] - c["opened"]
            assert limit * 0.9 <= took <= (limit + 4) * SCALE, (
                f"a {what} closed after {took:.1f} s")
            assert c["got"].startswith(b"HTTP/1.1 408"), f"{what}: {c['got'][:80]!r}"
    slow.close()
    stalled.close()

    # Over the per-client cap (32 from one address): 429 at once.
    idle = Clients()
    for i in range(PER_CLIENT + 8):
        idle.open(s.port, "127.0.2.1")

    def capped():
        idle.poll()
        return idle.answered(429) >= 8
    wait_until(capped, "8 connections over the per-client cap answered 429", 3)
    assert idle.answered(429) == 8, f"{idle.answered(429)} answered 429, not 8"
    assert status_of(s.port, "/healthz") == 200, "healthz beside the capped client"
    idle.close()
    mem.check("after the slow clients")
    print(mem)
    assert job_state(s, jid) == "RUNNING", "the job keeps running"
    assert s.stop() == 0, "exit 0"

    for bad in ("soon", "0s", "-1s"):
        r = subprocess.run([weir, "serve", "--listen", "127.0.0.1:0", "--header-timeout", bad],
                           capture_output=True, text=True, timeout=30 * SCALE)
        assert r.returncode == 2 and "--header-timeout" in r.stderr, (
            f"--header-timeout {bad}: exit {r.returncode} {r.stderr}")

    # Over --max-connections: 503 with Retry-After at once, then served again.
    home = work / "capped"
    home.mkdir()
    s = serve(args=["--max-connections", "20"], home=home)
    idle = Clients()
    for i in range(20):
        idle.open(s.port, f"127.0.3.{1 + i}")
    r, closed = request(s.port, "GET", "/healthz", None)
    expect(r, 503, "a connection over --max-connections")
    assert r.headers.get("retry-after") == "1" and closed, f"503: {r!r}, closed {closed}"
    idle.close()
    wait_until(lambda: status_of(s.port, "/healthz") == 200, "healthz once they closed", 5)
    assert s.stop() == 0, "exit 0"


def status_of(port, path):
    try:
        r, _ = request(port, "GET", path, None, timeout=2)
        return r.status
    except OSError:
        return None


# -- bombs --------------------------------------------------------------------------------


def test_bombs(weir, work, serve):
    hundred = 100 * MIB
    gz_toml = bomb(hundred, 31)
    gz_jsonl = bomb(hundred, 31, json.dumps({"n": 1, "k": "b" * 40}).encode() + b"\n")
    zl_jsonl = bomb(hundred, 15, json.dumps({"n": 1, "k": "b" * 40}).encode() + b"\n")
    for b in (gz_toml, gz_jsonl, zl_jsonl):
        assert len(b) < MAX_BODY, f"a bomb of {len(b)} bytes on the wire"
    te = {"Transfer-Encoding": "chunked"}
    attacks = (
        ("100 MiB chunked POST /jobs", "POST", "/jobs", te,
         lambda: chunked(hundred), 413),
        ("100 MiB chunked POST /ingest/events", "POST", "/ingest/events", te,
         lambda: chunked(hundred, fill=b"\n"), 413),
        ("100 MiB chunked POST to an unknown route", "POST", "/nope", te,
         lambda: chunked(hundred), 404),
        ("gzip bomb POST /jobs", "POST", "/jobs",
         {"Content-Encoding": "gzip", "Content-Length": str(len(gz_toml))},
         lambda: [gz_toml], 413),
        ("gzip bomb POST /ingest/events", "POST", "/ingest/events",
         {"Content-Encoding": "gzip", "Content-Length": str(len(gz_jsonl))},
         lambda: [gz_jsonl], 413),
        ("chunked gzip bomb POST /ingest/events", "POST", "/ingest/events",
         {"Content-Encoding": "gzip", **te}, lambda: rechunk(gz_jsonl), 413),
        ("deflate bomb POST /ingest/events", "POST", "/ingest/events",
         {"Content-Encoding": "deflate", "Content-Length": str(len(zl_jsonl))},
         lambda: [zl_jsonl], 413),
        ("Content-Length 200 MiB", "POST", "/ingest/events",
         {"Content-Length": str(200 * MIB)}, lambda: chunked(hundred), 413))
    # Each bomb on a server of its own: the allocator keeps freed memory a
    # while, which would hide the growth of a later one.
    for i, (what, method, path, headers, pieces, status) in enumerate(attacks):
        home = work / f"bomb-{i}"
        home.mkdir()
        s, out = ingest_server(serve, home)
        mem = Memory(s, MAX_BODY)
        t0 = time.monotonic()
        reply, sent, _ = exchange(s.port, head_for(method, path, headers), pieces(), 30)
        expect(reply, status, what)
        mem.check(what)
        print(f"{what}: {reply and reply.status} after {sent} body bytes sent, "
              f"{time.monotonic() - t0:.2f} s, {mem}")
        assert s.stop() == 0, f"{what}: exit 0"
        assert set(accepted_ns(out)) <= {-1}, f"{what}: records of the bomb ingested"

    s, out = ingest_server(serve, work)
    port = s.port
    mem = Memory(s, MAX_BODY)
    # Malformed framing and encodings.
    good = jsonl(1000, 50)
    gz = zlib.compress(good, 9, wbits=31)
    r, _ = request(port, "POST", "/ingest/events", gz[:len(gz) // 2],
                   {"Content-Encoding": "gzip"})
    expect(r, 400, "truncated gzip")
    r, _ = request(port, "POST", "/ingest/events", b"\x1f\x8b\x08\x00not gzip at all",
                   {"Content-Encoding": "gzip"})
    expect(r, 400, "corrupt gzip")
    for enc in ("br", "zstd", "gzip, gzip", "compress"):
        r, _ = request(port, "POST", "/ingest/events", good, {"Content-Encoding": enc})
        expect(r, 415, f"Content-Encoding {enc}")
        assert "gzip" in (field(r, "errors", 0) or ""), f"415 names the encodings: {r!r}"
    r, _ = request(port, "POST", "/ingest/events", None,
                   {"Transfer-Encoding": "gzip, chunked"})
    expect(r, 501, "Transfer-Encoding gzip, chunked")
    reply, _, _ = exchange(port, head_for("POST", "/ingest/events",
                                          {"Transfer-Encoding": "chunked",
                                           "Content-Length": "5"}), rechunk(good))
    expect(reply, 400, "Content-Length and Transfer-Encoding")
    for cl in ("abc", "-1", "1, 2", "99999999999999999999999"):
        r, _ = request(port, "POST", "/ingest/events", None, {"Content-Length": cl})
        assert r.status in (400, 413), f"Content-Length {cl}: {r!r}"
    reply, _, _ = exchange(port, head_for("POST", "/ingest/events",
                                          {"Transfer-Encoding": "chunked"}),
                           [b"zz\r\n" + good + b"\r\n0\r\n\r\n"])
    expect(reply, 400, "a chunk size that is not hex")
    reply, _, _ = exchange(port, head_for("POST", "/ingest/events",
                                          {"Transfer-Encoding": "chunked"}),
                           [b"1" * 5000 + b"\r\n"])
    assert reply is not None and reply.status in (400, 413), f"endless chunk size {reply!r}"

    # Compressed bodies within the limit are read: gzip, chunked gzip, zlib.
    r, _ = request(port, "POST", "/ingest/events", gz, {"Content-Encoding": "gzip"})
    expect(r, 202, "a gzip body")
    assert field(r, "accepted") == 50, f"gzip body accepted {r!r}"
    reply, _, _ = exchange(port, head_for("POST", "/ingest/events",
                                          {"Content-Encoding": "gzip", **te}),
                           rechunk(zlib.compress(jsonl(2000, 50), 9, wbits=31), 100))
    expect(reply, 202, "a chunked gzip body")
    r, _ = request(port, "POST", "/ingest/events", zlib.compress(jsonl(3000, 50)),
                   {"Content-Encoding": "deflate"})
    expect(r, 202, "a deflate body")
    # Just under the limit, decompressed: accepted.
    big = jsonl(10000, 50000)[:MAX_BODY - 100]
    big = big[:big.rfind(b"\n") + 1]
    n_big = big.count(b"\n")
    mem.begin()
    r, _ = request(port, "POST", "/ingest/events", zlib.compress(big, 9, wbits=31),
                   {"Content-Encoding": "gzip"})
    expect(r, 202, "a gzip body of just under 1 MiB")
    assert field(r, "accepted") == n_big, f"{n_big} lines: {r!r}"
    mem.check("the bodies within the limit")
    print(mem)

    # 150 bodies of 1 MiB at once, each short of its last byte: those
    # over the server's body budget get 503 before a byte of theirs is
    # read, the others are held; memory stays within the budget.
    home = work / "many"
    home.mkdir()
    many, _ = ingest_server(serve, home)
    mem_many = Memory(many, BODY_BUDGET)
    record = (b'{"n": 1, "k": "' + b"m" * MIB)[:MIB - 3] + b'"}\n'
    head = head_for("POST", "/ingest/events", {"Content-Length": str(len(record))})
    held = Clients()
    for i in range(150):
        held.open(many.port, f"127.0.4.{1 + i % 10}", head + record[:-1])

    def refused():
        held.poll()
        return held.answered(503) >= 150 - BODY_BUDGET // MIB
    wait_until(refused, f"{150 - BODY_BUDGET // MIB} bodies over the budget answered 503",
               10)
    assert held.still_open() >= BODY_BUDGET // MIB, (
        f"{held.still_open()} bodies held, not {BODY_BUDGET // MIB}")
    mem_many.check("150 bodies of 1 MiB at once")
    print(mem_many)
    held.close()
    r, _ = request(many.port, "POST", "/ingest/events", jsonl(90000, 1))
    expect(r, 202, "an ingest body once the held ones are gone")
    assert many.stop() == 0, "exit 0"

    # The warm-up record, and no record of a bomb.
    want = sorted([-1] + list(range(1000, 1050)) + list(range(2000, 2050))
                  + list(range(3000, 3050)) + list(range(10000, 10000 + n_big)))
    assert s.stop() == 0, "exit 0"
    # (ack = "accepted": a graceful stop may leave queued records unread,
    # so the sink holds at most what was accepted.)
    extra = sorted(set(accepted_ns(out)) - set(want))
    assert not extra, f"records in the sink that were never accepted: {extra[:10]}"


# -- content-type -------------------------------------------------------------------------

SUBMITTED = """
[job]
name = "submitted"

[[source]]
name = "gen"
type = "generator"
count = 10
fields = {{ seq = "seq" }}

[[sink]]
name = "out"
input = "gen"
type = "file"
path = "{out}/submitted.jsonl"
"""


def test_content_type(weir, work, serve):
    s, out = ingest_server(serve, work)
    port = s.port
    mem = Memory(s, MAX_BODY)
    curl = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "*/*",
            "User-Agent": "curl/7.88.1"}
    body = jsonl(100, 500, pad="x" * 20)
    assert len(body) > 16 * 1024, f"a {len(body)} byte body"
    r, _ = request(port, "POST", "/ingest/events", body, curl)
    expect(r, 202, f"a {len(body)} byte form-encoded ingest body")
    assert field(r, "accepted") == 500, f"accepted {r!r}"
    # curl asks Expect: 100-continue for large bodies.
    large = jsonl(1000, 18000, pad="y" * 10)
    assert len(large) > 500 * 1024 and len(large) < MAX_BODY, f"{len(large)} bytes"
    reply, _, _ = exchange(port, head_for("POST", "/ingest/events",
                                          {**curl, "Expect": "100-continue",
                                           "Content-Length": str(len(large))}),
                           [large], wait_continue=True)
    expect(reply, 202, "a 100-continue ingest body")
    assert field(reply, "accepted") == 18000, f"accepted {reply!r}"
    # Above the source's max_body (1 MiB, well under the server's
    # ingest limit): 413 in place of 100 Continue.
    with socket.create_connection(("127.0.0.1", port), timeout=15 * SCALE) as c:
        c.sendall(head_for("POST", "/ingest/events",
                           {**curl, "Expect": "100-continue",
                            "Content-Length": str(2 << 20)}))
        first = b""
        while b"\r\n" not in first:
            chunk = c.recv(4096)
            assert chunk, f"closed without an answer: {first!r}"
            first += chunk
    assert first.startswith(b"HTTP/1.1 413"), (
        f"a 100-continue body above the source's max_body: {first[:200]!r}")
    for ctype in ("application/x-ndjson", "text/plain", "application/json",
                  "application/octet-stream"):
        r, _ = request(port, "POST", "/ingest/events", jsonl(20000, 1),
                       {"Content-Type": ctype})
        expect(r, 202, f"Content-Type {ctype}")
    r, _ = request(port, "POST", "/ingest/events", jsonl(20001, 1), {})
    expect(r, 202, "no Content-Type")
    r, _ = request(port, "POST", "/ingest/nosuch", body, curl)
    expect(r, 404, "a form-encoded body to an unknown source")
    assert "nosuch" in (field(r, "errors", 0) or ""), f"404 names the source: {r!r}"
    r, _ = request(port, "POST", "/ingest/events", b"--x\r\n\r\n",
                   {"Content-Type": "multipart/form-data; boundary=x"})
    expect(r, 415, "multipart ingest")
    assert "--data-binary" in (field(r, "errors", 0) or ""), f"415 says what to send: {r!r}"
    # Pipelines over 8 KiB, as curl --data-binary @pipeline.toml sends them.
    bad = "[job]\nname = 5\n" + "# pad\n" * 3000
    r, _ = request(port, "POST", "/jobs?file=bad.toml", bad.encode(), curl)
    expect(r, 400, "a long pipeline with a config error")
    assert any("bad.toml:2:" in e for e in field(r, "errors") or []), f"file:line:col {r!r}"
    sub_out = work / "sub"
    sub_out.mkdir()
    toml = SUBMITTED.format(out=sub_out)
    toml += "".join(f"# padding line {i:05d} of a long commented pipeline\n"
                    for i in range(300))
    assert len(toml) > 12 * 1024, f"a {len(toml)} byte pipeline"
    r, _ = request(port, "POST", "/jobs?file=long.toml", toml.encode(), curl)
    expect(r, 202, f"a {len(toml)} byte form-encoded pipeline")
    new = field(r, "jobid")
    wait_until(lambda: job_state(s, new) == "FINISHED", "the submitted job to finish")
    mem.check("the form-encoded bodies")
    print(mem)
    assert s.stop() == 0, "exit 0"
    want = set([-1] + list(range(100, 600)) + list(range(1000, 19000)) + [20000, 20001])
    extra = sorted(set(accepted_ns(out)) - want)
    assert not extra, f"records in the sink that were never accepted: {extra[:10]}"
    assert len((sub_out / "submitted.jsonl").read_text().splitlines()) == 10, (
        "the submitted job's output")


# -- savepoint ------------------------------------------------------------------------------


def test_savepoint(weir, work, serve):
    text, _ = pipeline_text(work, "sp", rate=500, checkpoint=True)
    (work / "sp.toml").write_text(text)
    s = serve([work / "sp.toml"])
    jid = s.ids[0]
    port = s.port
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the job running")
    root = (work / "savepoints").resolve()
    locations = []
    # No body and no Content-Length: `curl -X POST`.
    for what, headers, body in (("no Content-Length", {}, None),
                                ("Content-Length: 0", {"Content-Length": "0"}, None),
                                ("form-encoded JSON", {
                                    "Content-Type": "application/x-www-form-urlencoded"},
                                 b'{"target-directory": "mine"}')):
        t0 = time.monotonic()
        r, _ = request(port, "POST", f"/jobs/{jid}/savepoints", body, headers, timeout=10)
        took = time.monotonic() - t0
        expect(r, 202, f"POST savepoints, {what}")
        assert took < 2 * SCALE, f"POST savepoints, {what}: answered after {took:.1f} s"
        reply = r.json()
        trigger = reply["request-id"]
        loc = pathlib.Path(reply["location"])
        assert loc.parent == root, f"{what}: {loc} not directly under {root}"
        if body:
            assert loc.name == "mine", f"{what}: {loc}"
        else:
            assert loc.name.startswith(f"savepoint-{jid[:6]}-"), f"{what}: {loc}"

        def done():
            st = s.get(f"/jobs/{jid}/savepoints/{trigger}")
            return st if st["status"]["id"] != "IN_PROGRESS" else None
        st = wait_until(done, f"savepoint {trigger}")
        assert st["status"]["id"] == "COMPLETED", f"{what}: {st}"
        assert st["operation"]["location"] == str(loc), f"{what}: {st} vs {loc}"
        assert loc.is_dir() and any(loc.iterdir()), f"{what}: {loc} empty"
        locations.append(loc)
    assert len(set(locations)) == 3, f"locations {locations}"
    t0 = time.monotonic()
    r, _ = request(port, "POST", f"/jobs/{jid}/stop", None, {}, timeout=10)
    expect(r, 202, "POST stop without a body")
    assert time.monotonic() - t0 < 2 * SCALE, "POST stop answered late"
    assert field(r, "status") == "STOPPING", f"stop: {r!r}"
    wait_until(lambda: job_state(s, jid) == "STOPPED", "the job stopped")
    assert s.stop() == 0, "exit 0"


# -- routes ---------------------------------------------------------------------------------


def test_routes(weir, work, serve):
    text, _ = pipeline_text(work, "guarded", rate=500, checkpoint=True)
    (work / "guarded.toml").write_text(text)
    (work / "savepoints").mkdir()
    (work / "outside").mkdir()
    token = "s3cret-token"
    s = serve([work / "guarded.toml"], args=["--token", token], token=token)
    jid = s.ids[0]
    port = s.port
    auth = {"Authorization": f"Bearer {token}"}
    wait_until(lambda: job_state(s, jid) == "RUNNING", "the job running")
    mem = Memory(s, MAX_BODY)

    # Unknown routes: 404 JSON whatever the method; other methods 405.
    long_id = "f" * 7000
    for path in ("/nope", "/jobs/nope/x", f"/jobs/{jid}/nope", "/ingest", "/ingest/a/b",
                 f"/jobs/{long_id}", f"/jobs/{jid}/state", "/index.htm", "/static/app.js"):
        for method in ("GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
            r, _ = request(port, method, path, b"" if method != "GET" else None, auth)
            if path == f"/jobs/{long_id}" and method in ("GET", "DELETE"):
                expect(r, 404, f"{method} {path[:40]}")  # no such job
            else:
                assert r.status in (404, 405), f"{method} {path[:40]}: {r!r}"
                expect(r, r.status, f"{method} {path[:40]}")
        r, _ = request(port, "HEAD", path, None, auth)
        assert r.status in (404, 405), f"HEAD {path[:40]}: {r!r}"
    for method, path, allow in (("PUT", "/jobs", "GET, POST"), ("DELETE", "/healthz", "GET"),
                                ("POST", f"/jobs/{jid}", "GET, DELETE"),
                                ("GET", "/ingest/x", "POST"),
                                ("PATCH", f"/jobs/{jid}/stop", "POST")):
        r, _ = request(port, method, path, None if method == "GET" else b"", auth)
        expect(r, 405, f"{method} {path}")
        assert r.headers.get("allow") == allow, f"{method} {path}: Allow {r.headers}"
    r, _ = request(port, "GET", f"/jobs/{long_id}", None, auth)
    expect(r, 404, "a 7,000 character job id")

    # Tokens.
    for what, h in (("none", {}), ("wrong", {"Authorization": "Bearer nope"}),
                    ("empty", {"Authorization": "Bearer "}),
                    ("prefix", {"Authorization": f"Bearer {token[:-1]}"}),
                    ("longer", {"Authorization": f"Bearer {token}x"}),
                    ("basic", {"Authorization": f"Basic {token}"}),
                    ("no scheme", {"Authorization": token})):
        for method, path in (("GET", "/jobs"), ("GET", f"/jobs/{jid}"), ("GET", "/metrics"),
                             ("GET", f"/jobs/{jid}/state/per_key?key=1"),
                             ("POST", f"/jobs/{jid}/savepoints"), ("DELETE", f"/jobs/{jid}"),
                             ("GET", "/"), ("GET", "/nope")):
            r, _ = request(port, method, path, b"" if method == "POST" else None, h)
            expect(r, 401, f"{method} {path}, token {what}")
            assert r.headers.get("www-authenticate", "").startswith("Bearer"), (
                f"401 without WWW-Authenticate: {r!r}")
    r, _ = request(port, "GET", "/jobs?access_token=nope", None, {})
    expect(r, 401, "a wrong access_token")
    r, _ = request(port, "GET", "/healthz", None, {})
    expect(r, 200, "healthz without a token")
    r, _ = request(port, "GET", "/jobs", None, {"Authorization": f"bearer {token}"})
    expect(r, 200, "the scheme in lower case (RFC 7235: case-insensitive)")
    mem.begin()
    reply, sent, closed = exchange(port, head_for("POST", "/jobs",
                                                  {"Transfer-Encoding": "chunked"}),
                                   chunked(100 * MIB), 30)
    expect(reply, 401, "100 MiB chunked POST /jobs without a token")
    assert closed, "the connection of an unread body closed"
    mem.check("100 MiB chunked without a token")
    assert len(s.get("/jobs")["jobs"]) == 1, "a job was submitted without a token"

    # Path traversal: in every route taking a path or an id.
    for method, path in (("GET", "/../etc/passwd"), ("GET", "/%2e%2e/%2e%2e/etc/passwd"),
                         ("GET", "/index.html/../../etc/passwd"),
                         ("GET", f"/jobs/{jid}/savepoints/..%2f..%2fetc%2fpasswd"),
                         ("GET", f"/jobs/{jid}/state/..%2f..%2fetc?key=1"),
                         ("GET", f"/jobs/{jid}/sinks/..%2f..%2fraw/stream"),
                         ("POST", "/ingest/..%2f..%2fetc%2fpasswd"),
                         ("POST", f"/jobs/..%2f{jid}/savepoints"),
                         ("POST", "/jobs?file=../../evil.toml"),
                         ("POST", "/jobs?file=..%2f..%2fevil.toml"),
                         ("POST", "/jobs?file=%2Fetc%2Fevil.toml"),
                         ("GET", "/app.js%00.html"), ("GET", "/%5c..%5c..%5cetc%5cpasswd")):
        r, _ = request(port, method, path, b"[job]\n" if method == "POST" else None, auth)
        assert r.status in (400, 404), f"{method} {path}: {r!r}"
        expect(r, r.status, f"{method} {path}")
    for target in ("../x", "a/../../x", "/etc/weir-sp", str(work / "outside" / "sp"),
                   "a\\..\\b", str(work / "savepoints" / ".." / "outside" / "y")):
        for path, field in ((f"/jobs/{jid}/savepoints", "target-directory"),
                            (f"/jobs/{jid}/stop", "targetDirectory")):
            r, _ = request(port, "POST", path, json.dumps({field: target}).encode(), auth)
            expect(r, 400, f"{path} target {target!r}")
    assert not list((work / "outside").iterdir()), "something was written outside"
    assert not (work / "evil.toml").exists(), "evil.toml written"

    # Oversized request line and headers: 431, closed, memory bounded.
    for what, head, pieces in (
            ("300 headers of 1000 bytes", b"GET /jobs HTTP/1.1\r\nHost: x\r\n"
             + b"".join(b"X-H%d: %s\r\n" % (i, b"v" * 990) for i in range(300)) + b"\r\n",
             []),
            ("a 100 KiB header", b"GET /jobs HTTP/1.1\r\nX-Big: " + b"v" * (100 << 10)
             + b"\r\n\r\n", []),
            ("a 100 KiB Authorization header", b"GET /jobs HTTP/1.1\r\nAuthorization: Bearer "
             + b"t" * (100 << 10) + b"\r\n\r\n", []),
            ("a 64 MiB request line", b"GET /", (b"a" * (1 << 16) for _ in range(1024))),
            ("6 MiB of short header lines", b"GET /jobs HTTP/1.1\r\n",
             (b"X: y\r\n" * 10000 for _ in range(110)))):
        mem.begin()
        reply, sent, closed = exchange(port, head, pieces, 30)
        assert reply is not None and reply.status in (414, 431), (
            f"{what}: {reply!r} after {sent} bytes")
        expect(reply, reply.status if reply else 431, what)
        assert closed, f"{what}: the connection stays open"
        mem.check(what)

    # 300 pipelined requests on one connection, with bodies of both
    # framings among them: all answered, in order.
    paths = ["/healthz", "/jobs", f"/jobs/{jid}", "/overview", "/nope"]
    bad_toml = b"[job]\nname = 1\n"

    def nth(i):
        k = i % 7
        if k == 5:
            return head_for("POST", "/jobs", {**auth, "Content-Length": str(len(bad_toml))}) \
                + bad_toml, 400
        if k == 6:
            return head_for("POST", "/jobs", {**auth, "Transfer-Encoding": "chunked"}) \
                + b"".join(rechunk(bad_toml, 5)), 400
        return head_for("GET", paths[k], auth), 404 if paths[k] == "/nope" else 200
    n = 300
    burst = b"".join(nth(i)[0] for i in range(n))
    mem.begin()
    with socket.create_connection(("127.0.0.1", port), timeout=10 * SCALE) as c:
        c.sendall(burst)
        data = b""
        replies = []
        deadline = time.monotonic() + 20 * SCALE
        while len(replies) < n and time.monotonic() < deadline:
            chunk = c.recv(1 << 16)
            if not chunk:
                break
            data += chunk
            more, data = parse_replies(data)
            replies += more
    assert len(replies) == n, f"{len(replies)} of {n} pipelined requests answered"
    got = [r.status for r in replies]
    want = [nth(i)[1] for i in range(n)]
    assert got == want, f"pipelined statuses {got[:20]}..."
    mem.check("pipelined requests")
    print(mem)
    assert job_state(s, jid) == "RUNNING", "the job keeps running"
    assert s.stop() == 0, "exit 0"
