# SPDX-License-Identifier: Apache-2.0
"""The Kafka source end to end: the real `weir` binary against a real Apache
Kafka broker (KRaft, one node, started here: tests/kafka/kafka_broker.py).

One broker (the kafka_broker fixture) serves every test of a session (its JVM
start costs seconds); CTest's kafka/source runs them all:
  test_dashboard  the access log (JSONL) produced into a 4-partition topic;
                  the dashboard job reading it (bounded = "latest") at
                  parallelism 2 writes what the same job over the file writes
  test_crash      a checkpointed keyed job over a 4-partition topic, SIGKILLed
                  at random moments and resumed on its checkpoint directory:
                  the committed output equals an uninterrupted run's (the
                  source rewinds to its checkpointed offsets)
  test_idle_partition  one of four partitions never receives a record: windows
                  fire once it is idle (idle_timeout), and do not without it
  test_new_partition   a partition added while the job runs is read
                  (partition_discovery_interval)
  test_start_timestamp start = "timestamp" reads from the first record at or after it
  test_errors     a missing topic and unreachable brokers fail the job with
                  exit code 1 and one message naming them, within seconds

--kills sets the crash test's SIGKILLs (default 3); the seed is printed,
--seed (or WEIR_SEED) replays it.
"""
import json
import random
import shutil
import signal
import subprocess
import threading
import time

from weirtest import SCALE, run
from weirtest.exactly_once import committed_parts


JSONL = "data/apache_access_logs/apache_logs_anon.jsonl"
KILLS = 3


def lines_of(path):
    with open(path, encoding="utf-8") as f:
        return [l for l in f.read().splitlines() if l.strip()]


def round_robin(broker, topic, lines, partitions):
    """Produces line i to partition i % partitions (deterministic placement)."""
    for p in range(partitions):
        broker.produce(topic, lines[p::partitions], partition=p)


# --- dashboard ---------------------------------------------------------------

DASHBOARD = """
[job]
name = "kafka-dashboard"
parallelism = 2
status_interval = "0s"
on_bad_record = "dead_letter"
dead_letter = {{ path = "{out}/bad_records.jsonl" }}

[[source]]
name = "logs"
{source}
schema = {{ line = "int64", ts = "timestamp", client = "string", method = "string", path = "string", protocol = "string", status = "int64", bytes = "int64", referrer = "string", agent = "string" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "60s" }}

[[operator]]
name = "views"
type = "window"
input = "logs"
key_by = ["path"]
window = {{ type = "tumbling", size = "1m" }}
aggregate = {{ views = "count(*)", bytes = "sum(bytes)" }}
late_output = "views_late"

[[operator]]
name = "status_per_minute"
type = "window"
input = "logs"
key_by = ["status"]
window = {{ type = "tumbling", size = "1m" }}
aggregate = {{ requests = "count(*)" }}

[[operator]]
name = "errors"
type = "filter"
input = "logs"
where = "status >= 400"

[[sink]]
name = "views_file"
input = "views"
type = "file"
path = "{out}/views.jsonl"

[[sink]]
name = "late_file"
input = "views_late"
type = "file"
path = "{out}/views_late.jsonl"

[[sink]]
name = "status_file"
input = "status_per_minute"
type = "file"
path = "{out}/status_per_minute.jsonl"

[[sink]]
name = "errors_file"
input = "errors"
type = "file"
path = "{out}/errors.jsonl"
"""


def run_weir(weir, toml_path, *flags, timeout=300, expect=0):
    return run([weir, "run", toml_path, *flags], timeout=timeout, expect=expect)


def test_dashboard(weir, repo, kafka_broker, work):
    broker = kafka_broker
    jsonl = str(repo / JSONL)
    broker.create_topic("access-log", partitions=4)
    round_robin(broker, "access-log", lines_of(jsonl), 4)
    outputs = {}
    for kind, source in [
        ("file", f'type = "file"\npath = "{jsonl}"\nformat = "jsonl"\nparallelism = 1'),
        ("kafka", f'type = "kafka"\ntopics = ["access-log"]\nbootstrap_servers = '
                  f'"{broker.bootstrap}"\nformat = "jsonl"\nbounded = "latest"'),
    ]:
        out = work / kind
        toml = work / f"{kind}.toml"
        toml.write_text(DASHBOARD.format(out=out, source=source))
        t0 = time.monotonic()
        run_weir(weir, toml)
        outputs[kind] = {name: sorted(lines_of(out / f"{name}.jsonl"))
                         for name in ("views", "views_late", "status_per_minute", "errors")}
        print(f"dashboard: {kind} run took {time.monotonic() - t0:.1f} s")
    f, k = outputs["file"], outputs["kafka"]
    assert sum(json.loads(l)["views"] for l in f["views"]) == 9999, "file run: views != 9,999"
    for name in f:
        assert f[name] == k[name], (
            f"{name}: the Kafka run differs from the file run: {len(k[name])} rows vs "
            f"{len(f[name])}; first missing {sorted(set(f[name]) - set(k[name]))[:2]}, "
            f"first unexpected {sorted(set(k[name]) - set(f[name]))[:2]}")
    assert k["views_late"] == [], "late records in the Kafka run"
    print(f"dashboard: ok, {len(k['views'])} view windows, {len(k['errors'])} errors, "
          "the same from the topic (4 partitions, parallelism 2) as from the file")


# --- crash -----------------------------------------------------------------

CRASH = """
[job]
name = "kafka-exactly-once"
parallelism = 2
status_interval = "0s"
batch_size = 256

[checkpoint]
interval = "100ms"
dir = "{work}/state"

[[source]]
name = "input"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
format = "jsonl"
bounded = "latest"
group_id = "crash-test"
schema = {{ seq = "int64", key = "string", ts = "timestamp", value = "int64" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "1s" }}

[[operator]]
name = "per_key"
type = "window"
input = "input"
key_by = ["key"]
window = {{ type = "tumbling", size = "10s" }}
aggregate = {{ n = "count(*)", total = "sum(value)" }}

[[operator]]
name = "running"
type = "running_count"
input = "input"
key_by = ["key"]

[[sink]]
name = "windows_out"
input = "per_key"
type = "file"
path = "{work}/out/windows"

[[sink]]
name = "running_out"
input = "running"
type = "file"
path = "{work}/out/running"
"""

CRASH_RECORDS = 200_000


def committed(work):
    return committed_parts(work, ("windows", "running"))


def test_crash(weir, kafka_broker, work, seed, kills):
    broker = kafka_broker
    rnd = random.Random(seed)
    lines = []
    for i in range(CRASH_RECORDS):
        ts = i * 10 + rnd.randint(0, 500)  # out of order within the 1 s bound
        lines.append(json.dumps({"seq": i, "key": "k%d" % rnd.randint(0, 999), "ts": ts,
                                 "value": rnd.randint(1, 100)}))
    broker.create_topic("crash-input", partitions=4)
    round_robin(broker, "crash-input", lines, 4)
    toml = work / "crash.toml"
    toml.write_text(CRASH.format(work=work, topic="crash-input", bootstrap=broker.bootstrap))

    def reset():
        for d in ("out", "state"):
            shutil.rmtree(work / d, ignore_errors=True)

    reset()
    t0 = time.monotonic()
    run_weir(weir, toml, "--fresh", "-q")
    took = time.monotonic() - t0
    want = committed(work)
    assert len(want["running"]) == CRASH_RECORDS, (
        f"the uninterrupted run wrote {len(want['running'])} counts")
    assert len(want["windows"]) > 1000, "the uninterrupted run wrote almost no windows"
    print(f"crash: the uninterrupted run took {took:.1f} s")
    reset()
    kills_wanted = kills
    kills = runs = restores = 0
    fresh = True
    while True:
        argv = [weir, "run", str(toml)] + (["--fresh"] if fresh else [])
        resumable = not fresh and (work / "state").exists()
        fresh = False
        log_path = work / f"run-{runs}.log"
        runs += 1
        assert runs < 20 + 4 * kills_wanted, f"{runs} runs without finishing the kills"
        with open(log_path, "w") as log:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
            time.sleep(rnd.uniform(0.1, max(0.3, took * 0.9)))
            if p.poll() is None:
                p.send_signal(signal.SIGKILL)
                p.wait()
                kills += 1
                restores += resumable
                continue
            p.wait()
        err = log_path.read_text()
        restores += resumable
        assert p.returncode == 0, f"a run between kills failed:\n{err[-2000:]}"
        got = committed(work)
        for name in want:
            g, w = got[name], want[name]
            assert g == w, (f"after {kills} kills ({runs} runs): {name} differs from the "
                f"uninterrupted run: {len(g)} rows vs {len(w)}, "
                f"{len(set(w) - set(g))} missing, {len(g) - len(set(g))} duplicated")
        if kills >= kills_wanted:
            break
        reset()
        fresh = True
    assert restores > 0, "no run ever resumed from a checkpoint"
    print(f"crash: ok, {kills} SIGKILLs in {runs} runs ({restores} resumed); the committed "
          f"output equals the uninterrupted run ({len(want['running'])} counts, "
          f"{len(want['windows'])} windows)")


# --- unbounded jobs read through the stdout sink -------------------------------

class Running:
    """A weir run whose stdout lines are collected as they come."""

    def __init__(self, procs, weir, toml):
        self.p = procs.start([weir, "run", toml], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        self.lines = []
        self.err = []
        self._t = [threading.Thread(target=self._read, args=(self.p.stdout, self.lines),
                                    daemon=True),
                   threading.Thread(target=self._read, args=(self.p.stderr, self.err),
                                    daemon=True)]
        for t in self._t:
            t.start()

    @staticmethod
    def _read(stream, into):
        for line in stream:
            into.append(line.rstrip("\n"))

    def wait_for(self, pred, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if pred(self.lines):
                return True
            if self.p.poll() is not None:
                time.sleep(0.2)
                return pred(self.lines)
            time.sleep(0.1)
        return False

    def stop(self):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGKILL)
        self.p.wait()
        for t in self._t:
            t.join(timeout=5 * SCALE)
        return "\n".join(self.err)


IDLE = """
[job]
name = "kafka-idle"
parallelism = 2
status_interval = "0s"

[[source]]
name = "events"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
format = "jsonl"
schema = {{ key = "string", ts = "timestamp" }}
event_time = {{ field = "ts" }}
watermark = {{ {watermark} }}

[[operator]]
name = "counts"
type = "window"
input = "events"
key_by = ["key"]
window = {{ type = "tumbling", size = "10s" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "counts"
type = "stdout"
"""


def test_idle_partition(weir, kafka_broker, work, procs):
    broker = kafka_broker
    broker.create_topic("idle-input", partitions=4)
    # Partitions 0..2 get 30 s of events (three windows); partition 3 nothing.
    for p in range(3):
        broker.produce("idle-input", [json.dumps({"key": f"p{p}", "ts": t * 1000})
                                      for t in range(0, 30)], partition=p)
    # Without idle_timeout partition 3 holds the watermark back: nothing fires.
    toml = work / "idle-never.toml"
    toml.write_text(IDLE.format(topic="idle-input", bootstrap=broker.bootstrap,
                                watermark='max_out_of_orderness = "0s"'))
    run = Running(procs, weir, toml)
    fired = run.wait_for(lambda ls: len(ls) > 0, 5)
    err = run.stop()
    assert not fired, (f"windows fired although partition 3 holds the watermark back:\n"
        f"{run.lines[:5]}\n{err[-1000:]}")
    toml = work / "idle.toml"
    toml.write_text(IDLE.format(topic="idle-input", bootstrap=broker.bootstrap,
                                watermark='max_out_of_orderness = "0s", idle_timeout = "2s"'))
    t0 = time.monotonic()
    run = Running(procs, weir, toml)
    # Windows [0, 10) and [10, 20) of each of the three keys (the watermark
    # stops at 29 s - 1 ms, so [20, 30) stays open).
    fired = run.wait_for(lambda ls: len(ls) >= 6, 30)
    took = time.monotonic() - t0
    err = run.stop()
    assert fired, (f"windows did not fire within 30 s with idle_timeout = 2s: {run.lines}\n"
        f"{err[-2000:]}")
    rows = sorted((r["key"], r["window_start"], r["n"]) for r in map(json.loads, run.lines))
    want = sorted((f"p{p}", s, 10) for p in range(3) for s in (0, 10000))
    assert rows == want, f"windows {rows}, expected {want}"
    print(f"idle-partition: ok, 6 windows fired {took:.1f} s after the start with partition 3 "
          "idle (none fired in 5 s without idle_timeout)")


GROW = """
[job]
name = "kafka-grow"
parallelism = 2
status_interval = "0s"

[[source]]
name = "events"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
format = "raw"
partition_discovery_interval = "1s"
metadata = {{ partition = "partition", offset = "offset" }}

[[sink]]
name = "out"
input = "events"
type = "stdout"
"""


def test_new_partition(weir, kafka_broker, work, procs):
    broker = kafka_broker
    broker.create_topic("grow-input", partitions=2)
    broker.produce("grow-input", [f"a{i}" for i in range(5)], partition=0)
    broker.produce("grow-input", [f"b{i}" for i in range(5)], partition=1)
    toml = work / "grow.toml"
    toml.write_text(GROW.format(topic="grow-input", bootstrap=broker.bootstrap))
    run = Running(procs, weir, toml)
    try:
        assert run.wait_for(lambda ls: len(ls) >= 10, 30), (
            f"the first 10 records were not read: {run.lines}")
        broker.add_partitions("grow-input", 3)
        broker.produce("grow-input", [f"c{i}" for i in range(5)], partition=2)
        t0 = time.monotonic()
        ok = run.wait_for(lambda ls: len(ls) >= 15, 30)
        took = time.monotonic() - t0
    finally:
        err = run.stop()
    assert ok, (f"the records of the new partition were not read within 30 s:\n"
        f"{run.lines}\n{err[-2000:]}")
    rows = sorted((r["partition"], r["offset"], r["value"]) for r in map(json.loads, run.lines))
    want = sorted([(0, i, f"a{i}") for i in range(5)] + [(1, i, f"b{i}") for i in range(5)]
                  + [(2, i, f"c{i}") for i in range(5)])
    assert rows == want, f"records {rows}, expected {want}"
    print(f"new-partition: ok, partition 2 added while running was read {took:.1f} s later")


ERRORS = """
[job]
name = "kafka-errors"
status_interval = "0s"

[[source]]
name = "events"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
connect_timeout = "2s"
format = "raw"

[[sink]]
name = "out"
input = "events"
type = "stdout"
"""


def test_errors(weir, kafka_broker, work):
    broker = kafka_broker
    for what, topic, bootstrap, want in [
        ("a missing topic", "no-such-topic", broker.bootstrap,
         "topic 'no-such-topic' does not exist"),
        ("unreachable brokers", "x", "127.0.0.1:1",
         "cannot reach the Kafka brokers at 127.0.0.1:1 within 2 s"),
    ]:
        toml = work / "errors.toml"
        toml.write_text(ERRORS.format(topic=topic, bootstrap=bootstrap))
        t0 = time.monotonic()
        p = run_weir(weir, toml, timeout=60, expect=1)
        took = time.monotonic() - t0
        assert want in p.stderr, f"{what}: stderr lacks {want!r}:\n{p.stderr[-2000:]}"
        assert took < 20 * SCALE, f"{what}: weir took {took:.1f} s to fail"
        print(f"errors: ok, {what} fails the job in {took:.1f} s (exit 1): {want}")


START = """
[job]
name = "kafka-start"
status_interval = "0s"

[[source]]
name = "events"
type = "kafka"
topics = ["{topic}"]
bootstrap_servers = "{bootstrap}"
format = "raw"
start = "timestamp"
start_timestamp = {ts}
bounded = "latest"

[[sink]]
name = "out"
input = "events"
type = "stdout"
"""


def test_start_timestamp(weir, kafka_broker, work):
    broker = kafka_broker
    broker.create_topic("start-input", partitions=2)
    broker.produce("start-input", [f"old{i}" for i in range(4)], partition=0)
    time.sleep(1.0)
    ts = int(time.time() * 1000)
    time.sleep(1.0)
    broker.produce("start-input", [f"new{i}" for i in range(3)], partition=0)
    broker.produce("start-input", [f"new{i}" for i in range(3, 5)], partition=1)
    toml = work / "start.toml"
    toml.write_text(START.format(topic="start-input", bootstrap=broker.bootstrap, ts=ts))
    p = run_weir(weir, toml, timeout=60)
    got = sorted(json.loads(l)["value"] for l in p.stdout.splitlines() if l.strip())
    assert got == [f"new{i}" for i in range(5)], f"start = timestamp read {got}"
    print("start-timestamp: ok, only the records at or after start_timestamp were read")
