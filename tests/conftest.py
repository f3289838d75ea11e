# SPDX-License-Identifier: Apache-2.0
"""The fixtures of weir's end-to-end tests (pytest; docs/internals/testing.md).

CTest runs one test a line, `python3 -m pytest -q -p no:cacheprovider
FILE::TEST --weir BIN ...` (weir_add_pytest in tests/CMakeLists.txt); the
options below are what it passes. A test names the fixtures it needs:

  weir, example, build_dir  the built binaries and tree (options --weir,
                            --example, --build-dir)
  repo                      the source tree (this file's parent)
  work                      an empty temporary directory (a Path), kept
                            only when the test fails
  sandbox                   weirtest.Sandbox: `work` with weir run in it
  procs                     weirtest.Processes: processes started through it
                            are SIGKILLed and reaped when the test ends
  seed                      --seed, else WEIR_SEED, else a new one (printed)
  kills                     --kills, else the test module's KILLS
  sweep                     --sweep: a fault test's longer sweep
  serve                     serve(pipelines, args, token, home): `weir serve`
                            on a free port (weirtest.server.Server), stopped at
                            the end
  kafka_broker, schema_registry, redis_server, postgres_server, opensearch_node,
  seaweedfs
                            a real server, started once per pytest session
                            and stopped at its end
"""
import os
import random
import shutil
import signal
import sys
from pathlib import Path

import pytest

pytest.register_assert_rewrite("weirtest")

import weirtest  # noqa: E402

TESTS = Path(__file__).resolve().parent
# The server scripts the tests share with the examples and benchmarks
# (tests/kafka/broker.sh, tests/opensearch/node.sh run them too).
for folder in ("kafka", "opensearch", "s3"):
    if str(TESTS / folder) not in sys.path:
        sys.path.append(str(TESTS / folder))


def pytest_configure(config):
    """A SIGTERM (CTest's timeout) ends the session as Ctrl-C does: the
    session fixtures' teardown still stops the servers it started."""
    def interrupt(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")
    signal.signal(signal.SIGTERM, interrupt)


def pytest_addoption(parser):
    g = parser.getgroup("weir", "weir's end-to-end tests")
    g.addoption("--weir", help="the weir binary under test")
    g.addoption("--example", action="append", default=[],
                help="a built example binary (repeatable; the fixture `example` "
                     "finds one by name)")
    g.addoption("--build-dir", help="the CMake build tree (install, server tests)")
    g.addoption("--seed", type=int, help="replays a randomised test (also WEIR_SEED)")
    g.addoption("--kills", type=int, help="SIGKILLs of a crash test (default: the test's)")
    g.addoption("--sweep", action="store_true", help="the longer fault sweeps")
    # tests/golden/run_golden.py: one case of tests/golden/{cases,errors}
    # and how to run it (without --case, every case once).
    g.addoption("--case", help="a golden case's folder")
    g.addoption("--parallelism", type=int, default=0, help="golden: the job's parallelism")
    g.addoption("--batch-size", type=int, default=0, help="golden: the job's batch size")
    g.addoption("--unordered", action="store_true", help="golden: compare rows as a multiset")
    # tests/install/install_test.py: the generator and compiler of the tree.
    g.addoption("--generator", help="install: the CMake generator")
    g.addoption("--compiler", help="install: the C++ compiler")
    g.addoption("--no-processing-time", action="store_true",
                help="property: leave out the processing-time windows")
    g.addoption("--events", type=int, default=20000,
                help="embedded service: the events pushed")


def _required(config, name):
    value = config.getoption(name)
    if not value:
        raise pytest.UsageError(f"this test needs --{name.replace('_', '-')}")
    return value


@pytest.fixture(scope="session")
def weir(pytestconfig):
    """The weir binary (--weir), as a str."""
    path = _required(pytestconfig, "weir")
    assert os.access(path, os.X_OK), f"--weir {path}: not an executable"
    return str(Path(path).resolve())


@pytest.fixture(scope="session")
def example(pytestconfig):
    """`example(name)`: the path of the --example binary called `name`."""
    given = {Path(p).name: str(Path(p).resolve()) for p in pytestconfig.getoption("example")}

    def find(name):
        if name not in given:
            raise pytest.UsageError(f"this test needs --example .../{name}")
        return given[name]
    return find


@pytest.fixture(scope="session")
def build_dir(pytestconfig):
    """The CMake build tree (--build-dir), a Path."""
    return Path(_required(pytestconfig, "build_dir")).resolve()


@pytest.fixture(scope="session")
def repo():
    """The source tree, a Path."""
    return TESTS.parent


@pytest.fixture
def work(tmp_path, request):
    """An empty directory for the test's files (a Path); removed when the
    test passes, kept under /tmp/pytest-of-$USER/ when it fails."""
    yield tmp_path
    report = getattr(request.node, "report_call", None)
    if report is not None and report.passed:
        shutil.rmtree(tmp_path, ignore_errors=True)


@pytest.fixture
def sandbox(weir, work):
    """weirtest.Sandbox: the test's directory with weir run in it."""
    return weirtest.Sandbox(weir, work)


@pytest.fixture
def procs(work):
    """weirtest.Processes: what a test starts through it is stopped at its end."""
    p = weirtest.Processes(work)
    yield p
    p.close()


@pytest.fixture
def seed(pytestconfig):
    """The seed of a randomised test: --seed, WEIR_SEED or a new one. It is
    printed, so a failure's output says how to replay it."""
    s = pytestconfig.getoption("seed") or int(os.environ.get("WEIR_SEED") or 0) or \
        random.randrange(1, 1 << 30)
    print(f"seed {s} (replay with --seed {s} or WEIR_SEED={s})")
    return s


@pytest.fixture
def sweep(pytestconfig):
    """--sweep: the longer fault sweeps (minutes) instead of CI's."""
    return pytestconfig.getoption("sweep")


@pytest.fixture
def kills(pytestconfig, request):
    """How many SIGKILLs a crash test deals: --kills, else its module's KILLS
    (None where the module has none: the test picks its own)."""
    return pytestconfig.getoption("kills") or getattr(request.module, "KILLS", None)


def _running(server):
    """Starts `server`, hands it to the session, stops it at the end (also
    when its start fails half-way)."""
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real Kafka broker (tests/kafka/kafka_broker.py: KRaft, one node,
    free ports), started once per session."""
    from kafka_broker import KafkaBroker
    broker = KafkaBroker(str(tmp_path_factory.mktemp("kafka")))
    yield from _running(broker)


@pytest.fixture(scope="session")
def schema_registry():
    """A real schema registry (tests/kafka/schema_registry_server.py:
    Apicurio Registry, in memory, Confluent's API at `.url`), started once
    per session."""
    from schema_registry_server import SchemaRegistry
    yield from _running(SchemaRegistry())


@pytest.fixture(scope="session")
def seaweedfs():
    """A real S3-compatible server (tests/s3/seaweedfs_server.py: SeaweedFS,
    free ports, random credentials), started once per session."""
    from seaweedfs_server import SeaweedS3
    with SeaweedS3() as server:
        yield server


@pytest.fixture(scope="session")
def opensearch_node():
    """A real OpenSearch node (tests/opensearch/opensearch_node.py:
    single-node, free ports), started once per session. It keeps its own
    directory: run as root, the node runs as nobody, who cannot enter
    pytest's temporary directories."""
    from opensearch_node import OpenSearchNode
    node = OpenSearchNode()
    yield from _running(node)


@pytest.fixture(scope="session")
def redis_server():
    """A real redis-server on a free port, started once per session."""
    from weirtest.servers import RedisServer
    server = RedisServer()
    yield from _running(server)


@pytest.fixture(scope="session")
def postgres_server():
    """A real PostgreSQL 15 cluster on a free port, started once per session."""
    from weirtest.servers import PostgresServer
    server = PostgresServer()
    yield from _running(server)


@pytest.fixture
def serve(weir, work):
    """`serve(pipelines=(), args=(), token=None, home=work)`: a
    weirtest.server.Server (`weir serve` on a free loopback port, running
    those pipelines, in `home`) that is SIGKILLed when the test ends unless
    the test stopped it."""
    from weirtest.server import Server
    servers = []

    def start(pipelines=(), args=(), token=None, home=None):
        s = Server(weir, home or work, pipelines, args=args, token=token)
        servers.append(s)
        return s
    yield start
    for s in servers:
        s.kill()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """Keeps each phase's report on the test (the `work` fixture removes a
    passed test's directory), and ends a failed test's report with the tails
    of the logs its processes wrote in its directory (serve.log, run-N.log)."""
    outcome = yield
    report = outcome.get_result()
    setattr(item, "report_" + report.when, report)
    work = item.funcargs.get("work") if hasattr(item, "funcargs") else None
    if report.failed and call.when == "call" and work is not None:
        for log in sorted(Path(work).rglob("*.log"))[-6:]:
            text = log.read_text(errors="replace")
            if text.strip():
                report.sections.append((f"log {log.relative_to(work)} (tail)", text[-3000:]))
