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
import sys
from pathlib import Path

from weirtest import SCALE, wait_until

# The sinks under test (and their servers' fixtures) are final_checkpoint_tests'.
sys.path.insert(0, str(Path(__file__).resolve().parent))
from final_checkpoint_tests import SINKS  # noqa: E402

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
    def __init__(self, weir, work, sink, server=None):
        self.weir = weir
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
        env = dict(os.environ, WEIR_FAULT=fault)
        log_path = os.path.join(self.work, f"run-{self.runs}.log")
        with open(log_path, "w") as log:
            p = subprocess.Popen([self.weir, "run", toml, *flags], stdout=subprocess.DEVNULL,
                                 stderr=log, env=env)
            try:
                if stop:
                    wait_until(lambda: p.poll() is not None or self.checkpoints(),
                               f"{what}: a first checkpoint", 30)
                    assert p.poll() is None, f"{what}: the paced job ended before the stop"
                    p.send_signal(signal.SIGTERM)
                p.wait(timeout=60 * SCALE)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
                raise AssertionError(
                    f"{what}: WEIR_FAULT={fault} did not end the job within 60 s") from None
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        with open(log_path) as f:
            err = f.read()
        assert p.returncode == -signal.SIGKILL, (
            f"{what}: exit {p.returncode}, expected death by SIGKILL at {fault}:\n{err[-3000:]}")
        assert f"WEIR_FAULT: killing the process at {fault}" in err, (
            f"{what}: killed, but not at {fault}:\n{err[-3000:]}")
        return err

    def checkpoints(self):
        """The completed checkpoints in the job's store (`weir checkpoints
        list` opens it read-only: safe on a running job)."""
        p = subprocess.run([self.weir, "checkpoints", "list",
                            os.path.join(self.work, "state")],
                           capture_output=True, text=True, timeout=60 * SCALE)
        return [l for l in p.stdout.splitlines() if l.split()[1:2] == ["complete"]]

    def exact(self, what, *flags):
        """A rerun at full speed, no fault: every row committed once."""
        p = subprocess.run([self.weir, "run", self.write("100ms", paced=False), *flags],
                           capture_output=True, text=True, timeout=120 * SCALE)
        assert p.returncode == 0, (
            f"{what}: the rerun exited {p.returncode}:\n{p.stderr[-3000:]}")
        got = sorted(self.sink.committed())
        assert got == list(range(ROWS)), (
            f"{what}: after the rerun the sink holds {len(got)} rows, {len(set(got))} "
            f"distinct, expected {ROWS} once each (missing: {ROWS - len(set(got))}, "
            f"twice: {len(got) - len(set(got))})")
        left = self.sink.left_over()
        assert not left, (
            f"{what}: transactions left prepared: {left[:5]}")

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
        p = subprocess.run([self.weir, "run", self.write("100ms", paced=False),
                            "--from-savepoint", sp], capture_output=True, text=True,
                           timeout=120 * SCALE)
        assert p.returncode == 1, (
            f"savepoint: the partial savepoint gave exit {p.returncode}, "
            f"expected a refusal (1):\n{p.stderr[-3000:]}")
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


def test_file(weir, work):
    run_scenarios(Kills(weir, work, "file"))


def test_kafka(weir, work, kafka_broker):
    run_scenarios(Kills(weir, work, "kafka", kafka_broker))


def test_postgres(weir, work, postgres_server):
    run_scenarios(Kills(weir, work, "postgres", postgres_server))
