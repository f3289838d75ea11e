# SPDX-License-Identifier: Apache-2.0
"""The savepoint tests' job, shared with the server's savepoint test: a
rate-limited generator (COUNT rows, seq, 4 keys) with keyed tumbling windows,
a raw file sink and a window file sink (exactly-once, parallelism 2,
checkpoints every 300 ms), and how its committed output is compared."""
import json
import shutil
from pathlib import Path

from weirtest import read_jsonl, run

COUNT = 150_000

SOURCE = """
[[source]]
name = "gen"
type = "generator"
parallelism = 1
count = {count}
rate = {rate}
fields = {{ seq = "seq", key = "seq % 4", ts = "seq * 10" }}
event_time = {{ field = "ts" }}
"""

WINDOW = """
[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)", last = "max(seq)" }}

[[sink]]
name = "windows"
input = "per_key"
type = "file"
path = "{out}/windows.jsonl"
"""

RAW = """
[[sink]]
name = "raw"
input = "gen"
type = "file"
path = "{out}/raw.jsonl"
"""

# An operator the first run did not have (a running count and its sink).
ADDED = """
[[operator]]
name = "per_key_count"
type = "running_count"
input = "gen"
key_by = ["key"]

[[sink]]
name = "counts"
input = "per_key_count"
type = "file"
path = "{out}/counts.jsonl"
"""


def pipeline(work, rate, parts=("window", "raw")):
    text = f"""
[job]
name = "savepoint-test"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "300ms"
dir = "{work}/state"
"""
    text += SOURCE.format(count=COUNT, rate=rate)
    out = f"{work}/out"
    if "window" in parts:
        text += WINDOW.format(out=out)
    if "raw" in parts:
        text += RAW.format(out=out)
    if "added" in parts:
        text += ADDED.format(out=out)
    path = work / "pipeline.toml"
    path.write_text(text)
    return path


def committed(dir_):
    """Every row of the committed parts of a transactional file sink."""
    rows = []
    for p in sorted(Path(dir_).glob("part-*.jsonl")):
        rows += read_jsonl(p)
    return rows


def key_of(r):
    return json.dumps(r, sort_keys=True)


def run_job(weir, toml, *extra, expect=0):
    """`weir run toml extra` to completion (the test fails on another exit
    code than `expect`)."""
    return run([weir, "run", toml, *extra], timeout=300, expect=expect)


def uninterrupted(weir, root):
    """The raw and window rows of one run without a stop, in `root/ref`."""
    ref = root / "ref"
    ref.mkdir()
    run_job(weir, pipeline(ref, rate=1_000_000))
    return committed(ref / "out/raw.jsonl"), committed(ref / "out/windows.jsonl")


def moved(savepoint, root):
    """The savepoint copied elsewhere and the original deleted: it must be
    self-contained."""
    copy = root / "copied-savepoint"
    shutil.copytree(savepoint, copy)
    shutil.rmtree(savepoint)
    return copy


def same(got, want, what):
    assert sorted(map(key_of, got)) == sorted(map(key_of, want)), (
        f"{what} differs from the uninterrupted run ({len(got)} vs {len(want)} rows)")
