#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real OpenSearch node (single-node, security off, 127.0.0.1) for tests and demos.

Maven fetches OpenSearch's minimal distribution from Maven Central once
(org.opensearch.distribution.integ-test-zip:opensearch:2.19.1:zip, 51 MB, the
server with its transport-netty4 module: everything `_bulk`, `_refresh` and
`_search` need) into ~/.m2; it is unpacked once into the temporary directory.
The node runs with `java` (Java 17) from a temporary directory, HTTP and
transport ports picked free at start, -Xmx256m, disk watermarks off. OpenSearch
refuses to run as root: as root the node runs as `nobody` (setpriv).

From Python (tests add tests/opensearch to sys.path):

    from opensearch_node import OpenSearchNode
    with OpenSearchNode() as node:           # one node per test file
        node.url                             # "http://127.0.0.1:<port>"
        node.refresh("alerts"); node.documents("alerts")   # {_id: _source}

From a shell:

    tests/opensearch/node.sh start           # prints URL=http://127.0.0.1:<port>
    tests/opensearch/node.sh stop            # kills it, removes its directory
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

VERSION = "2.19.1"
ARTIFACT = f"org.opensearch.distribution.integ-test-zip:opensearch:{VERSION}:zip"
M2 = Path(os.environ.get("WEIR_M2", Path.home() / ".m2"))
ZIP = (M2 / "repository/org/opensearch/distribution/integ-test-zip/opensearch" / VERSION
       / f"opensearch-{VERSION}.zip")
# Unpacked once, readable by everyone (the node may run as nobody, who cannot
# read root's ~/.m2).
HOME = Path(tempfile.gettempdir()) / f"weir-opensearch-{VERSION}"
STATE_FILE = Path(os.environ.get("WEIR_OPENSEARCH_STATE",
                                 Path(tempfile.gettempdir()) / f"weir-opensearch-{os.getuid()}.json"))
JVM_OPTS = ["-Xms256m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData", "-Djava.awt.headless=true", "-Dfile.encoding=UTF-8",
            "-Djava.security.manager=allow", "-Dlog4j2.formatMsgNoLookups=true",
            "-Djava.util.concurrent.ForkJoinPool.common.threadFactory="
            "org.opensearch.secure_sm.SecuredForkJoinWorkerThreadFactory"]


class NodeError(RuntimeError):
    pass


def distribution() -> Path:
    """OpenSearch's home directory, fetched with Maven and unpacked once."""
    if (HOME / "lib").is_dir() and (HOME / "modules/transport-netty4").is_dir():
        return HOME
    if not ZIP.exists():
        if shutil.which("mvn") is None:
            raise NodeError("opensearch node: `mvn` (Maven) is not installed; ./dev deps installs it")
        print(f"opensearch node: fetching {ARTIFACT} with Maven (once)...", file=sys.stderr)
        r = subprocess.run(["mvn", "-q", "-B", "dependency:get", f"-Dartifact={ARTIFACT}",
                            "-Dtransitive=false"], stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True)
        if r.returncode != 0 or not ZIP.exists():
            raise NodeError(f"opensearch node: Maven could not fetch {ARTIFACT}:\n{r.stdout[-4000:]}")
    tmp = Path(tempfile.mkdtemp(prefix="weir-opensearch-unpack-"))
    try:
        with zipfile.ZipFile(ZIP) as z:
            z.extractall(tmp)
        home = tmp / f"opensearch-{VERSION}"
        for d, dirs, files in os.walk(tmp):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), 0o644)
        os.chmod(tmp, 0o755)
        try:
            os.rename(home, HOME)
        except OSError:
            if not (HOME / "lib").is_dir():  # not another process's unpacking
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return HOME


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http(method: str, url: str, body: bytes | None = None,
         content_type: str = "application/json", timeout: float = 30.0):
    """(status, parsed JSON body or text) of one request."""
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, raw = r.status, r.read()
    except urllib.error.HTTPError as e:
        status, raw = e.code, e.read()
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode("utf-8", "replace")


class OpenSearchNode:
    def __init__(self, workdir: str | os.PathLike | None = None, http_port: int | None = None):
        self._own_dir = workdir is None
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="weir-opensearch-"))
        self.http_port = http_port or free_port()
        self.transport_port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http_port}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def start(self, timeout: float = 120.0) -> "OpenSearchNode":
        home = distribution()
        conf = self.dir / "config"
        for sub in ("config", "data", "logs", "tmp"):
            (self.dir / sub).mkdir(parents=True, exist_ok=True)
        shutil.copy(home / "config/log4j2.properties", conf / "log4j2.properties")
        (conf / "opensearch.yml").write_text("")
        (conf / "jvm.options").write_text("")
        as_root = os.geteuid() == 0
        if as_root:
            os.chmod(self.dir, 0o755)
            for d, dirs, files in os.walk(self.dir):
                shutil.chown(d, "nobody", "nogroup")
                for f in files:
                    shutil.chown(os.path.join(d, f), "nobody", "nogroup")
        java = shutil.which("java") or "java"
        cmd = [java, *JVM_OPTS, f"-Djava.io.tmpdir={self.dir / 'tmp'}",
               f"-Dopensearch.path.home={home}", f"-Dopensearch.path.conf={conf}",
               "-Dopensearch.distribution.type=zip", "-Dopensearch.bundled_jdk=false",
               "-cp", f"{home}/lib/*", "org.opensearch.bootstrap.OpenSearch",
               "-E", "discovery.type=single-node", "-E", "network.host=127.0.0.1",
               "-E", f"http.port={self.http_port}", "-E", f"transport.port={self.transport_port}",
               "-E", f"path.data={self.dir / 'data'}", "-E", f"path.logs={self.dir / 'logs'}",
               "-E", "node.name=weir-test", "-E", "cluster.name=weir-test",
               "-E", "cluster.routing.allocation.disk.threshold_enabled=false"]
        if as_root:
            cmd = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", *cmd]
        log = open(self.dir / "node.out", "wb")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, cwd=self.dir,
                                     start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise NodeError(f"opensearch node exited with {self.proc.returncode}:\n{self._tail()}")
            try:
                status, body = http("GET", f"{self.url}/_cluster/health?wait_for_status=yellow"
                                           "&timeout=1s", timeout=5)
                if status == 200:
                    return self
            except OSError:
                pass
            time.sleep(0.5)
        self.stop()
        raise NodeError(f"opensearch node not ready after {timeout:.0f} s:\n{self._tail()}")

    def _tail(self) -> str:
        try:
            return (self.dir / "node.out").read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            # The node's own process group (start_new_session): the JVM only.
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        self.proc = None
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    # -- what the tests ask ---------------------------------------------------

    def refresh(self, index: str) -> None:
        status, body = http("POST", f"{self.url}/{index}/_refresh", b"")
        if status != 200:
            raise NodeError(f"refresh of {index}: {status} {body}")

    def count(self, index: str) -> int:
        self.refresh(index)
        status, body = http("GET", f"{self.url}/{index}/_count")
        if status != 200:
            raise NodeError(f"count of {index}: {status} {body}")
        return body["count"]

    def documents(self, index: str) -> dict:
        """Every document of `index` after a refresh, as {_id: _source}."""
        self.refresh(index)
        docs = {}
        status, body = http("POST", f"{self.url}/{index}/_search?scroll=1m",
                            json.dumps({"size": 1000, "query": {"match_all": {}}}).encode())
        while True:
            if status != 200:
                raise NodeError(f"search of {index}: {status} {body}")
            hits = body["hits"]["hits"]
            if not hits:
                break
            for h in hits:
                docs[h["_id"]] = h["_source"]
            status, body = http("POST", f"{self.url}/_search/scroll",
                                json.dumps({"scroll": "1m", "scroll_id": body["_scroll_id"]}).encode())
        return docs

    def delete_index(self, index: str) -> None:
        http("DELETE", f"{self.url}/{index}")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="a local OpenSearch node for tests and demos")
    sub = ap.add_subparsers(dest="verb", required=True)
    st = sub.add_parser("start", help="start a node; prints URL=...")
    st.add_argument("--port", type=int, default=None)
    sub.add_parser("stop", help="stop the node started by `start`")
    sub.add_parser("status")
    a = ap.parse_args(argv)
    try:
        if a.verb == "start":
            if STATE_FILE.exists():
                s = json.loads(STATE_FILE.read_text())
                if _alive(s["pid"]):
                    # A node runs already: reuse it only where it was asked for.
                    wanted = a.port is None or s["url"].endswith(f":{a.port}")
                    if not wanted:
                        print(f"a node started before runs at {s['url']}, not on port "
                              f"{a.port}: stop it first (node.sh stop)", file=sys.stderr)
                        return 1
                    print(f"URL={s['url']}")
                    return 0
            node = OpenSearchNode(tempfile.mkdtemp(prefix="weir-opensearch-"), a.port)
            node.start()
            STATE_FILE.write_text(json.dumps({"pid": node.proc.pid, "url": node.url,
                                              "dir": str(node.dir)}))
            print(f"URL={node.url}")
        elif a.verb == "stop":
            if not STATE_FILE.exists():
                return 0
            s = json.loads(STATE_FILE.read_text())
            if _alive(s["pid"]):
                os.killpg(s["pid"], signal.SIGKILL)
            shutil.rmtree(s["dir"], ignore_errors=True)
            STATE_FILE.unlink()
        else:
            if STATE_FILE.exists() and _alive(json.loads(STATE_FILE.read_text())["pid"]):
                print(f"URL={json.loads(STATE_FILE.read_text())['url']}")
                return 0
            print("not running")
            return 1
    except NodeError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
