#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checkpoint storage that fails mid-run: a full disk and a full
LMDB map. The real `weir` binary, real LMDB files.

A generated stream of keyed records feeds a one-day tumbling window per
record id, so the keyed state (and each checkpoint) grows with every record
while nothing reaches the file sink before the end of input. Checkpoints
every 100 ms; every test compares the committed output with that of one
uninterrupted run.

usage: checkpoint_storage_tests.py --weir BIN TEST
  disk-full  the file size limit (RLIMIT_FSIZE, SIGXFSZ ignored: write()
             fails with EFBIG as on a full disk; LMDB reports a short write as
             EIO) stops LMDB from growing after
             some checkpoints completed; with tolerable_failures = 0 the first
             failed checkpoint fails the job with a message naming the
             directory and the error; the last completed checkpoint stays
             intact, and a rerun without the limit resumes from it and writes
             exactly the uninterrupted output
  map-full   a 1 MiB LMDB map ([checkpoint] max_size) fills up; with
             tolerable_failures = 1000 the job carries on through the failed
             checkpoints, warns about each, and its output is exact
"""
import argparse
import glob
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile

# How much slower this tree runs weir (WEIR_TEST_TIME_SCALE: 4 under
# ThreadSanitizer): timeouts are multiplied by it.
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))

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


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Job:
    def __init__(self, args):
        self.args = args
        self.work = tempfile.mkdtemp(prefix="weir-cp-storage-")
        self.state = os.path.join(self.work, "state")

    def write(self, checkpoint_extra="", rate=40_000):
        path = os.path.join(self.work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(PIPELINE.format(work=self.work, records=RECORDS, rate=rate,
                                    checkpoint_extra=checkpoint_extra))
        return path

    def run(self, toml, *flags, fsize=None):
        def limit():
            # Beyond the limit write() fails with EFBIG ("File too large"),
            # as it fails with ENOSPC on a full disk, instead of the process
            # being killed by SIGXFSZ.
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
        return subprocess.run([self.args.weir, "run", toml, *flags], capture_output=True,
                              text=True, timeout=900 * SCALE,
                              preexec_fn=limit if fsize is not None else None)

    def committed(self):
        rows = []
        for part in sorted(glob.glob(os.path.join(self.work, "out", "part-*"))):
            with open(part) as f:
                rows += f.read().splitlines()
        return sorted(rows)

    def checkpoints(self):
        """(id, restorable) of each stored checkpoint, every value verified."""
        p = subprocess.run([self.args.weir, "checkpoints", "list", self.state],
                           capture_output=True, text=True, timeout=120 * SCALE)
        check(p.returncode == 0, f"weir checkpoints list failed:\n{p.stdout}{p.stderr}")
        out = []
        for line in p.stdout.splitlines():
            words = line.split()
            if len(words) > 1 and words[0].isdigit():
                out.append((int(words[0]), words[1] == "complete"))
        return out

    def reset(self):
        for d in ("out", "state"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def reference(self):
        self.reset()
        p = self.run(self.write(), "--fresh", "-q")
        check(p.returncode == 0, f"the reference run failed:\n{p.stderr[-3000:]}")
        rows = self.committed()
        check(len(rows) == RECORDS, f"the reference run wrote {len(rows)} rows, not {RECORDS}")
        self.reset()
        return rows

    def close(self):
        if os.environ.get("WEIR_KEEP_FAILED") and sys.exc_info()[0] is not None:
            print(f"kept {self.work} (WEIR_KEEP_FAILED)")
            return
        shutil.rmtree(self.work, ignore_errors=True)


def compare(got, want, what):
    if got != want:
        missing = sorted(set(want) - set(got))
        unexpected = sorted(set(got) - set(want))
        raise Failure(f"{what}: {len(got)} rows vs {len(want)} of the uninterrupted run, "
                      f"{len(missing)} missing, {len(got) - len(set(got))} duplicated\n"
                      f"  first missing: {missing[:3]}\n  first unexpected: {unexpected[:3]}")


def test_disk_full(args):
    job = Job(args)
    try:
        want = job.reference()
        toml = job.write("tolerable_failures = 0")
        # Room for the first few checkpoints only: the state grows by about
        # 4,000 keys a checkpoint, the LMDB file past the limit soon after.
        p = job.run(toml, "--fresh", fsize=3 << 20)
        err = p.stderr
        check(p.returncode == 1, f"the job under the size limit exited {p.returncode}, not 1 "
                                 f"(failed):\n{err[-3000:]}")
        # The message names the failed checkpoint, the directory and the error.
        m = re.search(r"checkpoint (\d+) failed: .*checkpoint storage " + re.escape(job.state)
                      + r".*(File too large|Input/output error).*is the disk full\?.*"
                      + r"tolerable_failures = 0", err)
        check(m, f"no clear message about the failed checkpoint:\n{err[-3000:]}")
        failed_id = int(m.group(1))
        stored = job.checkpoints()
        good = [i for i, ok in stored if ok]
        check(good, f"no checkpoint completed before the disk filled up: {stored}")
        last = max(good)
        check(last < failed_id, f"checkpoint {failed_id} failed, yet #{last} is the last one")
        check(f"the last completed checkpoint, #{last}, is intact" in err,
              f"the message does not name the last completed checkpoint #{last}:\n{err[-3000:]}")
        check(not job.committed(), "the failed run committed output")
        # Room again: the rerun resumes from the last completed checkpoint.
        r = job.run(toml)
        check(r.returncode == 0, f"the rerun exited {r.returncode}:\n{r.stderr[-3000:]}")
        check(f"restored from #{last}" in r.stderr,
              f"the rerun did not restore checkpoint {last}:\n{r.stderr[-3000:]}")
        compare(job.committed(), want, f"after the disk filled up at checkpoint {failed_id}")
        print(f"ok: checkpoint {failed_id} failed on the full disk and failed the job; "
              f"the rerun resumed from #{last} with the uninterrupted output ({len(want)} rows)")
    finally:
        job.close()


def test_map_full(args):
    job = Job(args)
    try:
        want = job.reference()
        toml = job.write('tolerable_failures = 1000\nmax_size = "1MiB"')
        p = job.run(toml, "--fresh")
        err = p.stderr
        check(p.returncode == 0, f"the job with a full map exited {p.returncode}:\n{err[-3000:]}")
        failures = re.findall(r"checkpoint (\d+) failed: .*checkpoint storage "
                              + re.escape(job.state) + r".*MDB_MAP_FULL.*tolerated", err)
        check(failures, f"no checkpoint failed on the full map, or not clearly:\n{err[-3000:]}")
        m = re.search(r"checkpoints +(\d+) completed, \d+ aborted \((\d+) failed\)", err)
        check(m and int(m.group(1)) > 0 and int(m.group(2)) >= len(failures),
              f"the summary does not count completed and failed checkpoints:\n{err[-1500:]}")
        compare(job.committed(), want, "with failed checkpoints tolerated")
        stored = job.checkpoints()
        check(any(ok for _, ok in stored), f"no completed checkpoint is left: {stored}")
        print(f"ok: {len(failures)} checkpoints failed on the full map, the job carried on; "
              f"{m.group(1)} completed, output exact ({len(want)} rows)")
    finally:
        job.close()


TESTS = {"disk-full": test_disk_full, "map-full": test_map_full}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    try:
        TESTS[args.test](args)
    except Failure as e:
        print(f"FAIL {args.test}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
