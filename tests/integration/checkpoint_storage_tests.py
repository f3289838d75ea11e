# SPDX-License-Identifier: Apache-2.0
"""Checkpoint storage that fails mid-run: a full disk and a full
LMDB map. The real `weir` binary, real LMDB files.

A generated stream of keyed records feeds a one-day tumbling window per
record id, so the keyed state (and each checkpoint) grows with every record
while nothing reaches the file sink before the end of input. Checkpoints
every 100 ms; every test compares the committed output with that of one
uninterrupted run.

  test_disk_full  the file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: write()
             fails with EFBIG as on a full disk; LMDB reports a short write as
             EIO) stops LMDB from growing after
             some checkpoints completed; with tolerable_failures = 0 the first
             failed checkpoint fails the job with a message naming the
             directory and the error; the last completed checkpoint stays
             intact, and a rerun without the limit resumes from it and writes
             exactly the uninterrupted output
  test_map_full   a 1 MiB LMDB map ([checkpoint] max_size) fills up; with
             tolerable_failures = 1000 the job carries on through the failed
             checkpoints, warns about each, and its output is exact
"""
import os
import re

from weirtest import file_size_limit, run
from weirtest.exactly_once import CheckpointedJob, committed_parts, compare


RECORDS = 200_000

PIPELINE = """
[job]
name = "storage"
status_interval = "0s"

[checkpoint]
interval = "100ms"
dir = "{work}/state"
retain = 2
{checkpoint_extra}

[[source]]
name = "gen"
type = "generator"
count = {records}
rate = {rate}
seed = 5
fields = {{ id = "seq", value = "rand_int(seq, 1, 1, 100)", ts = "to_timestamp(1600000000000 + seq)" }}
event_time = {{ field = "ts" }}

# One window per record id, all open until the end of input: the keyed state
# grows with every record, the sink sees nothing before the end.
[[operator]]
name = "per_id"
type = "window"
input = "gen"
key_by = ["id"]
window = {{ type = "tumbling", size = "1d" }}
aggregate = {{ n = "count(*)", total = "sum(value)" }}

[[sink]]
name = "out"
input = "per_id"
type = "file"
path = "{work}/out"
"""


class Job(CheckpointedJob):
    def __init__(self, weir, work):
        super().__init__(weir, work)
        self.state = os.path.join(self.work, "state")

    def write(self, checkpoint_extra="", rate=40_000):
        return self.write_toml(PIPELINE.format(work=self.work, records=RECORDS, rate=rate,
                                               checkpoint_extra=checkpoint_extra))

    def run(self, toml, *flags, fsize=None):
        """`weir run` with files limited to `fsize` bytes (a full disk)."""
        return run([self.weir, "run", toml, *flags], timeout=900, expect=None,
                   preexec_fn=file_size_limit(fsize))

    def rows(self):
        """The committed rows, sorted."""
        return committed_parts(self.work, ("",))[""]

    def checkpoints(self):
        """(id, restorable) of each stored checkpoint, every value verified."""
        p = run([self.weir, "checkpoints", "list", self.state], timeout=120, expect=0)
        out = []
        for line in p.stdout.splitlines():
            words = line.split()
            if len(words) > 1 and words[0].isdigit():
                out.append((int(words[0]), words[1] == "complete"))
        return out

    def reference(self):
        self.reset()
        p = self.run(self.write(), "--fresh", "-q")
        assert p.returncode == 0, f"the reference run failed:\n{p.stderr[-3000:]}"
        rows = self.rows()
        assert len(rows) == RECORDS, f"the reference run wrote {len(rows)} rows, not {RECORDS}"
        self.reset()
        return rows


def compare_rows(got, want, what):
    compare({"output": got}, {"output": want}, what, ("output",))


def test_disk_full(weir, work):
    job = Job(weir, work)
    want = job.reference()
    toml = job.write("tolerable_failures = 0")
    # Room for the first few checkpoints only: the state grows by about
    # 4,000 keys a checkpoint, the LMDB file past the limit soon after.
    p = job.run(toml, "--fresh", fsize=3 << 20)
    err = p.stderr
    assert p.returncode == 1, (f"the job under the size limit exited {p.returncode}, not 1 "
        f"(failed):\n{err[-3000:]}")
    # The message names the failed checkpoint, the directory and the error.
    m = re.search(r"checkpoint (\d+) failed: .*checkpoint storage " + re.escape(job.state)
                  + r".*(File too large|Input/output error).*is the disk full\?.*"
                  + r"tolerable_failures = 0", err)
    assert m, f"no clear message about the failed checkpoint:\n{err[-3000:]}"
    failed_id = int(m.group(1))
    stored = job.checkpoints()
    good = [i for i, ok in stored if ok]
    assert good, f"no checkpoint completed before the disk filled up: {stored}"
    last = max(good)
    assert last < failed_id, f"checkpoint {failed_id} failed, yet #{last} is the last one"
    assert f"the last completed checkpoint, #{last}, is intact" in err, (
        f"the message does not name the last completed checkpoint #{last}:\n{err[-3000:]}")
    assert not job.rows(), "the failed run committed output"
    # Room again: the rerun resumes from the last completed checkpoint.
    r = job.run(toml)
    assert r.returncode == 0, f"the rerun exited {r.returncode}:\n{r.stderr[-3000:]}"
    assert f"restored from #{last}" in r.stderr, (
        f"the rerun did not restore checkpoint {last}:\n{r.stderr[-3000:]}")
    compare_rows(job.rows(), want, f"after the disk filled up at checkpoint {failed_id}")
    print(f"ok: checkpoint {failed_id} failed on the full disk and failed the job; "
          f"the rerun resumed from #{last} with the uninterrupted output ({len(want)} rows)")


def test_map_full(weir, work):
    job = Job(weir, work)
    want = job.reference()
    toml = job.write('tolerable_failures = 1000\nmax_size = "1MiB"')
    p = job.run(toml, "--fresh")
    err = p.stderr
    assert p.returncode == 0, f"the job with a full map exited {p.returncode}:\n{err[-3000:]}"
    failures = re.findall(r"checkpoint (\d+) failed: .*checkpoint storage "
                          + re.escape(job.state) + r".*MDB_MAP_FULL.*tolerated", err)
    assert failures, f"no checkpoint failed on the full map, or not clearly:\n{err[-3000:]}"
    m = re.search(r"checkpoints +(\d+) completed, \d+ aborted \((\d+) failed\)", err)
    assert m and int(m.group(1)) > 0 and int(m.group(2)) >= len(failures), (
        f"the summary does not count completed and failed checkpoints:\n{err[-1500:]}")
    compare_rows(job.rows(), want, "with failed checkpoints tolerated")
    stored = job.checkpoints()
    assert any(ok for _, ok in stored), f"no completed checkpoint is left: {stored}"
    print(f"ok: {len(failures)} checkpoints failed on the full map, the job carried on; "
          f"{m.group(1)} completed, output exact ({len(want)} rows)")
