# SPDX-License-Identifier: Apache-2.0
"""Nexmark and YSB throughput (`bench/run`, the default verb), the ctest result check
(`bench/run check`) and the generators' test vectors (`bench/run vectors`).

Every query runs as the hand-written baseline, in weir and (--flink) in Flink, each at
the parallelisms asked for, in two modes: whole events generated, and pruned to the
fields the query reads (weir's projection push-down, FlinkBench --pruned; the baseline
always prunes). Every engine's result must equal the baseline's (row count and
order-independent digest) before its time counts. All run on the same cores (--cores);
each engine is compared at its best parallelism on them, by wall time and per CPU second.
"""

import json
import re
import tempfile
from pathlib import Path

from . import charts
from .common import (BENCH, DEFAULT_BUILD, Checks, add_cores_option, add_family_options,
                     add_rates, best, binaries, build, build_flink, check_result, compare,
                     flink_cmd, log, print_comparisons, run, run_baseline, run_header,
                     weir_cmd, weir_reports, write_results)

QUERIES = {
    "q0": BENCH / "nexmark" / "q0.toml",
    "q1": BENCH / "nexmark" / "q1.toml",
    "q2": BENCH / "nexmark" / "q2.toml",
    "q3": BENCH / "nexmark" / "q3.toml",
    "q5": BENCH / "nexmark" / "q5.toml",
    "q7": BENCH / "nexmark" / "q7.toml",
    "q8": BENCH / "nexmark" / "q8.toml",
    "ysb": BENCH / "ysb" / "ysb.toml",
}
VECTOR_EVENTS = 1000


def pipeline_text(query, events, digest=False, rate=None, buffer_timeout=None,
                  latency=False, pruned=True):
    """The query's TOML with the event count and options substituted; pruned=False
    turns the generated sources' projection push-down off (whole events)."""
    text = QUERIES[query].read_text()
    text, n = re.subn(r"(?m)^(events|count) = \d+", lambda m: f"{m.group(1)} = {events}",
                      text)
    # One key per source (q3 and q8 read two streams of the same events).
    assert n >= 1, f"{query}: expected an events/count key"
    sink = []
    if digest:
        sink.append("digest = true")
    source = []
    if rate:
        source.append(f"rate = {rate}")
    if not pruned:
        source.append("projection_push_down = false")
    if latency:
        source.append('generation_time_field = "gen_ns"')
        sink.append('latency_field = "gen_ns"')
        # Keep the generation time through the projections.
        text = text.replace("fields = { ", 'fields = { gen_ns = "gen_ns", ')
    job = ['status_interval = "0s"']
    if buffer_timeout:
        job.append(f'buffer_timeout = "{buffer_timeout}"')
    text = text.replace("[job]\n", "[job]\n" + "".join(j + "\n" for j in job), 1)
    text = re.sub(r'(?m)^(type = "(nexmark|generator)")$',
                  lambda m: m.group(1) + "".join("\n" + s for s in source), text)
    text = text.replace("report = true\n", "report = true\n" + "".join(s + "\n" for s in sink))
    return text


def run_weir(weir, query, events, parallelism, digest=False, rate=None, buffer_timeout=None,
             latency=False, pruned=True):
    """Runs one weir job; returns its blackhole reports merged (rows, digest; the reports
    under "reports"), the wall time and the CPU time of the process."""
    text = pipeline_text(query, events, digest, rate, buffer_timeout, latency, pruned)
    with tempfile.TemporaryDirectory(prefix="weir-bench-") as tmp:
        path = Path(tmp) / f"{query}.toml"
        path.write_text(text)
        p = run(weir_cmd(weir, path, parallelism), what=f"weir {query} p={parallelism}")
    out = {"engine": "weir", "query": query, "parallelism": parallelism, "events": events,
           "seconds": p.wall_seconds, "wall_seconds": p.wall_seconds,
           "cpu_seconds": p.cpu_seconds, "mode": "pruned" if pruned else "whole",
           **weir_reports(p.stdout)}
    return add_rates(out, events, "events")


def run_flink(classpath, query, events, parallelism, digest=False, pruned=False):
    """One FlinkBench job; pruned=True generates only the fields the query reads, as
    weir's projection push-down does (FlinkBench --pruned). cpu_seconds is the whole
    JVM's (mini-cluster start-up included); seconds is the job's net runtime."""
    p = run(flink_cmd(classpath, "FlinkBench", query, "--events", events, "--parallelism",
                      parallelism, *(["--digest"] if digest else []),
                      *(["--pruned"] if pruned else [])),
            what=f"flink {query} p={parallelism}")
    out = p.last_json()
    out.update(cpu_seconds=p.cpu_seconds, wall_seconds=p.wall_seconds,
               mode="pruned" if pruned else "whole")
    return add_rates(out, events, "events")


def cmd_check(args):
    """weir at parallelism 1 and 2 (pruned) and 1 (whole events) gives the baseline's
    rows and digest (ctest bench_check_*)."""
    weir, baseline = Path(args.weir), Path(args.baseline)
    expected = run_baseline(baseline, args.query, args.events, digest=True)
    checks = Checks()
    if not checks.expect_rows(args.query, expected):
        return 1
    for p, pruned in [(1, True), (2, True), (1, False)]:
        got = run_weir(weir, args.query, args.events, p, digest=True, pruned=pruned)
        checks.case(f"{args.query} p={p} {got['mode']}: weir", got, expected)
    return checks.finish()


def cmd_vectors(args):
    baseline = Path(args.baseline) if args.baseline else build(Path(args.build_dir))[1]
    p = run([baseline, "vectors", args.which, "--events", VECTOR_EVENTS],
            what="baseline vectors")
    path = BENCH / "vectors" / f"{args.which}-first-{VECTOR_EVENTS}.txt"
    if args.write:
        path.write_text(p.stdout)
        log(f"wrote {path}")
        return 0
    expected = path.read_text().splitlines()
    got = p.stdout.splitlines()
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            log(f"{path}:{i + 1}: the generator changed\n  expected {e}\n  got      {g}")
            return 1
    if len(expected) != len(got):
        log(f"{path}: {len(expected)} lines expected, {len(got)} generated")
        return 1
    log(f"{path}: {len(got)} events match")
    return 0


def comparisons(results):
    """Per query and mode: each engine's best parallelism, weir's rate over the others'
    (the baseline prunes: against it only the pruned mode is like for like)."""
    out = []
    for q in dict.fromkeys(r["query"] for r in results):
        for mode in dict.fromkeys(r["mode"] for r in results if r["engine"] != "baseline"):
            group = [r for r in results if r["query"] == q and r["mode"] == mode]
            c = compare(group, ["weir", "flink", "baseline"], "events")
            if c["weir_vs"]:
                out.append({"query": q, "mode": mode, **c})
    return out


def cmd_bench(args):
    header = run_header("nexmark", args.build_dir)
    queries = args.queries.split(",") if args.queries else list(QUERIES)
    per_query_events = {}
    for item in (args.events_for.split(",") if args.events_for else []):
        q, _, n = item.partition("=")
        per_query_events[q] = int(float(n))
    weir, baseline = binaries(args)
    classpath = build_flink() if args.flink else None
    modes = args.modes.split(",")
    parallelisms = [int(x) for x in args.parallelism.split(",")]
    results, failures = [], 0
    for q in queries:
        events = per_query_events.get(
            q, args.events * (args.ysb_factor if q == "ysb" else 1))
        log(f"bench: {q}, {events:,} events")
        # The result check: every engine with digests on, compared with the
        # baseline's; then the timed runs without digests.
        expected = run_baseline(baseline, q, events, digest=True)
        base = best([add_rates(run_baseline(baseline, q, events), events, "events")
                     for _ in range(args.repeat)], "events_per_s")
        base["check"] = "reference"
        results.append(base)
        engines = [("weir", p, m) for m in modes for p in parallelisms]
        if classpath:
            engines += [("flink", p, m) for m in modes for p in parallelisms]
        for engine, p, mode in engines:
            pruned = mode == "pruned"
            if engine == "weir":
                def one(digest=False):
                    return run_weir(weir, q, events, p, digest=digest, pruned=pruned)
            else:
                def one(digest=False):
                    return run_flink(classpath, q, events, p, digest=digest, pruned=pruned)
            checked = one(digest=True)
            timed = best([one() for _ in range(args.repeat)], "events_per_s")
            timed["check"] = check_result(checked, expected)
            failures += 0 if timed["check"].startswith("ok") else 1
            timed.pop("reports", None)
            results.append(timed)
    report = {**header, "events": args.events, "repeat": args.repeat, "modes": modes,
              "results": results, "comparisons": comparisons(results)}
    write_results(args, report, charts.nexmark_chart)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_table(report)
    if args.chart:
        charts.nexmark_chart(report, Path(args.chart))
    return 1 if failures else 0


def print_table(report):
    """One row per (query, engine, mode, p), then per query and mode weir's rate over
    each engine's best: "whole", every engine generates whole events; "pruned", only the
    fields the query reads (the baseline always prunes)."""
    print(f"on cores {','.join(map(str, report['cores']))}")
    print(f"{'query':6} {'engine':9} {'mode':6} {'p':>2} {'events/s':>14} {'cpu s':>7} "
          f"{'events/cpu s':>13} {'rows':>10}  check")
    for r in report["results"]:
        cpu = f"{r['cpu_seconds']:.2f}" if r.get("cpu_seconds") else ""
        per_cpu = f"{r['events_per_cpu_s']:,.0f}" if r.get("events_per_cpu_s") else ""
        print(f"{r['query']:6} {r['engine']:9} {r.get('mode', 'whole'):6} {r['parallelism']:>2} "
              f"{r['events_per_s']:>14,.0f} {cpu:>7} {per_cpu:>13} {r['rows']:>10,}  "
              f"{r['check']}")
    print_comparisons(report["comparisons"], ("query", "mode"))


def add_parser(sub):
    b = sub.add_parser("bench", help="throughput of every query (default)")
    b.add_argument("--events", type=int, default=20_000_000,
                   help="events per Nexmark query (default 20M)")
    b.add_argument("--ysb-factor", type=int, default=5,
                   help="YSB runs events x this factor (default 5: its events are cheaper)")
    b.add_argument("--queries", help="comma-separated subset of " + ",".join(QUERIES))
    b.add_argument("--events-for", help="per-query event counts, e.g. q5=2000000,ysb=5e7")
    b.add_argument("--repeat", type=int, default=1, help="timed runs per engine; best is kept")
    b.add_argument("--flink", action="store_true", help="also run Apache Flink (bench/flink)")
    b.add_argument("--modes", default="whole,pruned",
                   help="whole: every engine generates whole events (weir's "
                        "projection_push_down = false); pruned: only the fields the query "
                        "reads (weir's default, FlinkBench --pruned, the baselines)")
    b.add_argument("--parallelism", default="1,2", help="comma-separated parallelisms")
    b.add_argument("--json", action="store_true", help="machine-readable output on stdout")
    b.add_argument("--chart", help="also write a PNG bar chart here")
    add_family_options(b, "nexmark", cmd_bench)

    c = sub.add_parser("check", help="weir gives the baseline's result (ctest)")
    c.add_argument("query", choices=list(QUERIES))
    c.add_argument("--events", type=int, default=60_000)
    c.add_argument("--weir", required=True)
    c.add_argument("--baseline", required=True)
    add_cores_option(c)
    c.set_defaults(func=cmd_check)

    v = sub.add_parser("vectors", help="the shared generator test vectors")
    v.add_argument("which", choices=["nexmark", "ysb"])
    g = v.add_mutually_exclusive_group(required=True)
    g.add_argument("--verify", action="store_true")
    g.add_argument("--write", action="store_true")
    v.add_argument("--baseline")
    v.add_argument("--build-dir", default=str(DEFAULT_BUILD))
    add_cores_option(v)
    v.set_defaults(func=cmd_vectors)
