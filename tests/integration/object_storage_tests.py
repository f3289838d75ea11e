# SPDX-License-Identifier: Apache-2.0
"""Checkpoints in S3-compatible object storage (docs/operations/object-storage.md):
the real `weir` binary, a real SeaweedFS S3 server (tests/s3/seaweedfs_server.py),
real SIGKILLs.

The job of checkpoint_tests.py (windows, sliding windows and a running count
over generated records, written through exactly-once file sinks) with
`[checkpoint] remote = "s3://weir/<test>"`; every test compares the committed
output with that of one uninterrupted run.

  test_crash               SIGKILLs at random moments (--kills), reruns on the
                           same local dir
  test_standby             the local dir deleted after a kill: a "standby"
                           downloads the newest remote checkpoint and resumes
  test_kill_in_upload      killed between a checkpoint's state upload and its
                           _metadata: the previous one is restored
  test_store_unreachable   the server killed while the job runs: the job says
                           it cannot upload and fails; with the server back, a
                           standby resumes from the last uploaded checkpoint
  test_remote_added_later  a job checkpointed locally, then given a remote: its
                           newest checkpoint is uploaded at start
  test_refused             wrong credentials (and from ~/.aws/credentials)
  test_config_errors       remote, endpoint, region mistakes at file:line:col

No test's output or log may hold the secret key or the access key.
"""
import json
import os
import random
import re
import shutil
import signal
import subprocess
import time

import pytest

from weirtest import SCALE, run
from weirtest.exactly_once import CheckpointedJob, compare, crash_loop, paced, poll

RECORDS = int(100_000 / SCALE)
KILLS = 5 if SCALE == 1 else 3
BUCKET = "weir"
ALL = ("windows", "running")

PIPELINE = """
[job]
name = "remote-checkpoints"
parallelism = {parallelism}
status_interval = "0s"

[checkpoint]
interval = "200ms"
dir = "{work}/state"
retain = 3
remote = "{uri}"

[[source]]
name = "input"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
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
local_aggregation = {local}

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


class RemoteJob(CheckpointedJob):
    """Tumbling windows and a running count per key over RECORDS generated
    records, exactly once, checkpoints in `work/state` and s3://weir/<prefix>."""

    OUTPUTS = ALL

    def __init__(self, weir, work, seed, s3, prefix):
        super().__init__(weir, work)
        self.s3 = s3
        self.prefix = prefix
        self.local = "false"
        rnd = random.Random(seed)
        with open(os.path.join(self.work, "input.jsonl"), "w") as f:
            for i in range(RECORDS):
                ts = i * 10 + rnd.randint(0, 500)  # out of order within the 1 s bound
                f.write(json.dumps({"seq": i, "key": "k%d" % rnd.randint(0, 999), "ts": ts,
                                    "value": rnd.randint(1, 100)}) + "\n")

    @property
    def uri(self):
        return f"s3://{BUCKET}/{self.prefix}"

    def write(self, parallelism):
        return self.write_toml(PIPELINE.format(parallelism=parallelism, work=self.work,
                                               uri=self.uri, local=self.local))

    def reference(self):
        self.reset()
        self.run(self.write(2), "--fresh", "-q")
        ref = self.committed()
        assert len(ref["running"]) == RECORDS, f"reference run wrote {len(ref['running'])}"
        assert len(ref["windows"]) > 1000, "reference run wrote almost no windows"
        self.reset()
        return ref

    def reset(self):
        super().reset()
        for key in self.s3.keys(BUCKET, self.prefix + "/"):
            self.s3.delete(BUCKET, key)

    def remote_ids(self):
        """The complete checkpoints `weir checkpoints list s3://...` shows."""
        p = run([self.weir, "checkpoints", "list", self.uri], timeout=60,
                what="weir checkpoints list s3://")
        no_secrets(self.s3, p.stdout + p.stderr)
        return [int(w[0]) for w in (line.split() for line in p.stdout.splitlines())
                if len(w) > 1 and w[0].isdigit() and w[1] == "complete"]


def no_secrets(s3, text):
    assert s3.secret_key not in text, "the secret key appears in weir's output"
    assert s3.access_key not in text, "the access key appears in weir's output"


@pytest.fixture
def s3(seaweedfs, monkeypatch):
    """The session's SeaweedFS server with its bucket, and its credentials
    in this test's environment (weir inherits them)."""
    seaweedfs.start()  # a test before may have stopped it
    if BUCKET not in re.findall(r"<Name>([^<]*)</Name>", seaweedfs._curl("GET", "/").stdout):
        seaweedfs.create_bucket(BUCKET)
    for k, v in seaweedfs.env().items():
        monkeypatch.setenv(k, v)
    return seaweedfs


def logs_of(work):
    return "".join(open(os.path.join(work, f)).read() for f in os.listdir(work)
                   if f.startswith("run-") and f.endswith(".log"))


def start(job, toml, *flags, env=None):
    log = open(os.path.join(job.work, f"run-{time.monotonic_ns()}.log"), "w")
    p = subprocess.Popen([job.weir, "run", toml, *flags], stdout=subprocess.DEVNULL,
                         stderr=log, env=env)
    p.log_path = log.name
    log.close()
    return p


def test_crash(weir, work, seed, kills, s3):
    job = RemoteJob(weir, work, seed, s3, "crash")
    want = job.reference()
    crash_loop(job, want, seed, kills, ALL)
    assert job.remote_ids(), "the crash runs left no checkpoint in object storage"
    no_secrets(s3, logs_of(work))


def kill_after_remote_checkpoints(job, toml, count, env=None):
    """Runs `toml` fresh, SIGKILLs it once `count` checkpoints are in object
    storage; returns their ids."""
    p = start(job, toml, "--fresh", env=env)
    try:
        poll(lambda: p.poll() is not None or len(job.remote_ids()) >= count, 60)
        assert p.poll() is None, (f"the run ended before {count} checkpoints were uploaded:\n"
                                  + open(p.log_path).read()[-2000:])
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
    return job.remote_ids()


def test_standby(weir, work, seed, s3):
    job = RemoteJob(weir, work, seed, s3, "standby")
    want = job.reference()
    toml = paced(job.write(2), max(2000, RECORDS // 8))
    ids = kill_after_remote_checkpoints(job, toml, 2)
    assert len(ids) >= 2, ids
    # Another machine: nothing local, the output directory shared.
    shutil.rmtree(os.path.join(work, "state"))
    r = job.run(job.write(2))
    no_secrets(s3, r.stderr)
    restored = re.search(r"restored from #(\d+)", r.stderr)
    assert "downloaded checkpoint" in r.stderr and restored, (
        f"the standby did not resume from object storage:\n{r.stderr[-2000:]}")
    assert int(restored.group(1)) == max(ids), (
        f"the standby restored #{restored.group(1)}, the newest uploaded is {max(ids)}")
    compare(job.committed(), want, "after a standby resumed from object storage", ALL)


def test_kill_in_upload(weir, work, seed, s3):
    job = RemoteJob(weir, work, seed, s3, "upload-kill")
    want = job.reference()
    toml = paced(job.write(2), max(2000, RECORDS // 8))
    p = start(job, toml, "--fresh", env={**os.environ, "WEIR_FAULT": "kill_in_upload:3"})
    assert p.wait(timeout=120 * SCALE) == -signal.SIGKILL, (
        "the kill point was not reached:\n" + open(p.log_path).read()[-2000:])
    keys = s3.keys(BUCKET, "upload-kill/")
    # The third checkpoint's state is there, its _metadata not.
    assert any(k.endswith("/data.mdb") and k.rsplit("/", 2)[1] == "chk-000000000003"
               for k in keys), keys
    assert "upload-kill/chk-000000000003/_metadata" not in keys, keys
    assert job.remote_ids() == [1, 2], job.remote_ids()
    shutil.rmtree(os.path.join(work, "state"))
    r = job.run(job.write(2))
    assert "restored from #2" in r.stderr, r.stderr[-2000:]
    compare(job.committed(), want, "after a kill in an upload", ALL)
    no_secrets(s3, r.stderr + open(p.log_path).read())


def test_store_unreachable(weir, work, seed, s3):
    job = RemoteJob(weir, work, seed, s3, "unreachable")
    want = job.reference()
    toml = paced(job.write(2), max(1000, RECORDS // 30))
    p = start(job, toml, "--fresh")
    try:
        poll(lambda: p.poll() is not None or len(job.remote_ids()) >= 2, 60)
        assert p.poll() is None, open(p.log_path).read()[-2000:]
        before = job.remote_ids()
        s3.stop()
        # Each request is retried for about 6 s before the checkpoint fails.
        rc = p.wait(timeout=120 * SCALE)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        s3.start()
    err = open(p.log_path).read()
    assert rc == 1, f"exit {rc}:\n{err[-2000:]}"
    assert "cannot upload checkpoint" in err and s3.endpoint in err, err[-2000:]
    assert re.search(r"Couldn't connect|Connection refused|Failed to connect", err), err[-2000:]
    no_secrets(s3, err)
    after = job.remote_ids()
    assert after[-1] >= before[-1], (before, after)
    shutil.rmtree(os.path.join(work, "state"))
    r = job.run(job.write(2))
    assert f"restored from #{after[-1]}" in r.stderr, r.stderr[-2000:]
    compare(job.committed(), want, "after the store was unreachable", ALL)
    no_secrets(s3, r.stderr)


def test_remote_added_later(weir, work, seed, s3):
    """A job that checkpointed locally, then given a remote: its newest local
    checkpoint is uploaded before it runs, so a standby resumes from it
    rather than from no state (which would take back the output)."""
    job = RemoteJob(weir, work, seed, s3, "added-later")
    want = job.reference()
    with open(job.write(2)) as f:
        local_only = job.write_toml(f.read().replace(f'remote = "{job.uri}"\n', ""))
    job.run(local_only, "--fresh", "-q")
    compare(job.committed(), want, "the local-only run", ALL)
    assert job.remote_ids() == []
    local = job.checkpoint_ids()
    # Killed in the upload of its own first checkpoint (the second upload,
    # after the one at start): only the local checkpoint is remote then.
    r = run([weir, "run", job.write(2)], expect=-signal.SIGKILL,
            env={**os.environ, "WEIR_FAULT": "kill_in_upload:2"}, timeout=120)
    assert f"uploaded checkpoint {max(local)}" in r.stderr, r.stderr[-2000:]
    assert job.remote_ids() == [max(local)]
    shutil.rmtree(os.path.join(work, "state"))
    r = job.run(job.write(2))
    assert f"restored from #{max(local)}" in r.stderr, r.stderr[-2000:]
    compare(job.committed(), want, "a standby after the remote was added", ALL)
    no_secrets(s3, r.stderr)


def test_refused(weir, work, seed, s3):
    job = RemoteJob(weir, work, seed, s3, "refused")
    toml = job.write(1)
    env = {**os.environ, "AWS_SECRET_ACCESS_KEY": s3.secret_key[::-1]}
    r = run([weir, "run", toml], expect=1, env=env, timeout=120)
    assert f"s3://{BUCKET}/refused" in r.stderr and "HTTP 403" in r.stderr, r.stderr[-2000:]
    assert s3.endpoint in r.stderr, r.stderr[-2000:]
    no_secrets(s3, r.stderr)
    assert s3.secret_key[::-1] not in r.stderr
    # No credentials at all: said before any request.
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_ACCESS")
           and not k.startswith("AWS_SECRET")}
    env["HOME"] = str(work)
    r = run([weir, "run", toml], expect=1, env=env, timeout=120)
    assert "no credentials" in r.stderr, r.stderr[-2000:]
    # From ~/.aws/credentials, profile AWS_PROFILE.
    os.makedirs(os.path.join(work, ".aws"))
    with open(os.path.join(work, ".aws", "credentials"), "w") as f:
        f.write(f"[default]\naws_access_key_id = WRONG\naws_secret_access_key = wrong\n\n"
                f"[weir]\naws_access_key_id = {s3.access_key}\n"
                f"aws_secret_access_key = {s3.secret_key}\n")
    r = run([weir, "checkpoints", "list", job.uri], expect=1, env=env, timeout=120)
    assert "HTTP 403" in r.stderr, r.stderr[-2000:]
    r = run([weir, "checkpoints", "list", job.uri], expect=0, env={**env, "AWS_PROFILE": "weir"},
            timeout=120)
    no_secrets(s3, r.stdout + r.stderr)


@pytest.mark.parametrize("line, message", [
    ('remote = "http://bucket/x"', "is not an s3:// URI"),
    ('remote = "s3://Bad_Bucket/x"', "the bucket name may hold only"),
    ('endpoint = "127.0.0.1:9000"', "needs checkpoint.remote"),
])
def test_config_errors(weir, work, line, message):
    toml = os.path.join(work, "p.toml")
    with open(toml, "w") as f:
        f.write(f'[checkpoint]\ndir = "{work}/state"\n{line}\n\n[[source]]\nname = "s"\n'
                'type = "file"\npath = "/dev/null"\nformat = "jsonl"\nschema = { a = "int64" }\n'
                '\n[[sink]]\nname = "o"\ninput = "s"\ntype = "stdout"\n')
    r = run([weir, "validate", toml], expect=2)
    assert f"{toml}:3:" in r.stderr and message in r.stderr, r.stderr
