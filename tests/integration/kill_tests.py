# SPDX-License-Identifier: Apache-2.0
"""Kills at the precise points of the exactly-once protocol, for each
exactly-once sink: nothing committed is lost and nothing is committed twice
(docs/concepts/recovery.md).

A job reads ROWS rows with a unique id from a file (parallelism 2) into the
exactly-once sink under test: `file`, `kafka` (delivery = "exactly_once", a
real broker, tests/kafka/kafka_broker.py) or `postgres` (a real PostgreSQL
15, tests/weirtest/servers.py). A test-only kill point (WEIR_FAULT=point:N,
include/weir/core/test_fault.hpp) SIGKILLs the process at the Nth time it is
reached; the run must die by SIGKILL saying where, and a rerun on the same
checkpoint directory, at full speed and without the fault, must leave every
row committed exactly once. Kills that need checkpoints before them read a
paced input (the file source's `rate`, RATE rows/s: the input lasts ROWS /
RATE seconds on any machine, so the Nth checkpoint comes long before its end).

test_file, test_kafka and test_postgres run the four scenarios on their sink:
  commit     paced, checkpoints every 100 ms: killed inside the third commit
             of a sink subtask (kill_in_sink_commit:3: its transaction or part
             committed, the sink not yet aware of it, the other subtask's
             commit maybe not done)
  final      the final checkpoint (the only one: the interval is longer than
             the run): killed before its manifest commit (its state written,
             the checkpoint never complete), after it (complete, nothing
             committed), and inside the first commit it makes
  restore    paced: killed after the third checkpoint completed (its
             transactions pre-committed, not committed); the rerun killed
             once the first sink subtask has restored (settled the restored
             checkpoint's transactions), the other maybe not; then rerun
  savepoint  paced: SIGTERM with --savepoint-on-stop, killed while the
             savepoint is written (its state there, its manifest not): the
             partial savepoint is refused (exit 1, no signal, the output
             unchanged); a rerun from the job's own checkpoints is exact

WEIR_TEST_TIME_SCALE stretches the waits and timeouts.
"""
import json
import os
import shutil
import signal
import subprocess

from weirtest import SCALE, log_text, run, wait_until
from weirtest.exactly_once import complete_checkpoints
# The sinks under test, as final_checkpoint_tests.py's.
from weirtest.sinks import SINKS

ROWS = 2000
RATE = 200  # rows/s of the paced runs: their input lasts 10 s

HEAD = """
[job]
name = "kill-{sink}"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "{interval}"
dir = "{work}/state"

[[source]]
name = "input"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
schema = {{ id = "int64", word = "string" }}
{rate}
"""


class Kills:
    """The four scenarios on one sink (`server` its fixture's broker or
    database), in the test's directory; the runs through `procs`."""

    def __init__(self, weir, work, procs, sink, server=None):
        self.weir = weir
        self.procs = procs
        self.name = sink
        self.work = str(work)
        with open(os.path.join(self.work, "input.jsonl"), "w") as f:
            for i in range(ROWS):
                f.write(json.dumps({"id": i, "word": "w%d" % (i % 17)}) + "\n")
        self.sink = SINKS[sink](self.work, server)
        self.runs = 0

    def write(self, interval, paced):
        self.runs += 1
        text = HEAD.format(sink=self.name, work=self.work, interval=interval,
                           rate=f"rate = {RATE}" if paced else "")
        text += self.sink.toml()
        path = os.path.join(self.work, f"pipeline-{self.runs}.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def reset(self, scenario):
        shutil.rmtree(os.path.join(self.work, "state"), ignore_errors=True)
        shutil.rmtree(os.path.join(self.work, "savepoint"), ignore_errors=True)
        self.sink.reset("kill-" + scenario)

    def killed(self, what, toml, fault, *flags, stop=False):
        """Runs `toml` with WEIR_FAULT=`fault` until the fault kills it;
        with `stop`, SIGTERMs it first, once a checkpoint has completed."""
        p = self.procs.start([self.weir, "run", toml, *flags], log=f"run-{self.runs}.log",
                             env=dict(os.environ, WEIR_FAULT=fault))
        if stop:
            wait_until(lambda: p.poll() is not None or complete_checkpoints(
                           self.weir, os.path.join(self.work, "state"), required=False),
                       f"{what}: a first checkpoint", 30)
            assert p.poll() is None, f"{what}: the paced job ended before the stop"
            p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=60 * SCALE)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"{what}: WEIR_FAULT={fault} did not end the job within 60 s") from None
        err = log_text(p)
        assert p.returncode == -signal.SIGKILL, (
            f"{what}: exit {p.returncode}, expected death by SIGKILL at {fault}:\n{err[-3000:]}")
        assert f"WEIR_FAULT: killing the process at {fault}" in err, (
            f"{what}: killed, but not at {fault}:\n{err[-3000:]}")
        return err

    def exact(self, what, *flags):
        """A rerun at full speed, no fault: every row committed once."""
        run([self.weir, "run", self.write("100ms", paced=False), *flags],
            what=f"{what}: the rerun")
        got = sorted(self.sink.committed())
        assert got == list(range(ROWS)), (
            f"{what}: after the rerun the sink holds {len(got)} rows, {len(set(got))} "
            f"distinct, expected {ROWS} once each (missing: {ROWS - len(set(got))}, "
            f"twice: {len(got) - len(set(got))})")
        left = self.sink.left_over()
        assert not left, f"{what}: transactions left prepared: {left[:5]}"

    def commit(self):
        self.reset("commit")
        self.killed("commit", self.write("100ms", paced=True), "kill_in_sink_commit:3")
        self.exact("killed inside a commit")
        print(f"ok: {self.name}: killed inside the third commit; the rerun holds "
              f"{ROWS} rows once each")

    def final(self):
        for point in ("kill_before_manifest_commit:1", "kill_after_manifest_commit:1",
                      "kill_in_sink_commit:1"):
            self.reset("final-" + point.split(":")[0].replace("_", "-"))
            self.killed(f"final checkpoint, {point}", self.write("20s", paced=False), point)
            self.exact(f"killed in the final checkpoint at {point}")
        print(f"ok: {self.name}: killed before and after the final checkpoint's manifest "
              f"commit and inside its first commit; each rerun holds {ROWS} rows once each")

    def restore(self):
        self.reset("restore")
        self.killed("restore, first run", self.write("100ms", paced=True),
                    "kill_after_manifest_commit:3")
        self.killed("restore", self.write("100ms", paced=True), "kill_in_restore:1")
        self.exact("killed during a restore")
        print(f"ok: {self.name}: killed with checkpoint 3 complete and uncommitted, then "
              f"during the restore; the rerun holds {ROWS} rows once each")

    def savepoint(self):
        self.reset("savepoint")
        sp = os.path.join(self.work, "savepoint")
        self.killed("savepoint", self.write("100ms", paced=True), "kill_in_savepoint",
                    "--savepoint-on-stop", sp, stop=True)
        before = sorted(self.sink.committed())
        p = run([self.weir, "run", self.write("100ms", paced=False), "--from-savepoint", sp],
                expect=1, what="savepoint: the run from the partial savepoint (a refusal)")
        assert sp in p.stderr, (
            f"savepoint: the refusal does not name {sp}:\n{p.stderr[-3000:]}")
        assert sorted(self.sink.committed()) == before, (
            "savepoint: the refused run changed the sink's committed rows")
        self.exact("killed while writing a savepoint")
        print(f"ok: {self.name}: killed while writing a savepoint; it is refused; the "
              f"rerun holds {ROWS} rows once each")


SCENARIOS = ["commit", "final", "restore", "savepoint"]


def run_scenarios(kills):
    for scenario in SCENARIOS:
        getattr(kills, scenario)()


def test_file(weir, work, procs):
    run_scenarios(Kills(weir, work, procs, "file"))


def test_kafka(weir, work, procs, kafka_broker):
    run_scenarios(Kills(weir, work, procs, "kafka", kafka_broker))


def test_postgres(weir, work, procs, postgres_server):
    run_scenarios(Kills(weir, work, procs, "postgres", postgres_server))
