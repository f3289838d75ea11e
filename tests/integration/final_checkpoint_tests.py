# SPDX-License-Identifier: Apache-2.0
"""An exactly-once sink commits nothing of a job that fails: at the end of the
input it commits only once the job's final checkpoint has completed on every
sink (Flink's final checkpoint, FLIP-147), and a job that fails (or is
stopped and fails) before rolls back what it pre-committed.

Each job reads ROWS rows with a unique id from a file and writes them to two
sinks: first the exactly-once sink under test (`file` exactly once, `kafka`
or `postgres` with delivery = "exactly_once"), second an Elasticsearch sink
whose server does not exist (a port nothing listens on, no retries), which
fails at its first bulk request: at the end of the input (or at the stop's
checkpoint barrier). The checkpoint interval is longer than a run, so the
final checkpoint is the only one. The real `weir` binary on real TOML files;
a real broker (tests/kafka/kafka_broker.py) and a real PostgreSQL 15
(tests/weirtest/servers.py).

test_file, test_kafka and test_postgres run the four scenarios on their sink:
  end-of-input  the second sink fails at the end of the input: exit 1, and the
                first sink committed nothing (no part; read_committed, no
                message; no row and no prepared transaction). A rerun on the
                same checkpoint directory, the second sink replaced by a
                blackhole, writes every row exactly once.
  restart       the same with [job] restart attempts = 1: both attempts fail;
                nothing committed, not once per attempt.
  final-fails   the job's final checkpoint fails (test-only fault
                WEIR_FAULT=fail_manifest_commit:1, [checkpoint]
                tolerable_failures = 0), the second sink a blackhole: without
                restart attempts exit 1 and nothing committed or left
                prepared; rerun with [job] restart attempts = 1 and the same
                fault, the restarted attempt writes every row exactly once.
  stop          a paced input (the file source's rate) stopped by SIGTERM,
                whose final checkpoint the second sink cannot pre-commit:
                exit 1; nothing committed and nothing left prepared. A rerun
                (blackhole) writes every row exactly once.
"""
import glob
import json
import os
import re
import shutil
import signal
import subprocess

from weirtest import SCALE, free_port, log_text, wait_until

ROWS = 2000
# The stop scenario's pace (rows/s): the job runs ROWS / RATE = 20 s unless
# stopped, and is stopped once its source has read STOP_AFTER rows.
RATE = 100
STOP_AFTER = 150

HEAD = """
[job]
name = "final-ckpt-{sink}"
parallelism = 2
status_interval = "{status}"
{restart}

[checkpoint]
interval = "20s"
dir = "{work}/state"
tolerable_failures = 0

[[source]]
name = "input"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
schema = {{ id = "int64", word = "string" }}
{rate}
"""

SECOND_FAILING = """
[[sink]]
name = "second"
input = "input"
type = "elasticsearch"
hosts = ["http://127.0.0.1:{port}"]
index = "rows"
bulk_flush = {{ max_actions = 100000, interval = "0s" }}
backoff = {{ max_retries = 0 }}
request_timeout = "2s"
"""

SECOND_OK = """
[[sink]]
name = "second"
input = "input"
type = "blackhole"
"""


def records_read(log_path):
    """Rows the source has read, from the last status line in the log
    ("... | in 98 rec/s (412) | ...")."""
    with open(log_path) as f:
        counts = re.findall(r"\| in [0-9.]+ rec/s \((\d+)\)", f.read())
    return int(counts[-1]) if counts else 0


class FileSink:
    """The exactly-once file sink: committed parts in a directory."""

    def __init__(self, work, server=None):
        self.dir = os.path.join(work, "out")

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "file"
path = "{self.dir}"
format = "jsonl"
"""

    def reset(self, scenario):
        shutil.rmtree(self.dir, ignore_errors=True)

    def committed(self):
        rows = []
        for part in sorted(glob.glob(os.path.join(self.dir, "part-*"))):
            with open(part) as f:
                rows += [json.loads(l)["id"] for l in f if l.strip()]
        return rows

    def left_over(self):
        """Pending (pre-committed) parts left in staging."""
        return sorted(os.path.basename(p)
                      for p in glob.glob(os.path.join(self.dir, ".staging", "*.pending")))


class KafkaSink:
    """delivery = "exactly_once" into a topic of a real broker."""

    def __init__(self, work, broker):
        self.broker = broker
        self.topic = None

    def reset(self, scenario):
        # A topic of its own for each scenario.
        self.topic = "final-ckpt-" + scenario
        self.broker.create_topic(self.topic, partitions=2)

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "kafka"
topic = "{self.topic}"
bootstrap_servers = "{self.broker.bootstrap}"
delivery = "exactly_once"
"""

    def committed(self):
        return [json.loads(l)["id"] for l in self.broker.consume(self.topic, read_committed=True)
                if l.strip()]

    def left_over(self):
        return []

    def aborted(self, err):
        # An open transaction and an aborted one look alike to a consumer
        # (read_committed sees neither): the sink's log says which.
        return "the open transaction was aborted" in err


class PostgresSink:
    """delivery = "exactly_once" into a table of a real PostgreSQL 15."""

    def __init__(self, work, pg):
        self.pg = pg
        self.pg.sql("DROP TABLE IF EXISTS rows")
        self.pg.sql("CREATE TABLE rows (id bigint, word text)")

    def reset(self, scenario):
        self.pg.sql("TRUNCATE rows")

    def toml(self):
        return f"""
[[sink]]
name = "first"
input = "input"
type = "postgres"
connection = "{self.pg.conninfo}"
table = "rows"
delivery = "exactly_once"
"""

    def committed(self):
        return [int(r[0]) for r in self.pg.sql("SELECT id FROM rows")]

    def left_over(self):
        return [r[0] for r in self.pg.sql("SELECT gid FROM pg_prepared_xacts")]


SINKS = {"file": FileSink, "kafka": KafkaSink, "postgres": PostgresSink}


class Scenarios:
    def __init__(self, weir, work, procs, sink, server=None):
        self.weir = weir
        self.procs = procs
        self.name = sink
        self.work = str(work)
        with open(os.path.join(self.work, "input.jsonl"), "w") as f:
            for i in range(ROWS):
                f.write(json.dumps({"id": i, "word": "w%d" % (i % 17)}) + "\n")
        self.sink = SINKS[sink](self.work, server)
        self.es_port = free_port()
        self.runs = 0

    def write(self, second, restart="", rate=""):
        text = HEAD.format(sink=self.name, work=self.work, restart=restart, rate=rate,
                           status="100ms" if rate else "0s")
        text += self.sink.toml() + second
        path = os.path.join(self.work, f"pipeline-{self.runs}.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, toml, expect, env=None):
        self.runs += 1
        p = subprocess.run([self.weir, "run", toml], capture_output=True, text=True,
                           timeout=120 * SCALE, env=env)
        assert p.returncode == expect, (f"weir exited {p.returncode}, expected {expect}:\n"
            f"{p.stderr[-3000:]}")
        return p.stderr

    def reset(self, scenario):
        shutil.rmtree(os.path.join(self.work, "state"), ignore_errors=True)
        self.sink.reset(scenario)

    def check_nothing_committed(self, what, err, cause="Elasticsearch sink 'second'"):
        got = self.sink.committed()
        assert not got, (f"{what}: the first sink committed {len(got)} rows of a failed run "
            f"({len(set(got))} distinct)")
        left = self.sink.left_over()
        assert not left, f"{what}: pre-committed transactions left behind: {left[:5]}"
        assert getattr(self.sink, "aborted", lambda err: True)(err), (
            f"{what}: the open transaction was not aborted:\n{err[-2000:]}")
        assert cause in err, f"{what}: the run did not fail by '{cause}':\n{err[-2000:]}"

    def rerun_exactly_once(self, what):
        """The same job with the second sink fixed, on the same checkpoint
        directory: every row exactly once."""
        err = self.run(self.write(SECOND_OK), 0)
        got = sorted(self.sink.committed())
        assert got == list(range(ROWS)), (
            f"{what}: after the rerun the first sink holds {len(got)} rows, "
            f"{len(set(got))} distinct, expected {ROWS} once each "
            f"(duplicates: {len(got) - len(set(got))})")
        return err

    def end_of_input(self):
        self.reset("end-of-input")
        err = self.run(self.write(SECOND_FAILING.format(port=self.es_port)), 1)
        self.check_nothing_committed("end of input", err)
        self.rerun_exactly_once("end of input")
        print(f"ok: {self.name}: the second sink failed at the end of the input; nothing "
              f"committed; the rerun wrote {ROWS} rows once each")

    def restart(self):
        self.reset("restart")
        err = self.run(self.write(SECOND_FAILING.format(port=self.es_port),
                                  restart='restart = { attempts = 1, delay = "100ms" }'), 1)
        assert "restarting" in err, f"restart: the job did not restart:\n{err[-2000:]}"
        self.check_nothing_committed("restart", err)
        self.rerun_exactly_once("restart")
        print(f"ok: {self.name}: two attempts failed at the end of the input; nothing "
              f"committed; the rerun wrote {ROWS} rows once each")

    def final_fails(self):
        self.reset("final-fails")
        env = dict(os.environ, WEIR_FAULT="fail_manifest_commit:1")
        err = self.run(self.write(SECOND_OK), 1, env=env)
        self.check_nothing_committed("final checkpoint fails", err,
                                     cause="WEIR_FAULT: manifest commit 1 refused")
        err = self.run(self.write(SECOND_OK, restart='restart = { attempts = 1, delay = "100ms" }'),
                       0, env=env)
        assert "restarting" in err and "manifest commit 1 refused" in err, (
            f"final checkpoint fails: the rerun did not restart after the fault:\n{err[-2000:]}")
        got = sorted(self.sink.committed())
        assert got == list(range(ROWS)), (
            f"final checkpoint fails: after the restarted run the first sink holds {len(got)} "
            f"rows, {len(set(got))} distinct, expected {ROWS} once each")
        left = self.sink.left_over()
        assert not left, f"final checkpoint fails: transactions left prepared: {left[:5]}"
        print(f"ok: {self.name}: the final checkpoint failed; nothing committed; with a "
              f"restart attempt the job wrote {ROWS} rows once each")

    def stop(self):
        self.reset("stop")
        toml = self.write(SECOND_FAILING.format(port=self.es_port), rate=f"rate = {RATE}")
        self.runs += 1
        p = self.procs.start([self.weir, "run", toml], log="stop.log")
        # Stopped once the source has read STOP_AFTER rows (the status line
        # counts them), long before its input ends.
        wait_until(lambda: p.poll() is not None or records_read(p.log_path) >= STOP_AFTER,
                   f"the source to read {STOP_AFTER} rows", 60)
        assert p.poll() is None, (
            f"stop: the job ended before it could be stopped (exit {p.returncode})")
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60 * SCALE)
        except subprocess.TimeoutExpired:
            raise AssertionError("stop: the job did not end within 60 s of SIGTERM") from None
        err = log_text(p)
        assert p.returncode == 1, f"stop: weir exited {p.returncode}, expected 1:\n{err[-3000:]}"
        assert "stopping with final checkpoint" in err, (
            f"stop: no final checkpoint was triggered:\n{err[-2000:]}")
        self.check_nothing_committed("stop", err)
        self.rerun_exactly_once("stop")
        print(f"ok: {self.name}: stopped, the second sink failed at the final checkpoint; "
              f"nothing committed or left prepared; the rerun wrote {ROWS} rows once each")


SCENARIOS = ["end-of-input", "restart", "final-fails", "stop"]


def run_scenarios(test):
    for scenario in SCENARIOS:
        getattr(test, scenario.replace("-", "_"))()


def test_file(weir, work, procs):
    run_scenarios(Scenarios(weir, work, procs, "file"))


def test_kafka(weir, work, procs, kafka_broker):
    run_scenarios(Scenarios(weir, work, procs, "kafka", kafka_broker))


def test_postgres(weir, work, procs, postgres_server):
    run_scenarios(Scenarios(weir, work, procs, "postgres", postgres_server))
