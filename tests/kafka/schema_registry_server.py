#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real schema registry on 127.0.0.1 for tests: Apicurio Registry
2.6.13.Final (Apache-2.0), in-memory, its Confluent-compatible REST API at
`<url>` = http://127.0.0.1:PORT/apis/ccompat/v7.

Maven copies io.apicurio:apicurio-registry-app:2.6.13.Final:tar.gz:all (the
Quarkus app's assembly, 142 MB) into ~/.m2 once, through a settings file
that sends every repository to Maven Central (the app's parent POM names one
that does not answer); it is unpacked once beside it. The registry runs on
Java 17 with -Xmx256m on a port picked free at start and answers in about
4 s.

    from schema_registry_server import SchemaRegistry
    with SchemaRegistry() as registry:
        schema_id = registry.register("orders-value", avro_schema_dict)
        registry.set_compatibility("orders-value", "BACKWARD")
        ... registry.url ...
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

VERSION = "2.6.13.Final"
HERE = Path(__file__).resolve().parent
SETTINGS = HERE / "maven-central-settings.xml"
M2 = Path(os.environ.get("WEIR_M2", Path.home() / ".m2"))
CACHE = M2 / f"weir-apicurio-{VERSION}"
RUNNER = f"apicurio-registry-app-{VERSION}-runner.jar"
ARTIFACT = f"io.apicurio:apicurio-registry-app:{VERSION}:tar.gz:all"


class RegistryError(RuntimeError):
    pass


def runner_jar() -> Path:
    """The app's runner jar; Maven fetches and this unpacks it once."""
    found = list(CACHE.glob(f"**/{RUNNER}"))
    if found:
        return found[0]
    if shutil.which("mvn") is None:
        raise RegistryError("schema registry: `mvn` (Maven) is not installed; ./dev deps installs it")
    CACHE.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="weir-apicurio-", dir=CACHE.parent))
    try:
        print(f"schema registry: fetching {ARTIFACT} with Maven (once)...", file=sys.stderr)
        r = subprocess.run(["mvn", "-q", "-B", "-s", str(SETTINGS), "dependency:copy",
                            f"-Dartifact={ARTIFACT}", f"-DoutputDirectory={tmp}"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        tars = list(tmp.glob("*.tar.gz"))
        if r.returncode != 0 or not tars:
            raise RegistryError(f"schema registry: Maven could not fetch {ARTIFACT}:\n"
                                f"{r.stdout[-4000:]}")
        unpacked = tmp / "app"
        with tarfile.open(tars[0]) as t:
            t.extractall(unpacked)
        tars[0].unlink()
        if not list(unpacked.glob(f"**/{RUNNER}")):
            raise RegistryError(f"schema registry: {RUNNER} is not in {ARTIFACT}")
        try:
            os.replace(unpacked, CACHE)  # atomic: another session may race us
        except OSError:
            if not CACHE.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return next(CACHE.glob(f"**/{RUNNER}"))


def free_port() -> int:
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class SchemaRegistry:
    """One Apicurio Registry; a context manager (start on enter, stop on exit)."""

    def __init__(self, start_timeout: float = 90.0):
        self.start_timeout = start_timeout
        self.proc: subprocess.Popen | None = None
        self.dir: Path | None = None
        self.port = 0

    @property
    def url(self) -> str:
        """The Confluent-compatible API's base URL."""
        return f"http://127.0.0.1:{self.port}/apis/ccompat/v7"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self) -> "SchemaRegistry":
        jar = runner_jar()
        self.dir = Path(tempfile.mkdtemp(prefix="weir-registry-"))
        last = ""
        for _attempt in range(3):  # a picked port can be taken before the app binds it
            self.port = free_port()
            log = open(self.dir / "registry.log", "ab")
            self.proc = subprocess.Popen(
                ["java", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                 "-Dquarkus.http.host=127.0.0.1", f"-Dquarkus.http.port={self.port}",
                 "-jar", str(jar)],
                cwd=self.dir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True)
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline and self.proc.poll() is None:
                try:
                    self.request("GET", "/subjects")
                    return self
                except (OSError, RegistryError):
                    time.sleep(0.2)
            last = (self.dir / "registry.log").read_text(errors="replace")[-3000:]
            self._kill()
            if "Address already in use" not in last:
                break
        self.stop()
        raise RegistryError(f"schema registry: did not start within {self.start_timeout:.0f} s:"
                            f"\n{last}")

    def _kill(self) -> None:
        if self.proc is None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=30)
        self.proc = None

    def stop(self) -> None:
        self._kill()
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None

    # The REST API, for tests.
    def request(self, method: str, path: str, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.url + path, data=data, method=method, headers={
            "Content-Type": "application/vnd.schemaregistry.v1+json",
            "Accept": "application/vnd.schemaregistry.v1+json, application/json"})
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raise RegistryError(f"{method} {path}: HTTP {e.code}: {e.read()[:500]!r}") from e

    def register(self, subject: str, schema: dict) -> int:
        """Registers an Avro schema under `subject`; its id."""
        return self.request("POST", f"/subjects/{subject}/versions",
                            {"schema": json.dumps(schema)})["id"]

    def schema(self, schema_id: int) -> dict:
        """The Avro schema of `schema_id`, parsed."""
        return json.loads(self.request("GET", f"/schemas/ids/{schema_id}")["schema"])

    def set_compatibility(self, subject: str, level: str) -> None:
        self.request("PUT", f"/config/{subject}", {"compatibility": level})

    def subjects(self) -> list[str]:
        return self.request("GET", "/subjects")


if __name__ == "__main__":
    with SchemaRegistry() as reg:
        print(f"URL={reg.url}", flush=True)
        try:
            signal.pause()
        except KeyboardInterrupt:
            pass
