# SPDX-License-Identifier: Apache-2.0
"""Checkpoint benchmarks (`bench/run checkpoint`, also `bench/checkpoint/run`); reported,
never asserted.

  bench/run checkpoint [all|throughput|snapshot|recovery] [options]

Builds nothing: it expects a Release build of `weir` and `weir_checkpoint_bench`
(default build/, override with --build-dir or --weir/--bench), e.g.
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
  cmake --build build --target weir-bench weir_checkpoint_bench
Inputs and checkpoint directories go to a temporary directory (--keep keeps it).

  throughput  A keyed job over --records generated records (for each of
              --keys distinct key counts, default 10k and 100k): a tumbling
              10 s window (count, sum) and a running_count
              per key, blackhole sinks, parallelism 2. Run --pairs times
              without and with `[checkpoint] interval = "1s"`, alternately;
              reports records/s (records / job duration from the summary) and
              records per CPU second, and the median ratio with/without
              (target >= 0.95), plus the checkpoints' durations and sizes
              from `weir checkpoints list`.
  snapshot    weir_checkpoint_bench at --snapshot-keys (default 1M and 10M
              int64 value states in one subtask of 128 key groups):
              snapshot() pause (target < 1 ms), the first writes after it
              (copy-on-write), serialization of every key group, the LMDB
              write + manifest commit (a checkpoint's duration and size), and
              reading it back into a fresh backend.
  recovery    For each --sizes-mib: a job whose keyed state is about that big
              (a running_count keyed by a 1000-byte string, so 1 KiB per key),
              checkpointing every second, is SIGKILLed once a checkpoint holds
              all keys, then restarted on the same dir; reports the time from
              process start to "restoring from checkpoint" and to the first
              output row (stdout sink, flushed per batch), and peak RSS. The
              micro-benchmark also restores 1 GiB of 1 KiB string values
              directly (--restore-mib) for the state part alone.
Options: --json PATH writes every figure; --quick shrinks everything (a smoke run).
"""

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from . import charts
from .common import (ROOT, add_family_options, log, popen, run, run_header, toml_pipeline,
                     write_results)


# -- throughput -----------------------------------------------------------------

def throughput_toml(records, max_key, checkpoint_dir=None):
    """The throughput job: a tumbling window (count, sum) and a running_count per key over
    generated records, blackhole sinks, parallelism 2; checkpoints every second (3
    retained) into checkpoint_dir when given."""
    job = [("job", {"name": "cp-throughput", "parallelism": 2, "status_interval": "0s"})]
    if checkpoint_dir is not None:
        job.append(("checkpoint", {"interval": "1s", "dir": str(checkpoint_dir), "retain": 3}))
    return toml_pipeline(
        *job,
        ("source", {"name": "input", "type": "generator", "count": records, "seed": 1,
                    "fields": {"key": f"rand_int(seq, 1, 0, {max_key})",
                               "ts": "to_timestamp(1600000000000 + seq / 100)",
                               "value": "rand_int(seq, 2, 1, 100)"},
                    "event_time": {"field": "ts"},
                    "watermark": {"max_out_of_orderness": "0s"}}),
        ("operator", {"name": "per_key", "type": "window", "input": "input", "key_by": ["key"],
                      "window": {"type": "tumbling", "size": "10s"},
                      "aggregate": {"n": "count(*)", "total": "sum(value)"}}),
        ("operator", {"name": "running", "type": "running_count", "input": "input",
                      "key_by": ["key"]}),
        ("sink", {"name": "windows_out", "input": "per_key", "type": "blackhole"}),
        ("sink", {"name": "running_out", "input": "running", "type": "blackhole"}))


def parse_checkpoint_list(text):
    """Rows of `weir checkpoints list`: id, duration ms, size bytes."""
    rows = []
    units = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30}
    for line in text.splitlines():
        m = re.match(r"\s*(\d+)\s+complete\s+\S+\s+(\d+) ms\s+(\d+) ms\s+([\d.]+) (B|KiB|MiB|GiB)",
                     line)
        if m:
            rows.append({"id": int(m.group(1)), "duration_ms": int(m.group(2)),
                         "alignment_ms": int(m.group(3)),
                         "size_bytes": float(m.group(4)) * units[m.group(5)]})
    return rows


def throughput(args, work):
    return [throughput_one(args, work, keys) for keys in args.keys]


def throughput_one(args, work, keys):
    log(f"throughput: {args.records:,} records, {keys:,} keys, {args.pairs} pairs "
        "(without, with checkpoints every 1 s), alternately")
    base = work / "throughput.toml"
    cp = work / "throughput-cp.toml"
    state = work / "throughput-state"
    base.write_text(throughput_toml(args.records, keys - 1))
    cp.write_text(throughput_toml(args.records, keys - 1, state))
    runs = {"off": [], "on": []}
    ratios, cpu_ratios = [], []
    checkpoints = []
    for i in range(args.pairs):
        pair = {}
        # Alternate which goes first, so a drift in machine load hits both.
        order = ["off", "on"] if i % 2 == 0 else ["on", "off"]
        for mode in order:
            argv = [args.weir, "run", str(cp if mode == "on" else base)]
            if mode == "on":
                shutil.rmtree(state, ignore_errors=True)
                argv.append("--fresh")
            p = run(argv, check=False)
            err, wall, cpu = p.stderr, p.wall_seconds, p.cpu_seconds
            if p.returncode != 0:
                raise SystemExit(f"weir failed ({p.returncode}):\n{err[-2000:]}")
            m = re.search(r"finished in ([\d.]+) s", err)
            secs = float(m.group(1)) if m else wall
            m = re.search(r"checkpoints\s+(\d[\d,]*) completed", err)
            completed = int(m.group(1).replace(",", "")) if m else 0
            r = {"seconds": secs, "wall": round(wall, 2), "cpu_seconds": round(cpu, 2),
                 "records_per_s": round(args.records / secs),
                 "records_per_cpu_s": round(args.records / cpu), "checkpoints": completed,
                 "loadavg": round(os.getloadavg()[0], 2)}
            if mode == "on":
                lst = run([args.weir, "checkpoints", "list", state], check=False)
                r["retained"] = parse_checkpoint_list(lst.stdout)
                checkpoints += r["retained"]
            runs[mode].append(r)
            pair[mode] = r
            log(f"  {mode:3}: {r['records_per_s']:>9,} rec/s  {secs:6.2f} s  cpu {cpu:6.2f} s  "
                f"{completed} checkpoints  (load {r['loadavg']})")
        ratios.append(pair["on"]["records_per_s"] / pair["off"]["records_per_s"])
        cpu_ratios.append(pair["on"]["records_per_cpu_s"] / pair["off"]["records_per_cpu_s"])
    res = {
        "records": args.records, "keys": keys, "pairs": args.pairs, "runs": runs,
        "ratios": [round(x, 3) for x in ratios],
        "median_ratio": round(statistics.median(ratios), 3),
        "cpu_ratios": [round(x, 3) for x in cpu_ratios],
        "median_cpu_ratio": round(statistics.median(cpu_ratios), 3),
    }
    if checkpoints:
        res["checkpoint_duration_ms_median"] = statistics.median(
            c["duration_ms"] for c in checkpoints)
        res["checkpoint_size_mib_median"] = round(
            statistics.median(c["size_bytes"] for c in checkpoints) / 2**20, 1)
    log(f"  median ratio with/without checkpoints: {res['median_ratio']} (per pair "
        f"{res['ratios']}); per CPU second: {res['median_cpu_ratio']}")
    return res


# -- snapshot micro-benchmark ----------------------------------------------------

def snapshot(args, work):
    out = {}
    keys = ",".join(str(k) for k in args.snapshot_keys)
    log(f"snapshot: weir_checkpoint_bench --keys {keys}")
    p = run([args.bench, "--dir", work / "micro", "--keys", keys], check=False)
    if p.returncode != 0:
        raise SystemExit(f"weir_checkpoint_bench failed:\n{p.stderr[-2000:]}")
    log("  " + p.stderr.strip().replace("\n", "\n  "))
    out["int64"] = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    if args.restore_mib > 0:
        n = args.restore_mib * 1024  # 1 KiB values
        log(f"snapshot: weir_checkpoint_bench --keys {n} --value-bytes 1000 (about "
            f"{args.restore_mib} MiB of state)")
        p = run([args.bench, "--dir", work / "micro", "--keys", n, "--value-bytes", "1000",
                 "--no-cow-pass", "--snapshots", "5"], check=False)
        if p.returncode != 0:
            raise SystemExit(f"weir_checkpoint_bench failed:\n{p.stderr[-2000:]}")
        log("  " + p.stderr.strip().replace("\n", "\n  "))
        out["string_1000"] = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    return out


# -- recovery ----------------------------------------------------------------------

def recovery_toml(checkpoint_dir, input_path, keys, key_bytes):
    """The recovery job: a running_count keyed by a key_bytes-long string of the input's
    ids modulo keys, checkpointing every second (1 retained), each count to stdout."""
    return toml_pipeline(
        ("job", {"name": "cp-recovery", "parallelism": 2, "status_interval": "250ms"}),
        ("checkpoint", {"interval": "1s", "dir": str(checkpoint_dir), "retain": 1}),
        ("source", {"name": "input", "type": "file", "path": str(input_path),
                    "format": "jsonl", "schema": {"id": "int64"}}),
        ("operator", {"name": "padded", "type": "select", "input": "input",
                      "fields": {"k": f"rand_string(id % {keys}, 3, {key_bytes})"}}),
        ("operator", {"name": "running", "type": "running_count", "input": "padded",
                      "key_by": ["k"]}),
        ("operator", {"name": "counts", "type": "select", "input": "running",
                      "fields": {"n": "count"}}),
        ("sink", {"name": "out", "input": "counts", "type": "stdout"}))


# Serialized bytes per key: key bytes ('s' + u32 + key) with its u32 length,
# an empty namespace (u32), the int64 count with its u32 length.
def entry_bytes(key_bytes):
    return 4 + 5 + key_bytes + 4 + 4 + 8


def recovery_one(args, work, mib, input_path):
    key_bytes = 1000
    keys = mib * 2**20 // entry_bytes(key_bytes)
    target = 0.99 * keys * entry_bytes(key_bytes)
    state = work / f"recovery-{mib}"
    shutil.rmtree(state, ignore_errors=True)
    toml = work / f"recovery-{mib}.toml"
    toml.write_text(recovery_toml(state, input_path, keys, key_bytes))
    # Phase 1: run until a checkpoint holds (almost) every key, then SIGKILL.
    t0 = time.monotonic()
    p = popen([args.weir, "run", toml, "--fresh"], stdout=subprocess.DEVNULL,
              stderr=subprocess.PIPE, text=True)
    killed = None
    for line in p.stderr:
        m = re.search(r"checkpoint #(\d+) \((\d+) ms, ([\d.]+) KiB", line)
        if m and float(m.group(3)) * 1024 >= target:
            killed = {"checkpoint": int(m.group(1)), "duration_ms": int(m.group(2)),
                      "size_mib": round(float(m.group(3)) / 1024, 1),
                      "after_s": round(time.monotonic() - t0, 1)}
            p.send_signal(signal.SIGKILL)
            break
    p.wait()
    if not killed:
        return {"mib": mib, "keys": keys, "error": "the input ended before a full checkpoint"}
    # Phase 2: restart on the same dir; time to the restore line and to the
    # first output row.
    events = {}
    t0 = time.monotonic()
    p = popen([args.weir, "run", toml], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
              text=True)

    def read_err():
        for line in p.stderr:
            t = time.monotonic() - t0
            if "restoring from checkpoint" in line and "restoring" not in events:
                events["restoring"] = t
            elif "| in " in line and "first_status" not in events:
                events["first_status"] = t
            elif "FAILED" in line or "job failed" in line:
                events["failed"] = line.strip()

    reader = threading.Thread(target=read_err, daemon=True)
    reader.start()
    first = p.stdout.readline()
    t_first = time.monotonic() - t0
    p.send_signal(signal.SIGKILL)
    _, status, rusage = os.wait4(p.pid, 0)
    p.returncode = status
    reader.join(timeout=5)
    if not first or "failed" in events:
        return {"mib": mib, "keys": keys, "killed_after": killed,
                "error": events.get("failed", "no output after the restart")}
    res = {"mib": mib, "keys": keys, "killed_after": killed,
           "restoring_line_s": round(events.get("restoring", float("nan")), 3),
           "first_status_s": round(events.get("first_status", float("nan")), 3),
           "first_output_s": round(t_first, 3),
           "peak_rss_mib": round(rusage.ru_maxrss / 1024)}
    log(f"  {mib:5} MiB ({keys:,} keys; killed after checkpoint #{killed['checkpoint']}, "
        f"{killed['size_mib']} MiB, written in {killed['duration_ms']} ms): first output "
        f"{res['first_output_s']:.2f} s after start (restore line at "
        f"{res['restoring_line_s']:.2f} s), peak RSS {res['peak_rss_mib']} MiB")
    shutil.rmtree(state, ignore_errors=True)
    return res


def recovery(args, work):
    sizes = args.sizes_mib
    biggest = max(sizes) * 2**20 // entry_bytes(1000)
    # Enough rows for one pass over the keys and then some full checkpoints.
    rows = 3 * biggest + 2_000_000
    input_path = work / "ids.jsonl"
    log(f"recovery: writing {rows:,} input rows; sizes {sizes} MiB")
    with open(input_path, "w") as f:
        chunk = 100_000
        for start in range(0, rows, chunk):
            f.write("".join('{"id":%d}\n' % i for i in range(start, min(rows, start + chunk))))
    results = [recovery_one(args, work, mib, input_path) for mib in sizes]
    ok = [r for r in results if "error" not in r]
    fit = None
    if len(ok) >= 2:
        # Least squares: first_output_s = a + b * MiB, to extrapolate.
        xs = [r["mib"] for r in ok]
        ys = [r["first_output_s"] for r in ok]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        a = my - b * mx
        fit = {"intercept_s": round(a, 3), "s_per_gib": round(b * 1024, 3),
               "predicted_1gib_s": round(a + b * 1024, 2)}
        log(f"  fit: {fit['intercept_s']} s + {fit['s_per_gib']} s/GiB -> "
            f"{fit['predicted_1gib_s']} s at 1 GiB")
    return {"key_bytes": 1000, "runs": results, "fit": fit}


def cmd_checkpoint(args):
    if args.quick:
        args.records, args.keys, args.pairs = 300_000, "10000", 1
        args.snapshot_keys, args.restore_mib, args.sizes_mib = "100000", 16, "16,32"
    args.keys = [int(x) for x in args.keys.split(",") if x]
    args.snapshot_keys = [int(x) for x in args.snapshot_keys.split(",") if x]
    args.sizes_mib = [int(x) for x in args.sizes_mib.split(",") if x]
    build = Path(args.build_dir)
    args.weir = args.weir or str(build / "weir-bench")
    args.bench = args.bench or str(build / "weir_checkpoint_bench")
    for b in ([args.weir] if args.what != "snapshot" else []) + \
             ([args.bench] if args.what in ("all", "snapshot") else []):
        if not os.access(b, os.X_OK):
            raise SystemExit(f"{b} is missing: build it first (Release), see --help")

    header = {**run_header("checkpoint", build), "weir": args.weir}
    log(f"machine: {header['machine']}, cores {header['cores']}")
    parts = {}
    work = Path(tempfile.mkdtemp(prefix="weir-cpbench-"))
    started = time.monotonic()
    try:
        for part, fn in (("snapshot", snapshot), ("throughput", throughput),
                         ("recovery", recovery)):
            if args.what in ("all", part):
                parts[part] = {**header, "results": fn(args, work)}
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    report = {**header, "parts": parts, "total_seconds": round(time.monotonic() - started)}
    log(f"done in {report['total_seconds']} s")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report))
    # The results file keeps the latest run of each part: a run of one part replaces it.
    path = Path(args.results)
    kept = json.loads(path.read_text())["parts"] if path.exists() and not args.no_results else {}
    write_results(args, {"family": "checkpoint", "parts": {**kept, **parts}},
                  charts.checkpoint_chart)
    return 0


def add_parser(sub):
    ap = sub.add_parser("checkpoint", help="checkpoint costs: throughput with checkpoints, "
                        "snapshot pause, recovery (builds nothing)", description=__doc__,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", nargs="?", default="all",
                    choices=["all", "throughput", "snapshot", "recovery"])
    ap.add_argument("--build-dir", default=str(ROOT / "build"))
    ap.add_argument("--weir")
    ap.add_argument("--bench")
    ap.add_argument("--records", type=int, default=24_000_000)
    ap.add_argument("--keys", default="10000,100000")
    ap.add_argument("--pairs", type=int, default=9)
    ap.add_argument("--snapshot-keys", default="1000000,10000000")
    ap.add_argument("--restore-mib", type=int, default=1024)
    ap.add_argument("--sizes-mib", default="128,256,512,1024")
    ap.add_argument("--json", help="also write this run's figures here")
    ap.add_argument("--keep", action="store_true")
    ap.add_argument("--quick", action="store_true")
    add_family_options(ap, "checkpoint", cmd_checkpoint, build=False)
