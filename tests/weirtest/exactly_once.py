# SPDX-License-Identifier: Apache-2.0
"""Exactly-once across SIGKILLs and restores: a checkpointed job in a test's
directory, its committed output, the crash loop and the rescale that the
checkpoint, enrich, join and pattern tests share.

A job writes through transactional file sinks into `work/out/<name>/`
(committed parts `part-*`) and checkpoints into `work/state`; a test
compares what a reader of the output sees (`committed()`) after kills with
one uninterrupted run.
"""
from __future__ import annotations

import os
import random
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from weirtest import SCALE, run


def committed_parts(work, names):
    """The committed rows of the exactly-once file sinks `work/out/<name>`,
    sorted, by name: what a reader of those directories sees."""
    out = {}
    for name in names:
        rows = []
        for part in sorted((Path(work) / "out" / name).glob("part-*")):
            rows += part.read_text().splitlines()
        out[name] = sorted(rows)
    return out


def compare(got, want, what, fields):
    """Fails the test unless `got[f] == want[f]` for every output `f` of
    `fields`, saying how many rows are missing, duplicated or unexpected."""
    for name in fields:
        g, w = got[name], want[name]
        if g != w:
            missing = sorted(set(w) - set(g))
            unexpected = sorted(set(g) - set(w))
            extra = len(g) - len(set(g))
            raise AssertionError(
                f"{what}: {name} differs from the uninterrupted run: {len(g)} rows vs "
                f"{len(w)}, {len(missing)} missing, {extra} duplicated\n"
                f"  first missing: {missing[:3]}\n  first unexpected: {unexpected[:3]}")


class CheckpointedJob:
    """A job in the directory `work`: a subclass writes its pipeline
    (`write(parallelism)` returns the TOML's path, checkpoints in
    `work/state`) and names its transactional file sinks in OUTPUTS."""

    OUTPUTS: tuple = ()

    def __init__(self, weir, work):
        self.weir = weir
        self.work = str(work)

    def write_toml(self, text):
        path = os.path.join(self.work, "pipeline.toml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def run(self, toml, *flags, expect=0):
        """`weir run toml flags` to completion (the test fails on another
        exit code than `expect`); the CompletedProcess."""
        return run([self.weir, "run", toml, *flags], timeout=600, expect=expect)

    def reset(self):
        """Removes the output and the checkpoints."""
        for d in ("out", "state"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def checkpoint_ids(self):
        """The ids `weir checkpoints list` shows for `work/state`."""
        p = run([self.weir, "checkpoints", "list", os.path.join(self.work, "state")],
                timeout=60, expect=None)
        return [int(line.split()[0]) for line in p.stdout.splitlines()
                if line.split() and line.split()[0].isdigit()]

    def committed(self):
        """What a reader of the output directories sees, by sink name."""
        return committed_parts(self.work, self.OUTPUTS)


def crash_loop(job, want, seed, kills, fields, window=(0.05, 0.6), reset=False):
    """SIGKILLs `job` (its `write(2)` pipeline) at random moments and
    restarts it on the same directory until `kills` kills were survived;
    each time a run completes, its committed output must equal `want` (the
    uninterrupted run's, for `fields`) and a new cycle starts fresh
    (`reset`: with the output and checkpoints removed first).

    A kill lands `window` seconds (uniform, times SCALE) after the start,
    widened by a tenth per kill since the last completed run, so a loaded
    machine still lets a run finish. The last kill wanted waits for a
    checkpoint while no run has resumed yet; after twice the kills wanted,
    a run that resumed is left to complete, so the test's time does not
    grow with the machine's load. Returns the kills, runs and resumed runs."""
    job.reset()
    job.local = "true"
    toml = job.write(2)
    rnd = random.Random(seed)
    done = runs = restores = 0
    streak = 0  # kills since the last completed run
    fresh = True
    while True:
        assert runs < 6 * kills + 20, (
            f"{runs} runs and only {done} of {kills} kills: the runs end before their kills")
        argv = [job.weir, "run", toml] + (["--fresh"] if fresh else [])
        resumable = not fresh and bool(job.checkpoint_ids())
        fresh = False
        log_path = os.path.join(job.work, f"run-{runs}.log")
        runs += 1
        with open(log_path, "w") as log:
            p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
            try:
                # A random moment: where the kill lands is what is tested.
                time.sleep(rnd.uniform(*window) * SCALE * (1 + streak / 10))
                if restores == 0 and done + 1 >= kills:
                    poll(lambda: p.poll() is not None or job.checkpoint_ids(), 60)
                if p.poll() is None and (done < 2 * kills or not resumable):
                    p.send_signal(signal.SIGKILL)
                    p.wait()
                    done += 1
                    streak += 1
                    log.write("\n[test] SIGKILL\n")
                    restores += resumable
                    continue
                p.wait(timeout=600 * SCALE)
            finally:
                if p.poll() is None:
                    p.kill()
                    p.wait()
        err = Path(log_path).read_text()
        restores += resumable
        assert p.returncode == 0, f"a run between kills exited {p.returncode}:\n{err[-2000:]}"
        compare(job.committed(), want, f"after {done} kills ({runs} runs)", fields)
        if resumable:
            assert "restored from #" in err, (
                f"the completing run did not resume from a checkpoint:\n{err[-2000:]}")
        if done >= kills:
            break
        if reset:
            job.reset()
        fresh = True
        streak = 0
    assert restores > 0, "no run ever resumed from a checkpoint"
    print(f"ok: {done} SIGKILLs in {runs} runs ({restores} resumed), committed output "
          "equals the uninterrupted run ("
          + ", ".join(f"{len(want[f])} {f} rows" for f in fields) + ")")
    return done, runs, restores


def poll(condition, timeout, interval=0.02):
    """Calls `condition()` until it is true or `timeout` s (times SCALE)
    passed; returns its last value (no failure: the caller decides)."""
    deadline = time.monotonic() + timeout * SCALE
    while True:
        value = condition()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def paced(toml, rate):
    """Rewrites `toml` so that each file source reads `rate` rows per second
    (the file source's `rate` key): a run then outlives a few checkpoints on
    any machine, however fast. Returns the path."""
    out, section = [], None
    with open(toml) as f:
        for line in f:
            stripped = line.strip()
            if stripped.startswith("["):
                section = stripped
            out.append(line)
            if section == "[[source]]" and re.fullmatch(r'type\s*=\s*"file"', stripped):
                out.append(f"rate = {rate}\n")
    with open(toml, "w") as f:
        f.writelines(out)
    return toml


def kill_after_checkpoints(job, toml, count, seconds, what):
    """Runs `toml` fresh and SIGKILLs it once `count` checkpoints have
    completed and `seconds` have passed (it must still be running then).
    Returns the checkpoint ids it left."""
    p = subprocess.Popen([job.weir, "run", toml, "--fresh", "-q"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        started = time.monotonic()
        poll(lambda: p.poll() is not None or (
            len(job.checkpoint_ids()) >= count and time.monotonic() >= started + seconds), 60)
        assert p.poll() is None, f"{what} ended before {count} checkpoints completed"
    finally:
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
        p.wait()
    ids = job.checkpoint_ids()
    assert len(ids) >= count, f"{what} left {len(ids)} checkpoints, expected {count}"
    return ids


def rescale_4_to_2(job, rate):
    """Runs `job` at parallelism 4 with its file sources paced at `rate` rows/s,
    SIGKILLs it once two checkpoints have completed and a second has passed,
    then runs it at parallelism 2 to the end, which must restore from the last
    of them. Returns that run and the checkpoint ids the first left."""
    ids = kill_after_checkpoints(job, paced(job.write(4), rate), 2, 1, "the parallelism-4 run")
    r = job.run(job.write(2))
    assert "restored from #" in r.stderr, (
        f"the parallelism-2 run did not restore:\n{r.stderr[-2000:]}")
    return r, ids


def complete_checkpoints(weir, state, required=True):
    """The ids of the complete checkpoints in the store `state`, as `weir
    checkpoints list` shows them (it opens the store read-only: safe on a
    running job). `required`: the listing must succeed; otherwise a store
    not there yet has none."""
    p = run([weir, "checkpoints", "list", state], timeout=60, expect=0 if required else None,
            what="weir checkpoints list")
    ids = []
    for line in p.stdout.splitlines():
        words = line.split()
        if len(words) > 1 and words[0].isdigit() and words[1] == "complete":
            ids.append(int(words[0]))
    return ids
