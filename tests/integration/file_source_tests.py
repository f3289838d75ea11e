#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A file source over many files (issue 19): a directory or a glob read in name
order, each file as a partition at parallelism 2, a directory watched for new
files (`monitor_interval`), the load-time error for a path matching nothing,
and idleness on the replay clock, all through the real `weir` binary.

usage: file_source_tests.py --weir BIN TEST
"""
import argparse
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# How much slower this tree runs weir (WEIR_TEST_TIME_SCALE: 4 under
# ThreadSanitizer): timeouts are multiplied by it.
SCALE = max(1.0, float(os.environ.get("WEIR_TEST_TIME_SCALE") or 1))


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


class Box:
    def __init__(self, weir):
        self.weir = weir
        self.dir = tempfile.mkdtemp(prefix="weir-files-")

    def path(self, *parts):
        return os.path.join(self.dir, *parts)

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "w") as f:
            f.write(text)
        return p

    def run(self, toml_text, *flags, expect=0, name="pipeline.toml"):
        toml = self.write(name, toml_text)
        p = subprocess.run([self.weir, "run", toml, "-q", *flags], capture_output=True,
                           text=True, timeout=300 * SCALE, cwd=self.dir)
        if expect is not None and p.returncode != expect:
            raise Failure(f"weir exited {p.returncode}, expected {expect}:\n{p.stderr[-3000:]}")
        return p

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)


def records(key, start, n, step=10):
    return "".join(json.dumps({"key": key, "ts": start + i * step, "n": i}) + "\n"
                   for i in range(n))


def source_toml(path, extra="", job="", sink_path="out.jsonl", windows=False):
    text = f"""
[job]
name = "files"
status_interval = "0s"
{job}

[[source]]
name = "in"
type = "file"
path = "{path}"
format = "jsonl"
schema = {{ key = "string", ts = "timestamp", n = "int64" }}
event_time = {{ field = "ts" }}
watermark = {{ max_out_of_orderness = "100ms" }}
{extra}
"""
    if windows:
        text += """
[[operator]]
name = "counts"
type = "window"
input = "in"
key_by = ["key"]
window = { type = "tumbling", size = "1s" }
aggregate = { n = "count(*)", total = "sum(n)" }
"""
    text += f"""
[[sink]]
name = "out"
input = "{'counts' if windows else 'in'}"
type = "file"
path = "{sink_path}"
"""
    return text


def read_lines(path):
    with open(path) as f:
        return f.read().splitlines()


def test_directory(weir):
    """A directory's files in name order equal the run over their concatenation."""
    box = Box(weir)
    try:
        parts = {"b.jsonl": records("b", 5000, 300), "a.jsonl": records("a", 0, 400),
                 "c.jsonl": records("c", 9000, 200)}
        for name, text in parts.items():
            box.write(os.path.join("logs", name), text)
        box.write("logs/.hidden.jsonl", records("hidden", 0, 5))
        box.write("logs/_writing.jsonl", records("tmp", 0, 5))
        os.makedirs(box.path("logs", "sub"))
        box.write("logs/sub/d.jsonl", records("sub", 0, 5))
        box.write("all.jsonl", "".join(parts[n] for n in sorted(parts)))
        box.run(source_toml(box.path("all.jsonl"), sink_path="ref.jsonl"))
        box.run(source_toml(box.path("logs"), sink_path="dir.jsonl"))
        ref, got = read_lines(box.path("ref.jsonl")), read_lines(box.path("dir.jsonl"))
        check(len(ref) == 900, f"the reference run wrote {len(ref)} rows")
        check(got == ref, f"the directory run differs from the concatenation: {len(got)} rows "
                          f"vs {len(ref)}; first: {got[:2]}")
        # Windows too (the same watermarks as one stream).
        box.run(source_toml(box.path("all.jsonl"), sink_path="refw.jsonl", windows=True))
        box.run(source_toml(box.path("logs"), sink_path="dirw.jsonl", windows=True))
        check(read_lines(box.path("dirw.jsonl")) == read_lines(box.path("refw.jsonl")),
              "windows over the directory differ from those over the concatenation")
        print("ok: a directory's 3 files read in name order equal their concatenation")
    finally:
        box.close()


def test_glob(weir):
    box = Box(weir)
    try:
        box.write("logs/app-2.log", records("x", 2000, 50))
        box.write("logs/app-1.log", records("y", 0, 60))
        box.write("logs/app-10.log", records("z", 1000, 40))
        box.write("logs/other.log", records("o", 0, 7))
        box.write("logs/app-1.log.gz", "not json\n")
        box.write("want.jsonl", "".join(open(box.path("logs", n)).read()
                                        for n in ("app-1.log", "app-10.log", "app-2.log")))
        box.run(source_toml(box.path("want.jsonl"), sink_path="ref.jsonl"))
        box.run(source_toml(box.path("logs", "app-*.log"), sink_path="glob.jsonl"))
        got, ref = read_lines(box.path("glob.jsonl")), read_lines(box.path("ref.jsonl"))
        check(len(ref) == 150 and got == ref, f"glob run: {len(got)} rows vs {len(ref)}")
        box.run(source_toml(box.path("logs", "app-[12].log"), sink_path="set.jsonl"))
        check(len(read_lines(box.path("set.jsonl"))) == 110, "app-[12].log read the wrong files")
        box.run(source_toml(box.path("logs", "app-?.log"), sink_path="q.jsonl"))
        check(len(read_lines(box.path("q.jsonl"))) == 110, "app-?.log read the wrong files")
        print("ok: globs (*, ?, [..]) read their matches in name order")
    finally:
        box.close()


def test_partitioned(weir):
    """Each file a partition with its own watermark, at parallelism 2: files
    covering the same hours lose nothing (read as one stream, the later files'
    records would be late)."""
    box = Box(weir)
    try:
        merged = []
        for i in range(6):
            text = records(f"k{i}", i * 7, 2000)  # every file covers 0..20 s
            box.write(f"logs/server-{i}.jsonl", text)
            merged += [json.loads(l) for l in text.splitlines()]
        merged.sort(key=lambda r: r["ts"])
        box.write("merged.jsonl", "".join(json.dumps(r) + "\n" for r in merged))
        extra = 'files = "partitioned"\nparallelism = 2'
        box.run(source_toml(box.path("merged.jsonl"), sink_path="ref.jsonl", windows=True,
                            job="batch_size = 64"))
        box.run(source_toml(box.path("logs"), extra, sink_path="part.jsonl", windows=True,
                            job="batch_size = 64"))
        ref = sorted(read_lines(box.path("ref.jsonl")))
        got = sorted(read_lines(box.path("part.jsonl")))
        windows = len({(r["key"], r["ts"] // 1000) for r in merged})
        check(len(ref) == windows, f"the reference wrote {len(ref)} windows, not {windows}")
        check(got == ref, f"partitioned: {len(got)} windows vs {len(ref)}; missing "
                          f"{sorted(set(ref) - set(got))[:3]}")
        total = sum(json.loads(l)["n"] for l in got)
        check(total == 12000, f"partitioned windows count {total} records, not 12000")
        # As one stream the same directory drops late records: the per-file
        # watermarks above are what saved them.
        p = box.run(source_toml(box.path("logs"), sink_path="seq.jsonl", windows=True,
                                job="batch_size = 64"))
        seq = sum(json.loads(l)["n"] for l in read_lines(box.path("seq.jsonl")))
        check(seq < 12000, f"read as one stream nothing was late ({seq})")
        print(f"ok: 6 files as partitions at parallelism 2: every window equals the merged "
              f"run ({len(got)} windows); as one stream {12000 - seq} records were late")
    finally:
        box.close()


def test_empty_match(weir):
    box = Box(weir)
    try:
        os.makedirs(box.path("empty"))
        toml = source_toml(box.path("empty"))
        p = box.run(toml, expect=2)
        check("matches no file" in p.stderr and "pipeline.toml:" in p.stderr,
              f"no load-time error for an empty directory:\n{p.stderr}")
        line = next(l for l in p.stderr.splitlines() if "matches no file" in l)
        check(re.match(re.escape(box.path("pipeline.toml")) + r":10:8: error", line),
              f"position: {line}")
        p = box.run(source_toml(box.path("empty", "*.log")), expect=2)
        check("matches no file" in p.stderr, f"no load-time error for a glob:\n{p.stderr}")
        p = box.run(source_toml(box.path("missing")), expect=2)
        check("cannot read source file" in p.stderr, p.stderr)
        p = subprocess.run([weir, "validate", box.write("m.toml", source_toml(
            box.path("empty"), 'monitor_interval = "1s"'))], capture_output=True, text=True)
        check(p.returncode == 0, f"monitor_interval on an empty directory refused:\n{p.stderr}")
        box.write("one.jsonl", records("a", 0, 1))
        p = box.run(source_toml(box.path("one.jsonl"), 'monitor_interval = "1s"'), expect=2)
        check("applies to a directory or glob path" in p.stderr, p.stderr)
        print("ok: an empty match is a load-time error (file:line:col, exit 2) unless monitored")
    finally:
        box.close()


def test_monitor(weir):
    """Files added while weir runs are read; the job runs until stopped."""
    box = Box(weir)
    proc = None
    try:
        os.makedirs(box.path("logs"))
        box.write("logs/000.jsonl", records("a", 0, 100))
        toml = box.write("pipeline.toml", source_toml(
            box.path("logs"), 'monitor_interval = "100ms"', sink_path=box.path("out"),
            job='') + f"""
[checkpoint]
interval = "100ms"
dir = "{box.path('state')}"
""")
        log = open(box.path("weir.log"), "w")
        proc = subprocess.Popen([weir, "run", toml, "-q"], stdout=log, stderr=log)

        def committed():
            rows = []
            for part in sorted(glob.glob(box.path("out", "part-*"))):
                rows += read_lines(part)
            return rows

        def wait_for(n, what):
            deadline = time.time() + 60
            while time.time() < deadline:
                check(proc.poll() is None, f"weir ended by itself (exit {proc.returncode}): "
                                           f"{open(box.path('weir.log')).read()[-2000:]}")
                rows = committed()
                if len(rows) >= n:
                    return rows
                time.sleep(0.05)
            raise Failure(f"{what}: only {len(committed())} of {n} rows after 60 s")

        wait_for(100, "the first file")
        # New files arrive as writers should deliver them: written under a
        # hidden name, then renamed into place.
        for i, name in enumerate(["002.jsonl", "001.jsonl"]):
            box.write("logs/.incoming", records("bc"[i], 1000 * (i + 1), 50))
            os.rename(box.path("logs", ".incoming"), box.path("logs", name))
        rows = wait_for(200, "two files added while running")
        time.sleep(0.5)
        box.write("logs/.incoming", records("d", 5000, 25))
        os.rename(box.path("logs", ".incoming"), box.path("logs", "003.jsonl"))
        rows = wait_for(225, "a file added later")
        time.sleep(0.3)
        rows = committed()
        keys = [json.loads(r)["key"] for r in rows]
        check(len(rows) == 225, f"{len(rows)} rows committed, expected 225")
        # 001 before 002 when both were found by one look, else as found.
        check(keys[:100] == ["a"] * 100 and keys[200:] == ["d"] * 25
              and keys[100:200] in (["c"] * 50 + ["b"] * 50, ["b"] * 50 + ["c"] * 50),
              f"unexpected order of keys: {keys[95:105]} ... {keys[195:205]}")
        check(proc.poll() is None, "weir ended although it monitors the directory")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        print("ok: files added to a monitored directory are read while the job runs")
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait()
        box.close()


def test_idle_replay(weir):
    """Idleness on the replay clock: partition b is silent longer than
    idle_timeout by the replay clock when its next record arrives; the
    watermark has then passed a's events, so b's old record is late (dropped),
    as in Flink, whose periodic emitter marks b idle first."""
    box = Box(weir)
    try:
        def run(timeout, name):
            lines = [
                {"key": "a", "p": "a", "ts": 1000, "pt": 0},
                {"key": "b", "p": "b", "ts": 1500, "pt": 0},
                {"key": "a", "p": "a", "ts": 5000, "pt": 1000},
                {"key": "a", "p": "a", "ts": 9000, "pt": 2000},
                {"key": "b", "p": "b", "ts": 2500, "pt": 5000},  # b back after 5 s
                {"key": "a", "p": "a", "ts": 12000, "pt": 6000},
            ]
            box.write("replay.jsonl", "".join(json.dumps(l) + "\n" for l in lines))
            toml = f"""
[job]
name = "idle"
status_interval = "0s"
batch_size = 1

[[source]]
name = "in"
type = "file"
path = "{box.path('replay.jsonl')}"
format = "jsonl"
schema = {{ key = "string", p = "string", ts = "timestamp", pt = "int64" }}
event_time = {{ field = "ts" }}
partition_by = "p"
processing_time = {{ field = "pt" }}
watermark = {{ max_out_of_orderness = "0s", idle_timeout = "{timeout}" }}

[[operator]]
name = "counts"
type = "window"
input = "in"
key_by = ["key"]
window = {{ type = "tumbling", size = "1s" }}
aggregate = {{ n = "count(*)" }}

[[sink]]
name = "out"
input = "counts"
type = "file"
path = "{box.path(name)}"
"""
            box.run(toml)
            return sorted((json.loads(l)["key"], json.loads(l)["window_start"])
                          for l in read_lines(box.path(name)))

        idle = run("3s", "idle.jsonl")
        # b was silent 5 s > 3 s by the replay clock: idle before its record
        # at pt 5000 is counted; the watermark (8999 from a) passes 2500.
        check(("b", 2000) not in idle, f"b's record after its idle time was not late: {idle}")
        check(("b", 1000) in idle and ("a", 9000) in idle, f"windows missing: {idle}")
        busy = run("10s", "busy.jsonl")
        # Within the timeout b holds the watermark back at 1499: on time.
        check(("b", 2000) in busy, f"b's record within the timeout was dropped: {busy}")
        print("ok: on the replay clock a partition silent past idle_timeout is idle before "
              "the batch that brings it back")
    finally:
        box.close()


TESTS = {"directory": test_directory, "glob": test_glob, "partitioned": test_partitioned,
         "empty-match": test_empty_match, "monitor": test_monitor,
         "idle-replay": test_idle_replay}


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weir", required=True)
    ap.add_argument("test", choices=sorted(TESTS))
    args = ap.parse_args()
    try:
        TESTS[args.test](os.path.abspath(args.weir))
    except Failure as e:
        print(f"FAIL {args.test}: {e}")
        sys.exit(1)


if __name__ == "__main__":
    main()
