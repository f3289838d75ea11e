# SPDX-License-Identifier: Apache-2.0
"""What weir's end-to-end tests share: waits with a deadline, the real
binary run to completion or kept running, JSON Lines files, free ports.

The fixtures that hand these to a test (the binaries, a temporary
directory, processes that are always stopped, the real servers) are in
tests/conftest.py; docs/internals/testing.md shows how a test uses them.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

# How much slower this tree runs weir: WEIR_TEST_TIME_SCALE, set by CTest
# from the CMake cache (4 in the ThreadSanitizer tree, 1 otherwise).
# Timeouts and waits are multiplied by it.
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


def wait_until(condition, what, timeout=30.0, interval=0.05, scaled=True):
    """Calls `condition()` every `interval` seconds until it returns a true
    value, and returns that value; fails the test once `timeout` seconds
    (times SCALE, unless `scaled` is false: a bound the test measures) have
    passed, naming `what` was waited for."""
    limit = timeout * SCALE if scaled else timeout
    deadline = time.monotonic() + limit
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {limit:g} s waiting for {what}")
        time.sleep(interval)


def tail(text, chars=3000):
    """The last `chars` characters of a process's output, for a message."""
    text = text or ""
    return text if len(text) <= chars else "..." + text[-chars:]


def run(argv, timeout=120.0, expect=0, what=None, **kw):
    """Runs `argv` to completion (text output captured) and returns the
    CompletedProcess; the test fails when it exits with another code than
    `expect` (None: any code) or runs longer than `timeout` s (times SCALE)."""
    argv = [str(a) for a in argv]
    kw.setdefault("capture_output", True)
    kw.setdefault("text", True)
    p = subprocess.run(argv, timeout=timeout * SCALE, **kw)
    if expect is not None:
        assert p.returncode == expect, (
            f"{what or ' '.join(argv[:3])}: exited {p.returncode}, expected {expect}:\n"
            f"{tail(p.stderr)}")
    return p


def file_size_limit(fsize):
    """A preexec_fn for subprocess that limits the files the child writes to
    `fsize` bytes (RLIMIT_FSIZE, SIGXFSZ ignored): beyond it write() fails
    with EFBIG as it fails with ENOSPC on a full disk, instead of the
    process being killed. None for no limit."""
    if fsize is None:
        return None

    def limit():
        import resource
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, resource.RLIM_INFINITY))
    return limit


def read_jsonl(path, missing_ok=False):
    """The rows of a JSON Lines file, blank lines skipped (`missing_ok`: a
    file that does not exist has none)."""
    if missing_ok and not os.path.exists(path):
        return []
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def read_lines(path):
    """The lines of a text file, without their line ends."""
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def write_jsonl(path, rows):
    """Writes `rows` to `path`, one JSON object a line; returns the path."""
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return path


def first_difference(got, want):
    """Where two lists first differ, for a failure message."""
    for i, (g, w) in enumerate(zip(got, want)):
        if g != w:
            return f"row {i}: got {g}, expected {w}"
    return f"{len(got)} rows, expected {len(want)}"


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Sandbox:
    """A test's directory with the weir binary run in it (the `sandbox`
    fixture): files written by relative path, `weir` started with the
    directory as its working directory."""

    def __init__(self, weir, work):
        self.weir = weir
        self.work = Path(work)

    def path(self, *parts):
        """The path of `parts` under the directory, a str."""
        return os.path.join(self.work, *parts)

    def write(self, rel, text):
        """Writes `text` to `rel` (folders made as needed); returns its path."""
        p = Path(self.path(rel))
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        return str(p)

    def run(self, *weir_args, expect=0, toml_text=None, timeout=300.0, **kw):
        """`weir weir_args` in the directory to completion (`toml_text`, when
        given, written to pipeline.toml first); the test fails on another
        exit code than `expect` (None: any), with both outputs' tails."""
        if toml_text is not None:
            self.write("pipeline.toml", toml_text)
        argv = [self.weir, *map(str, weir_args)]
        p = subprocess.run(argv, cwd=self.work, capture_output=True, text=True,
                           timeout=timeout * SCALE, **kw)
        if expect is not None:
            assert p.returncode == expect, (
                f"{' '.join(argv)} exited {p.returncode}, expected {expect}\n"
                f"stdout:\n{tail(p.stdout)}\nstderr:\n{tail(p.stderr)}")
        return p

    def run_toml(self, toml_text, *flags, expect=0, name="pipeline.toml", timeout=300.0):
        """Writes `toml_text` to `name` and runs `weir run name -q flags`."""
        toml = self.write(name, toml_text)
        return self.run("run", toml, "-q", *flags, expect=expect, timeout=timeout)


class Processes:
    """The processes a test starts (`weir run`, `weir serve`, a client):
    whatever is still running when the test ends is SIGKILLed and reaped,
    whether the test passed or failed. The `procs` fixture hands one out."""

    def __init__(self, work):
        self.work = Path(work)
        self.started = []

    def start(self, argv, log=None, **kw):
        """Starts `argv` (stdout discarded unless given); stderr goes to
        `log` (a path, relative to the test's directory) when named. The
        Popen carries `log_path` (or None)."""
        argv = [str(a) for a in argv]
        kw.setdefault("stdout", subprocess.DEVNULL)
        log_path = log_file = None
        if log is not None:
            log_path = self.work / log
            log_file = open(log_path, "w")
            kw.setdefault("stderr", log_file)
        p = subprocess.Popen(argv, **kw)
        p.log_path = log_path
        p.log_file = log_file
        self.started.append(p)
        return p

    def kill(self, p, sig=signal.SIGKILL):
        """Sends `sig` to `p` if it still runs and waits for it; returns its
        exit code."""
        if p.poll() is None:
            p.send_signal(sig)
        return p.wait(timeout=120 * SCALE)

    def close(self):
        for p in self.started:
            if p.poll() is None:
                p.kill()
            try:
                p.wait(timeout=60)
            except subprocess.TimeoutExpired:
                pass
            if p.log_file is not None:
                p.log_file.close()


def log_text(p):
    """What a process started with `log=` has written to stderr so far."""
    return Path(p.log_path).read_text(errors="replace") if p.log_path else ""
