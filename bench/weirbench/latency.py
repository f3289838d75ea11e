# SPDX-License-Identifier: Apache-2.0
"""End-to-end latency (`bench/run latency`): weir's peak events/s for a stateless query
at parallelism 1, then the query at half that rate with buffer_timeout 1 ms and 10 ms;
milliseconds from a row's scheduled generation time to its arrival at the blackhole
sink (p50, p99, p99.9, max, from the sink's histogram, ±3 %). Windowed queries are left
out: their results are late by design."""

import json

from . import charts
from .common import (add_family_options, best, binaries, run_header, write_results)
from .nexmark import run_weir

# Stateless queries: their rows keep the generation time, so latency applies.
LATENCY_QUERIES = ["q0", "q1", "q2"]


def merge_latency(parts):
    """Merges the blackhole histograms of several subtasks ([[upper_ns, count]...],
    max_ns) into count, max_ns, p50_ns, p99_ns and p999_ns."""
    buckets = {}
    for part in parts:
        for upper, count in part["hist"]:
            buckets[upper] = buckets.get(upper, 0) + count
    total = sum(buckets.values())
    out = {"count": total, "max_ns": max((p["max_ns"] for p in parts), default=0)}
    for name, q in (("p50_ns", 0.5), ("p99_ns", 0.99), ("p999_ns", 0.999)):
        rank = min(int(q * total), total - 1) if total else 0
        seen = 0
        for upper in sorted(buckets):
            seen += buckets[upper]
            if seen > rank:
                out[name] = min(upper, out["max_ns"])
                break
        else:
            out[name] = 0
    return out


def cmd_latency(args):
    header = run_header("latency", args.build_dir)
    queries = args.queries.split(",") if args.queries else LATENCY_QUERIES
    for q in queries:
        if q not in LATENCY_QUERIES:
            raise SystemExit(f"latency applies to {', '.join(LATENCY_QUERIES)}, not {q}")
    weir, _ = binaries(args)
    rows = []
    for q in queries:
        peak = best([run_weir(weir, q, args.events, 1) for _ in range(args.repeat)],
                    "events_per_s")
        rate = int(peak["events_per_s"] / 2)
        events = int(rate * args.seconds)
        for timeout in ("1ms", "10ms"):
            r = run_weir(weir, q, events, 1, rate=rate, buffer_timeout=timeout, latency=True)
            lat = merge_latency([x["latency"] for x in r["reports"]])
            rows.append({"query": q, "parallelism": 1, "cores": r["cores"],
                         "peak_events_per_s": peak["events_per_s"],
                         "peak_events_per_cpu_s": peak.get("events_per_cpu_s"),
                         "rate": rate, "buffer_timeout": timeout, "events": events,
                         "achieved_events_per_s": r["events_per_s"],
                         "achieved_events_per_cpu_s": r.get("events_per_cpu_s"),
                         "wall_seconds": r["wall_seconds"], "cpu_seconds": r["cpu_seconds"],
                         "p50_ms": lat["p50_ns"] / 1e6, "p99_ms": lat["p99_ns"] / 1e6,
                         "p999_ms": lat["p999_ns"] / 1e6, "max_ms": lat["max_ns"] / 1e6,
                         "rows": lat["count"]})
    report = {**header, "latency": rows}
    write_results(args, report, charts.latency_chart)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"{'query':6} {'rate (ev/s)':>12} {'timeout':>8} {'p50 ms':>8} {'p99 ms':>8} "
              f"{'p99.9 ms':>9} {'max ms':>8}")
        for r in rows:
            print(f"{r['query']:6} {r['rate']:>12,} {r['buffer_timeout']:>8} "
                  f"{r['p50_ms']:>8.3f} {r['p99_ms']:>8.3f} {r['p999_ms']:>9.3f} "
                  f"{r['max_ms']:>8.3f}")
    return 0


def add_parser(sub):
    lt = sub.add_parser("latency", help="latency at half of peak throughput")
    lt.add_argument("--queries", help="comma-separated subset of " + ",".join(LATENCY_QUERIES))
    lt.add_argument("--events", type=int, default=20_000_000,
                    help="events of the peak-throughput run")
    lt.add_argument("--seconds", type=float, default=5.0, help="length of each latency run")
    lt.add_argument("--repeat", type=int, default=1)
    add_family_options(lt, "latency", cmd_latency)
