# SPDX-License-Identifier: Apache-2.0
"""The `checkpoints` line of `weir run`'s summary against what the checkpoint
directory holds. The real `weir` binary, real LMDB files.

A paced generator (parallelism 2, about 0.6 s of input) feeds a keyed window
and an exactly-once file sink, with checkpoints every 40 ms: each run takes
a few periodic checkpoints and ends with the final checkpoint that commits
the sink's last transaction (FLIP-147). The job runs RUNS times with --fresh
on the same [checkpoint] dir. After each run:

- `last #L` is the newest complete checkpoint that `weir checkpoints list`
  shows: no checkpoint completed unseen by the summary (one triggered after
  the final one and committed while the job ended);
- from the second run on the summary says that its ids continue after the
  highest id the directory held, which is at least the previous run's
  `last #`, and every id the previous run handed out is accounted for:
  the next run continues after at most the previous one's
  `#after + completed + aborted`;
- at least one checkpoint completed, the window rows are all committed once.

The test function is test_summary_ids.
"""
import re
import shutil

from weirtest import run
from weirtest.exactly_once import committed_parts, complete_checkpoints

RUNS = 4
RECORDS = 6000
KEYS = 50

PIPELINE = """
[job]
name = "summary"
parallelism = 2
status_interval = "0s"

[checkpoint]
interval = "40ms"
dir = "{work}/state"

[[source]]
name = "gen"
type = "generator"
count = {records}
rate = 10000
seed = 3
fields = {{ id = "seq", k = "seq % {keys}", ts = "to_timestamp(1600000000000 + seq)" }}
event_time = {{ field = "ts" }}

[[operator]]
name = "per_key"
type = "window"
input = "gen"
key_by = ["k"]
window = {{ type = "tumbling", size = "1d" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "per_key"
type = "file"
path = "{work}/out/windows"
"""

SUMMARY = re.compile(
    r"^  checkpoints +(?P<completed>[\d,]+) completed"
    r"(?:, (?P<aborted>[\d,]+) aborted)?(?: \((?P<failed>[\d,]+) failed\))?"
    r"(?:, last #(?P<last>\d+))?"
    r"(?:; ids continue after #(?P<after>\d+), the highest in (?P<dir>\S+))?$",
    re.M)


def test_summary_ids(weir, work):
    toml = work / "pipeline.toml"
    toml.write_text(PIPELINE.format(work=work, records=RECORDS, keys=KEYS))
    state = str(work / "state")
    previous = None  # (after, completed, aborted, last) of the run before
    for n in range(1, RUNS + 1):
        shutil.rmtree(work / "out", ignore_errors=True)
        p = run([weir, "run", toml, "--fresh"], what=f"run {n}")
        m = SUMMARY.search(p.stderr)
        assert m, f"run {n}: no checkpoints line of the expected form:\n{p.stderr[-2000:]}"
        line = m.group(0).strip()
        completed = int(m.group("completed").replace(",", ""))
        aborted = int((m.group("aborted") or "0").replace(",", ""))
        last = int(m.group("last") or 0)
        after = int(m.group("after") or 0)
        assert completed >= 1 and last > after, (
            f"run {n}: '{line}': no checkpoint of this run completed")
        ids = complete_checkpoints(weir, state)
        assert ids and max(ids) == last, (
            f"run {n}: '{line}', but the directory's newest complete checkpoint is "
            f"#{max(ids) if ids else 0} (complete: {ids})")
        assert last <= after + completed + aborted, (
            f"run {n}: '{line}': last #{last} beyond the {completed + aborted} ids "
            f"completed or aborted after #{after}")
        if previous is None:
            assert after == 0, f"run {n}: '{line}': a fresh directory, yet ids continue"
        else:
            p_after, p_completed, p_aborted, p_last = previous
            assert m.group("dir") == state, (
                f"run {n}: '{line}': ids continue, but not said after which of {state}")
            assert p_last <= after <= p_after + p_completed + p_aborted, (
                f"run {n}: '{line}': continues after #{after}; the run before ended "
                f"at #{p_last} and accounted for ids up to "
                f"#{p_after + p_completed + p_aborted}")
        rows = committed_parts(work, ["windows"])["windows"]
        assert len(rows) == KEYS, f"run {n}: {len(rows)} window rows committed, not {KEYS}"
        print(f"run {n}: {line}; complete in the directory: {ids}")
        previous = (after, completed, aborted, last)
