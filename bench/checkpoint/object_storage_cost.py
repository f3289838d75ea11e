#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""What uploading checkpoints to object storage costs (docs/operations/object-storage.md).

Runs one job twice on the same input, local checkpoints only and with
`remote = "s3://..."` on a SeaweedFS server on loopback
(tests/s3/seaweedfs_server.py), and prints per checkpoint the bytes
uploaded and the upload's time (from weir's debug log), and each run's wall
time and checkpoints completed.

    bench/checkpoint/object_storage_cost.py build/weir [--keys 100000] [--records 2000000]

The job: a running count per key over `--records` generated records
(`--keys` distinct keys), parallelism 2, a checkpoint every 500 ms,
the exactly-once file sink. Loopback measures weir's side (the copy out of
LMDB, the HTTP requests, the server's write); a remote store adds its
round trips and bandwidth.
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "s3"))
from seaweedfs_server import SeaweedS3  # noqa: E402

PIPELINE = """
[job]
name = "upload-cost"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "500ms"
dir = "{work}/state-{tag}"
retain = 3
{remote}

[[source]]
name = "input"
type = "file"
path = "{work}/input.jsonl"
format = "jsonl"
schema = {{ key = "string", value = "int64" }}
rate = {rate}

[[operator]]
name = "running"
type = "running_count"
input = "input"
key_by = ["key"]

[[sink]]
name = "out"
input = "running"
type = "file"
path = "{work}/out-{tag}"
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("weir")
    ap.add_argument("--records", type=int, default=2_000_000)
    ap.add_argument("--keys", type=int, default=100_000)
    ap.add_argument("--rate", type=int, default=200_000)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="weir-upload-cost-")
    rnd = random.Random(1)
    with open(os.path.join(work, "input.jsonl"), "w") as f:
        for _ in range(a.records):
            f.write(json.dumps({"key": "k%d" % rnd.randrange(a.keys), "value": 1}) + "\n")
    with SeaweedS3() as s3:
        s3.create_bucket("bench")
        env = {**os.environ, **s3.env()}
        for tag, remote in (("local", ""), ("remote", 'remote = "s3://bench/upload-cost"')):
            toml = os.path.join(work, f"{tag}.toml")
            Path(toml).write_text(PIPELINE.format(work=work, tag=tag, remote=remote, rate=a.rate))
            t0 = time.monotonic()
            r = subprocess.run([a.weir, "run", toml, "--log-level", "debug"], env=env,
                               capture_output=True, text=True)
            wall = time.monotonic() - t0
            if r.returncode != 0:
                sys.exit(f"{tag}: exit {r.returncode}\n{r.stderr[-3000:]}")
            done = re.search(r"checkpoints\s+(\d+) completed", r.stderr)
            ups = [(int(b), int(ms)) for b, ms in
                   re.findall(r"uploaded to \S+: (\d+) bytes in (\d+) ms", r.stderr)]
            line = f"{tag:7s} wall {wall:6.2f} s, {done.group(1) if done else '?'} checkpoints"
            if ups:
                sizes = [b for b, _ in ups]
                times = [ms for _, ms in ups]
                line += (f"; per upload: median {statistics.median(sizes) / 1024:.0f} KiB "
                         f"(max {max(sizes) / 1024:.0f} KiB) in median {statistics.median(times):.0f} ms "
                         f"(max {max(times)} ms), {sum(sizes) / 1024 / 1024:.1f} MiB in all")
            print(line)


if __name__ == "__main__":
    main()
