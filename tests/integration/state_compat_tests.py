# SPDX-License-Identifier: Apache-2.0
"""State compatibility on restore (Flink's TypeSerializerSnapshot#
resolveSchemaCompatibility): a windowed job checkpoints, is stopped with
SIGTERM (state kept in [checkpoint] dir, or written to a savepoint), the
pipeline is edited and run again on that state. An edit that changes the
window's state layout (another aggregate function, an added aggregate,
another window kind) refuses the start with exit 1 before any record is
processed, naming the operator, both layouts and the ways out; edits that
leave it alone (none, a changed sink, a changed filter) restore."""

import re
import signal
import subprocess

import pytest

from weirtest import SCALE, wait_until

BASE = dict(aggregate='n = "count(*)"', window='type = "tumbling", size = "1h"',
            where="score >= 0.0", out="out.jsonl")


def pipeline(aggregate, window, where, out):
    return f"""
[job]
name = "upg"
[checkpoint]
dir = "state"
interval = "200ms"
[[source]]
name = "gen"
type = "generator"
rate = 2000
fields = {{ ts = "to_timestamp(1600000000000 + seq * 10)", user = "rand_int(seq, 1, 0, 99)", score = "rand_float(seq, 2)" }}
event_time = {{ field = "ts" }}
[[operator]]
name = "keep"
type = "filter"
input = "gen"
where = "{where}"
[[operator]]
name = "per_user"
type = "window"
input = "keep"
key_by = ["user"]
window = {{ {window} }}
aggregate = {{ {aggregate} }}
[[sink]]
name = "out"
type = "file"
input = "per_user"
path = "{out}"
"""


def files(d):
    """{relative path: bytes} of every file under `d` (the file sink's directory)."""
    return {str(f.relative_to(d)): f.read_bytes() for f in d.rglob("*") if f.is_file()}


def checkpoint_ids(weir, work):
    p = subprocess.run([weir, "checkpoints", "list", "state"], cwd=work,
                       capture_output=True, text=True, timeout=60 * SCALE)
    return [int(m.group(1)) for m in re.finditer(r"^(\d+)\s+complete", p.stdout, re.M)]


def run_until_checkpoint(weir, work, procs, toml, *flags, after=0):
    """Starts `toml`, waits for a complete checkpoint with an id above
    `after`, stops with SIGTERM (graceful: exit 143); returns the stderr."""
    (work / "pipeline.toml").write_text(toml)
    proc = procs.start([weir, "run", "pipeline.toml", *flags], cwd=work,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_until(lambda: proc.poll() is not None
               or any(i > after for i in checkpoint_ids(weir, work)),
               f"a checkpoint after {after}", 30)
    assert proc.poll() is None, f"weir ended early (exit {proc.returncode}):\n{proc.stderr.read()[-2000:]}"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60 * SCALE)
    assert proc.returncode == 143, f"exit {proc.returncode} after SIGTERM:\n{err[-2000:]}"
    return err


def first_run(weir, work, procs, savepoint):
    flags = ["--savepoint-on-stop", "sp"] if savepoint else []
    run_until_checkpoint(weir, work, procs, pipeline(**BASE), *flags)
    assert checkpoint_ids(weir, work), "no checkpoint after the first run"
    return ["--from-savepoint", "sp"] if savepoint else []


INCOMPATIBLE = {
    "changed-function": (dict(aggregate='n = "sum(score)"'), "sum(float64)"),
    "added-aggregate": (dict(aggregate='n = "count(*)", s = "sum(score)"'),
                        "count(*), sum(float64)"),
    "changed-window-kind": (dict(window='type = "sliding", size = "1h", slide = "30m"'),
                            "sliding_event_time_windows"),
}


@pytest.mark.parametrize("savepoint", [False, True], ids=["checkpoint", "savepoint"])
@pytest.mark.parametrize("case", sorted(INCOMPATIBLE))
def test_incompatible_refused(weir, work, procs, case, savepoint):
    restore = first_run(weir, work, procs, savepoint)
    ids = checkpoint_ids(weir, work)
    out_before = files(work / "out.jsonl")
    change, now = INCOMPATIBLE[case]
    (work / "pipeline.toml").write_text(pipeline(**{**BASE, **change}))
    p = subprocess.run([weir, "run", "pipeline.toml", *restore], cwd=work,
                       capture_output=True, text=True, timeout=60 * SCALE)
    err = p.stderr
    assert p.returncode == 1, f"exit {p.returncode}, expected a refusal (1):\n{err[-3000:]}"
    for words in ("operator 'per_user'", "incompatible", "count(*);", now, "--fresh",
                  "--allow-non-restored-state", "savepoint sp" if savepoint else "checkpoint "):
        assert words in err, f"the refusal does not say {words!r}:\n{err[-3000:]}"
    assert "records read" not in err or re.search(r"records read\D+0\b", err), (
        f"records were processed before the refusal:\n{err[-3000:]}")
    assert files(work / "out.jsonl") == out_before, "the refused run changed the output"
    assert checkpoint_ids(weir, work) == ids, "the refused run changed the checkpoints"
    # The ways out: start over, or rename the operator and drop its state.
    run_until_checkpoint(weir, work, procs, pipeline(**{**BASE, **change}), "--fresh",
                         after=max(ids))
    renamed = pipeline(**{**BASE, **change}).replace('"per_user"', '"per_user_v2"')
    if savepoint:
        run_until_checkpoint(weir, work, procs, renamed, *restore,
                             "--allow-non-restored-state", after=max(checkpoint_ids(weir, work)))


COMPATIBLE = {
    "unchanged": {},
    "changed-sink": dict(out="other.jsonl"),
    "changed-filter": dict(where="score >= 0.5"),
}


@pytest.mark.parametrize("savepoint", [False, True], ids=["checkpoint", "savepoint"])
@pytest.mark.parametrize("case", sorted(COMPATIBLE))
def test_compatible_restored(weir, work, procs, case, savepoint):
    restore = first_run(weir, work, procs, savepoint)
    last = max(checkpoint_ids(weir, work))
    err = run_until_checkpoint(weir, work, procs, pipeline(**{**BASE, **COMPATIBLE[case]}),
                               *restore, after=last)
    said = "restoring from savepoint sp" if savepoint else f"restoring from checkpoint {last}"
    assert said in err, f"the second run does not say {said!r}:\n{err[-2000:]}"
    assert "incompatible" not in err, f"a compatible change was refused:\n{err[-2000:]}"


def counting(key):
    return pipeline(**BASE).replace('''[[operator]]
name = "per_user"
type = "window"
input = "keep"
key_by = ["user"]''', f'''[[operator]]
name = "counts"
type = "running_count"
input = "keep"
key_by = ["{key}"]
[[operator]]
name = "per_user"
type = "window"
input = "keep"
key_by = ["user"]''')


def test_running_count_key_type(weir, work, procs):
    """A running_count's state is keyed by its key types: keyed by user
    (int64), then by score (float64), is refused; the same keys restore."""
    run_until_checkpoint(weir, work, procs, counting("user"))
    last = max(checkpoint_ids(weir, work))
    (work / "pipeline.toml").write_text(counting("score"))
    p = subprocess.run([weir, "run", "pipeline.toml"], cwd=work, capture_output=True,
                       text=True, timeout=60 * SCALE)
    assert p.returncode == 1, f"exit {p.returncode}, expected a refusal (1):\n{p.stderr[-3000:]}"
    for words in ("operator 'counts'", "holds [count; keys (int64)]",
                  "now has [count; keys (float64)]"):
        assert words in p.stderr, f"the refusal does not say {words!r}:\n{p.stderr[-3000:]}"
    err = run_until_checkpoint(weir, work, procs, counting("user"), after=last)
    assert f"restoring from checkpoint {last}" in err, err[-2000:]
