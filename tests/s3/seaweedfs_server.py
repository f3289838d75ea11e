#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real S3-compatible server for tests: SeaweedFS (`weed server -s3`) on
127.0.0.1, from a temporary directory.

tests/s3/seaweedfs.sh builds the `weed` binary once (from the Go module
proxy) and caches it; `./dev test` runs it before the tests. The server runs
a master, a volume server, a filer and the S3 gateway in one process, on
ports picked free at start (each port + 10000, gRPC, free too), with one
identity whose access key and secret are random per server and a bucket
created through the S3 API (curl --aws-sigv4).

    from seaweedfs_server import SeaweedS3
    with SeaweedS3() as s3:                  # one server per test file
        s3.endpoint                          # "http://127.0.0.1:<port>"
        s3.env()                             # AWS_* variables for weir
        s3.create_bucket("checkpoints")
        s3.keys("checkpoints", "job/")       # object keys, through the API
        s3.stop(); s3.start()                # unreachable, then back (same data)
"""
from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
BUILD_SCRIPT = HERE / "seaweedfs.sh"
REGION = "us-east-1"


class SeaweedError(RuntimeError):
    pass


def weed_binary() -> str:
    """The cached `weed`, built by tests/s3/seaweedfs.sh if missing."""
    r = subprocess.run([str(BUILD_SCRIPT), "build"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise SeaweedError(f"tests/s3/seaweedfs.sh build failed:\n{r.stderr[-4000:]}")
    return r.stdout.strip().splitlines()[-1]


def _free(port: int) -> bool:
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_ports(n: int) -> list[int]:
    """n ports below 22768 (so port + 10000 stays under Linux's ephemeral
    range) that are free, with port + 10000 free too."""
    rnd = secrets.SystemRandom()
    ports: list[int] = []
    while len(ports) < n:
        p = rnd.randrange(12000, 22000)
        if p not in ports and _free(p) and _free(p + 10000):
            ports.append(p)
    return ports


class SeaweedS3:
    def __init__(self):
        self.binary = weed_binary()
        self.dir = Path(tempfile.mkdtemp(prefix="weir-seaweedfs-"))
        self.access_key = "WEIRTEST" + secrets.token_hex(6).upper()
        self.secret_key = secrets.token_urlsafe(30)
        self.master, self.volume, self.filer, self.s3 = free_ports(4)
        self.endpoint = f"http://127.0.0.1:{self.s3}"
        self.proc: subprocess.Popen | None = None
        config = {"identities": [{
            "name": "weir",
            "credentials": [{"accessKey": self.access_key, "secretKey": self.secret_key}],
            "actions": ["Admin", "Read", "List", "Tagging", "Write"]}]}
        (self.dir / "s3.json").write_text(json.dumps(config))
        (self.dir / "data").mkdir()

    # -- lifecycle -----------------------------------------------------------

    def start(self, timeout: float = 120):
        """Starts the server (again, on the same ports and data) and waits
        until the S3 API answers a signed request."""
        if self.proc and self.proc.poll() is None:
            return
        log = open(self.dir / "weed.log", "a")
        self.proc = subprocess.Popen(
            [self.binary, "server", f"-dir={self.dir / 'data'}", "-ip=127.0.0.1",
             "-ip.bind=127.0.0.1", f"-master.port={self.master}",
             f"-volume.port={self.volume}", "-volume.max=4", "-volume.preStopSeconds=0",
             "-master.volumeSizeLimitMB=64", "-master.telemetry=false",
             # One master: no election to wait for at a (re)start.
             "-master.electionTimeout=1s",
             "-filer", f"-filer.port={self.filer}", "-s3", f"-s3.port={self.s3}",
             f"-s3.config={self.dir / 's3.json'}"],
            stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise SeaweedError(f"weed server exited {self.proc.returncode}:\n"
                                   + self.log()[-4000:])
            r = self._curl("GET", "/", check=False)
            if r.returncode == 0 and "ListAllMyBucketsResult" in r.stdout:
                return
            if time.monotonic() > deadline:
                raise SeaweedError("weed server: the S3 API did not answer within "
                                   f"{timeout} s:\n" + self.log()[-4000:])
            time.sleep(0.25)

    def stop(self):
        """Kills the server (the store becomes unreachable: connections
        are refused); `start` brings it back with its data."""
        if self.proc and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()

    def close(self):
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc):
        self.close()

    def log(self) -> str:
        p = self.dir / "weed.log"
        return p.read_text(errors="replace") if p.exists() else ""

    # -- the S3 API, through curl's SigV4 ------------------------------------

    def env(self) -> dict:
        """The environment weir needs to reach the store."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": REGION, "AWS_ENDPOINT_URL": self.endpoint}

    def _curl(self, method: str, path: str, check: bool = True, data: bytes | None = None):
        argv = ["curl", "-sS", "--max-time", "60", "-X", method, "--aws-sigv4",
                f"aws:amz:{REGION}:s3", "--user", f"{self.access_key}:{self.secret_key}",
                "-w", "\n%{http_code}"]
        if data is not None:
            # curl 7.88 sends no payload hash header; S3 wants one on a PUT.
            argv += ["-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "--data-binary", "@-"]
        argv.append(self.endpoint + path)
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           input=data)
        r.stdout = r.stdout.decode(errors="replace")
        r.stderr = r.stderr.decode(errors="replace")
        if check:
            status = r.stdout.rsplit("\n", 1)[-1]
            if r.returncode != 0 or not status.startswith("2"):
                raise SeaweedError(f"{method} {path}: curl exit {r.returncode}, HTTP {status}: "
                                   f"{r.stdout[-2000:]} {r.stderr[-500:]}")
        return r

    def create_bucket(self, bucket: str):
        """Creates `bucket` and writes and deletes one object in it: the
        server's first write allocates a volume, which takes seconds."""
        self._curl("PUT", f"/{bucket}")
        self.put(bucket, ".warm-up", b"x")
        self.delete(bucket, ".warm-up")

    def put(self, bucket: str, key: str, data: bytes):
        self._curl("PUT", f"/{bucket}/{_quote(key, '/')}", data=data)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key under `prefix` (ListObjectsV2, all pages)."""
        keys, token = [], None
        while True:
            q = "list-type=2&prefix=" + _quote(prefix)
            if token:
                q = "continuation-token=" + _quote(token) + "&" + q
            r = self._curl("GET", f"/{bucket}?{q}")
            body = r.stdout.rsplit("\n", 1)[0]
            keys += re.findall(r"<Key>([^<]*)</Key>", body)
            m = re.search(r"<NextContinuationToken>([^<]+)</NextContinuationToken>", body)
            if "<IsTruncated>true</IsTruncated>" not in body or not m:
                return keys
            token = m.group(1)

    def delete(self, bucket: str, key: str):
        self._curl("DELETE", f"/{bucket}/{_quote(key, '/')}")


def _quote(s: str, safe: str = "") -> str:
    from urllib.parse import quote
    return quote(s, safe=safe)


if __name__ == "__main__":
    with SeaweedS3() as s3:
        s3.create_bucket("probe")
        print(f"S3 at {s3.endpoint}: bucket probe created; keys {s3.keys('probe')}")
