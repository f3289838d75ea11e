#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A real Apache Kafka broker (KRaft, one node) on 127.0.0.1 for tests and demos.

Maven fetches org.apache.kafka:kafka_2.13:3.9.1 and an slf4j binding into
~/.m2 once (tests/kafka/pom.xml); the class path is cached beside it. The
broker runs with `java` from a temporary directory, on a PLAINTEXT port and a
CONTROLLER port picked free at start, replication factor 1, -Xmx512m.

From Python (tests/integration/*.py add tests/kafka to sys.path):

    from kafka_broker import KafkaBroker
    with KafkaBroker() as broker:          # one broker per test file
        broker.create_topic("logs", partitions=4)
        broker.produce("logs", lines, partition=0)      # through kcat
        ... broker.bootstrap ...           # "127.0.0.1:<port>"

From a shell (the README's "Kafka in five minutes"):

    tests/kafka/broker.sh start            # prints BOOTSTRAP=127.0.0.1:<port>
    tests/kafka/broker.sh create-topic access-log 4
    tests/kafka/broker.sh stop             # kills it, removes its directory

Topics are created and grown, and ACLs added, with the Kafka protocol directly
(CreateTopics, CreatePartitions, CreateAcls): no second JVM per admin call.
KafkaBroker(sasl_users={"alice": "pw"}) adds a SASL_PLAINTEXT listener
(mechanism PLAIN, broker.sasl_bootstrap) and Kafka's ACL authorizer: those
users may do what broker.add_acl allows (tests/kafka/auth_tests.py).
"""
from __future__ import annotations

import argparse
import base64
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KAFKA_VERSION = "3.9.1"
HERE = Path(__file__).resolve().parent
POM = HERE / "pom.xml"
M2 = Path(os.environ.get("WEIR_M2", Path.home() / ".m2"))
CLASSPATH_CACHE = M2 / f"weir-kafka-{KAFKA_VERSION}.classpath"
# The shell verbs keep the running broker's pid, directory and address here.
STATE_FILE = Path(os.environ.get("WEIR_KAFKA_STATE",
                                 Path(tempfile.gettempdir()) / f"weir-kafka-{os.getuid()}.json"))
JVM_OPTS = ["-Xmx512m", "-Xms64m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            "-XX:-UsePerfData", "-Djava.awt.headless=true"]


class BrokerError(RuntimeError):
    pass


def classpath() -> str:
    """The broker's class path; Maven resolves it (once) into ~/.m2."""
    if CLASSPATH_CACHE.exists():
        cp = CLASSPATH_CACHE.read_text().strip()
        if cp and all(Path(j).exists() for j in cp.split(os.pathsep)):
            return cp
    if shutil.which("mvn") is None:
        raise BrokerError("kafka broker: `mvn` (Maven) is not installed; ./dev deps installs it")
    M2.mkdir(parents=True, exist_ok=True)
    out = CLASSPATH_CACHE.with_suffix(f".tmp{os.getpid()}")
    print(f"kafka broker: fetching org.apache.kafka:kafka_2.13:{KAFKA_VERSION} with Maven "
          "(once)...", file=sys.stderr)
    r = subprocess.run(["mvn", "-q", "-B", "-f", str(POM), "dependency:build-classpath",
                        f"-Dmdep.outputFile={out}"], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0 or not out.exists():
        raise BrokerError(f"kafka broker: Maven could not fetch Kafka:\n{r.stdout[-4000:]}")
    os.replace(out, CLASSPATH_CACHE)
    return CLASSPATH_CACHE.read_text().strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    # Kafka's Uuid.toString: URL-safe base64 of 16 bytes, no padding; Kafka
    # never hands out one starting with '-'.
    while True:
        s = base64.urlsafe_b64encode(os.urandom(16)).decode().rstrip("=")
        if not s.startswith("-"):
            return s


# --- the Kafka protocol, just enough for admin calls ----------------------

def _str(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">h", len(b)) + b


class _Reader:
    def __init__(self, data: bytes):
        self.d, self.i = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from(fmt, self.d, self.i)
        self.i += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take(">h")
        if n < 0:
            return None
        s = self.d[self.i:self.i + n].decode()
        self.i += n
        return s


def _request(bootstrap: str, api_key: int, version: int, body: bytes, timeout=30.0) -> _Reader:
    host, port = bootstrap.rsplit(":", 1)
    header = struct.pack(">hhi", api_key, version, 1) + _str("weir-tests")
    msg = header + body
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        size = struct.unpack(">i", _recv(s, 4))[0]
        r = _Reader(_recv(s, size))
    r.take(">i")  # correlation id
    return r


def _recv(s: socket.socket, n: int) -> bytes:
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise BrokerError("kafka broker: connection closed")
        buf += chunk
    return buf


# Kafka error codes an admin call may answer with that mean "already so".
TOPIC_ALREADY_EXISTS = 36


def create_topic(bootstrap: str, name: str, partitions: int = 1,
                 config: dict[str, str] | None = None, exist_ok: bool = False) -> None:
    config = config or {}
    body = struct.pack(">i", 1) + _str(name) + struct.pack(">ih", partitions, 1)
    body += struct.pack(">i", 0)  # no manual assignments
    body += struct.pack(">i", len(config))
    for k, v in config.items():
        body += _str(k) + _str(str(v))
    body += struct.pack(">i?", 30000, False)  # timeout, validate_only
    r = _request(bootstrap, 19, 2, body)  # CreateTopics v2
    r.take(">i")  # throttle
    for _ in range(r.take(">i")):
        topic, err, msg = r.string(), r.take(">h"), r.string()
        if err and not (exist_ok and err == TOPIC_ALREADY_EXISTS):
            raise BrokerError(f"kafka broker: creating topic {topic}: error {err} {msg or ''}")


def add_partitions(bootstrap: str, name: str, total: int) -> None:
    """Grows topic `name` to `total` partitions."""
    body = struct.pack(">i", 1) + _str(name) + struct.pack(">ii", total, -1)
    body += struct.pack(">i?", 30000, False)
    r = _request(bootstrap, 37, 1, body)  # CreatePartitions v1
    r.take(">i")
    for _ in range(r.take(">i")):
        topic, err, msg = r.string(), r.take(">h"), r.string()
        if err:
            raise BrokerError(f"kafka broker: adding partitions to {topic}: error {err} {msg or ''}")


# ACL resource types, operations (org.apache.kafka.common.acl).
ACL_RESOURCE = {"topic": 2, "group": 3, "cluster": 4, "transactional_id": 5}
ACL_OPERATION = {"all": 2, "read": 3, "write": 4, "create": 5, "describe": 8,
                 "idempotent_write": 12}


def add_acl(bootstrap: str, principal: str, resource: str, name: str, operation: str) -> None:
    """Allows `principal` ("User:alice") `operation` on the resource `name` (literal)."""
    body = struct.pack(">i", 1)
    body += struct.pack(">b", ACL_RESOURCE[resource]) + _str(name) + struct.pack(">b", 3)
    body += _str(principal) + _str("*")
    body += struct.pack(">bb", ACL_OPERATION[operation], 3)  # ALLOW
    r = _request(bootstrap, 30, 1, body)  # CreateAcls v1
    r.take(">i")
    for _ in range(r.take(">i")):
        err, msg = r.take(">h"), r.string()
        if err:
            raise BrokerError(f"kafka broker: adding an ACL for {principal} on {resource} "
                              f"{name}: error {err} {msg or ''}")


def end_offsets(bootstrap: str, topic: str, partitions: int,
                read_committed: bool) -> list[int]:
    """Each partition's end offset: the last stable offset under
    read_committed (before the first record of a transaction whose commit
    or abort markers are not written yet), else the high watermark
    (ListOffsets v2, timestamp -1)."""
    body = struct.pack(">ib", -1, 1 if read_committed else 0)
    body += struct.pack(">i", 1) + _str(topic) + struct.pack(">i", partitions)
    for p in range(partitions):
        body += struct.pack(">iq", p, -1)
    r = _request(bootstrap, 2, 2, body)  # ListOffsets v2
    r.take(">i")  # throttle
    ends = [0] * partitions
    for _ in range(r.take(">i")):
        r.string()
        for _ in range(r.take(">i")):
            p, err, _, offset = r.take(">i"), r.take(">h"), r.take(">q"), r.take(">q")
            if err:
                raise BrokerError(f"kafka broker: end offset of {topic}[{p}]: error {err}")
            ends[p] = offset
    return ends


def metadata_ok(bootstrap: str) -> bool:
    """True once the broker answers a Metadata request listing itself."""
    try:
        r = _request(bootstrap, 3, 1, struct.pack(">i", 0), timeout=2.0)  # Metadata v1, no topics
        return r.take(">i") >= 1
    except (OSError, struct.error, BrokerError):
        return False


# --- the broker -----------------------------------------------------------

class KafkaBroker:
    """One KRaft broker+controller; a context manager (start on enter, stop on exit)."""

    def __init__(self, workdir: str | os.PathLike | None = None,
                 properties: dict[str, str] | None = None, start_timeout: float = 90.0,
                 port: int | None = None, sasl_users: dict[str, str] | None = None):
        self.extra = dict(properties or {})
        # With sasl_users a second listener (SASL_PLAINTEXT, mechanism PLAIN)
        # authenticates these users, and an ACL authorizer guards the broker:
        # a user may do only what ACLs (add_acl) allow. The PLAINTEXT listener
        # (ANONYMOUS, a super user) stays for the controller and the tests.
        self.sasl_users = dict(sasl_users or {})
        self.sasl_port = 0
        self.fixed_port = port  # the PLAINTEXT port; None: a free one
        self.start_timeout = start_timeout
        self._own_dir = workdir is None
        self.dir = Path(workdir) if workdir else None
        self.proc: subprocess.Popen | None = None
        self.pid: int | None = None
        self.port = self.controller_port = 0

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap(self) -> str:
        return f"127.0.0.1:{self.sasl_port}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    def _properties(self) -> str:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},"
                         f"CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
            "num.partitions": "1",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "1",
            "min.insync.replicas": "1",
            "group.initial.rebalance.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
            "num.recovery.threads.per.data.dir": "1",
            "log.cleaner.enable": "false",
            "auto.leader.rebalance.enable": "false",
        }
        if self.sasl_users:
            props["listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            props["advertised.listeners"] += f",SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            props["listener.security.protocol.map"] += ",SASL_PLAINTEXT:SASL_PLAINTEXT"
            props["sasl.enabled.mechanisms"] = "PLAIN"
            users = " ".join(f'user_{u}="{pw}"' for u, pw in self.sasl_users.items())
            props["listener.name.sasl_plaintext.plain.sasl.jaas.config"] = (
                f"org.apache.kafka.common.security.plain.PlainLoginModule required {users};")
            props["authorizer.class.name"] = (
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer")
            props["super.users"] = "User:ANONYMOUS"
            props["allow.everyone.if.no.acl.found"] = "false"
        props.update(self.extra)
        return "".join(f"{k}={v}\n" for k, v in props.items())

    def _java(self, *args: str, log: Path) -> subprocess.Popen:
        cmd = ["java", *JVM_OPTS,
               f"-Dlog4j.configuration=file:{self.dir / 'log4j.properties'}",
               f"-Dkafka.logs.dir={self.dir}", "-cp", self._cp, *args]
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=open(log, "ab"),
                                stderr=subprocess.STDOUT, start_new_session=True)

    def start(self) -> "KafkaBroker":
        self._cp = classpath()
        if self._own_dir:
            self.dir = Path(tempfile.mkdtemp(prefix="weir-kafka-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "log4j.properties").write_text(
            "log4j.rootLogger=WARN, file\n"
            "log4j.appender.file=org.apache.log4j.FileAppender\n"
            f"log4j.appender.file.File={self.dir / 'server.log'}\n"
            "log4j.appender.file.layout=org.apache.log4j.PatternLayout\n"
            "log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n\n"
            "log4j.logger.kafka.server.KafkaServer=INFO\n"
            "log4j.logger.kafka.server.BrokerServer=INFO\n")
        last = ""
        # Another process can take a picked port before the broker binds it: retry.
        for _attempt in range(3):
            self.port, self.controller_port = self.fixed_port or free_port(), free_port()
            while self.controller_port == self.port:
                self.controller_port = free_port()
            if self.sasl_users:
                self.sasl_port = free_port()
                while self.sasl_port in (self.port, self.controller_port):
                    self.sasl_port = free_port()
            shutil.rmtree(self.dir / "data", ignore_errors=True)
            (self.dir / "server.properties").write_text(self._properties())
            fmt = self._java("kafka.tools.StorageTool", "format", "-t", random_cluster_id(),
                             "-c", str(self.dir / "server.properties"), "--ignore-formatted",
                             log=self.dir / "format.log")
            if fmt.wait(timeout=120) != 0:
                raise BrokerError("kafka broker: formatting the log directory failed:\n"
                                  + (self.dir / "format.log").read_text()[-3000:])
            self.proc = self._java("kafka.Kafka", str(self.dir / "server.properties"),
                                   log=self.dir / "stdout.log")
            self.pid = self.proc.pid
            deadline = time.monotonic() + self.start_timeout
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    break
                if metadata_ok(self.bootstrap):
                    return self
                time.sleep(0.3)
            last = self._tail()
            self._kill()
            if self.proc.returncode is None or "Address already in use" not in last:
                break
        self.stop()
        raise BrokerError(f"kafka broker: did not start within {self.start_timeout:.0f} s:\n{last}")

    def _tail(self) -> str:
        out = []
        for name in ("stdout.log", "server.log"):
            p = self.dir / name
            if p.exists():
                out.append(p.read_text(errors="replace")[-3000:])
        return "\n".join(out)

    def _kill(self, sig=signal.SIGKILL) -> None:
        if self.pid is None:
            return
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            pass
        if self.proc is not None:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass

    def kill(self) -> None:
        """SIGKILLs the broker (its data stays: restart() brings it back)."""
        self._kill()
        self.proc = None

    def restart(self) -> None:
        """Starts the broker again on the same ports and data (after kill())."""
        self.proc = self._java("kafka.Kafka", str(self.dir / "server.properties"),
                               log=self.dir / "stdout.log")
        self.pid = self.proc.pid
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is None and metadata_ok(self.bootstrap):
                return
            time.sleep(0.3)
        raise BrokerError(f"kafka broker: did not restart:\n{self._tail()}")

    def stop(self) -> None:
        self._kill()
        self.proc = None
        self.pid = None
        if self._own_dir and self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)

    # Conveniences for tests.
    def create_topic(self, name: str, partitions: int = 1,
                     config: dict[str, str] | None = None) -> None:
        create_topic(self.bootstrap, name, partitions, config)
        self.wait_for_topic(name, partitions)

    def add_acl(self, principal: str, resource: str, name: str, operation: str) -> None:
        add_acl(self.bootstrap, principal, resource, name, operation)

    def add_partitions(self, name: str, total: int) -> None:
        add_partitions(self.bootstrap, name, total)
        self.wait_for_topic(name, total)

    def wait_for_topic(self, name: str, partitions: int, timeout: float = 30.0) -> None:
        """Waits until every partition of `name` has a leader."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r = subprocess.run(["kcat", "-b", self.bootstrap, "-L", "-t", name, "-J"],
                               capture_output=True, text=True, timeout=30)
            if r.returncode == 0:
                try:
                    md = json.loads(r.stdout)
                    t = next(t for t in md["topics"] if t["topic"] == name)
                    parts = t.get("partitions", [])
                    if (len(parts) >= partitions and "error" not in t
                            and all(p.get("leader", -1) >= 0 for p in parts)):
                        return
                except (ValueError, StopIteration, KeyError):
                    pass
            time.sleep(0.3)
        raise BrokerError(f"kafka broker: topic {name} has no {partitions} led partitions")

    def produce(self, topic: str, lines, partition: int | None = None,
                key_delimiter: str | None = None, timestamp_ms=None) -> None:
        """Produces one message per line with kcat (acks=all, idempotent)."""
        cmd = ["kcat", "-P", "-b", self.bootstrap, "-t", topic, "-X", "enable.idempotence=true",
               "-X", "linger.ms=5"]
        if partition is not None:
            cmd += ["-p", str(partition)]
        if key_delimiter is not None:
            cmd += ["-K", key_delimiter]
        data = "".join(l if l.endswith("\n") else l + "\n" for l in lines)
        r = subprocess.run(cmd, input=data.encode(), capture_output=True, timeout=120)
        if r.returncode != 0:
            raise BrokerError(f"kcat -P {topic}: {r.stderr.decode(errors='replace')}")

    def partitions(self, topic: str) -> int:
        r = subprocess.run(["kcat", "-b", self.bootstrap, "-L", "-t", topic, "-J"],
                           capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise BrokerError(f"kcat -L {topic}: {r.stderr}")
        md = json.loads(r.stdout)
        return len(next(t for t in md["topics"] if t["topic"] == topic)["partitions"])

    def wait_stable(self, topic: str, timeout: float = 30.0) -> None:
        """Waits until no transaction is pending on `topic`: each partition's
        last stable offset equals its high watermark. A producer's
        commit_transaction returns once the coordinator has logged the commit;
        the markers reach the partitions after that, and a read_committed
        reader that stops at the end before them sees nothing of the
        transaction."""
        n = self.partitions(topic)
        deadline = time.monotonic() + timeout
        while True:
            stable = end_offsets(self.bootstrap, topic, n, read_committed=True)
            high = end_offsets(self.bootstrap, topic, n, read_committed=False)
            if stable == high:
                return
            if time.monotonic() > deadline:
                raise BrokerError(f"kafka broker: {topic} still has an open transaction after "
                                  f"{timeout:.0f} s (last stable offsets {stable}, high "
                                  f"watermarks {high})")
            time.sleep(0.1)

    def consume(self, topic: str, read_committed: bool = True, timeout: float = 60.0) -> list[str]:
        """Every message of `topic` from the beginning to the current end (kcat -e).
        read_committed waits first until no transaction is pending (wait_stable):
        call it once the producers are done."""
        cmd = ["kcat", "-C", "-b", self.bootstrap, "-t", topic, "-o", "beginning", "-e",
               "-q", "-f", "%s\n"]
        if read_committed:
            self.wait_stable(topic, timeout=min(timeout, 30.0))
            cmd += ["-X", "isolation.level=read_committed"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise BrokerError(f"kcat -C {topic}: {r.stderr}")
        return r.stdout.splitlines()


# --- the shell verbs --------------------------------------------------------

def _load_state() -> dict | None:
    try:
        return json.loads(STATE_FILE.read_text())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="verb", required=True)
    st = sub.add_parser("start", help="start a broker in the background, print BOOTSTRAP=...")
    st.add_argument("--port", type=int, help="the PLAINTEXT port (default: a free one)")
    sub.add_parser("stop", help="stop it and remove its directory")
    sub.add_parser("status", help="print BOOTSTRAP=... if running")
    sub.add_parser("classpath", help="fetch Kafka with Maven (once), print the class path")
    ct = sub.add_parser("create-topic",
                        help="create-topic NAME [PARTITIONS] [--config KEY=VALUE]...")
    ct.add_argument("name")
    ct.add_argument("partitions", type=int, nargs="?", default=1)
    ct.add_argument("--config", action="append", default=[], metavar="KEY=VALUE",
                    help="a topic config, e.g. retention.ms=-1 (repeatable)")
    ap_ = sub.add_parser("add-partitions", help="add-partitions NAME TOTAL")
    ap_.add_argument("name")
    ap_.add_argument("total", type=int)
    a = ap.parse_args(argv)
    try:
        if a.verb == "classpath":
            print(classpath())
            return 0
        state = _load_state()
        running = state is not None and _alive(state["pid"])
        if a.verb == "start":
            if running:
                print(f"BOOTSTRAP={state['bootstrap']}")
                print(f"kafka broker: already running (pid {state['pid']})", file=sys.stderr)
                return 0
            b = KafkaBroker(port=a.port).start()
            STATE_FILE.write_text(json.dumps({"pid": b.pid, "dir": str(b.dir),
                                              "bootstrap": b.bootstrap}))
            print(f"BOOTSTRAP={b.bootstrap}")
            print(f"kafka broker: pid {b.pid}, logs in {b.dir}; stop with: "
                  "tests/kafka/broker.sh stop", file=sys.stderr)
            return 0
        if a.verb == "stop":
            if state is not None:
                if running:
                    try:
                        os.killpg(state["pid"], signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                shutil.rmtree(state["dir"], ignore_errors=True)
                STATE_FILE.unlink(missing_ok=True)
            return 0
        if not running:
            print("kafka broker: not running (start it with: start)", file=sys.stderr)
            return 1
        if a.verb == "status":
            print(f"BOOTSTRAP={state['bootstrap']}")
        elif a.verb == "create-topic":
            config = {}
            for kv in a.config:
                key, eq, value = kv.partition("=")
                if not key or not eq:
                    print(f"kafka broker: --config {kv!r}: expected KEY=VALUE", file=sys.stderr)
                    return 2
                config[key] = value
            create_topic(state["bootstrap"], a.name, a.partitions, config)
        elif a.verb == "add-partitions":
            add_partitions(state["bootstrap"], a.name, a.total)
        return 0
    except BrokerError as e:
        print(e, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
