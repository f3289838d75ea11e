#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Real Redis and PostgreSQL servers for tests, on free ports picked at run
time, each in a temporary directory removed when it stops.

    from weirtest.servers import RedisServer, PostgresServer
    with RedisServer() as r:             # redis-server (Debian redis-server)
        r.cli("HGETALL", "clicks:0")     # through redis-cli --raw
    with PostgresServer(max_prepared_transactions=10) as pg:
        pg.sql("CREATE TABLE t (a int)") # through psql; rows as lists of strings
        pg.conninfo                      # "host=127.0.0.1 port=... dbname=postgres user=postgres"

PostgreSQL 15 (Debian postgresql-15): initdb and pg_ctl from
/usr/lib/postgresql/15/bin run as the `postgres` user (runuser) when the test
runs as root, since the server refuses to run as root; trust authentication
on 127.0.0.1 only, fsync off.
"""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time

from weirtest import free_port

PG_BIN = os.environ.get("WEIR_PG_BIN", "/usr/lib/postgresql/15/bin")


class ServerError(RuntimeError):
    pass


class RedisServer:
    def __init__(self):
        self.port = free_port()
        self.dir = tempfile.mkdtemp(prefix="weir-redis-")
        self.proc = None

    def start(self):
        if shutil.which("redis-server") is None:
            raise ServerError("redis-server is not installed (./dev deps installs it)")
        self.log = open(os.path.join(self.dir, "redis.log"), "w")
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--databases", "16"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.time() + 20
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise ServerError("redis-server exited at start:\n" + self.read_log())
            p = subprocess.run(["redis-cli", "-p", str(self.port), "PING"],
                               capture_output=True, text=True)
            if p.stdout.strip() == "PONG":
                return self
            time.sleep(0.05)
        raise ServerError("redis-server did not answer PING within 20 s")

    def read_log(self):
        with open(os.path.join(self.dir, "redis.log")) as f:
            return f.read()[-3000:]

    def cli(self, *args, db=0):
        p = subprocess.run(["redis-cli", "-p", str(self.port), "-n", str(db), "--raw", *args],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise ServerError(f"redis-cli {args}: {p.stderr}")
        return p.stdout

    def commands(self, cmds, db=0):
        """Sends `cmds` (lists of strings) on one connection, pipelined (RESP
        over a socket: no redis-cli per key); their replies in order."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=60) as s:
            out = bytearray()
            for c in [["SELECT", str(db)]] + cmds:
                out += b"*%d\r\n" % len(c)
                for a in c:
                    a = a.encode()
                    out += b"$%d\r\n%s\r\n" % (len(a), a)
            s.sendall(bytes(out))
            f = s.makefile("rb")

            def read():
                line = f.readline()
                kind, rest = line[:1], line[1:-2]
                if kind in (b"+", b":"):
                    return rest.decode()
                if kind == b"-":
                    raise ServerError("redis: " + rest.decode())
                if kind == b"$":
                    n = int(rest)
                    if n < 0:
                        return None
                    data = f.read(n + 2)[:-2]
                    return data.decode()
                if kind == b"*":
                    return [read() for _ in range(int(rest))]
                raise ServerError(f"redis: unexpected reply {line!r}")

            replies = [read() for _ in range(len(cmds) + 1)]
            return replies[1:]

    def dump(self, db=0):
        """Every key of `db` with its value: {key: str | dict | [(member, score)]}."""
        keys = self.commands([["KEYS", "*"]], db=db)[0]
        types = self.commands([["TYPE", k] for k in keys], db=db)
        reads = []
        for k, t in zip(keys, types):
            reads.append({"string": ["GET", k], "hash": ["HGETALL", k],
                          "zset": ["ZRANGE", k, "0", "-1", "WITHSCORES"]}.get(t, ["TYPE", k]))
        out = {}
        for k, t, v in zip(keys, types, self.commands(reads, db=db)):
            if t == "hash":
                v = dict(zip(v[0::2], v[1::2]))
            elif t == "zset":
                v = sorted(zip(v[0::2], (float(x) for x in v[1::2])))
            out[k] = v
        return out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class PostgresServer:
    def __init__(self, max_prepared_transactions=20):
        self.port = free_port()
        self.max_prepared = max_prepared_transactions
        self.dir = tempfile.mkdtemp(prefix="weir-pg-")
        self.data = os.path.join(self.dir, "data")
        self.started = False
        self.conninfo = f"host=127.0.0.1 port={self.port} dbname=postgres user=postgres"

    def _as_postgres(self, argv, **kw):
        if os.geteuid() == 0:
            argv = ["runuser", "-u", "postgres", "--"] + argv
        return subprocess.run(argv, capture_output=True, text=True, **kw)

    def start(self):
        if not os.path.exists(os.path.join(PG_BIN, "initdb")):
            raise ServerError(f"{PG_BIN}/initdb not found (./dev deps installs postgresql-15)")
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres", "postgres")
        os.chmod(self.dir, 0o700)
        p = self._as_postgres([f"{PG_BIN}/initdb", "-D", self.data, "-A", "trust", "-U",
                               "postgres", "-E", "UTF8", "--no-sync", "--no-locale"], timeout=120)
        if p.returncode != 0:
            raise ServerError(f"initdb failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
        opts = (f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 "
                f"-c max_prepared_transactions={self.max_prepared} -c fsync=off "
                "-c synchronous_commit=off -c full_page_writes=off -c max_connections=50")
        p = self._as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-o", opts, "-l",
                               os.path.join(self.dir, "server.log"), "-w", "-t", "60", "start"],
                              timeout=90)
        if p.returncode != 0:
            raise ServerError(f"pg_ctl start failed:\n{p.stdout[-2000:]}{p.stderr[-2000:]}"
                              f"{self.read_log()}")
        self.started = True
        return self

    def read_log(self):
        try:
            with open(os.path.join(self.dir, "server.log")) as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def sql(self, query):
        """Runs `query`; the rows of its last statement as lists of strings."""
        p = subprocess.run(["psql", self.conninfo, "-v", "ON_ERROR_STOP=1", "-X", "-q", "-A",
                            "-t", "-F", "\t", "-c", query],
                           capture_output=True, text=True, timeout=60)
        if p.returncode != 0:
            raise ServerError(f"psql {query!r}: {p.stderr.strip()}")
        return [line.split("\t") for line in p.stdout.splitlines() if line != ""]

    def stop(self):
        if self.started:
            self._as_postgres([f"{PG_BIN}/pg_ctl", "-D", self.data, "-m", "immediate", "-w",
                               "stop"], timeout=60)
            self.started = False
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            return self.start()
        except BaseException:
            self.stop()
            raise

    def __exit__(self, *exc):
        self.stop()
