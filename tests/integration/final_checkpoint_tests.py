#!/usr/bin/env python3
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
(tests/dbsinks/servers.py).

usage: final_checkpoint_tests.py --weir BIN SINK [SCENARIO ...]
  SINK: file, kafka or postgres. Scenarios (default: all four):
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
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kafka"))
sys.path.insert(0, str(ROOT / "dbsinks"))

# How much slower this tree runs weir (WEIR_TEST_TIME_SCALE: 4 under
# ThreadSanitizer): timeouts are multiplied by it.
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))
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


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def records_read(log_path):
    """Rows the source has read, from the last status line in the log
    ("... | in 98 rec/s (412) | ...")."""
    with open(log_path) as f:
        counts = re.findall(r"\| in [0-9.]+ rec/s \((\d+)\)", f.read())
    return int(counts[-1]) if counts else 0


class FileSink:
    """The exactly-once file sink: committed parts in a directory."""

    def __init__(self, work):
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

    def close(self):
        pass


class KafkaSink:
    """delivery = "exactly_once" into a topic of a real broker."""

    def __init__(self, work):
        from kafka_broker import KafkaBroker
        self.broker = KafkaBroker().start()
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

    def close(self):
        self.broker.stop()


class PostgresSink:
    """delivery = "exactly_once" into a table of a real PostgreSQL 15."""

    def __init__(self, work):
        from servers import PostgresServer
        self.pg = PostgresServer(max_prepared_transactions=10).start()
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

    def close(self):
        self.pg.stop()


SINKS = {"file": FileSink, "kafka": KafkaSink, "postgres": PostgresSink}


class Test:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="weir-final-ckpt-")
        with open(os.path.join(self.work, "input.jsonl"), "w") as f:
            for i in range(ROWS):
                f.write(json.dumps({"id": i, "word": "w%d" % (i % 17)}) + "\n")
        self.sink = SINKS[args.sink](self.work)
        self.es_port = free_port()
        self.runs = 0

    def write(self, second, restart="", rate=""):
        text = HEAD.format(sink=self.args.sink, work=self.work, restart=restart, rate=rate,
                           status="100ms" if rate else "0s")
        text += self.sink.toml() + second
        path = os.path.join(self.work, f"pipeline-{self.runs}.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, toml, expect, env=None):
        self.runs += 1
        p = subprocess.run([self.args.weir, "run", toml], capture_output=True, text=True,
                           timeout=120 * SCALE, env=env)
        check(p.returncode == expect, f"weir exited {p.returncode}, expected {expect}:\n"
                                      f"{p.stderr[-3000:]}")
        return p.stderr

    def reset(self, scenario):
        shutil.rmtree(os.path.join(self.work, "state"), ignore_errors=True)
        self.sink.reset(scenario)

    def check_nothing_committed(self, what, err, cause="Elasticsearch sink 'second'"):
        got = self.sink.committed()
        check(not got, f"{what}: the first sink committed {len(got)} rows of a failed run "
                       f"({len(set(got))} distinct)")
        left = self.sink.left_over()
        check(not left, f"{what}: pre-committed transactions left behind: {left[:5]}")
        check(getattr(self.sink, "aborted", lambda err: True)(err),
              f"{what}: the open transaction was not aborted:\n{err[-2000:]}")
        check(cause in err, f"{what}: the run did not fail by '{cause}':\n{err[-2000:]}")

    def rerun_exactly_once(self, what):
        """The same job with the second sink fixed, on the same checkpoint
        directory: every row exactly once."""
        err = self.run(self.write(SECOND_OK), 0)
        got = sorted(self.sink.committed())
        check(got == list(range(ROWS)),
              f"{what}: after the rerun the first sink holds {len(got)} rows, "
              f"{len(set(got))} distinct, expected {ROWS} once each "
              f"(duplicates: {len(got) - len(set(got))})")
        return err

    def end_of_input(self):
        self.reset("end-of-input")
        err = self.run(self.write(SECOND_FAILING.format(port=self.es_port)), 1)
        self.check_nothing_committed("end of input", err)
        self.rerun_exactly_once("end of input")
        print(f"ok: {self.args.sink}: the second sink failed at the end of the input; nothing "
              f"committed; the rerun wrote {ROWS} rows once each")

    def restart(self):
        self.reset("restart")
        err = self.run(self.write(SECOND_FAILING.format(port=self.es_port),
                                  restart='restart = { attempts = 1, delay = "100ms" }'), 1)
        check("restarting" in err, f"restart: the job did not restart:\n{err[-2000:]}")
        self.check_nothing_committed("restart", err)
        self.rerun_exactly_once("restart")
        print(f"ok: {self.args.sink}: two attempts failed at the end of the input; nothing "
              f"committed; the rerun wrote {ROWS} rows once each")

    def final_fails(self):
        self.reset("final-fails")
        env = dict(os.environ, WEIR_FAULT="fail_manifest_commit:1")
        err = self.run(self.write(SECOND_OK), 1, env=env)
        self.check_nothing_committed("final checkpoint fails", err,
                                     cause="WEIR_FAULT: manifest commit 1 refused")
        err = self.run(self.write(SECOND_OK, restart='restart = { attempts = 1, delay = "100ms" }'),
                       0, env=env)
        check("restarting" in err and "manifest commit 1 refused" in err,
              f"final checkpoint fails: the rerun did not restart after the fault:\n{err[-2000:]}")
        got = sorted(self.sink.committed())
        check(got == list(range(ROWS)),
              f"final checkpoint fails: after the restarted run the first sink holds {len(got)} "
              f"rows, {len(set(got))} distinct, expected {ROWS} once each")
        left = self.sink.left_over()
        check(not left, f"final checkpoint fails: transactions left prepared: {left[:5]}")
        print(f"ok: {self.args.sink}: the final checkpoint failed; nothing committed; with a "
              f"restart attempt the job wrote {ROWS} rows once each")

    def stop(self):
        self.reset("stop")
        toml = self.write(SECOND_FAILING.format(port=self.es_port), rate=f"rate = {RATE}")
        self.runs += 1
        log_path = os.path.join(self.work, "stop.log")
        with open(log_path, "w") as log:
            p = subprocess.Popen([self.args.weir, "run", toml], stdout=subprocess.DEVNULL,
                                 stderr=log)
            # Stopped once the source has read STOP_AFTER rows (the status
            # line counts them), long before its input ends.
            deadline = time.monotonic() + 60 * SCALE
            while records_read(log_path) < STOP_AFTER:
                check(p.poll() is None, f"stop: the job ended before it could be stopped "
                                        f"(exit {p.returncode})")
                check(time.monotonic() < deadline,
                      f"stop: the source read fewer than {STOP_AFTER} rows within 60 s")
                time.sleep(0.05)
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=60 * SCALE)
            except subprocess.TimeoutExpired:
                p.kill()
                raise Failure("stop: the job did not end within 60 s of SIGTERM")
        with open(log_path) as f:
            err = f.read()
        check(p.returncode == 1, f"stop: weir exited {p.returncode}, expected 1:\n{err[-3000:]}")
        check("stopping with final checkpoint" in err,
              f"stop: no final checkpoint was triggered:\n{err[-2000:]}")
        self.check_nothing_committed("stop", err)
        self.rerun_exactly_once("stop")
        print(f"ok: {self.args.sink}: stopped, the second sink failed at the final checkpoint; "
              f"nothing committed or left prepared; the rerun wrote {ROWS} rows once each")

    def close(self):
        self.sink.close()
        if os.environ.get("WEIR_KEEP_FAILED") and sys.exc_info()[0] is not None:
            print(f"kept {self.work} (WEIR_KEEP_FAILED)")
            return
        shutil.rmtree(self.work, ignore_errors=True)


SCENARIOS = ["end-of-input", "restart", "final-fails", "stop"]


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("sink", choices=sorted(SINKS))
    ap.add_argument("scenarios", nargs="*", metavar="SCENARIO")
    args = ap.parse_args()
    for s in args.scenarios:
        if s not in SCENARIOS:
            ap.error(f"unknown scenario '{s}' (one of {', '.join(SCENARIOS)})")
    t0 = time.monotonic()
    t = Test(args)
    try:
        for s in args.scenarios or SCENARIOS:
            getattr(t, s.replace("-", "_"))()
    except Failure as e:
        print(f"FAIL {args.sink}: {e}")
        sys.exit(1)
    finally:
        t.close()
    print(f"{len(args.scenarios or SCENARIOS)} passed, 0 failed ({time.monotonic() - t0:.1f} s)")


if __name__ == "__main__":
    main()
